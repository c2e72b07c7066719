import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// An asset folder seen from the file system: resolves selector paths through every component, refuses
/// anything that leads outside the folder, and walks folders for `directory` selectors.
struct SourceTree {
    /// The asset folder's real path (symlinks resolved).
    let rootReal: String
    /// The real paths of ba-mock's state folder (`.ba-mock` in the asset folder, and where it leads if it is
    /// a link): nothing at or below them is ever selected, however a path or a source root reaches them.
    let stateReal: [String]
    /// `stateReal`, each with a `/` after it: what a path inside the state folder starts with.
    private let stateInside: [String]
    /// How the state folder is shown in messages.
    private let stateShown: String
    /// The asset folder's real path: its top-level `*.json` files are the packaging manifests.
    let assetFolderReal: String

    /// - Parameters:
    ///   - root: The folder selector paths are relative to (a manifest's source root).
    ///   - assetFolder: The folder whose `.ba-mock` holds ba-mock's state (`root` when not given).
    init(root: FilePath, assetFolder: FilePath? = nil) throws {
        rootReal = try Self.realPath(root, orThrow: "asset folder")
        let outer = try assetFolder.map { try Self.realPath($0, orThrow: "asset folder") } ?? rootReal
        assetFolderReal = outer
        let state = outer + "/" + PackPath.stateFolderName
        stateShown = state
        stateReal = [state] + ((try? Self.realPath(FilePath(state), orThrow: "state")).map { [$0] } ?? [])
        stateInside = stateReal.map { $0 + "/" }
        if isState(rootReal) {
            throw AssetPackFormatError(
                code: .unsafePath,
                message:
                    "the source root \(root) is inside \(state), ba-mock's own state, which is never packed or "
                    + "served. Fix: point sourceRoot at a content folder"
            )
        }
    }

    /// Whether a file found is a packaging manifest: a `*.json` file at the top of the asset folder, or the
    /// manifest file `manifestReal` itself wherever it is.
    func isManifest(_ found: Found, manifestReal: String?) -> Bool {
        (found.folder.utf8.elementsEqual(assetFolderReal.utf8) && found.name.utf8.count > 5
            && found.name.hasSuffix(".json")) || manifestReal.map { found.real.utf8.elementsEqual($0.utf8) } == true
    }

    /// Whether a real path is the state folder or inside it.
    func isState(_ real: String) -> Bool {
        stateReal.contains { real.bytesEqual($0) } || stateInside.contains { real.hasBytePrefix($0) }
    }

    /// Refuses a real path inside the state folder, naming how the manifest reached it.
    private func refuseState(_ real: String, shownAs path: String, file: String, key: String) throws {
        guard isState(real) else { return }
        throw AssetPackFormatError.manifest(
            file,
            key: key,
            "\(path) leads into \(stateShown), ba-mock's own state, which is never packed or served",
            fix: "select content folders only",
            code: .unsafePath
        )
    }

    enum Kind {
        case regular(stat)
        case directory
    }

    /// What a relative path resolves to: its real path (inside the folder) and kind.
    func resolve(_ relative: String, file: String, key: String) throws -> (real: String, kind: Kind) {
        let path = rootReal + "/" + relative
        guard Self.lstatInfo(path) != nil else {
            throw AssetPackFormatError.manifest(
                file,
                key: key,
                "\"\(relative)\" does not exist in \(rootReal), the folder selector paths are relative to (the "
                    + "asset folder for `ba-mock serve` and `export`; --root, else the current folder, for "
                    + "`ba-mock package`)",
                fix: missingFix(relative, manifest: file),
                code: .notFound
            )
        }
        let real = try inside(path, file: file, key: key)
        try refuseState(real, shownAs: path, file: file, key: key)
        return (real, try kind(of: real, shownAs: path, file: file, key: key))
    }

    /// The fix for a selector path that does not exist: the path there beside the manifest (selector paths
    /// start at --root, else the current folder, when manifests are given as files), or its near miss, each
    /// missing name replaced by the one its folder holds that it was probably meant to be, as a misspelt key
    /// gets (`Level` → `Levels`).
    private func missingFix(_ relative: String, manifest file: String) -> String {
        let beside = FilePath(file).removingLastComponent()
        if !beside.isEmpty, let besideReal = try? Self.realPath(beside, orThrow: "folder"),
            !besideReal.utf8.elementsEqual(rootReal.utf8), Self.lstatInfo(besideReal + "/" + relative) != nil
        {
            return "pass --root \(beside) (it is there, beside the manifest)"
        }
        var folder = rootReal
        var fixed: [String] = []
        for part in Substring(relative).utf8.split(separator: UInt8(ascii: "/")) {
            var name = String(Substring(part))
            if Self.lstatInfo(folder + "/" + name) == nil {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                guard let near = PackagingManifest.nearMiss(name, in: names.sorted()) else { break }
                name = near
            }
            fixed.append(name)
            folder += "/" + name
        }
        let suggestion = fixed.joined(separator: "/")
        guard Self.lstatInfo(rootReal + "/" + suggestion) != nil, suggestion != relative,
            fixed.count == Substring(relative).utf8.split(separator: UInt8(ascii: "/")).count
        else { return "check spelling and case, or the folder" }
        return "did you mean \"\(suggestion)\"?"
    }

