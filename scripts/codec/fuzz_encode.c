// libFuzzer harness for the encoders. Written for this project.
//   clang -g -O1 -fsanitize=fuzzer,address,undefined -I Sources/CAppleCompression/include \
//       Sources/CAppleCompression/*.c scripts/codec/fuzz_encode.c -o /tmp/fuzz_encode -llz4 -llzma -lz
//   /tmp/fuzz_encode -max_total_time=300 -max_len=300000
// The first input byte picks the algorithm and the output capacity (ample, or cut to a fraction of the
// input so the AC_ERROR_OUTPUT_FULL paths run); the rest is the data. The output buffer is malloc'd at
// exactly the capacity, so AddressSanitizer reports any write past it. Each input is encoded twice, with
// scratch and output memory filled differently, and the results must be the same bytes. (Round trips go
// through the Python reference decoders in check_encode.py: no decoder lives in this branch.)
#include "apple_compression.h"

#include <stdlib.h>
#include <string.h>

static ptrdiff_t run(unsigned alg, uint8_t *out, size_t cap, const uint8_t *src, size_t n, int fill) {
    memset(out, fill, cap);
    if (alg != AC_ALGORITHM_LZFSE) return ac_block_encode(alg, out, cap, src, n);
    size_t ss = ac_lzfse_encode_scratch_size();
    uint8_t *scratch = malloc(ss);
    memset(scratch, fill, ss);
    ptrdiff_t r = ac_lzfse_encode(out, cap, src, n, scratch);
    free(scratch);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const unsigned algs[] = {AC_ALGORITHM_LZFSE, AC_ALGORITHM_LZFSE, AC_ALGORITHM_LZFSE, AC_ALGORITHM_LZ4,
                                    AC_ALGORITHM_ZLIB,  AC_ALGORITHM_LZMA,  AC_ALGORITHM_LZFSE, AC_ALGORITHM_LZFSE};
    unsigned alg = algs[data[0] & 7];
    unsigned mode = data[0] >> 3; // 0..31
    const uint8_t *src = data + 1;
    size_t n = size - 1;
    size_t cap = mode >= 16 ? n + n / 2 + 1024 : (n * mode) / 16 + mode;
    uint8_t *a = malloc(cap ? cap : 1), *b = malloc(cap ? cap : 1);
    ptrdiff_t ra = run(alg, a, cap, src, n, 0x00);
    ptrdiff_t rb = run(alg, b, cap, src, n, 0xff);
    if (ra != rb || ra > (ptrdiff_t)cap) abort();
    if (ra > 0 && memcmp(a, b, (size_t)ra) != 0) abort();
    if (mode >= 16 && ra < 0) abort(); // an ample capacity always fits
    free(a);
    free(b);
    return 0;
}
