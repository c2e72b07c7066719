// One pbz block through the algorithm its stream names: see apple_compression.h. (Placeholder.)
#include "apple_compression.h"

ptrdiff_t ac_block_decode(uint32_t algorithm, uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size) {
    if (algorithm == AC_ALGORITHM_LZFSE) return ac_lzfse_decode(dst, dst_capacity, src, src_size);
    return AC_ERROR_UNSUPPORTED;
}
