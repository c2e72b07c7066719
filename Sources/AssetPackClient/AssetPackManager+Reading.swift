import AssetPackFormat
import Crypto
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

extension AssetPackManager {
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
    public nonisolated func contents(
        at path: FilePath,
        searchingInAssetPackWithID assetPackID: String? = nil,
        options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        let file = try installedFile(path, assetPackID)
        if !options.contains(.mappedIfSafe) && !options.contains(.alwaysMapped) {
            do {
                return try Data(contentsOf: URL(fileURLWithPath: file))
            } catch {
                throw AssetPackClientError.io("read", FilePath(file), error)
            }
        }
        let fd = try open(file)
        defer { try? fd.close() }
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else {
            throw AssetPackClientError.io("stat", FilePath(file), Errno(rawValue: errno))
        }
        let size = Int(info.st_size)
        if size == 0 { return Data() }  // mmap cannot map zero bytes
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
    public nonisolated func descriptor(for path: FilePath, searchingInAssetPackWithID assetPackID: String? = nil) throws
        -> FileDescriptor
    {
        try open(try installedFile(path, assetPackID))
    }

    /// The URL of a file or folder in the merged namespace (Apple's `url(for:)`).
    ///
    /// A file resolves like ``contents(at:searchingInAssetPackWithID:options:)``. A folder resolves to that
    /// folder in the first pack (by ID) that has something below it: this client does not build a merged
    /// view of folders split across packs. Do not keep the URL beyond the current process: an update moves
    /// the pack to a new folder.
    /// - Throws: ``AssetPackClientError`` with code `.fileNotFound` or `.invalidPath`.
    public nonisolated func url(for path: FilePath) throws -> URL {
        let relative = try namespacePath(path)
        let view = try currentNamespace()
        if let (_, file) = view.resolve(relative, in: nil, root: store.root) {
            return URL(fileURLWithPath: file.string)
        }
        if let id = view.folders[relative]?.first, let pack = view.installed[id] {
            return URL(
                fileURLWithPath: store.root.appending(pack.directory).appending(relative).string,
                isDirectory: true
            )
        }
        throw fileNotFound(path)
    }

    /// Which installed pack a path resolves to, if any.
    public nonisolated func assetPackID(containing path: FilePath) throws -> String? {
        try currentNamespace().holder(of: try namespacePath(path), in: nil)?.id
    }

    /// Re-hashes installed files against their pack's index.
    /// - Parameter id: One pack, or every installed pack.
    /// - Returns: The number of files checked.
    /// - Throws: ``AssetPackClientError`` with code `.verificationFailed` naming every file that differs or is
    ///   missing, or `.assetPackNotFound` for a pack that is not installed.
    public nonisolated func verify(assetPackWithID id: String? = nil) throws -> Int {
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
        var problems: [String] = []
        var checked = 0
        for pack in packs {
            let index: PackIndex
            do {
                index = try JSONDecoder().decode(
                    PackIndex.self,
                    from: Data(contentsOf: URL(fileURLWithPath: store.indexFile(for: pack).string))
                )
            } catch {
                problems.append("\(pack.id): index unreadable (\(error))")
                continue
            }
            for row in index.files {
                checked += 1
                let file = store.root.appending(pack.directory).appending(row.path)
                guard let digest = try? FileDigest.sha256(of: file) else {
                    problems.append("\(pack.id): \(row.path) is missing")
                    continue
                }
                if digest != row.sha256 { problems.append("\(pack.id): \(row.path) differs from the pack's index") }
            }
        }
        guard problems.isEmpty else {
            throw AssetPackClientError(
                code: .verificationFailed,
                message: "\(problems.count) installed file(s) do not match: " + problems.joined(separator: "; ")
                    + ". Fix: `ba-sync remove ID` then `ba-sync ensure ID`"
            )
        }
        return checked
    }

    private nonisolated func installedFile(_ path: FilePath, _ assetPackID: String?) throws -> String {
        let relative = try namespacePath(path)
        guard let (_, file) = try currentNamespace().locate(relative, in: assetPackID) else {
            throw fileNotFound(path, in: assetPackID)
        }
        return file
    }

    private nonisolated func open(_ file: String) throws -> FileDescriptor {
        while true {
            let fd = Glibc.open(file, O_RDONLY | O_CLOEXEC)
            if fd >= 0 { return FileDescriptor(rawValue: fd) }
            if errno == EINTR { continue }
            throw AssetPackClientError.io("open", FilePath(file), Errno(rawValue: errno))
        }
    }

    private nonisolated func fileNotFound(_ path: FilePath, in assetPackID: String? = nil) -> AssetPackClientError {
        let scope = assetPackID.map { "pack \($0)" } ?? "any installed pack"
        return AssetPackClientError(
            code: .fileNotFound,
            message: "\(path) is not in \(scope) in \(store.root). Fix: `ba-sync status` lists installed packs",
            assetPackID: assetPackID
        )
    }
}
