import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// One installed pack, as the app group's state records it.
public struct InstalledPack: Sendable, Hashable, Codable {
    /// The pack's ID.
    public var id: String
    /// The installed version.
    public var version: Int
    /// The archive's SHA-256 it was installed from; `nil` when the manifest gave none (the archive's digest
    /// was not checked; every file was, against the pack's index).
    public var sha256: String?
    /// Its download policy.
    public var downloadPolicy: DownloadPolicy
    /// The version folder, relative to the app group (`AssetPacks/<id>/<version>-<digest>-<install>`).
    public var directory: String
    /// The bytes its files take.
    public var installSize: Int64
    /// How many files it holds.
    public var fileCount: Int
    /// When it was installed.
    public var installedAt: Date
    /// The language of a localized pack, or `nil`.
    public var language: String? = nil
    /// For a pack installed from an Apple Archive: how many of its files carried their SHA-256 (`SH2`) and
    /// were checked against it. `nil` for a tar pack, every file of which was checked against its index.
    public var fileDigestsCarried: Int? = nil
    /// `true` for a localized pack that `sync` or ``AssetPackManager/reconcilePreferredLanguages()`` installed
    /// for the app's language; `nil` for one the app ensured by hand, which a language switch keeps (Apple:
    /// reconciling "won't remove any localized asset packs that you've downloaded manually"). An update keeps it.
    public var installedForLanguage: Bool? = nil
}

/// The app group's persistent state: what is installed, what is obsolete, the latest versions seen.
struct StoreState: Sendable, Codable {
    var formatVersion = 1
    var installed: [String: InstalledPack] = [:]
    /// Packs the server stopped listing; they cannot be downloaded again.
    var obsolete: Set<String> = []
    /// The newest version of each pack seen in a manifest, for offline status.
    var latestKnown: [String: Int] = [:]
    /// The language the app set (a BCP-47 tag), kept as a device keeps it: a later run given none uses it.
    var language: String? = nil
}

/// The packs of the manifest last fetched, kept in `.ba-sync/manifest.json` so that `assetPack(withID:)` and
/// `allAssetPacks` answer offline, as Apple's answer from what the system cached.
struct LastFetchedManifest: Codable, Sendable, Equatable {
    /// Where the manifest was fetched from.
    var url: URL
    /// Its packs, for every platform, sorted by ID.
    var packs: [AssetPack]
}

/// The layout of an app-group directory and its crash-safe state.
///
/// ```
/// AppGroup/
///   AssetPacks/<id>/<version>-<digest>-<install>/...       installed files (one folder per install, never reused)
///   AssetPacks/<id>/<version>-<digest>-<install>.index.json the pack's index: the merged namespace is built from these
///   .ba-sync/state.json                           installed packs (written by temp file, fsync, rename)
///   .ba-sync/lock                                 held while a process changes anything
///   .ba-sync/downloads/<id>.partial[.json]        a download in progress, kept to resume
///   .ba-sync/staging/                             extractions in progress, removed on recovery
/// ```
///
/// Every method blocks (file I/O): async code calls them through ``BlockingIO``.
public struct AppGroupStore: Sendable {
    /// The app-group directory.
    public let root: FilePath
    private let stateFile: StateFile<StoreState>
    /// Serialises read-modify-write of the state between the tasks of one process (other processes are
    /// kept out by the app group's lock).
    private let updates = SharedMutex()

    /// A handle on an app-group directory; nothing is created or read.
    public init(root: FilePath) {
        self.root = root
        self.stateFile = StateFile(root.appending(".ba-sync/state.json"))
    }

    var controlFolder: FilePath { root.appending(".ba-sync") }
    var packsFolder: FilePath { root.appending("AssetPacks") }
    var downloadsFolder: FilePath { controlFolder.appending("downloads") }
    var stagingFolder: FilePath { controlFolder.appending("staging") }
    var stateFilePath: FilePath { stateFile.path }
    var lockFile: FilePath { controlFolder.appending("lock") }

    func indexFile(for pack: InstalledPack) -> FilePath { root.appending(pack.directory + ".index.json") }

