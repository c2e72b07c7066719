import AssetPackFormat
import Foundation
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
    /// The archive's SHA-256 it was installed from.
    public var sha256: String
    /// Its download policy.
    public var downloadPolicy: DownloadPolicy
    /// The version folder, relative to the app group (`AssetPacks/<id>/<version>-<digest>`).
    public var directory: String
    /// The bytes its files take.
    public var installSize: Int64
    /// How many files it holds.
    public var fileCount: Int
    /// When it was installed.
    public var installedAt: Date
}

/// The app group's persistent state: what is installed, what is obsolete, the latest versions seen.
struct StoreState: Sendable, Codable {
    var formatVersion = 1
    var installed: [String: InstalledPack] = [:]
    /// Packs the server stopped listing; they cannot be downloaded again.
    var obsolete: Set<String> = []
    /// The newest version of each pack seen in a manifest, for offline status.
    var latestKnown: [String: Int] = [:]
}

/// The layout of an app-group directory and its crash-safe state.
///
/// ```
/// AppGroup/
///   AssetPacks/<id>/<version>-<digest>/...       installed files (one folder per version, immutable)
///   AssetPacks/<id>/<version>-<digest>.index.json the pack's index: the merged namespace is built from these
///   .ba-sync/state.json                           installed packs (written by temp file, fsync, rename)
///   .ba-sync/lock                                 held while a process changes anything
///   .ba-sync/downloads/<id>.partial[.json]        a download in progress, kept to resume
///   .ba-sync/staging/                             extractions in progress, removed on recovery
/// ```
public struct AppGroupStore: Sendable {
    /// The app-group directory.
    public let root: FilePath

    /// Creates the store's folders if needed.
    /// - Throws: ``AssetPackClientError`` with code `.io`.
    public init(root: FilePath) throws {
        self.root = root
        for folder in [packsFolder, downloadsFolder, stagingFolder] {
            do {
                try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
            } catch {
                throw AssetPackClientError.io("create", folder, error)
            }
        }
    }

    var controlFolder: FilePath { root.appending(".ba-sync") }
    var packsFolder: FilePath { root.appending("AssetPacks") }
    var downloadsFolder: FilePath { controlFolder.appending("downloads") }
    var stagingFolder: FilePath { controlFolder.appending("staging") }
    var stateFile: FilePath { controlFolder.appending("state.json") }
    var lockFile: FilePath { controlFolder.appending("lock") }

    func indexFile(for pack: InstalledPack) -> FilePath { root.appending(pack.directory + ".index.json") }

    func loadState() throws -> StoreState {
        guard let data = FileManager.default.contents(atPath: stateFile.string) else { return StoreState() }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(StoreState.self, from: data)
        } catch {
            throw AssetPackClientError(
                code: .io,
                message: "\(stateFile) is damaged. Fix: delete the app group's .ba-sync folder and sync again",
                cause: error
            )
        }
    }

    func saveState(_ state: StoreState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        encoder.dateEncodingStrategy = .iso8601
        do {
            try AtomicFile.write(try encoder.encode(state), to: stateFile)
        } catch let error as AssetPackFormatError {
            throw AssetPackClientError(code: .io, message: error.message, cause: error)
        }
    }

    /// Removes what a crashed or killed run left behind: staging folders, temporary files of atomic writes,
    /// and version folders that the state does not name. Partial downloads are kept to resume.
    func recover(_ state: StoreState) {
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
        for id in (try? FileManager.default.contentsOfDirectory(atPath: packsFolder.string)) ?? [] {
            let folder = packsFolder.appending(id)
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder.string)) ?? []
            for name in entries where !live.contains("AssetPacks/\(id)/\(name)") {
                try? FileManager.default.removeItem(atPath: folder.appending(name).string)
            }
            if state.installed[id] == nil { try? FileManager.default.removeItem(atPath: folder.string) }
        }
    }
}

/// The app group's exclusive lock (the counterpart of Apple's `withExclusiveControl`): an `flock` on
/// `.ba-sync/lock`, held by one process at a time while it changes anything. The holder's PID is written
/// into the file so that a waiting process can say who it waits for.
final class AppGroupLock: Sendable {
    private let fd: FileDescriptor

    private init(fd: FileDescriptor) { self.fd = fd }

    /// Takes the lock, waiting for another holder; `onWait` is called once with its PID before waiting.
    static func acquire(_ store: AppGroupStore, onWait: @Sendable (Int32?) -> Void) async throws -> AppGroupLock {
        let path = store.lockFile
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(
                path,
                .readWrite,
                options: [.create],
                permissions: [.ownerReadWrite, .groupRead]
            )
        } catch {
            throw AssetPackClientError.io("open the lock", path, error)
        }
        if flock(fd.rawValue, LOCK_EX | LOCK_NB) != 0 {
            let holder = (try? String(contentsOfFile: path.string, encoding: .utf8))
                .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            onWait(holder)
            let raw = fd.rawValue
            let status = await withCheckedContinuation { continuation in
                Thread.detachNewThread { continuation.resume(returning: flock(raw, LOCK_EX)) }
            }
            if status != 0 {
                try? fd.close()
                throw AssetPackClientError.io("lock", path, Errno(rawValue: errno))
            }
        }
        _ = ftruncate(fd.rawValue, 0)
        _ = try? fd.writeAll(toAbsoluteOffset: 0, Array("\(getpid())\n".utf8))
        return AppGroupLock(fd: fd)
    }

    func release() {
        _ = ftruncate(fd.rawValue, 0)
        _ = flock(fd.rawValue, LOCK_UN)
        try? fd.close()
    }
}
