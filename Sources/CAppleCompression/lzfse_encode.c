// LZFSE encoding: see apple_compression.h. (Placeholder until the encoder lands.)
#include "apple_compression.h"

size_t ac_lzfse_encode_scratch_size(void) { return 1; }

ptrdiff_t ac_lzfse_encode(uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size, void *scratch) {
    (void)dst; (void)dst_capacity; (void)src; (void)src_size; (void)scratch;
    return AC_ERROR_UNSUPPORTED;
}
