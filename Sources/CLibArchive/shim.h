#ifndef CLIBARCHIVE_SHIM_H
#define CLIBARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>

/* File-type bits of archive_entry_filetype(). The AE_IF* macros carry a cast, which Swift does not import,
 * so they are re-declared here as constants taken from the header itself. */
static const unsigned int BA_AE_IFMT = AE_IFMT;
static const unsigned int BA_AE_IFREG = AE_IFREG;
static const unsigned int BA_AE_IFDIR = AE_IFDIR;
static const unsigned int BA_AE_IFLNK = AE_IFLNK;

#endif
