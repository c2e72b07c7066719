import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Crash-safe file writing: write to a temporary name in the same folder, `fsync`, then `rename`, so
/// that a reader sees the old file or the new one and never half of one.
public enum AtomicFile {
    /// Writes a file through `body` and moves it into place only when `body` returns.
    ///
    /// - Parameters:
    ///   - path: The final path. Its folder must exist.
    ///   - permissions: The new file's mode.
    ///   - body: Writes the content to the descriptor it is given (positioned at 0).
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws (the temporary file is removed), or ``AssetPackFormatError`` with code
    ///   `.io` when the file cannot be created, synced or renamed.
    public static func write<T>(
        to path: FilePath,
        permissions: FilePermissions = [.ownerReadWrite, .groupRead, .otherRead],
        _ body: (FileDescriptor) throws -> T
    ) throws -> T {
        BlockingIO.checkOffPool("AtomicFile.write")
        let folderPath = path.removingLastComponent()
        let folder: FileDescriptor
        do {
            folder = try FileDescriptor.openFolder(folderPath.isEmpty ? "." : folderPath)
        } catch {
            throw AssetPackFormatError.io("open the folder of", path, error)
        }
        return try folder.closeAfter {
            try write(
                in: folder,
                named: path.lastComponent?.string ?? "file",
                shownAs: path,
                permissions: permissions,
                body
            )
        }
    }

    /// Writes the file `name` of an open folder through `body` and moves it into place only when `body`
    /// returns. The file has no name while `body` writes it (`O_TMPFILE`, where the file system can): a write
    /// stopped on the way, by an error, Ctrl-C or SIGKILL, leaves nothing in the folder. Once synced it is
    /// linked under a temporary name and renamed over `name`; where the file system has no unnamed files, it is
    /// created under that temporary name (`O_CREAT | O_EXCL | O_NOFOLLOW`), removed when `body` throws. Both
    /// are made and renamed relative to the folder's descriptor, so the folder is never looked up again by path
    /// (a symlink swapped in on the way cannot redirect the write), and a symlink at `name` is replaced, never
    /// written through.
    ///
    /// - Parameters:
    ///   - folder: The folder, open.
    ///   - name: The file's name in it: one component, not a path.
    ///   - path: The file's path, for messages.
    ///   - permissions: The new file's mode.
    ///   - body: Writes the content to the descriptor it is given (positioned at 0).
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws (the temporary file is removed), or ``AssetPackFormatError`` with code
    ///   `.io` when the file cannot be created, synced or renamed, or `.unsafePath` when `name` is not one
    ///   component.
    public static func write<T>(
        in folder: FileDescriptor,
        named name: String,
        shownAs path: FilePath,
        permissions: FilePermissions = [.ownerReadWrite, .groupRead, .otherRead],
        _ body: (FileDescriptor) throws -> T
    ) throws -> T {
        BlockingIO.checkOffPool("AtomicFile.write")
        let temporary = try temporaryName(for: name, shownAs: path)
        let shownTemporary = path.removingLastComponent().appending(temporary)
        let unnamed = unnamedFile(in: folder, permissions: permissions)
        let fd = try unnamed ?? createFile(temporary, in: folder, shownAs: shownTemporary, permissions: permissions)
        var (named, moved) = (unnamed == nil, false)  // whether `temporary` is in the folder; and renamed
        defer {
            if named && !moved { _ = unlinkat(folder.rawValue, temporary, 0) }
        }
        let result = try fd.closeAfter {
            let value = try body(fd)
            do {
                try syncFile(fd)
            } catch let errno as Errno {
                throw AssetPackFormatError.io("fsync", shownTemporary, errno)
            }
            if unnamed != nil {
                if let failure = link(unnamed: fd, in: folder, as: temporary) {
                    throw AssetPackFormatError.io("link", shownTemporary, failure)
                }
                named = true
            }
            return value
        }
        if renameat(folder.rawValue, temporary, folder.rawValue, name) != 0 {
            throw AssetPackFormatError.io("rename \(shownTemporary) to", path, Errno(rawValue: errno))
        }
        moved = true
        _ = fsync(folder.rawValue)  // as syncDirectory: some file systems cannot, and the rename has happened
        return result
    }

    /// Puts a hard link to `source` at `name` of an open folder, as ``write(in:named:shownAs:permissions:_:)``
    /// puts a file there: linked under a temporary name, then renamed over `name` (a symlink there is replaced,
    /// never followed), and the folder synced. No byte is written, and none needs syncing: `source` must be a
    /// file that was synced and that nothing writes into again (one renamed into place, as this type writes).
    /// - Returns: Whether it was linked; `false` when the link could not be made (another file system, one
    ///   without hard links, or no permission) or `source` is not a regular file (a symlink planted there is
    ///   never put in place): the caller copies instead.
    /// - Throws: ``AssetPackFormatError`` with code `.unsafePath` when `name` is not one component, or `.io`
    ///   when the link cannot be renamed into place.
    public static func link(
        _ source: FilePath,
        in folder: FileDescriptor,
        named name: String,
        shownAs path: FilePath
    ) throws -> Bool {
        BlockingIO.checkOffPool("AtomicFile.link")
        let temporary = try temporaryName(for: name, shownAs: path)
        guard linkat(AT_FDCWD, source.string, folder.rawValue, temporary, 0) == 0 else { return false }
        var linked = stat()
        guard fstatat(folder.rawValue, temporary, &linked, AT_SYMLINK_NOFOLLOW) == 0, linked.st_mode & S_IFMT == S_IFREG
        else {
            _ = unlinkat(folder.rawValue, temporary, 0)  // a symlink at `source` is linked as one: never put in place
            return false
        }
        defer {
            // Gone once renamed; still there when it failed, or when `name` already was this very file (a rename
            // between two links to one file does nothing).
            _ = unlinkat(folder.rawValue, temporary, 0)
        }
        if renameat(folder.rawValue, temporary, folder.rawValue, name) != 0 {
            let shownTemporary = path.removingLastComponent().appending(temporary)
            throw AssetPackFormatError.io("rename \(shownTemporary) to", path, Errno(rawValue: errno))
        }
        _ = fsync(folder.rawValue)  // as syncDirectory: some file systems cannot, and the rename has happened
        return true
    }

