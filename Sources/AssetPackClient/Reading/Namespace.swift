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
/// Which packs a read sees: a read for a language (`asLocalizedFor:`) sees only the localized packs of that
/// language. Any other read sees every pack, and a path several packs hold resolves to a localized pack of
/// the resolved language, else to an unlocalized pack, else to the packs of other languages. Among several
/// packs that a read sees, the ``CollisionRule`` chooses, unless the caller names a pack.
final class Namespace: Sendable {
    /// Identity of the state file this view was built from (inode and change time).
    let stateIdentity: StateIdentity
    let installed: [String: InstalledPack]
    /// Path → IDs of the packs that hold it, in rule order. Keys compare as bytes: names are never
    /// normalized, so `é` typed as U+00E9 does not find a file named `e` + U+0301.
    let files: [PathKey: [String]]
    /// Folder path → IDs of the packs with something below it, in rule order.
    let folders: [PathKey: [String]]
    /// Pack ID → the language of a localized pack, maximized (`en` as `en-Latn-US`) to compare.
    let languages: [String: LanguageTag]
    /// The languages of the installed localized packs, as published, sorted.
    let localizedLanguages: [LanguageTag]
    /// The language the app set, kept in the state (a later run given none uses it).
    let rememberedLanguage: LanguageTag?
    /// Pack ID → its installed folder as a string ending in `/`, so that a lookup builds a file's path by
    /// concatenation (`FilePath.appending` normalises as it goes and cost more than the rest of a lookup).
    private let packRoots: [String: String]

