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
        let folder = path.removingLastComponent()
        let name = path.lastComponent?.string ?? "file"
        let temporary = folder.appending(".\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(
                temporary,
                .writeOnly,
                options: [.create, .exclusiveCreate],
                permissions: permissions,
                retryOnInterrupt: true
            )
        } catch let errno as Errno {
            throw AssetPackFormatError.io("create", temporary, errno)
        }
        var moved = false
        defer {
            if !moved { _ = unlink(temporary.string) }
        }
        let result: T
        do {
            result = try fd.closeAfter {
                let value = try body(fd)
                do {
                    try syncFile(fd)
                } catch let errno as Errno {
                    throw AssetPackFormatError.io("fsync", temporary, errno)
                }
                return value
            }
        }
        if rename(temporary.string, path.string) != 0 {
            throw AssetPackFormatError.io("rename \(temporary) to", path, Errno(rawValue: errno))
        }
        moved = true
        syncDirectory(folder)
        return result
    }

    /// Writes `bytes` to `path` atomically.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func write(_ bytes: some Sequence<UInt8>, to path: FilePath) throws {
        try write(to: path) { fd in
            do {
                _ = try fd.writeAll(bytes)
            } catch let errno as Errno {
                throw AssetPackFormatError.io("write", path, errno)
            }
        }
    }

    /// A new file in `folder` open for reading and writing, already removed from the folder: scratch space
    /// (an index while it grows or waits to be read) that nothing can leave behind, whatever happens.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func unnamedFile(in folder: FilePath) throws -> FileDescriptor {
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
        guard let fd = try? FileDescriptor.open(folder.isEmpty ? "." : folder, .readOnly) else { return }
        _ = fsync(fd.rawValue)
        try? fd.close()
    }

    private static func syncFile(_ fd: FileDescriptor) throws {
        if fsync(fd.rawValue) != 0 { throw Errno(rawValue: errno) }
    }
}
