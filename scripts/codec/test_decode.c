// Decode tests for CAppleCompression, written for this project: reads the vectors of make_vectors.py (its
// manifest) and checks each against the expected result, then cuts every stream short (every byte for small
// ones), flips bits, and checks the result is a clean error or a length within the buffer. Build it with
// -fsanitize=address,undefined to show that no input reads or writes out of bounds.
//
//   gcc -O2 -I Sources/CAppleCompression/include Sources/CAppleCompression/*.c scripts/codec/test_decode.c
//       -llz4 -llzma -lz -o /tmp/test_decode && /tmp/test_decode /tmp/vectors/manifest.txt
#include "apple_compression.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                                   \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            failures++;                                                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                          \
            fprintf(stderr, __VA_ARGS__);                                                                  \
            fputc('\n', stderr);                                                                           \
        }                                                                                                  \
    } while (0)

static uint8_t *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) exit(2);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

// Decodes from an exact-size heap copy, so that ASan sees any read past the input.
static ptrdiff_t decode(uint32_t algorithm, uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, src, n);
    ptrdiff_t r = ac_block_decode(algorithm, dst, cap, copy, n);
    free(copy);
    return r;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

// A damaged stream must give an error or a length that fits; ASan/UBSan catch the rest.
static void check_damaged(const char *name, uint32_t algorithm, const uint8_t *src, size_t n, size_t cap) {
    uint8_t *dst = malloc(cap ? cap : 1);
    ptrdiff_t r = decode(algorithm, dst, cap, src, n);
    CHECK(r >= AC_ERROR_NO_MEMORY && r <= (ptrdiff_t)cap, "%s: damaged stream gave %td", name, r);
    free(dst);
}

static void check_valid(const char *name, uint32_t algorithm, const uint8_t *enc, size_t n, const uint8_t *orig,
                        size_t size, int full) {
    // Exact capacity, a larger one, one byte short.
    uint8_t *dst = malloc(size + 100);
    ptrdiff_t r = decode(algorithm, dst, size, enc, n);
    CHECK(r == (ptrdiff_t)size && memcmp(dst, orig, size) == 0, "%s: exact capacity gave %td (want %zu)", name, r,
          size);
    r = decode(algorithm, dst, size + 100, enc, n);
    CHECK(r == (ptrdiff_t)size && memcmp(dst, orig, size) == 0, "%s: larger capacity gave %td", name, r);
    free(dst);
    if (size > 0) {
        dst = malloc(size - 1 ? size - 1 : 1);
        r = decode(algorithm, size - 1 ? dst : NULL, size - 1, enc, n);
        CHECK(r == AC_ERROR_OUTPUT_FULL, "%s: one byte short gave %td", name, r);
        free(dst);
    }
    if (!full) return;
    // Every truncation of small streams, a sample of the large ones: never a success.
    size_t step = n <= 20000 && size <= 65536 ? 1 : n / 50 + 1;
    for (size_t cut = 0; cut < n; cut += step) {
        uint8_t *out = malloc(size ? size : 1);
        ptrdiff_t t = decode(algorithm, out, size, enc, cut);
        // A bare LZ4 block has no end marker: a prefix ending on a sequence boundary is a valid, shorter block.
        const int frameless = strncmp(name, "lz4raw_", 7) == 0;
        CHECK(t < 0 || (frameless && t <= (ptrdiff_t)size), "%s: truncated at %zu of %zu gave %td", name, cut, n, t);
        free(out);
    }
    // Bit flips (and byte smashes), anywhere in small streams, mostly in headers in large ones.
    uint8_t *bad = malloc(n ? n : 1);
    for (int i = 0; i < (size <= 65536 ? 300 : 20) && n > 0; i++) {
        memcpy(bad, enc, n);
        size_t where = (size_t)(rng() % (n < 4096 || i % 2 ? n : 4096));
        if (i % 3 == 0) bad[where] = (uint8_t)rng();
        else bad[where] ^= (uint8_t)(1u << (rng() % 8));
        check_damaged(name, algorithm, bad, n, size);
    }
    free(bad);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s manifest.txt [--quick]\n", argv[0]);
        return 2;
    }
    int quick = argc > 2 && strcmp(argv[2], "--quick") == 0;
    FILE *m = fopen(argv[1], "r");
    if (!m) {
        perror(argv[1]);
        return 2;
    }
    char line[4096], expect[64], enc_path[2048], orig_path[2048];
    unsigned algorithm;
    int count = 0;
    while (fgets(line, sizeof line, m)) {
        if (sscanf(line, "%x %63s %2047s %2047s", &algorithm, expect, enc_path, orig_path) != 4) continue;
        size_t n, size = 0;
        uint8_t *enc = read_file(enc_path, &n);
        const char *name = strrchr(enc_path, '/') ? strrchr(enc_path, '/') + 1 : enc_path;
        if (strcmp(expect, "ok") == 0) {
            uint8_t *orig = read_file(orig_path, &size);
            check_valid(name, algorithm, enc, n, orig, size, !quick);
            free(orig);
        } else {
            long want = strtol(expect, NULL, 10);
            const size_t cap = 16u << 20; // room for any block here: the error must not be OUTPUT_FULL
            uint8_t *dst = malloc(cap);
            ptrdiff_t r = decode(algorithm, dst, cap, enc, n);
            free(dst);
            CHECK(r == want, "%s: gave %td, want %ld", name, r, want);
        }
        free(enc);
        count++;
    }
    fclose(m);
    // No input at all, NULL buffers.
    CHECK(ac_lzfse_decode(NULL, 0, NULL, 0) == AC_ERROR_CORRUPT, "NULL, 0");
    CHECK(ac_block_decode(AC_ALGORITHM_LZBITMAP, NULL, 0, NULL, 0) == AC_ERROR_UNSUPPORTED, "LZBITMAP");
    printf("%d vectors, %d failures\n", count, failures);
    return failures != 0;
}
