import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

extension FileDescriptor {
    /// Reads from the current offset to the end of the file (for small files such as manifests).
    func readAll() throws -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try self.read(into: $0, retryOnInterrupt: true) }
            if count == 0 { return result }
            result.append(contentsOf: chunk[0..<count])
        }
    }

    /// Reads the file in chunks of up to 1 MiB from byte 0, handing each to `body` (valid during the call
    /// only), up to `length` bytes or the end of the file: the one read loop behind hashing and copying.
    /// - Returns: The bytes read.
    /// - Throws: `Errno` from `pread`, or what `body` throws.
    @discardableResult
    public func forEachChunk(upTo length: Int64 = .max, _ body: (UnsafeRawBufferPointer) throws -> Void) throws
        -> Int64
    {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < length {
            let want = Int(min(Int64(buffer.count), length - offset))
            let count = try read(
                fromAbsoluteOffset: offset,
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
    /// Opens a folder to work relative to (`O_DIRECTORY`, read-only). The path itself may lead through
    /// symlinks (a folder the user named through one); what lies below it is opened with
    /// ``openFolder(_:creating:)``, which never follows one.
    /// - Throws: `Errno`.
    public static func openFolder(_ path: FilePath) throws(Errno) -> FileDescriptor {
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
