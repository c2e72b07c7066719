import CLibArchive
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

extension AtomicFile {
    /// Flushes every buffer of the file system that holds `path` (Linux `syncfs`): one call makes a whole
    /// extracted pack durable, where an `fsync` per file would cost one flush each.
    /// - Throws: ``AssetPackFormatError`` with code `.io` when the flush reports an error: a write that the
    ///   file system accepted did not reach the disk (out of space at writeback, an I/O error), so what was
    ///   written cannot be trusted.
    public static func syncFileSystem(containing path: FilePath) throws {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec])
        } catch let errno as Errno {
            throw AssetPackFormatError.io("open", path, errno)
        }
        defer { try? fd.close() }
        if syncfs(fd.rawValue) != 0 {
            throw AssetPackFormatError.io("flush the file system holding", path, Errno(rawValue: errno))
        }
    }
}

/// Process-wide tuning that a long-running command applies once at start.
public enum ProcessTuning {
    /// Keeps glibc from holding on to freed response buffers: by default it raises its mmap threshold after
    /// the first large buffers are freed, and from then on keeps up to twice that in every thread's arena.
    /// Serving a 1 GiB pack to 8 clients at once then peaked at 160-380 MiB for about 20 MiB live; with a
    /// fixed trim threshold (which also fixes the mmap threshold) it peaks at about 60 MiB, at the same speed
    /// (`make bench`, rss-serve-8-clients).
    public static func limitAllocatorRetention() {
        _ = mallopt(M_TRIM_THRESHOLD, 4 << 20)
    }
}
