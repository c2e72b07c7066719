import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The merged namespace behind the reads: rebuilt when the state changes, scoped to a language, and the
/// lookup of a path in it.
extension AssetPackReader {
    /// The merged namespace at the current state, rebuilt only when the state file changed (or when
    /// `refresh` asks for it).
    func currentNamespace(refresh: Bool = false) throws -> Namespace {
        try currentView(refresh: refresh).namespace
    }

    /// The current namespace and what reads see in it.
    func currentView(refresh: Bool = false) throws -> (namespace: Namespace, scope: ReadScope) {
        let identity = Namespace.identity(of: stateFilePath)
        let (cached, scope, language) = view.withLock { $0 }
        let current = !refresh && cached?.stateIdentity == identity ? cached : nil
        if let current, let scope { return (current, scope) }
        let fresh = try current ?? Namespace(store: store, state: try store.loadState(), stateIdentity: identity)
        let made = ReadScope(resolved: resolvedLanguage(in: fresh, preferring: language), collisions: collisions)
        view.withLock {
            $0.namespace = fresh
            if $0.language == language { $0.scope = made }  // unless the language was set meanwhile
        }
        return (fresh, made)
    }

    /// What a read for `language` sees: only the packs localized in it.
    func scope(for language: String) throws -> ReadScope {
        do {
            return ReadScope(only: try LanguageTag(parsing: language), collisions: collisions)
        } catch {
            throw AssetPackClientError.invalidLanguage(language, error)
        }
    }

    /// Opens the installed file a path resolves to (in `view`, by default the current namespace); when the
    /// folder it resolved to has gone (an update committed in between), looks again once at the new state.
    /// Only a regular file opens: something else put in its place (a symlink, or a FIFO, which would block
    /// the open forever) is an error. The open is non-blocking; a descriptor `handedOut` to the caller is made blocking again
    /// (one more system call, which a mapping closed at once does not need).
    func openInstalled(
        _ path: FilePath,
        _ assetPackID: String?,
        view given: Namespace? = nil,
        scope: ReadScope? = nil,
        handedOut: Bool = false
    ) throws -> (fd: FileDescriptor, file: String, size: Int) {
        var (view, defaultScope) = try currentView()
        if let given { view = given }
        let scope = scope ?? defaultScope
        var retried = false
        while true {
            let file = try resolve(path, assetPackID, namespace: view, scope: scope)
            let fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
            if fd >= 0 {
                var info = stat()
                guard fstat(fd, &info) == 0, !handedOut || fcntl(fd, F_SETFL, 0) == 0 else {
                    let failure = Errno(rawValue: errno)
                    close(fd)
                    throw AssetPackClientError.io("open", FilePath(file), failure)
                }
                guard info.st_mode & S_IFMT == S_IFREG else {
                    close(fd)
                    throw AssetPackClientError(
                        code: .io,
                        message:
                            "cannot read \(file): it is not a regular file (something was put in place of the "
                            + "installed file). Fix: `ba-sync verify` names the pack; `ba-sync remove ID` then "
                            + "`ba-sync ensure ID`"
                    )
                }
                return (FileDescriptor(rawValue: fd), file, Int(info.st_size))
            }
            let failure = errno
            if failure == EINTR { continue }
            if failure == ENOENT && !retried {
                retried = true
                view = try currentView(refresh: true).namespace
                continue
            }
            throw AssetPackClientError.io("open", FilePath(file), Errno(rawValue: failure))
        }
    }

