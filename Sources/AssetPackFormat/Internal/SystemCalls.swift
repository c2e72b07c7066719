import CLibArchive
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

extension AtomicFile {
    /// Flushes every buffer of the file system that holds `path` (Linux `syncfs`): one call makes a whole
    /// extracted pack durable, where an `fsync` per file would cost one flush each. Failures are ignored, as
    /// for ``syncDirectory(_:)``: the data is written, only its durability is in question.
    public static func syncFileSystem(containing path: FilePath) {
        guard let fd = try? FileDescriptor.open(path, .readOnly, options: [.closeOnExec]) else { return }
        _ = syncfs(fd.rawValue)
        try? fd.close()
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
