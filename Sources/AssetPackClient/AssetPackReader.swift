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
    private let namespace = Mutex<Namespace?>(nil)
    /// The state file's path, made once: every read checks it.
    private let stateFilePath: String

    /// Opens an app group for reading; nothing is created.
    public init(appGroup: FilePath) {
        self.store = AppGroupStore(root: appGroup)
        self.stateFilePath = store.stateFilePath.string
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
    ///   - assetPackID: Read from this pack only; otherwise a path in several packs resolves to the pack whose
    ///     ID sorts first.
    ///   - options: `.mappedIfSafe` or `.alwaysMapped` map (the default); anything else reads a copy.
    /// - Returns: The file's bytes.
    /// - Throws: ``AssetPackClientError`` with code `.fileNotFound`, `.invalidPath` or `.io`.
    public func contents(
        at path: FilePath,
        searchingInAssetPackWithID assetPackID: String? = nil,
        options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        let (fd, file) = try openInstalled(path, assetPackID)
        defer { try? fd.close() }
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else {
            throw AssetPackClientError.io("stat", FilePath(file), Errno(rawValue: errno))
        }
        let size = Int(info.st_size)
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
        try openInstalled(path, assetPackID).fd
    }

    /// The URL of a file or folder in the merged namespace (Apple's `url(for:)`).
    ///
    /// A file resolves like ``contents(at:searchingInAssetPackWithID:options:)``. A folder resolves to that
    /// folder in the first pack (by ID) that has something below it: this client does not build a merged
    /// view of folders split across packs. Do not keep the URL beyond the current process: an update moves
    /// the pack to a new folder.
    /// - Throws: ``AssetPackClientError`` with code `.fileNotFound` or `.invalidPath`.
    public func url(for path: FilePath) throws -> URL {
        let relative = try namespacePath(path)
        let view = try currentNamespace()
        if let (_, file) = view.locate(relative, in: nil) {
            return URL(fileURLWithPath: file)
        }
        if let id = view.folders[PathKey(relative)]?.first, let pack = view.installed[id] {
            return URL(fileURLWithPath: folder(of: pack).appending(relative).string, isDirectory: true)
        }
        throw fileNotFound(path)
    }

    /// Which installed pack a path resolves to, if any.
    public func assetPackID(containing path: FilePath) throws -> String? {
        try currentNamespace().holder(of: try namespacePath(path), in: nil)?.id
    }

    /// The namespace paths of every installed file (of one pack, or of all), in byte order.
    /// - Throws: ``AssetPackClientError`` with code `.assetPackNotFound` for a pack that is not installed.
    public func paths(inAssetPackWithID assetPackID: String? = nil) throws -> [String] {
        let view = try currentNamespace()
        if let assetPackID, view.installed[assetPackID] == nil {
            throw AssetPackClientError(
                code: .assetPackNotFound,
                message: "pack \(assetPackID) is not installed in \(store.root). Fix: `ba-sync ensure \(assetPackID)`",
                assetPackID: assetPackID
            )
        }
        let paths = view.files.compactMap { path, holders in
            assetPackID.map { holders.contains($0) } ?? true ? path : nil
        }
        return paths.sorted().map(\.path)
    }

    /// Where the file a namespace path resolves to is installed.
    /// - Throws: ``AssetPackClientError`` with code `.fileNotFound` or `.invalidPath`.
    public func installedFile(at path: FilePath, searchingInAssetPackWithID assetPackID: String? = nil) throws
        -> FilePath
    {
        FilePath(try resolve(path, assetPackID, namespace: try currentNamespace()))
    }

    /// What a verification found.
    public struct Verification: Sendable {
        /// A file (or a pack's index) that does not match.
        public struct Problem: Sendable, Hashable {
            /// How it does not match.
            public enum Kind: String, Sendable, Hashable {
                /// The file's bytes differ from the index's digest.
                case differs
                /// The file is not there.
                case missing
                /// The pack's index cannot be read.
                case indexUnreadable
            }

            /// The pack.
            public var pack: String
            /// The file's namespace path; `nil` for the pack's index.
            public var path: String?
            public var kind: Kind
        }

        /// Files checked.
        public var checked: Int
        /// What did not match, pack by pack, in index order.
        public var problems: [Problem]
    }

    /// Re-hashes installed files against their pack's index and says what differs. Blocking: reads every
    /// byte.
    /// - Parameter id: One pack, or every installed pack.
    /// - Throws: ``AssetPackClientError`` with code `.assetPackNotFound` for a pack that is not installed.
    public func verification(ofAssetPackWithID id: String? = nil) throws -> Verification {
        let view = try currentNamespace()
        let packs: [InstalledPack]
        if let id {
            guard let pack = view.installed[id] else {
                throw AssetPackClientError(
                    code: .assetPackNotFound,
                    message: "pack \(id) is not installed",
                    assetPackID: id
                )
            }
            packs = [pack]
        } else {
            packs = view.installed.values.sorted { $0.id < $1.id }
        }
        var result = Verification(checked: 0, problems: [])
        for pack in packs {
            let index: PackIndex
            do {
                index = try PackIndex.load(from: store.indexFile(for: pack))
            } catch {
                result.problems.append(.init(pack: pack.id, path: nil, kind: .indexUnreadable))
                continue
            }
            for row in index.files {
                result.checked += 1
                guard let digest = try? FileDigest.sha256(of: folder(of: pack).appending(row.path)) else {
                    result.problems.append(.init(pack: pack.id, path: row.path, kind: .missing))
                    continue
                }
                if digest != row.sha256 { result.problems.append(.init(pack: pack.id, path: row.path, kind: .differs)) }
            }
        }
        return result
    }

    /// Re-hashes installed files against their pack's index. Blocking: reads every byte.
    /// - Parameter id: One pack, or every installed pack.
    /// - Returns: The number of files checked.
    /// - Throws: ``AssetPackClientError`` with code `.verificationFailed` naming every file that differs or is
    ///   missing, or `.assetPackNotFound` for a pack that is not installed.
    public func verify(assetPackWithID id: String? = nil) throws -> Int {
        let result = try verification(ofAssetPackWithID: id)
        guard result.problems.isEmpty else {
            let lines = result.problems.map { problem in
                switch problem.kind {
                case .differs: "\(problem.pack): \(problem.path ?? "") differs from the pack's index"
                case .missing: "\(problem.pack): \(problem.path ?? "") is missing"
                case .indexUnreadable: "\(problem.pack): index unreadable"
                }
            }
            throw AssetPackClientError(
                code: .verificationFailed,
                message: "\(result.problems.count) installed file(s) do not match: " + lines.joined(separator: "; ")
                    + ". Fix: `ba-sync remove ID` then `ba-sync ensure ID`"
            )
        }
        return result.checked
    }

    // MARK: The namespace

    /// The merged namespace at the current state, rebuilt only when the state file changed (or when
    /// `refresh` asks for it).
    func currentNamespace(refresh: Bool = false) throws -> Namespace {
        let identity = Namespace.identity(of: stateFilePath)
        if !refresh, let cached = namespace.withLock({ $0 }), cached.stateIdentity == identity { return cached }
        let fresh = try Namespace(store: store, state: try store.loadState(), stateIdentity: identity)
        namespace.withLock { $0 = fresh }
        return fresh
    }

    /// Opens the installed file a path resolves to (in `view`, by default the current namespace); when the
    /// folder it resolved to has gone (an update committed in between), looks again once at the new state.
    func openInstalled(_ path: FilePath, _ assetPackID: String?, view: Namespace? = nil) throws -> (
        fd: FileDescriptor, file: String
    ) {
        var view = try view ?? currentNamespace()
        var retried = false
        while true {
            let file = try resolve(path, assetPackID, namespace: view)
            let fd = open(file, O_RDONLY | O_CLOEXEC)
            if fd >= 0 { return (FileDescriptor(rawValue: fd), file) }
            let failure = errno
            if failure == EINTR { continue }
            if failure == ENOENT && !retried {
                retried = true
                view = try currentNamespace(refresh: true)
                continue
            }
            throw AssetPackClientError.io("open", FilePath(file), Errno(rawValue: failure))
        }
    }

    private func resolve(_ path: FilePath, _ assetPackID: String?, namespace view: Namespace) throws -> String {
        let relative = try namespacePath(path)
        guard let (_, file) = view.locate(relative, in: assetPackID) else {
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
            throw fileNotFound(path, in: assetPackID)
        }
        return file
    }

    private func fileNotFound(_ path: FilePath, in assetPackID: String? = nil) -> AssetPackClientError {
        let scope = assetPackID.map { "pack \($0)" } ?? "any installed pack"
        var error = AssetPackClientError(
            code: .fileNotFound,
            message: "\(path) is not in \(scope) in \(store.root). Fix: `ba-sync status` lists installed packs",
            assetPackID: assetPackID
        )
        error.path = path  // Apple's fileNotFound(at:) carries the path
        return error
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
