// libFuzzer harness for the decoders of CAppleCompression, written for this project. The first byte picks the
// algorithm (mostly LZFSE) and how tight the output buffer is; the rest is the encoded block. Any crash,
// sanitizer report, hang, or a result outside [AC_ERROR_NO_MEMORY, capacity] is a finding.
//
//   clang -g -O1 -fsanitize=fuzzer,address,undefined -I Sources/CAppleCompression/include
//       Sources/CAppleCompression/*.c scripts/codec/fuzz_decode.c -llz4 -llzma -lz -o /tmp/fuzz_decode
//   /tmp/fuzz_decode -max_total_time=300 -max_len=70000 /tmp/fuzz_corpus
// (seeds: scripts/codec/make_fuzz_seeds.py turns make_vectors.py's small vectors into corpus files)
#include "apple_compression.h"

#include <stdlib.h>
#include <string.h>

static const uint32_t algorithms[4] = {AC_ALGORITHM_LZ4, AC_ALGORITHM_ZLIB, AC_ALGORITHM_LZMA, AC_ALGORITHM_LZFSE};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const unsigned selector = data[0];
    // Low two bits: the algorithm, LZFSE for half the inputs. Next bits: the capacity (tight ones find
    // OUTPUT_FULL paths and wide-copy slack mistakes).
    const uint32_t algorithm = (selector & 4) ? AC_ALGORITHM_LZFSE : algorithms[selector & 3];
    static const size_t caps[8] = {0, 1, 15, 100, 4096, 65536, 1 << 20, 4 << 20};
    const size_t cap = caps[(selector >> 3) & 7];
    // Exact-size copy of the input so that ASan sees any read past its end.
    uint8_t *src = malloc(size - 1 ? size - 1 : 1);
    memcpy(src, data + 1, size - 1);
    uint8_t *dst = malloc(cap ? cap : 1);
    const ptrdiff_t r = ac_block_decode(algorithm, cap ? dst : NULL, cap, src, size - 1);
    if (r < AC_ERROR_NO_MEMORY || r > (ptrdiff_t)cap) abort();
    free(dst);
    free(src);
    return 0;
}