    /// The installed index of a pack, read as the state files are: relative to its pack folder (opened
    /// without following a link anywhere below the app group), never through a symlink at the file, never
    /// from a FIFO or a device, at most ``PackIndex/maximumFileSize`` bytes.
    /// - Throws: ``AssetPackFormatError`` with code `.io` (unreadable, not a regular file, too large, a link) or
    ///   `.corruptPack` (does not parse).
    func loadIndex(of pack: InstalledPack) throws -> PackIndex {
        BlockingIO.checkOffPool("AppGroupStore.loadIndex")
        let file = indexFile(for: pack)
        let relative = FilePath(pack.directory)
        let folder: FileDescriptor
        do {
            folder = try openFolder(relative.removingLastComponent().string, creating: false)
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot read the pack index \(file): \(error)")
        }
        return try folder.closeAfter {
            try PackIndex.load(named: (relative.lastComponent?.string ?? "") + ".index.json", in: folder, shownAs: file)
        }
    }

    /// Where the quick check's record of an installed version's files is kept (see
    /// `PackInstaller.recordStats`): `.ba-sync/stats/<id>/<version folder>`, out of the pack's folder, which
    /// holds its version folder and index only. Opened, listed and removed only relative to folders opened
    /// without following links (``openFolder(_:creating:)``).
    static func statsName(of pack: InstalledPack) -> (folder: String, name: String) {
        (".ba-sync/stats/\(pack.id)", FilePath(pack.directory).lastComponent?.string ?? "")
    }

    /// Removes the record of a version's stats; with `pack`, the pack's (empty) folder of records too.
    private func removeStats(of version: InstalledPack, pack: Bool) {
        let (folder, name) = Self.statsName(of: version)
        if let records = try? openFolder(folder, creating: false) {
            _ = unlinkat(records.rawValue, name, 0)
            try? records.close()
        }
        if pack, let stats = try? openFolder(".ba-sync/stats", creating: false) {
            _ = unlinkat(stats.rawValue, version.id, AT_REMOVEDIR)
            try? stats.close()
        }
    }

    /// Removes what this store makes before anything is installed (the lock, a state with no pack installed,
    /// the empty folders), then the app group's folder, each only while nothing else is in it (`rmdir`, never a
    /// recursive delete): after a command that failed in an app group it made (a server that did not answer,
    /// a mistyped path), no empty app group is left to be taken for one later.
    /// Every removal is relative to a folder opened without following links (``openFolder(_:creating:)``): a
    /// symlink planted as `.ba-sync` leads nowhere.
    public func removeIfEmpty() {
        BlockingIO.checkOffPool("AppGroupStore.removeIfEmpty")
        guard (try? loadState())?.installed.isEmpty ?? false else { return }
        if let control = try? openFolder(".ba-sync", creating: false) {
            for file in ["lock", "state.json"] { _ = unlinkat(control.rawValue, file, 0) }
            for folder in ["staging", "downloads", "stats"] { _ = unlinkat(control.rawValue, folder, AT_REMOVEDIR) }
            try? control.close()
        }
        if let top = try? FileDescriptor.openFolder(root) {
            for folder in [".ba-sync", "AssetPacks"] { _ = unlinkat(top.rawValue, folder, AT_REMOVEDIR) }
            try? top.close()
        }
        _ = rmdir(root.string)
    }

    /// Creates the store's folders if needed, each made and opened relative to the one above it: a symlink
    /// planted in place of one (`.ba-sync/staging` to a folder elsewhere) is refused, never followed.
    /// - Throws: ``AssetPackClientError`` with code `.io`.
    func createFolders() throws {
        BlockingIO.checkOffPool("AppGroupStore.createFolders")
        for folder in ["AssetPacks", ".ba-sync/downloads", ".ba-sync/staging"] {
            try openFolder(folder, creating: true).close()
        }
    }

    /// Opens the folder at `relative` inside the app group (made, with its parents, when `creating`) a
    /// component at a time, never through a symlink: a link planted anywhere below the app group (a pack's
    /// folder, a version folder, a folder inside an installed pack) is refused. The app group itself may be
    /// reached through a symlink the user chose.
    /// - Returns: A descriptor the caller closes.
    /// - Throws: ``AssetPackClientError`` with code `.io`, which says when a link or a file was in the way.
    func openFolder(_ relative: String, creating: Bool) throws -> FileDescriptor {
        BlockingIO.checkOffPool("AppGroupStore.openFolder")
        let path = root.appending(relative)
        do {
            if creating, !FileManager.default.fileExists(atPath: root.string) {
                try FileManager.default.createDirectory(atPath: root.string, withIntermediateDirectories: true)
            }
            let top = try FileDescriptor.openFolder(root)
            return try top.closeAfter { try top.openFolder(relative, creating: creating) }
        } catch let failure as Errno where failure == .tooManySymbolicLinkLevels || failure == .notDirectory {
            throw AssetPackClientError(
                code: .io,
                message:
                    "\(path) leads through a symlink or a file where ba-sync keeps a folder; nothing inside the app "
                    + "group is followed through a link. Fix: remove what is in the way (and find out who put it "
                    + "there), then run again",
                cause: failure
            )
        } catch let failure as Errno {
            throw AssetPackClientError.io("open", path, failure)
        } catch {
            throw AssetPackClientError.io("create", root, error)
        }
    }

