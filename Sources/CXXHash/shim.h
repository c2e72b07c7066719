#ifndef CXXHASH_SHIM_H
#define CXXHASH_SHIM_H
/* xxHash (Debian's libxxhash-dev): XXH3-128 names the chunks a delta can take from an installed version. */
#include <xxhash.h>
#endif
