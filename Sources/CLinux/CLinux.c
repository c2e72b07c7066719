#define _GNU_SOURCE
#include "CLinux.h"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

int c_linux_syncfs(int fd) { return syncfs(fd); }

int c_linux_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

int c_linux_set_trim_threshold(int bytes) { return mallopt(M_TRIM_THRESHOLD, bytes); }

int c_linux_fadvise(int fd, off_t offset, off_t length, CLinuxAdvice advice) {
    int value = POSIX_FADV_NORMAL;
    switch (advice) {
    case CLinuxAdviceSequential: value = POSIX_FADV_SEQUENTIAL; break;
    case CLinuxAdviceRandom: value = POSIX_FADV_RANDOM; break;
    case CLinuxAdviceWillNeed: value = POSIX_FADV_WILLNEED; break;
    case CLinuxAdviceDontNeed: value = POSIX_FADV_DONTNEED; break;
    }
    return posix_fadvise(fd, offset, length, value);
}

int c_linux_o_direct(void) {
#ifdef O_DIRECT
    return O_DIRECT;
#else
    return 0;
#endif
}

int c_linux_o_tmpfile(void) {
#ifdef O_TMPFILE
    return O_TMPFILE;
#else
    return 0;
#endif
}

long long c_linux_copy_file_range(int in, int out, long long length) {
    return (long long)copy_file_range(in, NULL, out, NULL, (size_t)length, 0);
}
