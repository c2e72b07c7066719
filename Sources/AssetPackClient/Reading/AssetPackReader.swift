import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Reads installed packs through one merged namespace, as `AssetPackManager`'s reads do on a device: no
/// server, no lock, nothing written. ``AssetPackManager`` reads through one of these; a tool that only reads
/// (`ba-sync cat`, `verify`, `bench`) uses one directly.
///
/// Reads are synchronous and thread-safe. The namespace is rebuilt when the app group's state changes
/// (another process, or this one, installed or removed a pack); a read that loses a race with an update
/// (the folder it resolved was removed under it) looks again once.
public final class AssetPackReader: Sendable {
    /// The app group.
    public let store: AppGroupStore
    /// The namespace last built, what reads see in it (made with the namespace), and the language set.
    let view: Mutex<(namespace: Namespace?, scope: ReadScope?, language: LanguageTag?)>
    /// The state file's path, made once: every read checks it.
    let stateFilePath: String
    /// The environment's languages (``LanguageTag/preferredLanguages(in:)``), most preferred first, taken
    /// when none was set or remembered.
    public let environmentLanguages: [LanguageTag]

    /// Opens an app group for reading; nothing is created.
    /// - Parameters:
    ///   - language: The language the app set (Apple's `resolvedLanguage` setter). `nil` takes the one the app
    ///     group remembers (the last a manager was given), else the environment's.
    ///   - primaryLanguage: The app's primary language, resolved to when the preferred one matches no
    ///     installed localized pack (Apple's `AssetPackManifest.primaryLanguage`).
    ///   - collisions: Which pack a path held by several packs is read from.
    ///   - environment: Where the preferred languages come from when none was set or remembered.
    public init(
        appGroup: FilePath,
        language: LanguageTag? = nil,
        primaryLanguage: LanguageTag = .english,
        collisions: CollisionRule = .first,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.store = AppGroupStore(root: appGroup)
        self.stateFilePath = store.stateFilePath.string
        self.environmentLanguages = LanguageTag.preferredLanguages(in: environment)
        self.primaryLanguage = primaryLanguage
        self.collisions = collisions
        self.view = Mutex((nil, nil, language))
    }

    private let followsSystem = Mutex(false)

    /// The language the app set, if any; setting it changes what later reads see (and a manager keeps it in
    /// the app group at its next change there).
    public var language: LanguageTag? {
        get { view.withLock { $0.language } }
        set {
            view.withLock {
                $0.language = newValue
                $0.scope = nil
            }
        }
    }

    /// Goes back to the system's preferred languages (Apple's `resolvedLanguage = nil`): the language set and
    /// the one the app group remembers are both set aside, and a manager forgets the remembered one at its
    /// next change there.
    public func useSystemLanguage() {
        view.withLock {
            $0.language = nil
            $0.scope = nil
        }
        followsSystem.withLock { $0 = true }
    }

    /// Whether the app went back to the system's languages since the app group last remembered one.
    public var followsSystemLanguage: Bool { followsSystem.withLock { $0 } && language == nil }

    /// The languages of the localized packs this app group knows of: installed, or listed by the manifest last
    /// fetched into it (what Apple's resolved language is chosen among: "the languages available in the
    /// app's localized asset packs").
    public var knownLanguages: [LanguageTag] {
        var tags = Set((try? currentNamespace())?.localizedLanguages ?? [])
        if let last = try? store.lastFetchedManifest() {
            for pack in last.packs {
                if let tag = pack.language.flatMap({ try? LanguageTag(parsing: $0) }) { tags.insert(tag) }
            }
        }
        return tags.sorted { $0.description < $1.description }
    }

    /// The app's primary language: the fallback of the resolved language.
    public let primaryLanguage: LanguageTag

    /// The languages the app prefers, most preferred first: the one set, else the one the app group
    /// remembers, else the environment's.
    public var preferredLanguages: [LanguageTag] {
        preferredLanguages(remembered: language == nil ? (try? currentNamespace())?.rememberedLanguage : nil)
    }

    /// The language the app prefers most (see ``preferredLanguages``).
    public var preferredLanguage: LanguageTag { preferredLanguages.first ?? primaryLanguage }

    func preferredLanguages(remembered: LanguageTag?) -> [LanguageTag] {
        if let language { return [language] }
        if let remembered, !followsSystemLanguage { return [remembered] }
        return environmentLanguages
    }

    /// The language of the installed localized packs that best matches ``preferredLanguage``, else the primary
    /// language (Apple's `resolvedLanguage`): reads prefer its packs. `nil` when no installed localized pack
    /// has either.
    public var resolvedLanguage: LanguageTag? {
        guard let view = try? currentNamespace() else { return nil }
        return resolvedLanguage(in: view, preferring: language)
    }