    func resolve(_ path: FilePath, _ assetPackID: String?, namespace view: Namespace, scope: ReadScope)
        throws -> String
    {
        let relative = try namespacePath(path)
        guard let (_, file) = try view.locate(relative, in: assetPackID, as: scope) else {
            if let assetPackID, view.installed[assetPackID] == nil {
                throw AssetPackClientError(
                    code: .assetPackNotFound,
                    message:
                        "pack \(assetPackID) is not installed in \(store.root). Fix: `ba-sync status` lists installed packs",
                    assetPackID: assetPackID
                )
            }
            if view.folders[PathKey(relative)] != nil {
                var error = AssetPackClientError(
                    code: .fileNotFound,
                    message:
                        "\(path) is a folder of the namespace, not a file. Fix: `ba-sync url \(path)` says where it is",
                    assetPackID: assetPackID
                )
                error.path = path
                throw error
            }
            if assetPackID == nil, let holders = view.files[PathKey(relative)], !holders.isEmpty {
                // Installed, but not in a pack localized for the language this read is limited to.
                let packs = holders.map { "\($0) (\(view.installed[$0]?.language ?? "unlocalized"))" }
                var error = AssetPackClientError(
                    code: .fileNotFound,
                    message:
                        "\(path) is in no installed pack localized for \(scope.given?.description ?? "this language") "
                        + "(a read asLocalizedFor: a language searches only those); it is in "
                        + "\(packs.joined(separator: ", ")). Fix: read it without a language, or from its pack "
                        + "(searchingInAssetPackWithID: \(holders[0]), --pack \(holders[0]))"
                )
                error.path = path
                throw error
            }
            throw fileNotFound(path, in: assetPackID, namespace: view)
        }
        return file
    }

    /// A miss, saying what would find the file: the same name in the other Unicode spelling (NFC or NFD) when
    /// one is installed, else the packs the server lists that are not installed (the file may be in one).
    func fileNotFound(_ path: FilePath, in assetPackID: String? = nil, namespace view: Namespace? = nil)
        -> AssetPackClientError
    {
        let scope = assetPackID.map { "pack \($0)" } ?? "any installed pack"
        var message = "\(path) is not in \(scope) in \(store.root)."
        if let view, let relative = try? namespacePath(path), let other = Self.otherSpelling(of: relative, in: view) {
            message +=
                " A file whose name differs only in its Unicode form is installed: \(other.debugDescription) ("
                + (other.unicodeScalars.count < relative.unicodeScalars.count ? "NFC" : "NFD")
                + "); names are compared byte for byte, as on a device. Fix: read it by that name, or name the file "
                + "in the asset folder as the app asks for it"
        } else if assetPackID == nil, let missing = notInstalledPacks(), !missing.isEmpty {
            let listed = missing.prefix(5).joined(separator: ", ") + (missing.count > 5 ? ", …" : "")
            message +=
                " \(missing.count == 1 ? "Pack" : "Packs") \(listed) \(missing.count == 1 ? "is" : "are") listed by the "
                + "server but not installed, and the file may be in one. Fix: `ba-sync ensure "
                + (missing.count == 1 ? missing[0] : "<pack>") + "` (ensureLocalAvailability), then read it again"
        } else {
            message += " Fix: `ba-sync status` lists installed packs"
        }
        var error = AssetPackClientError(code: .fileNotFound, message: message, assetPackID: assetPackID)
        error.path = path  // Apple's fileNotFound(at:) carries the path
        return error
    }

    /// The installed namespace path that is `relative` in its other Unicode normalization form, if any.
    static func otherSpelling(of relative: String, in view: Namespace) -> String? {
        let composed = relative.precomposedStringWithCanonicalMapping
        let decomposed = relative.decomposedStringWithCanonicalMapping
        for candidate in [composed, decomposed] where !candidate.utf8.elementsEqual(relative.utf8) {
            if view.files[PathKey(candidate)] != nil { return candidate }
        }
        return nil
    }

    /// The packs of the manifest last fetched into this app group that are not installed, sorted; `nil` when
    /// no manifest was fetched here.
    func notInstalledPacks() -> [String]? {
        guard let last = try? store.lastFetchedManifest() else { return nil }
        let installed = Set(installedPacks.map(\.id))
        return last.packs.map(\.id).filter { !installed.contains($0) }.sorted()
    }
}
