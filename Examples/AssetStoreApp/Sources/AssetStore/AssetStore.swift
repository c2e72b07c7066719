import BackgroundAssets
import Foundation
import System

/// The game's asset-pack layer: everything the game knows about asset packs goes through here.
public actor AssetStore {
    /// What a loading screen shows for one pack.
    public enum LoadingState: Sendable, Equatable {
        case waiting
        case downloading(fractionCompleted: Double)
        case ready
        case failed(String)
    }

    public enum StoreError: Error, Equatable {
        case noSuchLevel(Int)
        case packNotPublished(String)
    }

    private let manager = AssetPackManager.shared

    public init() {}

    /// Makes a pack local, telling `onState` what a loading screen shows as it goes.
    public func prepare(packID: String, onState: @escaping @Sendable (LoadingState) -> Void) async throws {
        if manager.assetPackIsAvailableLocally(withID: packID) {
            onState(.ready)
            return
        }
        guard let pack = try await manager.manifest.assetPack(withID: packID) else {
            throw StoreError.packNotPublished(packID)
        }
        onState(.waiting)
        let updates = manager.statusUpdates(forAssetPackWithID: packID)
        let watcher = Task {
            for await update in updates {
                switch update {
                case .began, .paused: onState(.waiting)
                case .downloading(_, let progress): onState(.downloading(fractionCompleted: progress.fractionCompleted))
                case .finished: onState(.ready)
                case .failed(_, let error): onState(.failed(String(describing: error)))
                @unknown default: break
                }
            }
        }
        defer { watcher.cancel() }
        try await manager.ensureLocalAvailability(of: pack, requireLatestVersion: false)
        await watcher.value
    }

    /// Makes every pack the game needs at launch local; returns the IDs that could not be.
    public func prepareAll(_ packIDs: Set<String>) async throws -> Set<String> {
        let manifest = try await manager.manifest
        let packs = Set(manifest.assetPacks.filter { packIDs.contains($0.id) })
        do {
            try await manager.ensureLocalAvailability(of: packs, requireLatestVersions: false)
            return []
        } catch let error as AssetPackManager.LocalAvailabilityError {
            return Set(error.failures.keys.map(\.id))
        }
    }

    /// A level's map, memory-mapped from the Levels pack.
    public func levelMap(_ number: Int) throws -> Data {
        do {
            return try manager.contents(
                at: FilePath("Levels/level\(number).json"),
                searchingInAssetPackWithID: "Levels"
            )
        } catch ManagedBackgroundAssetsError.fileNotFound {
            throw StoreError.noSuchLevel(number)
        }
    }

    /// The first bytes of a video, read through a file descriptor (as a player streams it).
    public func videoHeader(_ name: String, count: Int) throws -> [UInt8] {
        let descriptor = try manager.descriptor(for: FilePath("Videos/\(name)"))
        return try descriptor.closeAfter {
            var buffer = [UInt8](repeating: 0, count: count)
            let read = try buffer.withUnsafeMutableBytes { try descriptor.read(into: $0) }
            return Array(buffer.prefix(read))
        }
    }

    /// The texture files, listed through the folder's URL (a folder may be split across packs).
    public func textureNames() throws -> [String] {
        let folder = try manager.url(for: "Textures")
        return try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    /// A line of dialogue in the player's language.
    public func dialogue(_ key: String) throws -> String {
        String(decoding: try manager.contents(at: FilePath("Dialogue/\(key).txt")), as: UTF8.self)
    }

    /// A line of dialogue in a given language, whatever the player's.
    public func dialogue(_ key: String, in language: Locale.Language) throws -> String {
        String(
            decoding: try manager.contents(at: FilePath("Dialogue/\(key).txt"), asLocalizedFor: language),
            as: UTF8.self
        )
    }

    /// Switches the game's language and brings the packs in line.
    public func switchLanguage(to language: Locale.Language?) async throws {
        manager.resolvedLanguage = language
        try await manager.reconcilePreferredLanguages()
    }

    /// Frees the space of a pack the player is done with.
    public func free(packID: String) async throws {
        try await manager.remove(assetPackWithID: packID)
    }

    /// Looks for new content; returns the packs being updated.
    public func refresh() async throws -> Set<String> {
        try await manager.checkForUpdates().updatingIDs
    }

    /// The version of a local pack, for a bug report.
    public nonisolated func installedVersion(of packID: String) -> Int? {
        try? AssetPackManager.shared.localVersion(ofAssetPackWithID: packID)
    }
}