    func resolvedLanguage(in view: Namespace, preferring language: LanguageTag?) -> LanguageTag? {
        LanguageTag.bestMatch(
            preferred: preferredLanguages(remembered: view.rememberedLanguage),
            available: view.localizedLanguages,
            primary: primaryLanguage
        )
    }

    /// Which pack a path held by several packs is read from.
    public let collisions: CollisionRule

    /// The languages of the installed localized packs (Apple's `locallyAvailableLanguages`), sorted.
    public var locallyAvailableLanguages: [String] {
        Set(installedPacks.compactMap(\.language)).sorted()
    }

    /// Every installed pack, sorted by ID.
    public var installedPacks: [InstalledPack] {
        ((try? currentNamespace())?.installed.values).map { $0.sorted { $0.id < $1.id } } ?? []
    }

    /// The installed pack record, if any.
    public func installedPack(withID id: String) -> InstalledPack? {
        (try? currentNamespace())?.installed[id]
    }

    /// Whether the pack is installed.
    public func assetPackIsAvailableLocally(withID id: String) -> Bool {
        installedPack(withID: id) != nil
    }

    /// The installed folder of a pack.
    public func folder(of pack: InstalledPack) -> FilePath { store.root.appending(pack.directory) }

    // MARK: Reads

    /// The contents of a file in the merged namespace (Apple's `contents(at:searchingInAssetPackWithID:options:)`).
    ///
    /// By default the `Data` is backed by a memory mapping of the installed file: no copy, and pages are read
    /// only when touched. A mapping taken before an update or a removal keeps the bytes it had.
    /// - Parameters:
    ///   - path: A path relative to the namespace root, e.g. `Levels/World1/level.json`.
    ///   - assetPackID: Read from this pack only; otherwise every installed pack is searched (Apple: "all asset
    ///     packs"), and a path in several packs resolves to a localized pack of the resolved language, else
    ///     an unlocalized one, else one of another language; among several of those, the collision rule
    ///     chooses (by default the ID that sorts first).
    ///   - options: `.mappedIfSafe` or `.alwaysMapped` map (the default); anything else reads a copy.
    /// - Returns: The file's bytes.
    /// - Throws: ``AssetPackClientError`` with code `.fileNotFound`, `.invalidPath` or `.io`.
    public func contents(
        at path: FilePath,
        searchingInAssetPackWithID assetPackID: String? = nil,
        options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        try contents(at: path, assetPackID, scope: nil, options: options)
    }

    /// The contents of a file as localized for `language` (Apple's `contents(at:asLocalizedFor:options:)`):
    /// from a localized pack of that language only, as Apple's searches "only the downloaded asset packs that
    /// are localized in the specified language" (an unlocalized pack holding the path is not read).
    /// - Parameter language: A BCP-47 tag; `en` matches `en-US` but not `en-CA`.
    /// - Throws: ``AssetPackClientError`` with code `.invalidLanguage`, `.fileNotFound`, `.invalidPath`,
    ///   `.pathCollision` or `.io`.
    public func contents(
        at path: FilePath,
        asLocalizedFor language: String,
        options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        try contents(at: path, nil, scope: try scope(for: language), options: options)
    }

