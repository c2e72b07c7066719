internal import AssetPackClient
internal import AssetPackFormat
internal import Foundation
internal import System
internal import SystemPackage

/// Managing asset packs: Apple's `ensureLocalAvailability` forms, updates, removal and status.
extension AssetPackManager {
    /// Ensures that the specified asset pack is available locally, performing a download if necessary.
    ///
    /// Returning means the pack is local; throwing means it is not guaranteed to be. Cancelling the
    /// download's `Progress` (from a `downloading` update) makes it throw `CancellationError`.
    @available(*, deprecated, renamed: "ensureLocalAvailability(of:requireLatestVersion:)")
    public func ensureLocalAvailability(of assetPack: AssetPack) async throws {
        try await ensureLocalAvailability(of: assetPack, requireLatestVersion: false)
    }

    /// Ensures that an asset pack is available locally, performing a download if necessary; with
    /// `shouldUpdate`, waits for an available update to download as well.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` for a pack the server lists for
    ///   other platforms only; the engine's error (network, size, digest, install, obsolete pack);
    ///   `CancellationError` when the task or the download's `Progress` is cancelled.
    public func ensureLocalAvailability(of assetPack: AssetPack, requireLatestVersion shouldUpdate: Bool = false)
        async throws
    {
        let engine = self.engine
        let pack = assetPack.engine
        do {
            try await backend.cancellable(for: [pack.id]) {
                try await engine.ensureLocalAvailability(of: pack, requireLatestVersion: shouldUpdate)
            }
        } catch {
            throw FaceError.translate(error)
        }
    }

    /// Ensures the specified asset packs are available locally, performing a batch download if necessary.
    /// - Throws: ``LocalAvailabilityError`` with each pack's outcome when any pack is not local; a network
    ///   error when the server cannot be asked.
    public func ensureLocalAvailability(of assetPacks: Set<AssetPack>, requireLatestVersions shouldUpdate: Bool = false)
        async throws
    {
        let engine = self.engine
        let packs = Set(assetPacks.map(\.engine))
        do {
            try await backend.cancellable(for: packs.map(\.id)) {
                try await engine.ensureLocalAvailability(of: packs, requireLatestVersions: shouldUpdate)
            }
        } catch {
            throw FaceError.translate(error)
        }
    }

    /// Gets the latest asset-pack information from the server, updates outdated asset packs and removes
    /// obsolete ones; returns once the updates are scheduled, without waiting for them.
    /// - Returns: The IDs of the packs being updated and of those removed, by this call.
    @discardableResult
    public func checkForUpdates() async throws -> (updatingIDs: Set<String>, removedIDs: Set<String>) {
        let engine = self.engine
        return try await FaceError.translating { try await engine.checkForUpdates() }
    }

    /// Removes the specified asset pack from the device; `ensureLocalAvailability` downloads it again.
    /// Mappings and descriptors taken before keep reading the bytes they had.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when it is not local.
    public func remove(assetPackWithID assetPackID: String) async throws {
        let engine = self.engine
        try await FaceError.translating { try await engine.remove(assetPackWithID: assetPackID) }
    }

    /// Whether the asset pack is available locally (offline, synchronous).
    public nonisolated func assetPackIsAvailableLocally(withID assetPackID: String) -> Bool {
        engine.assetPackIsAvailableLocally(withID: assetPackID)
    }

    /// The status of the local copy relative to `assetPack`, asking the server; triggers nothing.
    public func status(relativeTo assetPack: AssetPack) async throws -> AssetPack.Status {
        let engine = self.engine
        let pack = assetPack.engine
        return AssetPack.Status(try await FaceError.translating { try await engine.status(relativeTo: pack) })
    }

    /// What can be known offline: `downloaded`, and sometimes `outOfDate` or `obsolete`; empty for an
    /// unknown ID.
    public func localStatus(ofAssetPackWithID assetPackID: String) async -> AssetPack.Status {
        AssetPack.Status(await engine.localStatus(ofAssetPackWithID: assetPackID))
    }

    /// The asset pack's status, asking the server.
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` for an ID neither the server nor
    ///   this app group knows.
    @available(*, deprecated, renamed: "status(relativeTo:)", message: "Use status(relativeTo:) instead.")
    public func status(ofAssetPackWithID assetPackID: String) async throws -> AssetPack.Status {
        let engine = self.engine
        return AssetPack.Status(
            try await FaceError.translating { try await engine.status(ofAssetPackWithID: assetPackID) }
        )
    }

    /// The version of the local copy (27.2).
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when the pack is not local.
    public nonisolated func localVersion(ofAssetPackWithID assetPackID: String) throws -> Int {
        try FaceError.translating { try engine.localVersion(ofAssetPackWithID: assetPackID) }
    }

    /// The bytes the local copy takes (27.2): `logical`, the files' sizes as the pack's index lists them;
    /// `allocated`, the blocks the file system gave them (files hard-linked between versions count once).
    /// - Throws: ``ManagedBackgroundAssetsError/assetPackNotFound(withID:)`` when the pack is not local.
    public func localSize(ofAssetPackWithID assetPackID: String, calculationMethod: SizeCalculationMethod)
        async throws -> Int64
    {
        let reader = engine.reader
        guard let installed = reader.installedPack(withID: assetPackID) else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: assetPackID)
        }
        switch calculationMethod {
        case .logical:
            return installed.installSize
        case .allocated:
            let folder = reader.folder(of: installed)
            return try await BlockingIO.longJob { try AllocatedSize.of(folder) }
        }
    }
}

/// The blocks a folder's files take on disk.
enum AllocatedSize {
    /// The allocated bytes of every regular file below `folder` (`st_blocks` × 512), each inode once; links
    /// are not followed.
    static func of(_ folder: SystemPackage.FilePath) throws -> Int64 {
        var seen: Set<UInt64> = []
        var total: Int64 = 0
        guard let walker = FileManager.default.enumerator(atPath: folder.string) else {
            throw ManagedBackgroundAssetsError.fileNotFound(at: System.FilePath(folder))
        }
        while let relative = walker.nextObject() as? String {
            var info = stat()
            guard lstat(folder.appending(relative).string, &info) == 0 else { throw Errno(rawValue: errno) }
            guard info.st_mode & S_IFMT == S_IFREG, seen.insert(UInt64(info.st_ino)).inserted else { continue }
            total += Int64(info.st_blocks) * 512
        }
        return total
    }
}
