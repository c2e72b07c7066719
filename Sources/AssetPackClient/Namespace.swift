import AssetPackFormat
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The merged namespace of the installed packs at one state of the app group: every path mapped to the
/// packs that hold it, built from the index each pack saved at install time, so a lookup never scans
/// folders.
///
/// Collision rule: a path that several packs hold resolves to the pack whose ID sorts first (byte order),
/// unless the caller names a pack.
final class Namespace: Sendable {
    /// Identity of the state file this view was built from (inode and change time).
    let stateIdentity: [Int64]
    let installed: [String: InstalledPack]
    /// Path → IDs of the packs that hold it, in rule order. Keys compare as bytes: names are never
    /// normalized, so `é` typed as U+00E9 does not find a file named `e` + U+0301.
    let files: [PathKey: [String]]
    /// Folder path → IDs of the packs with something below it, in rule order.
    let folders: [PathKey: [String]]
    /// Pack ID → its installed folder as a string ending in `/`, so that a lookup builds a file's path by
    /// concatenation (`FilePath.appending` normalises as it goes and cost more than the rest of a lookup).
    private let packRoots: [String: String]

    init(store: AppGroupStore, state: StoreState, stateIdentity: [Int64]) throws {
        self.stateIdentity = stateIdentity
        self.installed = state.installed
        var files: [PathKey: [String]] = [:]
        var folders: [PathKey: Set<String>] = [:]
        for pack in state.installed.values.sorted(by: { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }) {
            let file = store.indexFile(for: pack)
            let index: PackIndex
            do {
                index = try PackIndex.load(from: file)
            } catch {
                throw AssetPackClientError(
                    code: .io,
                    message:
                        "the index of installed pack \(pack.id) (\(file)) is unreadable. Fix: `ba-sync remove \(pack.id)` and ensure it again",
                    assetPackID: pack.id,
                    cause: error
                )
            }
            for row in index.files {
                files[PathKey(row.path), default: []].append(pack.id)
                var folder = Substring(row.path).utf8
                while let slash = folder.lastIndex(of: UInt8(ascii: "/")) {
                    folder = folder[..<slash]
                    folders[PathKey(String(Substring(folder))), default: []].insert(pack.id)
                }
            }
        }
        self.files = files
        self.packRoots = state.installed.mapValues { store.root.appending($0.directory).string + "/" }
        self.folders = folders.mapValues { $0.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
    }

    /// The pack that holds `path` by the collision rule (or `packID`), and the installed file's path.
    func locate(_ path: String, in packID: String?) -> (pack: InstalledPack, file: String)? {
        guard let pack = holder(of: path, in: packID), let root = packRoots[pack.id] else { return nil }
        return (pack, root + path)
    }

    /// The pack that holds `path` by the collision rule (or `packID`), without building any path.
    func holder(of path: String, in packID: String?) -> InstalledPack? {
        guard let holders = files[PathKey(path)] else { return nil }
        let id: String
        if let packID {
            guard holders.contains(packID) else { return nil }
            id = packID
        } else {
            guard let first = holders.first else { return nil }
            id = first
        }
        return installed[id]
    }

    /// The identity of a state file: changes with every atomic rewrite (a new inode each time).
    static func identity(of file: String) -> [Int64] {
        var info = stat()
        guard stat(file, &info) == 0 else { return [] }
        return [Int64(info.st_ino), Int64(info.st_ctim.tv_sec), Int64(info.st_ctim.tv_nsec), Int64(info.st_size)]
    }
}

/// Checks a path given to a read: relative, no `..`, normalised.
func namespacePath(_ path: FilePath) throws -> String {
    guard let normalized = PackPath.normalize(path.string), !path.isAbsolute else {
        throw AssetPackClientError(
            code: .invalidPath,
            message: "\(path) is not a relative path inside the asset namespace (absolute, empty, or with '..')"
        )
    }
    return normalized
}
