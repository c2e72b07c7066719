import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// What ``FileDescriptor/readSmallRegularFile(_:in:followingSymlink:maximumSize:)`` found.
package enum SmallFile {
    /// The file's bytes.
    case bytes([UInt8])
    /// Not a regular file: what it is instead, as "a FIFO" or "a character device".
    case notRegular(String)
    /// A regular file of more bytes than the bound.
    case tooLarge
}

extension FileDescriptor {
    /// Opens `path` (relative to `folder` when one is given) to read, and `fstat`s what was opened. The open
    /// never waits (`O_NONBLOCK`: a FIFO put where a file should be would hold it until a writer came) and
    /// does not follow a symlink at the last component unless `followingSymlink`. The caller decides from
    /// the `stat` of the descriptor, not of the path beforehand, so nothing can be swapped in between.
    /// - Throws: `Errno` (`ELOOP` for a symlink not followed).
    static func openWithoutWaiting(
        _ path: FilePath,
        in folder: FileDescriptor? = nil,
        followingSymlink: Bool
    ) throws -> (fd: FileDescriptor, info: Glibc.stat) {
        BlockingIO.checkOffPool("FileDescriptor.openWithoutWaiting")
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (followingSymlink ? 0 : O_NOFOLLOW)
        var raw: Int32
        repeat {
            raw = path.withPlatformString { openat(folder?.rawValue ?? AT_FDCWD, $0, flags) }
        } while raw < 0 && errno == EINTR
        guard raw >= 0 else { throw Errno(rawValue: errno) }
        var info = Glibc.stat()
        guard fstat(raw, &info) == 0 else {
            let failure = Errno(rawValue: errno)
            Glibc.close(raw)
            throw failure
        }
        return (FileDescriptor(rawValue: raw), info)
    }

    /// Reads a small regular file whole (a manifest, a state file): opened as
    /// ``openWithoutWaiting(_:in:followingSymlink:)``, refused unread when it is not a regular file or its size
    /// is over `maximumSize`, and never read past that (a file that grows while it is read is too large too).
    /// - Throws: `Errno` from `open` or `read`.
    package static func readSmallRegularFile(
        _ path: FilePath,
        in folder: FileDescriptor? = nil,
        followingSymlink: Bool,
        maximumSize: Int
    ) throws -> SmallFile {
        BlockingIO.checkOffPool("FileDescriptor.readSmallRegularFile")
        let (fd, info) = try openWithoutWaiting(path, in: folder, followingSymlink: followingSymlink)
        return try fd.closeAfter {
            guard info.st_mode & S_IFMT == S_IFREG else { return .notRegular(kind(of: info.st_mode)) }
            guard info.st_size <= maximumSize else { return .tooLarge }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(Int(info.st_size))
            try fd.forEachChunk(upTo: Int64(maximumSize) + 1) { bytes.append(contentsOf: $0) }
            return bytes.count > maximumSize ? .tooLarge : .bytes(bytes)
        }
    }

    /// What a file of mode `mode` that is not a regular file is, for messages: "a FIFO", "a character device", ...
    static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a folder"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "a special file"
        }
    }

    /// Reads the file in chunks of up to 1 MiB from byte `start` (0 by default), handing each to `body`
    /// (valid during the call only), up to `length` bytes or the end of the file: the one read loop behind
    /// hashing and copying.
    /// - Returns: The bytes read.
    /// - Throws: `Errno` from `pread`, or what `body` throws.
    @discardableResult
    public func forEachChunk(
        from start: Int64 = 0,
        upTo length: Int64 = .max,
        _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int64 {
        BlockingIO.checkOffPool("FileDescriptor.forEachChunk")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < length {
            let want = Int(min(Int64(buffer.count), length - offset))
            let count = try read(
                fromAbsoluteOffset: start + offset,
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]),
                retryOnInterrupt: true
            )
            if count == 0 { break }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += Int64(count)
        }
        return offset
    }
}

