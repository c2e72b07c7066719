// The encode side of one pbz block: see apple_compression.h. (LZFSE only so far.)
#include "apple_compression.h"

#include <stdlib.h>

ptrdiff_t ac_block_encode(uint32_t algorithm, uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size) {
    if (algorithm == AC_ALGORITHM_LZFSE) {
        void *scratch = malloc(ac_lzfse_encode_scratch_size());
        if (!scratch) return AC_ERROR_NO_MEMORY;
        ptrdiff_t r = ac_lzfse_encode(dst, dst_capacity, src, src_size, scratch);
        free(scratch);
        return r;
    }
    return AC_ERROR_UNSUPPORTED;
}
