// The Linux calls this package makes that are not POSIX (syncfs, sync_file_range, mallopt, posix_fadvise's
// advice, O_DIRECT, O_TMPFILE, copy_file_range), in one place, as swift-nio's CNIOLinux: compiled with
// _GNU_SOURCE, which Swift's Glibc import does not define (O_DIRECT was a number per architecture in Swift
// before), and the one file a port to another system replaces.
#ifndef C_LINUX_H
#define C_LINUX_H

#include <sys/types.h>

/// How a file will be read, for the kernel's read-ahead and page cache (posix_fadvise).
typedef enum {
    CLinuxAdviceSequential,
    CLinuxAdviceRandom,
    CLinuxAdviceWillNeed,
    CLinuxAdviceDontNeed,
} CLinuxAdvice;

/// Flushes every buffer of the file system that holds `fd` (syncfs); 0, or -1 with errno set.
int c_linux_syncfs(int fd);

/// Starts writing `length` dirty bytes of `fd` from `offset` back to the disk and returns without waiting for
/// them (sync_file_range with SYNC_FILE_RANGE_WRITE): a hint that makes a later syncfs shorter, never a
/// promise that the bytes are durable; 0, or -1 with errno set.
int c_linux_start_writeback(int fd, off_t offset, off_t length);

/// Fixes glibc's trim threshold (which also fixes its mmap threshold) at `bytes`; 1 on success.
int c_linux_set_trim_threshold(int bytes);

/// Advises the kernel how `length` bytes of `fd` from `offset` will be read (0 bytes: to the end); 0, or an
/// error number.
int c_linux_fadvise(int fd, off_t offset, off_t length, CLinuxAdvice advice);

/// The O_DIRECT open flag (0 where the system has none).
int c_linux_o_direct(void);

/// The O_TMPFILE open flag, which makes an unnamed file in a folder (0 where the system has none).
int c_linux_o_tmpfile(void);

/// Copies up to `length` bytes from `in` to `out` at their offsets inside the kernel (copy_file_range): the
/// bytes copied (0 at the end of `in`), or -1 with errno set (EXDEV, ENOSYS, EINVAL where it cannot).
long long c_linux_copy_file_range(int in, int out, long long length);

#endif