    func contents(at path: FilePath, _ assetPackID: String?, scope: ReadScope?, options: Data.ReadingOptions)
        throws -> Data
    {
        let (fd, file, size) = try openInstalled(path, assetPackID, scope: scope)
        defer { try? fd.close() }
        if size == 0 { return Data() }  // mmap cannot map zero bytes
        if !options.contains(.mappedIfSafe) && !options.contains(.alwaysMapped) {
            var copy = Data(count: size)
            let count = try copy.withUnsafeMutableBytes { bytes in
                do {
                    return try fd.readFully(into: bytes)
                } catch {
                    throw AssetPackClientError.io("read", FilePath(file), error)
                }
            }
            return count == size ? copy : copy.prefix(count)
        }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd.rawValue, 0), base != MAP_FAILED else {
            throw AssetPackClientError.io("map", FilePath(file), Errno(rawValue: errno))
        }
        return Data(
            bytesNoCopy: base,
            count: size,
            deallocator: .custom { pointer, count in _ = munmap(pointer, count) }
        )
    }

    /// An open, read-only descriptor of a file in the merged namespace (Apple's `descriptor(for:)`); the
    /// caller closes it. It keeps reading the bytes it had across an update or a removal.
    /// - Throws: ``AssetPackClientError`` with code `.fileNotFound`, `.invalidPath` or `.io`.
    public func descriptor(for path: FilePath, searchingInAssetPackWithID assetPackID: String? = nil) throws
        -> FileDescriptor
    {
        try openInstalled(path, assetPackID, handedOut: true).fd
    }

    /// A descriptor of a file as localized for `language` (Apple's `descriptor(for:asLocalizedFor:)`): see
    /// ``contents(at:asLocalizedFor:options:)``.
    public func descriptor(for path: FilePath, asLocalizedFor language: String) throws -> FileDescriptor {
        try openInstalled(path, nil, scope: try scope(for: language), handedOut: true).fd
    }

    /// The URL of a file or folder in the merged namespace (Apple's `url(for:)`).
    ///
    /// A file resolves like ``contents(at:searchingInAssetPackWithID:options:)``. As Apple's, it returns a
    /// well-formed URL when nothing is there: a path under `<app group>/.ba-sync/absent/` that never exists.
    /// A folder held by one pack resolves to that pack's folder. A folder split across packs resolves, as
    /// Apple's "merges the corresponding slices … from all downloaded asset packs", to a merged folder made
    /// for this call under `<app group>/.ba-sync/views/<pid>/`: each file the namespace holds below it,
    /// hard-linked from the pack the read resolves it to (the collision rule chooses, as for a file). Do not
    /// keep the URL beyond the current process: an update moves the pack to a new folder, and a later run
    /// sweeps the views of processes that ended.
    /// - Throws: ``AssetPackClientError`` with code `.invalidPath` or `.pathCollision`.
    public func url(for path: FilePath) throws -> URL {
        try url(for: path, scope: nil)
    }

    /// The URL of a file or folder as localized for `language` (Apple's `url(for:asLocalizedFor:)`): see
    /// ``url(for:)`` and ``contents(at:asLocalizedFor:options:)``.
    public func url(for path: FilePath, asLocalizedFor language: String) throws -> URL {
        try url(for: path, scope: try scope(for: language))
    }

    func url(for path: FilePath, scope: ReadScope?) throws -> URL {
        let relative = try namespacePath(path)
        let (view, defaultScope) = try currentView()
        let scope = scope ?? defaultScope
        if let (_, file) = try view.locate(relative, in: nil, as: scope) {
            return URL(fileURLWithPath: file)
        }
        if view.folderHolders(of: relative, as: scope).count > 1 {
            return try mergedFolder(relative, view: view, scope: scope)
        }
        if let pack = try view.folderHolder(of: relative, as: scope) {
            return URL(fileURLWithPath: folder(of: pack).appending(relative).string, isDirectory: true)
        }
        return URL(fileURLWithPath: store.controlFolder.appending("absent").string + "/" + relative)
    }

    /// Which installed pack a path (file or folder) resolves to, if any.
    public func assetPackID(containing path: FilePath) throws -> String? {
        let relative = try namespacePath(path)
        let (view, scope) = try currentView()
        return try (view.holder(of: relative, in: nil, as: scope) ?? view.folderHolder(of: relative, as: scope))?.id
    }

    /// The namespace paths of every installed file of one pack, or of every installed pack, in byte order.
    /// - Throws: ``AssetPackClientError`` with code `.assetPackNotFound` for a pack that is not installed.
    public func paths(inAssetPackWithID assetPackID: String? = nil) throws -> [String] {
        let (view, scope) = try currentView()
        if let assetPackID, view.installed[assetPackID] == nil {
            throw AssetPackClientError(
                code: .assetPackNotFound,
                message: "pack \(assetPackID) is not installed in \(store.root). Fix: `ba-sync ensure \(assetPackID)`",
                assetPackID: assetPackID
            )
        }
        let paths = view.files.compactMap { path, holders in
            assetPackID.map { holders.contains($0) } ?? view.isVisible(holders, as: scope) ? path : nil
        }
        return paths.sorted().map(\.path)
    }

    /// Where the file a namespace path resolves to is installed.
    /// - Throws: ``AssetPackClientError`` with code `.fileNotFound` or `.invalidPath`.
    public func installedFile(at path: FilePath, searchingInAssetPackWithID assetPackID: String? = nil) throws
        -> FilePath
    {
        let (view, scope) = try currentView()
        return FilePath(try resolve(path, assetPackID, namespace: view, scope: scope))
    }
}

extension FileDescriptor {
    /// Reads from offset 0 into `buffer` until it is full or the file ends; returns the bytes read.
    fileprivate func readFully(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var filled = 0
        while filled < buffer.count {
            let count = try read(
                fromAbsoluteOffset: Int64(filled),
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]),
                retryOnInterrupt: true
            )
            if count == 0 { break }
            filled += count
        }
        return filled
    }
}