extension FileDescriptor {
    /// The size and modification time (nanoseconds since 1970) of the regular file at `path`, not followed if a
    /// symlink; `nil` for anything else, or nothing.
    public static func regularFileStamp(at path: FilePath) -> (size: Int64, modified: Int64)? {
        var info = Glibc.stat()
        guard lstat(path.string, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return (Int64(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    /// Gives this file the access and modification times of the file open as `source`, as `cp -p` does
    /// (ignoring failures: the copy is whole either way).
    public func keepTimes(of source: FileDescriptor) {
        var info = Glibc.stat()
        guard fstat(source.rawValue, &info) == 0 else { return }
        _ = futimens(rawValue, [info.st_atim, info.st_mtim])
    }
}

extension FileDescriptor {
    /// What a name in a folder is, seen without following a symlink.
    public enum EntryKind: Sendable, Hashable {
        case regular, folder, symlink, other
    }

    /// What is at `relative` below this folder (a symlink is reported, not followed), or `nil` when nothing is
    /// there or it cannot be looked at.
    public func entryKind(_ relative: String) -> EntryKind? {
        var info = Glibc.stat()
        guard fstatat(rawValue, relative, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .folder
        case S_IFLNK: return .symlink
        default: return .other
        }
    }

    /// The names in this folder (`.` and `..` left out), read through a descriptor of its own: what a link
    /// planted in place of the folder points to is never listed.
    /// - Throws: `Errno`.
    public func entryNames() throws(Errno) -> [String] {
        BlockingIO.checkOffPool("FileDescriptor.entryNames")
        let copy = openat(rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard copy >= 0, let dir = fdopendir(copy) else {
            let failure = Errno(rawValue: errno)
            if copy >= 0 { Glibc.close(copy) }
            throw failure
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Opens a folder to work relative to (`O_DIRECTORY`, read-only). The path itself may lead through
    /// symlinks (a folder the user named through one); what lies below it is opened with
    /// ``openFolder(_:creating:)``, which never follows one.
    /// - Throws: `Errno`.
    public static func openFolder(_ path: FilePath) throws(Errno) -> FileDescriptor {
        BlockingIO.checkOffPool("FileDescriptor.openFolder")
        let raw = Glibc.open(path.string, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard raw >= 0 else { throw Errno(rawValue: errno) }
        return FileDescriptor(rawValue: raw)
    }

    /// Opens the folder at `relative` below this one a component at a time, each with
    /// `O_DIRECTORY | O_NOFOLLOW` relative to the one before (made with `mkdirat` first when `creating`): a
    /// symlink anywhere on the way is refused (`ELOOP`, or `ENOTDIR` for a file), never followed, and no path is
    /// resolved twice. `.` and empty components are skipped; a `..` is refused (`EINVAL`). An empty path
    /// opens this folder again.
    /// - Returns: A new descriptor the caller closes.
    /// - Throws: `Errno`.
    public func openFolder(_ relative: String, creating: Bool) throws(Errno) -> FileDescriptor {
        BlockingIO.checkOffPool("FileDescriptor.openFolder")
        var current = FileDescriptor(rawValue: openat(rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC))
        guard current.rawValue >= 0 else { throw Errno(rawValue: errno) }
        for part in Substring(relative).utf8.split(separator: UInt8(ascii: "/")) {
            if part.elementsEqual([UInt8(ascii: ".")]) { continue }
            let name = String(Substring(part))
            guard !part.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) else {
                try? current.close()
                throw Errno.invalidArgument
            }
            if creating, mkdirat(current.rawValue, name, 0o755) != 0, errno != EEXIST {
                let failure = Errno(rawValue: errno)
                try? current.close()
                throw failure
            }
            let next = openat(current.rawValue, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let failure = errno
            try? current.close()
            guard next >= 0 else { throw Errno(rawValue: failure) }
            current = FileDescriptor(rawValue: next)
        }
        return current
    }
}