    init(store: AppGroupStore, state: StoreState, stateIdentity: StateIdentity) throws {
        self.stateIdentity = stateIdentity
        self.installed = state.installed
        var files: [PathKey: [String]] = [:]
        var folders: [PathKey: Set<String>] = [:]
        for pack in state.installed.values.sorted(by: { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }) {
            let file = store.indexFile(for: pack)
            let index: PackIndex
            do {
                index = try store.loadIndex(of: pack)
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
        self.languages = state.installed.compactMapValues { pack in
            pack.language.flatMap { try? LanguageTag(parsing: $0).maximized }
        }
        self.localizedLanguages = Set(state.installed.values.compactMap { $0.language }).sorted()
            .compactMap { try? LanguageTag(parsing: $0) }
        self.rememberedLanguage = state.language.flatMap { try? LanguageTag(parsing: $0) }
    }

    /// The pack a read of `path` resolves to (`packID`'s, when given), and the installed file's path.
    /// - Throws: ``AssetPackClientError`` with code `.pathCollision` when the rule is `fail` and several packs
    ///   the read sees hold the path.
    func locate(_ path: String, in packID: String?, as scope: ReadScope) throws -> (pack: InstalledPack, file: String)?
    {
        guard let pack = try holder(of: path, in: packID, as: scope), let root = packRoots[pack.id] else { return nil }
        return (pack, root + path)
    }

    /// The pack a read of file `path` resolves to (`packID`'s, when given), without building any path.
    /// - Throws: ``AssetPackClientError`` with code `.pathCollision`, as ``locate(_:in:as:)``.
    func holder(of path: String, in packID: String?, as scope: ReadScope) throws -> InstalledPack? {
        try choose(files[PathKey(path)], path: path, in: packID, as: scope)
    }

    /// The pack whose slice of folder `path` a read resolves to, as ``holder(of:in:as:)`` for files.
    func folderHolder(of path: String, as scope: ReadScope) throws -> InstalledPack? {
        try choose(folders[PathKey(path)], path: path, in: nil, as: scope)
    }

    private func choose(_ holders: [String]?, path: String, in packID: String?, as scope: ReadScope) throws
        -> InstalledPack?
    {
        guard let holders else { return nil }
        if let packID { return holders.contains(packID) ? installed[packID] : nil }
        let seen = visible(holders, as: scope)
        guard let first = seen.first else { return nil }
        if seen.count == 1 { return installed[first] }
        switch scope.collisions {
        case .first:
            return installed[first]
        case .shuffle:
            return installed[seen[scope.collisions.winner(of: seen.count, path: path)]]
        case .fail:
            var error = AssetPackClientError(
                code: .pathCollision,
                message:
                    "\(path) is in \(seen.count) installed packs (\(seen.joined(separator: ", "))), and which one a read "
                    + "gets is undefined on a device (the collision rule here is fail). Fix: read it from one pack "
                    + "(--pack ID, searchingInAssetPackWithID:), or give each pack its own paths"
            )
            error.path = FilePath(path)
            throw error
        }
    }

    /// The packs with something below folder `path` that a read sees, in rule order.
    func folderHolders(of path: String, as scope: ReadScope) -> [String] {
        folders[PathKey(path)].map { visible($0, as: scope) } ?? []
    }

    /// The namespace paths of the files below folder `path`, in byte order.
    func files(below path: String) -> [String] {
        let prefix = path + "/"
        // As bytes: String's hasPrefix compares canonically, and would take `Cafe\u{301}/` for `Caf\u{E9}/`.
        return files.keys.filter { $0.path.utf8.starts(with: prefix.utf8) }.sorted().map(\.path)
    }

    /// Whether a read sees any of these holders of a path.
    func isVisible(_ holders: [String], as scope: ReadScope) -> Bool { !visible(holders, as: scope).isEmpty }

    /// The holders a read sees: for a read for a language, the localized packs of that language; else those
    /// of the resolved language when any holds the path, else the unlocalized ones, else all.
    private func visible(_ holders: [String], as scope: ReadScope) -> [String] {
        if scope.only {
            guard let language = scope.language else { return [] }
            return holders.filter { languages[$0] == language }
        }
        if holders.count == 1 { return holders }  // the common case, without building arrays
        if let language = scope.language {
            let localized = holders.filter { languages[$0] == language }
            if !localized.isEmpty { return localized }
        }
        let unlocalized = holders.filter { languages[$0] == nil }
        return unlocalized.isEmpty ? holders : unlocalized
    }

    /// The identity of a state file: changes with every atomic rewrite (a new inode each time).
    static func identity(of file: String) -> StateIdentity {
        var info = stat()
        guard stat(file, &info) == 0 else {
            return StateIdentity(inode: 0, changed: 0, changedNanoseconds: 0, size: -1)
        }
        return StateIdentity(
            inode: UInt64(info.st_ino),
            changed: Int64(info.st_ctim.tv_sec),
            changedNanoseconds: Int64(info.st_ctim.tv_nsec),
            size: Int64(info.st_size)
        )
    }

    /// What tells one state file from the next (checked on every read, so a value, not an array: no allocation).
    struct StateIdentity: Equatable, Sendable {
        var inode: UInt64
        var changed: Int64
        var changedNanoseconds: Int64
        var size: Int64
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

/// What a read sees: the language whose packs come first (maximized), whether it sees only those, and the
/// rule among several packs holding a path.
struct ReadScope: Sendable {
    /// The language whose localized packs the read prefers (or, with `only`, is limited to), maximized;
    /// `nil` when none is resolved.
    var language: LanguageTag?
    /// Whether the read sees only the packs of `language` (Apple's `asLocalizedFor:`).
    var only: Bool
    /// The read's language as given, for messages.
    var given: LanguageTag?
    var collisions: CollisionRule

    /// A read that prefers the packs of the resolved language `resolved`, and sees every pack.
    init(resolved: LanguageTag?, collisions: CollisionRule) {
        self.language = resolved?.maximized
        self.only = false
        self.given = resolved
        self.collisions = collisions
    }

    /// A read of only the packs localized in `language` (`en` takes `en-US` packs, not `en-CA` ones).
    init(only language: LanguageTag, collisions: CollisionRule) {
        self.language = language.maximized
        self.only = true
        self.given = language
        self.collisions = collisions
    }
}
