import CLinux
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
        if c_linux_syncfs(fd.rawValue) != 0 {
            throw AssetPackFormatError.io("flush the file system holding", path, Errno(rawValue: errno))
        }
    }
}

extension AtomicFile {
    /// A new file in `folder` without a name (`O_TMPFILE`), open for writing, or `nil` where there is none: a
    /// file system without unnamed files (or a kernel before 3.11), or no `/proc` to name it by once complete.
    static func unnamedFile(in folder: FileDescriptor, permissions: FilePermissions) -> FileDescriptor? {
        let flag = c_linux_o_tmpfile()
        guard flag != 0, canLinkUnnamed else { return nil }
        var raw: Int32
        repeat {
            raw = openat(folder.rawValue, ".", flag | O_WRONLY | O_CLOEXEC, permissions.rawValue)
        } while raw < 0 && errno == EINTR
        return raw >= 0 ? FileDescriptor(rawValue: raw) : nil
    }

    /// Gives the file of ``unnamedFile(in:permissions:)`` the name `name` in `folder`, which must be free
    /// (`linkat` through `/proc/self/fd`, which needs no privilege, where `AT_EMPTY_PATH` would); the error, or
    /// `nil` once done.
    static func link(unnamed fd: FileDescriptor, in folder: FileDescriptor, as name: String) -> Errno? {
        linkat(AT_FDCWD, "/proc/self/fd/\(fd.rawValue)", folder.rawValue, name, AT_SYMLINK_FOLLOW) == 0
            ? nil : Errno(rawValue: errno)
    }

    private static let canLinkUnnamed = access("/proc/self/fd", F_OK) == 0
}

/// Process-wide tuning that a long-running command applies once at start.
public enum ProcessTuning {
    /// Keeps glibc from holding on to freed response buffers: by default it raises its mmap threshold after
    /// the first large buffers are freed, and from then on keeps up to twice that in every thread's arena.
    /// Serving a 1 GiB pack to 8 clients at once then peaked at 160-380 MiB for about 20 MiB live; with a
    /// fixed trim threshold (which also fixes the mmap threshold) it peaks at about 60 MiB, at the same speed
    /// (`make bench`, rss-serve-8-clients).
    public static func limitAllocatorRetention() {
        _ = c_linux_set_trim_threshold(4 << 20)
    }
}

/// How a file will be read, for the kernel's read-ahead and page cache (`posix_fadvise`).
package enum FileAdvice {
    /// Read from start to end: read further ahead.
    case sequential
    /// Read in no order: no read-ahead.
    case random
    /// Read soon: start reading it in.
    case willNeed
    /// Not read again soon: drop its pages from the cache (no root needed; pages another process maps stay).
    case dontNeed
}

extension FileDescriptor {
    /// Advises the kernel how `length` bytes from `offset` (0 bytes: to the end) will be read. Only a hint:
    /// a file system that ignores it changes nothing.
    package func advise(_ advice: FileAdvice, offset: Int64 = 0, length: Int64 = 0) {
        let value: CLinuxAdvice =
            switch advice {
            case .sequential: CLinuxAdviceSequential
            case .random: CLinuxAdviceRandom
            case .willNeed: CLinuxAdviceWillNeed
            case .dontNeed: CLinuxAdviceDontNeed
            }
        _ = c_linux_fadvise(rawValue, off_t(offset), off_t(length), value)
    }

    /// The `O_DIRECT` open flag (0 where the system has none).
    package static var directFlag: Int32 { c_linux_o_direct() }

    /// Copies the rest of this file, from its offset, to `output` at its offset, inside the kernel
    /// (`copy_file_range`): no trip of the bytes through this process.
    /// - Returns: `false` when the kernel cannot copy between these two files (another kind of file system, an
    ///   old kernel) and nothing was copied: the caller copies by reading and writing.
    /// - Throws: `Errno` for a failure after that (a full disk, an I/O error).
    package func copyRestInKernel(to output: FileDescriptor) throws -> Bool {
        BlockingIO.checkOffPool("FileDescriptor.copyRestInKernel")
        var copied: Int64 = 0
        while true {
            let count = c_linux_copy_file_range(rawValue, output.rawValue, 1 << 30)
            if count > 0 {
                copied += count
                continue
            }
            if count == 0 { return true }
            let failure = Errno(rawValue: errno)
            if failure == .interrupted { continue }
            if copied == 0, [EXDEV, ENOSYS, EINVAL, EOPNOTSUPP].contains(failure.rawValue) { return false }
            throw failure
        }
    }
}