    /// The state, empty when nothing was ever installed.
    /// - Throws: ``AssetPackClientError`` with code `.io` when the state file is damaged.
    func loadState() throws -> StoreState {
        BlockingIO.checkOffPool("AppGroupStore.loadState")
        do {
            // Relative to the app group's own folder, never through a link below it (as every state file here).
            guard let folder = try? openFolder(".ba-sync", creating: false) else {
                return try stateFile.load() ?? StoreState()  // no .ba-sync yet, or one in the way, said by load
            }
            return try folder.closeAfter { try stateFile.load(in: folder) } ?? StoreState()
        } catch let error as AssetPackFormatError {
            throw AssetPackClientError(
                code: .io,
                message:
                    "\(stateFile.path) is damaged or from a version of ba-sync this one does not understand. Fix: "
                    + "delete the app group's .ba-sync folder and sync again",
                cause: error.cause ?? error
            )
        }
    }

    /// Loads the state, lets `change` edit it, and saves it atomically if it returned normally; the tasks
    /// of this process take turns.
    /// - Returns: What `change` returns.
    /// - Throws: What `change` throws (nothing is saved), or ``AssetPackClientError`` with code `.io`.
    @discardableResult
    func update<T>(_ change: (inout StoreState) throws -> T) throws -> T {
        BlockingIO.checkOffPool("AppGroupStore.update")
        return try updates.withLock {
            var state = try loadState()
            let result = try change(&state)
            do {
                try stateFile.save(state)
            } catch let error as AssetPackFormatError {
                throw AssetPackClientError(code: .io, message: error.message, cause: error)
            }
            return result
        }
    }

    /// Removes an installed version's folder and index (after the state stopped naming them).
    func removeVersion(_ pack: InstalledPack) {
        BlockingIO.checkOffPool("AppGroupStore.removeVersion")
        try? FileManager.default.removeItem(atPath: root.appending(pack.directory).string)
        _ = unlink(indexFile(for: pack).string)
        removeStats(of: pack, pack: false)
    }

    /// Removes a pack that is no longer installed: its version folder and index, and its folder under
    /// `AssetPacks/`.
    func removePack(_ pack: InstalledPack) {
        BlockingIO.checkOffPool("AppGroupStore.removePack")
        removeVersion(pack)
        try? FileManager.default.removeItem(atPath: packsFolder.appending(pack.id).string)
        removeStats(of: pack, pack: true)
    }

    /// Takes a pack out of the state and removes its files; `nil` when it is not installed. On a full disk
    /// the state file cannot be rewritten, so the pack's folder is moved out of the way (a rename needs no
    /// space) and deleted first, and the state written then: the command that frees space works when space
    /// has run out. A crash in between leaves a state that names a missing folder, which recovery drops.
    func removeInstalled(_ id: String) throws -> InstalledPack? {
        BlockingIO.checkOffPool("AppGroupStore.removeInstalled")
        guard try loadState().installed[id] != nil else { return nil }  // nothing to change: nothing written
        do {
            guard let removed = try update({ $0.installed.removeValue(forKey: id) }) else { return nil }
            removePack(removed)
            return removed
        } catch  where AssetPackClientError.isDiskFull(error) {
            guard let pack = try loadState().installed[id] else { return nil }
            let trash = stagingFolder.appending("removing-\(id)-\(UUID().uuidString)")
            if rename(packsFolder.appending(id).string, trash.string) == 0 {
                try? FileManager.default.removeItem(atPath: trash.string)
                _ = unlink(indexFile(for: pack).string)
            }
            guard let removed = try update({ $0.installed.removeValue(forKey: id) }) else { return nil }
            removePack(removed)
            return removed
        }
    }

    /// The manifest last fetched into this app group, for offline answers; `nil` when none was, or the file
    /// is damaged (it is only a cache).
    /// Read as the state is, inside the app group's own folder: never through a symlink, never from a FIFO.
    func lastFetchedManifest() throws -> LastFetchedManifest? {
        BlockingIO.checkOffPool("AppGroupStore.lastFetchedManifest")
        guard let folder = try? openFolder(".ba-sync", creating: false) else { return nil }
        defer { try? folder.close() }
        return try? lastFetchedManifestFile.load(in: folder)
    }