    /// Creates the file `name` in `folder` for writing; it must not exist (`O_EXCL`), nor be a symlink.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    private static func createFile(
        _ name: String,
        in folder: FileDescriptor,
        shownAs path: FilePath,
        permissions: FilePermissions
    ) throws -> FileDescriptor {
        var raw: Int32
        repeat {
            let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
            raw = openat(folder.rawValue, name, flags, permissions.rawValue)
        } while raw < 0 && errno == EINTR
        guard raw >= 0 else { throw AssetPackFormatError.io("create", path, Errno(rawValue: errno)) }
        return FileDescriptor(rawValue: raw)
    }

    /// A temporary name beside `name`, for a file renamed to `name` once complete.
    /// - Throws: ``AssetPackFormatError`` with code `.unsafePath` when `name` is not one component.
    private static func temporaryName(for name: String, shownAs path: FilePath) throws -> String {
        guard PackPath.normalize(name) == name, !name.utf8.contains(UInt8(ascii: "/")) else {
            throw AssetPackFormatError(
                code: .unsafePath,
                message: "cannot write \(path): \"\(name)\" is not a file name"
            )
        }
        return ".\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Writes `bytes` to `path` atomically.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func write(_ bytes: some Sequence<UInt8>, to path: FilePath) throws {
        BlockingIO.checkOffPool("AtomicFile.write")
        try write(to: path) { try writeAll(bytes, to: $0, shownAs: path) }
    }

    /// Writes `bytes` as the file `name` of an open folder atomically: see
    /// ``write(in:named:shownAs:permissions:_:)``.
    /// - Throws: ``AssetPackFormatError`` with code `.io` or `.unsafePath`.
    public static func write(
        _ bytes: some Sequence<UInt8>,
        in folder: FileDescriptor,
        named name: String,
        shownAs path: FilePath
    ) throws {
        BlockingIO.checkOffPool("AtomicFile.write")
        try write(in: folder, named: name, shownAs: path) { try writeAll(bytes, to: $0, shownAs: path) }
    }

    private static func writeAll(_ bytes: some Sequence<UInt8>, to fd: FileDescriptor, shownAs path: FilePath) throws {
        do {
            _ = try fd.writeAll(bytes)
        } catch let errno as Errno {
            throw AssetPackFormatError.io("write", path, errno)
        }
    }

    /// Makes the folders a file the user named will be written into (`out/site/dm.json` makes `out/site`;
    /// a bare `dm.json` makes nothing), a component at a time with `mkdir`, so that a failure names the very
    /// folder and says what is in the way instead of passing on Foundation's error text.
    /// - Parameter option: How the user named the file (`-o`, `--html`), for the message.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func makeFolders(for file: FilePath, option: String) throws {
        try makeFolder(file.removingLastComponent(), for: file, option: option)
    }

    /// Makes `folder` and the folders above it that are missing; see ``makeFolders(for:option:)``.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func makeFolder(_ folder: FilePath, for file: FilePath? = nil, option: String) throws {
        BlockingIO.checkOffPool("AtomicFile.makeFolder")
        var current = folder.root.map { FilePath(root: $0) } ?? FilePath("")
        for component in folder.components {
            current.append(component)
            guard mkdir(current.string, 0o755) != 0 else { continue }
            let failure = Errno(rawValue: errno)
            var info = stat()
            if failure == .fileExists, stat(current.string, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { continue }
            let named = file.map { "\(option) \($0)" } ?? "\(option) \(folder)"
            let problem =
                failure == .fileExists || failure == .notDirectory
                ? "\(current) is a file, not a folder"
                : "cannot make the folder \(current): \(failure)"
            throw AssetPackFormatError(
                code: .io,
                message: "cannot write \(named): \(problem). Fix: give a path in a folder you can write to",
                cause: failure
            )
        }
    }

    /// A new file in `folder` open for reading and writing, already removed from the folder: scratch space
    /// (an index while it grows or waits to be read) that nothing can leave behind, whatever happens.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func unnamedFile(in folder: FilePath) throws -> FileDescriptor {
        BlockingIO.checkOffPool("AtomicFile.unnamedFile")
        let base = folder.isEmpty ? FilePath(".") : folder
        var template = Array(base.appending(".scratch-XXXXXX").string.utf8CString)
        let raw = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard raw >= 0 else {
            throw AssetPackFormatError.io("create a temporary file in", base, Errno(rawValue: errno))
        }
        _ = fcntl(raw, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return FileDescriptor(rawValue: raw)
    }

    /// Flushes a folder's entries (after a rename into it), ignoring failures: some file systems
    /// cannot sync folders, and the rename itself has happened.
    public static func syncDirectory(_ folder: FilePath) {
        BlockingIO.checkOffPool("AtomicFile.syncDirectory")
        guard let fd = try? FileDescriptor.open(folder.isEmpty ? "." : folder, .readOnly) else { return }
        _ = fsync(fd.rawValue)
        try? fd.close()
    }

    private static func syncFile(_ fd: FileDescriptor) throws {
        if fsync(fd.rawValue) != 0 { throw Errno(rawValue: errno) }
    }
}