    /// The real path of `path` (every component resolved), which must be inside the asset folder.
    private func inside(_ path: String, file: String, key: String) throws -> String {
        guard let real = try? Self.realPath(FilePath(path), orThrow: "path") else {
            throw AssetPackFormatError.manifest(
                file,
                key: key,
                "\(path) is a broken symlink, or leads through one",
                fix: "point the link at a file inside the asset folder, or remove it",
                code: .notFound
            )
        }
        guard real.hasBytePrefix(rootReal + "/") || real.utf8.elementsEqual(rootReal.utf8) else {
            throw AssetPackFormatError.manifest(
                file,
                key: key,
                "\(path) leads through a symlink to \(real), outside the asset folder \(rootReal)",
                fix: "copy the file into the asset folder instead of linking to it",
                code: .unsafePath
            )
        }
        return real
    }

    private func kind(of real: String, shownAs path: String, file: String, key: String) throws -> Kind {
        guard let info = Self.lstatInfo(real) else {
            throw AssetPackFormatError.manifest(
                file,
                key: key,
                "\(path) vanished while it was read",
                fix: "run again once nothing is moving files",
                code: .notFound
            )
        }
        return try Self.kind(info, shownAs: path, file: file, key: key)
    }

    /// What an `lstat` found: a regular file or a folder, else refused.
    private static func kind(_ info: stat, shownAs path: String, file: String, key: String) throws -> Kind {
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular(info)
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

    /// A file found in the source root: its path there, its real path, and what change detection needs of
    /// its `stat` (40 bytes, not the whole 144: a scan of 100 000 files holds one per file).
    ///
    /// The real path is kept as its folder and name: every file of a folder shares the folder's one string.
    struct Found {
        var relative: String
        var folder: String
        var name: String
        var size: Int64
        var modified: Int64
        var device: UInt64
        var inode: UInt64
        var changed: Int64

        /// The real path.
        var real: String { folder + "/" + name }

        init(relative: String, real: String, stat: stat) {
            // Real paths are absolute: there is a slash, the root's at least.
            let slash = real.utf8.lastIndex(of: UInt8(ascii: "/"))
            self.init(
                relative: relative,
                folder: slash.map { String(Substring(real.utf8[..<$0])) } ?? ".",
                name: slash.map { String(Substring(real.utf8[real.utf8.index(after: $0)...])) } ?? real,
                stat: stat
            )
        }

        init(relative: String, folder: String, name: String, stat: stat) {
            self.relative = relative
            self.folder = folder
            self.name = name
            size = Int64(stat.st_size)
            modified = Int64(stat.st_mtim.tv_sec) * 1_000_000_000 + Int64(stat.st_mtim.tv_nsec)
            device = UInt64(stat.st_dev)
            inode = UInt64(stat.st_ino)
            changed = Int64(stat.st_ctim.tv_sec) * 1_000_000_000 + Int64(stat.st_ctim.tv_nsec)
        }
    }

    /// What a walk found.
    struct Walk {
        var files: [Found] = []
        var warnings: [ManifestProblem] = []
        /// What could not be walked (a name that is not UTF-8, a link that leads out): the walk goes on past
        /// each, so that one run lists them all.
        var errors: [AssetPackFormatError] = []
    }

    /// Lists the files below the folder at `real` (a real path inside the asset folder), in byte order.
    /// A symlink is read through when it leads to a file inside the folder; a symlink to a folder is refused
    /// (packs do not follow them), and so is one that leads outside.
    func walk(_ real: String, relative: String, file: String, key: String, into found: inout Walk) throws {
        // Each entry is looked at from the open folder (one name to look up, not the whole path), which is
        // closed before a walk below it and opened again after: a deep tree holds one descriptor at a time.
        var folder: Int32 = -1
        defer { if folder >= 0 { close(folder) } }
        for name in try Self.names(in: real, file: file, key: key, errors: &found.errors) {
            if folder < 0 { folder = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) }
            var info = stat()
            let at = folder >= 0 ? fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) : lstat(real + "/" + name, &info)
            guard at == 0 else { continue }  // removed while listing
            if info.st_mode & S_IFMT == S_IFDIR, folder >= 0 {
                close(folder)
                folder = -1
            }
            do {
                try walkEntry(name, info, in: real, relative: relative, file: file, key: key, into: &found)
            } catch let error as AssetPackFormatError where error.problem != nil {
                found.errors.append(error)  // a rule this entry breaks; I/O errors end the walk
            }
        }
    }

    private func walkEntry(
        _ name: String,
        _ info: stat,
        in real: String,
        relative: String,
        file: String,
        key: String,
        into found: inout Walk
    ) throws {
        let path = real + "/" + name
        let childRelative = relative.isEmpty ? name : relative + "/" + name
        if isState(path) { return }  // the state folder itself, met by the walk: left out
        if name == ".DS_Store" {
            found.warnings.append(
                .warning(
                    file,
                    key,
                    "\(childRelative) is a Finder file; it is packed like any other",
                    fix: "delete it"
                )
            )
        }
        if name == ".git" && info.st_mode & S_IFMT == S_IFDIR {
            found.warnings.append(
                .warning(
                    file,
                    key,
                    "\(childRelative)/ is a git folder; all of it is packed",
                    fix: "select the content folders only"
                )
            )
        }
        var target = path
        let kind: Kind
        if info.st_mode & S_IFMT == S_IFLNK {
            target = try inside(path, file: file, key: key)
            try refuseState(target, shownAs: path, file: file, key: key)
            kind = try self.kind(of: target, shownAs: path, file: file, key: key)
            if case .directory = kind {
                throw AssetPackFormatError.manifest(
                    file,
                    key: key,
                    "\(path) is a symlink to a folder, which packs do not follow",
                    fix: "name the folder it points to in a selector instead",
                    code: .unsafePath
                )
            }
        } else {
            kind = try Self.kind(info, shownAs: path, file: file, key: key)  // its own lstat: one a file, not two
        }
        switch kind {
        case .regular(let stat):
            found.files.append(
                target.bytesEqual(path)  // not reached through a symlink
                    ? Found(relative: childRelative, folder: real, name: name, stat: stat)
                    : Found(relative: childRelative, real: target, stat: stat)
            )
        case .directory:
            try walk(target, relative: childRelative, file: file, key: key, into: &found)
        }
    }

    /// The names in a folder, in byte order; a name that is not UTF-8 is refused (packs store UTF-8 names).
    private static func names(
        in folder: String,
        file: String,
        key: String,
        errors: inout [AssetPackFormatError]
    ) throws -> [String] {
        guard let dir = opendir(folder) else {
            throw AssetPackFormatError.io("list folder", FilePath(folder), Errno(rawValue: errno))
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            // A name packs cannot hold is said and left out; the others are listed.
            let name: String?
            do {
                name = try Self.name(of: entry, in: folder, file: file, key: key)
            } catch let error as AssetPackFormatError {
                errors.append(error)
                continue
            }
            if let name { names.append(name) }
        }
        return names.sorted { PathKey($0) < PathKey($1) }
    }

    /// An entry's name; `nil` for `.` and `..`.
    /// - Throws: `.unsafePath` for a name that is not UTF-8 or holds a backslash.
    private static func name(
        of entry: UnsafeMutablePointer<dirent>,
        in folder: String,
        file: String,
        key: String
    ) throws -> String? {
        try withUnsafeBytes(of: entry.pointee.d_name) { raw -> String? in
            let bytes = Array(raw.prefix { $0 != 0 })
            if bytes == [46] || bytes == [46, 46] { return nil }
            guard let name = String(validating: bytes, as: UTF8.self) else {
                let shown = String(decoding: bytes, as: UTF8.self)
                throw AssetPackFormatError.manifest(
                    file,
                    key: key,
                    "\(folder)/\(shown) has a name that is not UTF-8 (bytes "
                        + "\(bytes.map { String($0, radix: 16) }.joined(separator: " "))); packs store names as UTF-8",
                    fix: "rename it",
                    code: .unsafePath
                )
            }
            if bytes.contains(UInt8(ascii: "\\")) {
                // Pack readers refuse it (it reads as a Windows separator); refuse it here, not on devices.
                throw AssetPackFormatError.manifest(
                    file,
                    key: key,
                    "\(folder)/\(name) has a backslash in its name, which pack archives do not hold",
                    fix: "rename it",
                    code: .unsafePath
                )
            }
            return name
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

    static func lstatInfo(_ path: String) -> stat? {
        var info = stat()
        return lstat(path, &info) == 0 ? info : nil
    }
}

extension PackFile {
    init(path: String, found: SourceTree.Found) {
        self.path = path
        self.sourceFolder = found.folder
        self.sourceName = found.name
        self.size = found.size
        self.modified = found.modified
        self.device = found.device
        self.inode = found.inode
        self.changed = found.changed
    }
}
