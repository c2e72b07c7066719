import Crypto
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One file that goes into a pack: where it is on disk and what it is called inside the pack.
public struct PackFile: Sendable, Hashable {
    /// The path inside the pack (and in the merged namespace), relative to the asset folder.
    public var path: String
    /// Where the bytes are read from (a symlink inside the asset folder is read through).
    public var source: FilePath
    /// The size in bytes when the file was listed.
    public var size: Int64
    /// Modification time in nanoseconds since 1970, for change detection.
    public var modified: Int64
    /// Inode and change time, for change detection (a replaced file with the same size and mtime).
    var inode: UInt64
    var changed: Int64
}

/// A pack ready to build: its manifest and the exact, sorted list of files its selectors name.
public struct PackSource: Sendable, Hashable {
    /// The validated manifest.
    public var manifest: PackagingManifest
    /// Where the manifest was read from (for messages), if from a file.
    public var manifestFile: String
    /// The files, sorted by path (byte order), no duplicates.
    public var files: [PackFile]
    /// Warnings from resolving the selectors.
    public var warnings: [String]

    /// The sum of the files' sizes: the bytes an install writes.
    public var installSize: Int64 { files.reduce(0) { $0 + $1.size } }

    /// A digest of everything that decides the archive's bytes as far as `stat` can tell (paths, sizes,
    /// times, inodes, the manifest): equal fingerprints mean an unchanged pack without reading files.
    public func fingerprint(options: PackBuildOptions) -> String {
        var hasher = SHA256()
        func add(_ text: String) { hasher.update(data: Array(text.utf8) + [0]) }
        add("v1 \(options.compression.rawValue) \(options.effectiveLevel.map(String.init) ?? "-")")
        add(manifest.assetPackID)
        add(manifest.downloadPolicy.name)
        add(manifest.downloadPolicy.installationEventTypes.map(\.rawValue).joined(separator: ","))
        add(manifest.platforms.joined(separator: ","))
        for file in files {
            add("\(file.path) \(file.size) \(file.modified) \(file.inode) \(file.changed)")
        }
        return hasher.finalize().hexString
    }

    /// Resolves a manifest's selectors against an asset folder.
    ///
    /// - Parameters:
    ///   - parsed: A validated manifest.
    ///   - root: The asset folder that selector paths are relative to.
    /// - Returns: The pack's files; a path named by two selectors is listed once.
    /// - Throws: ``AssetPackFormatError``: `.notFound` for a missing file or folder, `.unsafePath` for a
    ///   symlink that leaves the folder, `.invalidManifest` for a `file` selector naming a folder (or the
    ///   reverse), a special file, or a pack with no files.
    public static func resolve(_ parsed: ParsedManifest, root: FilePath) throws -> PackSource {
        let file = parsed.file
        let rootReal = try realPath(root, orThrow: "asset folder")
        var collected: [String: PackFile] = [:]
        var warnings = parsed.warnings
        for (index, selector) in parsed.manifest.fileSelectors.enumerated() {
            let key = "fileSelectors[\(index)].\(selector.key)"
            guard let relative = PackPath.normalize(selector.path) else { continue }  // checked when parsed
            let path = root.appending(relative)
            guard let info = lstatInfo(path) else {
                throw AssetPackFormatError(
                    code: .notFound,
                    message:
                        "\(file): \(key): \"\(selector.path)\" does not exist in \(root). Fix: paths are relative "
                        + "to the asset folder (the folder holding the manifests); check spelling and case"
                )
            }
            let kind = try checkInside(path, info: info, rootReal: rootReal, file: file, key: key)
            switch (selector, kind) {
            case (.file, .regular(let stat)):
                collected[relative] = PackFile(path: relative, source: path, stat: stat)
            case (.file, .directory):
                throw AssetPackFormatError.manifest(
                    file,
                    key: key,
                    "\"\(selector.path)\" is a folder",
                    fix: "use {\"directory\": \"\(selector.path)\"}"
                )
            case (.directory, .regular):
                throw AssetPackFormatError.manifest(
                    file,
                    key: key,
                    "\"\(selector.path)\" is a file",
                    fix: "use {\"file\": \"\(selector.path)\"}"
                )
            case (.directory, .directory):
                var found: [PackFile] = []
                try walk(path, relative: relative, rootReal: rootReal, file: file, key: key, into: &found)
                if found.isEmpty {
                    warnings.append("\(file): \(key): \"\(selector.path)\" holds no files")
                }
                for item in found { collected[item.path] = item }
            }
        }
        if collected.isEmpty {
            throw AssetPackFormatError.manifest(
                file,
                key: "fileSelectors",
                "select no files",
                fix: "point the selectors at files or folders that hold files"
            )
        }
        let files = collected.values.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        return PackSource(manifest: parsed.manifest, manifestFile: file, files: files, warnings: warnings)
    }