    private var lastFetchedManifestFile: StateFile<LastFetchedManifest> {
        StateFile(controlFolder.appending("manifest.json"))
    }

    /// Keeps the packs of a manifest just fetched (when they differ from those kept), for offline answers. An
    /// app group that does not exist yet is not created for it: a device keeps what the app's container holds.
    /// - Throws: ``AssetPackClientError`` with code `.io`, or ``AssetPackFormatError``.
    func keepFetchedManifest(_ packs: [String: AssetPack], from url: URL) throws {
        BlockingIO.checkOffPool("AppGroupStore.keepFetchedManifest")
        guard FileManager.default.fileExists(atPath: root.string) else { return }
        let kept = LastFetchedManifest(url: url, packs: packs.values.sorted { $0.id < $1.id })
        let folder = try openFolder(".ba-sync", creating: true)
        defer { try? folder.close() }
        guard (try? lastFetchedManifestFile.load(in: folder)) != kept else { return }
        try lastFetchedManifestFile.save(kept, in: folder)
    }

    /// Removes what a crashed or killed run left behind: staging folders, temporary files of atomic writes,
    /// and version folders that the state does not name. Partial downloads are kept to resume. A symlink
    /// found where a pack's folder belongs is removed (the link, never what it points to), and a pack whose
    /// folder is not a folder of the app group's own is no longer installed.
    /// - Throws: ``AssetPackClientError`` when the state cannot be read.
    func recover() throws {
        BlockingIO.checkOffPool("AppGroupStore.recover")
        var state = try loadState()
        // A pack whose folder is gone (a removal on a full disk that was cut short), or reached only through a
        // link, is not installed.
        let missing = state.installed.values.filter { pack in
            guard let folder = try? openFolder(pack.directory, creating: false) else { return true }
            try? folder.close()
            return false
        }
        if !missing.isEmpty {
            state = try update { state in
                for pack in missing { state.installed[pack.id] = nil }
                return state
            }
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: stagingFolder.string)) ?? [] {
            try? FileManager.default.removeItem(atPath: stagingFolder.appending(name).string)
        }
        // Temporary files of an atomic write that was killed before its rename (`.<name>.tmp-<pid>-<n>`).
        for folder in [controlFolder, downloadsFolder] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.string)) ?? []
            where name.hasPrefix(".") && name.contains(".tmp-") {
                try? FileManager.default.removeItem(atPath: folder.appending(name).string)
            }
        }
        let live = Set(state.installed.values.flatMap { [$0.directory, $0.directory + ".index.json"] })
        // Records of versions no longer installed (a run killed between its commit and its removal of the
        // version it replaced).
        // Every folder is opened without following links and every name removed relative to it: a link planted
        // in place of a folder of records is removed itself, and what it points to is neither listed nor swept.
        let liveStats = Set(state.installed.values.map { Self.statsName(of: $0) }.map { $0.folder + "/" + $0.name })
        if let stats = try? openFolder(".ba-sync/stats", creating: false) {
            defer { try? stats.close() }
            for id in (try? stats.entryNames()) ?? [] {
                guard let records = try? stats.openFolder(id, creating: false) else {
                    _ = unlinkat(stats.rawValue, id, 0)  // a link or a file: removed itself
                    continue
                }
                defer { try? records.close() }
                for name in (try? records.entryNames()) ?? [] where !liveStats.contains(".ba-sync/stats/\(id)/\(name)")
                {
                    _ = unlinkat(records.rawValue, name, 0)
                }
            }
        }
        for id in (try? FileManager.default.contentsOfDirectory(atPath: packsFolder.string)) ?? [] {
            let folder = packsFolder.appending(id)
            var info = stat()
            guard lstat(folder.string, &info) == 0 else { continue }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                _ = unlink(folder.string)  // a link or a file: removed itself, nothing it points to
                continue
            }
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder.string)) ?? []
            for name in entries where !live.contains("AssetPacks/\(id)/\(name)") {
                try? FileManager.default.removeItem(atPath: folder.appending(name).string)
            }
            if state.installed[id] == nil { try? FileManager.default.removeItem(atPath: folder.string) }
        }
    }
}

/// A lock shared by copies of a value type (the store is copied into every task that uses it).
final class SharedMutex: Sendable {
    private let mutex = Mutex(())

    func withLock<T>(_ body: () throws -> T) throws -> T {
        try mutex.withLock { _ in try body() }
    }
}
