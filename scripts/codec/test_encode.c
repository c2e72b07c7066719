// Encoding harness for the codec tests (check_encode.py drives it). Written for this project.
//   test_encode IN OUT_PREFIX
// Encodes the file IN with each algorithm into OUT_PREFIX.{lzfse,lz4,lzma,zlib} (decoded by check_encode.py
// with the reference decoders) and checks here what needs no decoder:
//   - the same input gives the same bytes twice (fresh scratch memory filled differently each time);
//   - nothing is written past the capacity given: the output buffer sits in a larger one whose tail is
//     filled with a pattern that must survive, for the ample capacity and for capacities too small;
//   - a capacity one byte short of the encoding gives AC_ERROR_OUTPUT_FULL, as do tiny capacities;
//   - LZBITMAP and unknown algorithms give AC_ERROR_UNSUPPORTED.
#include "apple_compression.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 64

static int failures;

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                             \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fprintf(stderr, "\n");                                                                           \
            failures++;                                                                                      \
        }                                                                                                    \
    } while (0)

static const struct {
    unsigned id;
    const char *ext;
} algs[] = {{AC_ALGORITHM_LZFSE, "lzfse"}, {AC_ALGORITHM_LZ4, "lz4"}, {AC_ALGORITHM_LZMA, "lzma"}, {AC_ALGORITHM_ZLIB, "zlib"}};

// Encodes with capacity `cap` into a buffer with a guard tail; checks the guard. `fill` varies the garbage
// the buffer starts with, and (for LZFSE through ac_lzfse_encode) the scratch memory.
static ptrdiff_t encode(unsigned alg, uint8_t **out, size_t cap, const uint8_t *src, size_t n, int fill) {
    uint8_t *buf = malloc(cap + GUARD);
    memset(buf, fill, cap);
    memset(buf + cap, 0xA5, GUARD);
    ptrdiff_t r;
    if (alg == AC_ALGORITHM_LZFSE) {
        size_t ss = ac_lzfse_encode_scratch_size();
        uint8_t *scratch = malloc(ss);
        memset(scratch, fill ^ 0x5c, ss);
        r = ac_lzfse_encode(buf, cap, src, n, scratch);
        free(scratch);
    } else {
        r = ac_block_encode(alg, buf, cap, src, n);
    }
    for (size_t i = 0; i < GUARD; i++)
        if (buf[cap + i] != 0xA5) {
            CHECK(0, "alg %#x wrote past capacity %zu (n=%zu)", alg, cap, n);
            break;
        }
    CHECK(r <= (ptrdiff_t)cap, "alg %#x returned %td > capacity %zu", alg, r, cap);
    *out = buf;
    return r;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s IN OUT_PREFIX\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) return perror(argv[1]), 2;
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *src = malloc(n + 1);
    if (fread(src, 1, n, f) != n) return perror("read"), 2;
    fclose(f);

    for (size_t a = 0; a < sizeof algs / sizeof algs[0]; a++) {
        unsigned alg = algs[a].id;
        size_t cap = n + n / 2 + 1024;
        uint8_t *first, *second;
        ptrdiff_t r1 = encode(alg, &first, cap, src, n, 0x00);
        ptrdiff_t r2 = encode(alg, &second, cap, src, n, 0xff);
        CHECK(r1 > 0, "%s: encode failed: %td (n=%zu)", algs[a].ext, r1, n);
        CHECK(r1 == r2 && (r1 <= 0 || memcmp(first, second, (size_t)r1) == 0), "%s: not deterministic (n=%zu)",
              algs[a].ext, n);
        if (r1 > 0) {
            char path[4096];
            snprintf(path, sizeof path, "%s.%s", argv[2], algs[a].ext);
            FILE *o = fopen(path, "wb");
            fwrite(first, 1, (size_t)r1, o);
            fclose(o);
            // One byte short must not fit, and must not write out of bounds; nor must tiny capacities.
            uint8_t *tmp;
            ptrdiff_t r = encode(alg, &tmp, (size_t)r1 - 1, src, n, 0x11);
            CHECK(r == AC_ERROR_OUTPUT_FULL, "%s: capacity %td - 1 gave %td", algs[a].ext, r1, r);
            free(tmp);
            size_t smalls[] = {0, 1, 4, 8, 11, 12, 15, 16, 31, 40, (size_t)r1 / 2, (size_t)r1 - 4};
            for (size_t s = 0; s < sizeof smalls / sizeof smalls[0]; s++) {
                if (smalls[s] >= (size_t)r1) continue;
                r = encode(alg, &tmp, smalls[s], src, n, 0x22);
                CHECK(r == AC_ERROR_OUTPUT_FULL, "%s: capacity %zu gave %td (needs %td)", algs[a].ext, smalls[s], r, r1);
                free(tmp);
            }
        }
        free(first);
        free(second);
    }
    uint8_t out[64];
    CHECK(ac_block_encode(AC_ALGORITHM_LZBITMAP, out, sizeof out, src, n < 8 ? n : 8) == AC_ERROR_UNSUPPORTED,
          "LZBITMAP must be unsupported");
    CHECK(ac_block_encode(0x1234, out, sizeof out, src, n < 8 ? n : 8) == AC_ERROR_UNSUPPORTED,
          "an unknown algorithm must be unsupported");
    free(src);
    return failures ? 1 : 0;
}