    private enum Kind {
        case regular(stat)
        case directory
    }

    /// Classifies `path` and makes sure that it (through any symlink) stays inside the asset folder.
    private static func checkInside(
        _ path: FilePath,
        info: stat,
        rootReal: String,
        file: String,
        key: String
    ) throws -> Kind {
        var target = info
        if info.st_mode & S_IFMT == S_IFLNK {
            guard let real = try? realPath(path, orThrow: "link"), real.hasPrefix(rootReal + "/") else {
                let destination = (try? realPath(path, orThrow: "link")) ?? "a missing file"
                throw AssetPackFormatError(
                    code: .unsafePath,
                    message:
                        "\(file): \(key): \(path) is a symlink to \(destination), outside the asset folder "
                        + "\(rootReal). Fix: copy the file into the asset folder instead of linking to it"
                )
            }
            guard let followed = statInfo(path) else {
                throw AssetPackFormatError(code: .notFound, message: "\(file): \(key): \(path) is a broken symlink")
            }
            target = followed
            if target.st_mode & S_IFMT == S_IFDIR {
                throw AssetPackFormatError(
                    code: .unsafePath,
                    message:
                        "\(file): \(key): \(path) is a symlink to a folder, which packs do not follow. "
                        + "Fix: name the folder it points to in a selector instead"
                )
            }
        }
        switch target.st_mode & S_IFMT {
        case S_IFREG: return .regular(target)
        case S_IFDIR: return .directory
        default:
            throw AssetPackFormatError.manifest(
                file,
                key: key,
                "\(path) is not a regular file or folder (a device, FIFO or socket)",
                fix: "remove it from the asset folder or from the selector"
            )
        }
    }

    private static func walk(
        _ folder: FilePath,
        relative: String,
        rootReal: String,
        file: String,
        key: String,
        into found: inout [PackFile]
    ) throws {
        guard let dir = opendir(folder.string) else {
            throw AssetPackFormatError.io("list folder", folder, Errno(rawValue: errno))
        }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name == "." || name == ".." { continue }
            names.append(name)
        }
        closedir(dir)
        for name in names.sorted() {
            let path = folder.appending(name)
            let childRelative = relative + "/" + name
            if childRelative == PackPath.stateFolderName { continue }
            guard let info = lstatInfo(path) else { continue }  // removed while listing
            switch try checkInside(path, info: info, rootReal: rootReal, file: file, key: key) {
            case .regular(let stat):
                found.append(PackFile(path: childRelative, source: path, stat: stat))
            case .directory:
                try walk(path, relative: childRelative, rootReal: rootReal, file: file, key: key, into: &found)
            }
        }
    }

    static func realPath(_ path: FilePath, orThrow what: String) throws -> String {
        guard let resolved = realpath(path.string, nil) else {
            throw AssetPackFormatError(
                code: .notFound,
                message: "\(what) \(path) does not exist",
                cause: Errno(rawValue: errno)
            )
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func lstatInfo(_ path: FilePath) -> stat? {
        var info = stat()
        return lstat(path.string, &info) == 0 ? info : nil
    }

    static func statInfo(_ path: FilePath) -> stat? {
        var info = stat()
        return stat(path.string, &info) == 0 ? info : nil
    }
}

extension PackFile {
    init(path: String, source: FilePath, stat: stat) {
        self.path = path
        self.source = source
        self.size = Int64(stat.st_size)
        self.modified = Int64(stat.st_mtim.tv_sec) * 1_000_000_000 + Int64(stat.st_mtim.tv_nsec)
        self.inode = UInt64(stat.st_ino)
        self.changed = Int64(stat.st_ctim.tv_sec) * 1_000_000_000 + Int64(stat.st_ctim.tv_nsec)
    }
}
