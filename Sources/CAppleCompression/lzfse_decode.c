// LZFSE and LZVN decoding: see apple_compression.h. (Placeholder until the decoder lands.)
#include "apple_compression.h"

ptrdiff_t ac_lzfse_decode(uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size) {
    (void)dst; (void)dst_capacity; (void)src; (void)src_size;
    return AC_ERROR_UNSUPPORTED;
}
