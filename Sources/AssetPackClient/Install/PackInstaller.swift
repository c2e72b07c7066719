import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The install transaction of one pack version: download (extracting as the bytes arrive, or into a file
/// first), verify every file, make the staging folder durable, move it into place under a name never used
/// before, commit the state, then remove the version it replaced. Until the commit, nothing a reader can
/// see changes; whatever fails, what was installed before stays.
struct PackInstaller: Sendable {
    let store: AppGroupStore
    let downloader: PackDownloader
    /// Download into a file first, so that a process killed mid-download resumes in a later run.
    let resumableDownloads: Bool
    /// Update through a delta archive when the manifest lists one from the installed version.
    var deltaUpdates = false
    /// Fetch plain http from hosts other than this machine (see ``TransportSecurity``).
    var allowInsecureHTTP = false

    /// Installs `pack` and commits it: through a delta from the installed version when there is one (and,
    /// when that fails, once more through the whole archive, saying why), else through the whole archive.
    /// - Returns: The installed pack's record.
    /// - Throws: ``AssetPackClientError``, or `CancellationError`.
    func install(_ pack: AssetPack, events: DownloadEvents) async throws -> InstalledPack {
        // A pack that may not be fetched fails before anything begins.
        try TransportSecurity.check(pack.url, allowHTTP: allowInsecureHTTP, pack: pack.id)
        let store = self.store
        if deltaUpdates, !pack.deltas.isEmpty,
            let base = try await BlockingIO.shortCall({ try store.loadState().installed[pack.id] }),
            let delta = pack.delta(from: base)
        {
            events.delta(DeltaNotice(fromVersion: base.version, delta: delta, fullSize: pack.downloadSize))
            events.began()
            do {
                return try await install(pack, events: events, through: (delta, base))
            } catch let error as AssetPackClientError where !AssetPackClientError.isDiskFull(error) {
                events.deltaFailed(error.reason)
            }
        }
        events.began()
        return try await install(pack, events: events, through: nil)
    }

    /// Installs `pack` from its archive, or from a delta over the installed `base`.
    private func install(
        _ pack: AssetPack,
        events: DownloadEvents,
        through delta: (delta: AssetPack.Delta, base: InstalledPack)?
    ) async throws -> InstalledPack {
        let download = delta.map { pack.download(of: $0.delta) } ?? pack
        // Before any connection: a delta at such a URL fails over to the whole pack.
        try TransportSecurity.check(download.url, allowHTTP: allowInsecureHTTP, pack: pack.id)
        let store = self.store
        var binding: DeltaBase?
        var trusted: [PathKey: TrustedFile] = [:]
        if let delta {
            (binding, trusted) = try await BlockingIO.shortCall {
                try Self.deltaBase(delta.delta, delta.base, pack, store: store)
            }
        }
        let partial = PartialDownload(store: store, pack: download)
        do {
            let resumable = resumableDownloads
            let fromFile = try await BlockingIO.shortCall { resumable || partial.exists }
            let (index, absent, staging) =
                fromFile
                ? try await downloadThenExtract(download, events: events, delta: binding)
                : try await extractWhileDownloading(download, events: events, delta: binding)
            if let base = delta?.base {
                try await BlockingIO.longJob { [trusted] in
                    do {
                        try Self.copyUnchanged(absent, from: base, into: staging, pack, store: store, trusting: trusted)
                    } catch {
                        Self.removeStaging(staging)
                        throw error
                    }
                }
            }
            let installed = try await BlockingIO.longJob {  // syncfs, the swap, and the old version's delete
                do {
                    return try Self.commit(staging, index: index, pack: pack, store: store)
                } catch {
                    Self.removeStaging(staging)
                    throw error
                }
            }
            _ = try? await BlockingIO.shortCall { partial.discard() }  // this version's, or another's left behind
            return installed
        } catch  where AssetPackClientError.isDiskFull(error) {
            _ = try? await BlockingIO.shortCall { partial.discard() }
            if let error = error as? AssetPackClientError, error.saysDiskFull { throw error }
            var failure = AssetPackClientError(
                code: .io,
                message:
                    "no space left on the device holding \(store.root) while installing pack \(pack.id); the "
                    + "download and the extraction were removed and what was installed is kept. Fix: free space "
                    + "and run again",
                assetPackID: pack.id,
                cause: error
            )
            failure.saysDiskFull = true
            throw failure
        }
    }

    /// What a delta extraction checks: what the delta must say it is for, and the installed base.
    typealias DeltaBase = (binding: PackDelta.Binding, base: PackDelta.Base)

    /// What an extraction leaves: the verified index, the files it lists that a delta did not hold (empty
    /// for a whole archive), and the staging folder.
    typealias Extracted = (index: PackIndex, absent: [PackIndex.File], staging: FilePath)

    /// Downloads the archive (or delta) into a partial file (resumable by a later run), then extracts it.
    private func downloadThenExtract(_ pack: AssetPack, events: DownloadEvents, delta: DeltaBase?)
        async throws -> Extracted
    {
        let archive = try await downloader.downloadToFile(pack, store: store, events: events)
        let store = self.store
        return try await BlockingIO.longJob {
            let staging = try Self.makeStaging(pack, store: store)
            do {
                let (index, absent) = try Self.extract(pack) {
                    if let delta {
                        try PackArchiveReader.extractDelta(
                            archive,
                            into: staging,
                            limit: pack.installSize,
                            expecting: delta.binding,
                            base: delta.base,
                            indexCopy: Self.indexCopy(of: staging)
                        )
                    } else {
                        (
                            try PackArchiveReader.extract(
                                archive,
                                into: staging,
                                limit: pack.installSize,
                                indexCopy: Self.indexCopy(of: staging),
                                describedAs: Self.described(pack)
                            ), []
                        )
                    }
                }
                return (index, absent, staging)
            } catch {
                Self.removeStaging(staging)
                throw error
            }
        }
    }

    /// Extracts the archive as it arrives (on the consumer's thread): the archive never touches the disk;
    /// a cut connection resumes with a range into the same extraction, and bad bytes start over with a new
    /// staging folder.
    private func extractWhileDownloading(_ pack: AssetPack, events: DownloadEvents, delta: DeltaBase?)
        async throws -> Extracted
    {
        let store = self.store
        return try await downloader.download(pack, events: events) {
            let staging = try await BlockingIO.shortCall { try Self.makeStaging(pack, store: store) }
            return TransferConsumer(destination: staging, hashing: pack.sha256 != nil) { reader in
                let name = pack.url.absoluteString
                let (index, absent) = try Self.extract(pack) {
                    if let delta {
                        try PackArchiveReader.extractDelta(
                            streamNamed: name,
                            into: staging,
                            limit: pack.installSize,
                            expecting: delta.binding,
                            base: delta.base,
                            indexCopy: Self.indexCopy(of: staging),
                            reading: reader.next
                        )
                    } else {
                        (
                            try PackArchiveReader.extract(
                                streamNamed: name,
                                into: staging,
                                limit: pack.installSize,
                                indexCopy: Self.indexCopy(of: staging),
                                describedAs: Self.described(pack),
                                hashingFiles: pack.sha256 == nil,  // else these bytes' digest is checked
                                reading: reader.next
                            ), []
                        )
                    }
                }
                return (index, absent, staging)
            }
        } end: { consumer, _ in
            await consumer.stop()
            _ = try? await BlockingIO.shortCall { Self.removeStaging(consumer.destination) }
        }
    }

    /// What the manifest entry says of a pack, for an archive that does not describe itself (an Apple Archive
    /// without its Manifest.json).
    static func described(_ pack: AssetPack) -> PackIndex {
        PackIndex(
            formatVersion: PackIndex.currentFormatVersion,
            assetPackID: pack.id,
            downloadPolicy: pack.downloadPolicy,
            platforms: pack.platforms ?? [],
            language: pack.language,
            installSize: 0,
            fileCount: 0,
            files: []
        )
    }

    /// Where an extraction into `staging` keeps the verified index's bytes (beside the folder, so that no
    /// name of the pack's can collide with it); moved into place at commit.
    static func indexCopy(of staging: FilePath) -> FilePath {
        FilePath(staging.string + ".index.json")
    }

    /// Removes a staging folder and its index copy.
    static func removeStaging(_ staging: FilePath) {
        try? FileManager.default.removeItem(atPath: staging.string)
        _ = unlink(indexCopy(of: staging).string)
    }

    /// A new, empty staging folder inside the app group (so the final rename stays on one file system), made
    /// relative to `.ba-sync/staging` opened without following links: a symlink planted there is refused.
    private static func makeStaging(_ pack: AssetPack, store: AppGroupStore) throws -> FilePath {
        let name = "\(pack.id)-\(UUID().uuidString)"
        let folder = try store.openFolder(".ba-sync/staging", creating: true)
        defer { try? folder.close() }
        guard mkdirat(folder.rawValue, name, 0o755) == 0 else {
            throw AssetPackClientError.io("create", store.stagingFolder.appending(name), Errno(rawValue: errno))
        }
        return store.stagingFolder.appending(name)
    }

    /// Runs an extraction and says what went wrong in the client's terms; checks the index names the pack.
    private static func extract(_ pack: AssetPack, _ body: () throws -> (PackIndex, [PackIndex.File])) throws -> (
        PackIndex, [PackIndex.File]
    ) {
        let index: PackIndex
        let absent: [PackIndex.File]
        do {
            (index, absent) = try body()
        } catch let error as AssetPackFormatError {
            var failure = AssetPackClientError(
                code: error.code == .io ? .io : .corruptPack,
                message: "cannot install pack \(pack.id) from \(pack.url): \(error.message); nothing was installed",
                assetPackID: pack.id,
                cause: error
            )
            failure.retryable = !error.isRuleViolation  // a pack that breaks the rules is not fetched again
            throw failure
        }
        guard index.assetPackID == pack.id else {
            var failure = AssetPackClientError(
                code: .corruptPack,
                message:
                    "the archive at \(pack.url) holds pack \(index.assetPackID), not \(pack.id); nothing was installed",
                assetPackID: pack.id
            )
            failure.retryable = false
            throw failure
        }
        return (index, absent)
    }

    /// Makes an extracted staging folder durable, moves it into place under a folder name never used before,
    /// commits the state (readers see the new version from then on), and removes the version it replaced.
    /// Nothing outside the staging folder changes until the final rename; the caller removes the staging
    /// folder if this throws before it.
    private static func commit(
        _ staging: FilePath,
        index: PackIndex,
        pack: AssetPack,
        store: AppGroupStore
    ) throws -> InstalledPack {
        // Both folders opened without following links, and every rename made between their descriptors: a
        // symlink planted at `AssetPacks/<id>` cannot move the pack elsewhere.
        let stagingFolder = try store.openFolder(".ba-sync/staging", creating: false)
        defer { try? stagingFolder.close() }
        let packFolder = try store.openFolder("AssetPacks/\(pack.id)", creating: true)
        defer { try? packFolder.close() }
        let (relative, name) = try newVersionFolder(for: pack, in: packFolder)
        let destination = store.root.appending(relative)
        let stagingName = staging.lastComponent?.string ?? ""
        let stagingIndex = indexCopy(of: FilePath(stagingName)).string
        // The index's bytes as the archive held them, verified by the extraction (not written again: at
        // 100 000 files that held the index whole twice over).
        guard renameat(stagingFolder.rawValue, stagingIndex, packFolder.rawValue, name + ".index.json") == 0 else {
            throw AssetPackClientError.io("move the index of", destination, Errno(rawValue: errno))
        }
        do {
            try AtomicFile.syncFileSystem(containing: staging)
        } catch {
            _ = unlinkat(packFolder.rawValue, name + ".index.json", 0)
            throw AssetPackClientError(
                code: .io,
                message: "pack \(pack.id) was written but did not reach the disk intact; nothing was installed",
                assetPackID: pack.id,
                cause: error
            )
        }
        guard renameat(stagingFolder.rawValue, stagingName, packFolder.rawValue, name) == 0 else {
            let failure = Errno(rawValue: errno)
            _ = unlinkat(packFolder.rawValue, name + ".index.json", 0)
            throw AssetPackClientError.io("move the installed pack to", destination, failure)
        }
        _ = fsync(packFolder.rawValue)
        var installed = InstalledPack(
            id: pack.id,
            version: pack.version,
            sha256: pack.sha256,
            downloadPolicy: pack.downloadPolicy,
            directory: relative,
            installSize: index.installSize,
            fileCount: index.fileCount,
            installedAt: Date(),
            language: pack.language ?? index.language,
            fileDigestsCarried: index.fileDigestsCarried
        )
        let previous = try store.update { state in
            let previous = state.installed[pack.id]
            installed.installedForLanguage = previous?.installedForLanguage  // an update keeps how it came
            state.installed[pack.id] = installed
            state.latestKnown[pack.id] = pack.version
            state.obsolete.remove(pack.id)
            return previous
        }
        if let previous { store.removeVersion(previous) }
        // What later deltas trust this version's files by (see `recordStats`); without it they hash them.
        // Taken once the version it replaced is gone: the files a delta linked share their inodes with it,
        // and its removal moved their change time.
        try? Self.recordStats(
            indexFile: FilePath(destination.string + ".index.json"),
            in: packFolder,
            name,
            id: pack.id,
            store: store
        )
        return installed
    }

    /// A version folder that does not exist and never did in this app group:
    /// `AssetPacks/<id>/<version>-<digest>-<install>`, where `<install>` is random (`<digest>` is `v<version>`
    /// when the manifest gives no digest).
    /// - Returns: Its path relative to the app group, and its name in the pack's folder.
    private static func newVersionFolder(for pack: AssetPack, in packFolder: FileDescriptor) throws -> (String, String)
    {
        while true {
            let install = String(UInt32.random(in: 0...UInt32.max), radix: 16)
            let name = "\(pack.version)-\(pack.archiveLabel)-\(install)"
            var info = stat()
            if fstatat(packFolder.rawValue, name, &info, AT_SYMLINK_NOFOLLOW) != 0
                && fstatat(packFolder.rawValue, name + ".index.json", &info, AT_SYMLINK_NOFOLLOW) != 0
            {
                return ("AssetPacks/\(pack.id)/\(name)", name)
            }
        }
    }
}
