#ifndef CZSTD_SHIM_H
#define CZSTD_SHIM_H
/* zstd (Debian's libzstd-dev): a tar's compression on a thread of its own, beside libarchive's (ArchiveSink). */
#include <zstd.h>
#endif
