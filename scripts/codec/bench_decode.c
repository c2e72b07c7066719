// Decode speed of our LZFSE decoder against Apple's reference, side by side on the same streams, written for
// this project. The reference is the lzfse/lzfse C code inside the PyPI `lzfse` extension module, loaded with
// dlopen (its lzfse_* symbols are exported; libpython is loaded first for its other symbols). Each input is
// encoded once by the reference encoder; each decoder then runs `runs` times; the best time counts.
//
//   gcc -O2 -I Sources/CAppleCompression/include Sources/CAppleCompression/*.c scripts/codec/bench_decode.c
//       -llz4 -llzma -lz -ldl -o /tmp/bench_decode
//   /tmp/bench_decode LZFSE_EXTENSION.so LIBPYTHON.so TEXT_FILE [MiB] [runs]
#include "apple_compression.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef size_t (*ref_encode_fn)(uint8_t *, size_t, const uint8_t *, size_t, void *);
typedef size_t (*ref_decode_fn)(uint8_t *, size_t, const uint8_t *, size_t, void *);
typedef size_t (*ref_scratch_fn)(void);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void bench(const char *label, const uint8_t *data, size_t size, int runs, ref_encode_fn enc,
                  ref_decode_fn dec, void *scratch) {
    size_t cap = size + size / 8 + 4096;
    uint8_t *stream = malloc(cap), *out = malloc(size + 64);
    size_t n = enc(stream, cap, data, size, NULL);
    if (n == 0) {
        fprintf(stderr, "reference encoder failed\n");
        exit(1);
    }
    double best_ours = 1e9, best_ref = 1e9;
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        ptrdiff_t got = ac_lzfse_decode(out, size, stream, n);
        double t1 = now();
        if (got != (ptrdiff_t)size || memcmp(out, data, size) != 0) {
            fprintf(stderr, "%s: our decoder gave %td\n", label, got);
            exit(1);
        }
        memset(out, 0, size);
        double t2 = now();
        size_t ref = dec(out, size + 64, stream, n, scratch);
        double t3 = now();
        if (ref != size || memcmp(out, data, size) != 0) {
            fprintf(stderr, "%s: reference gave %zu\n", label, ref);
            exit(1);
        }
        if (t1 - t0 < best_ours) best_ours = t1 - t0;
        if (t3 - t2 < best_ref) best_ref = t3 - t2;
    }
    double mib = (double)size / (1 << 20);
    printf("%-8s %7.1f MiB -> %7.1f MiB (%.3f)  ours %7.1f MiB/s  reference %7.1f MiB/s  ratio %.2f\n", label, mib,
           (double)n / (1 << 20), (double)n / (double)size, mib / best_ours, mib / best_ref, best_ref / best_ours);
    free(stream);
    free(out);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s lzfse-extension.so libpython.so text-file [MiB] [runs]\n", argv[0]);
        return 2;
    }
    size_t size = (size_t)(argc > 4 ? atoi(argv[4]) : 50) << 20;
    int runs = argc > 5 ? atoi(argv[5]) : 5;
    if (!dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    ref_encode_fn enc = (ref_encode_fn)dlsym(lib, "lzfse_encode_buffer");
    ref_decode_fn dec = (ref_decode_fn)dlsym(lib, "lzfse_decode_buffer");
    ref_scratch_fn scratch_size = (ref_scratch_fn)dlsym(lib, "lzfse_decode_scratch_size");
    if (!enc || !dec || !scratch_size) return 1;
    void *scratch = malloc(scratch_size());

    uint8_t *text = malloc(size);
    FILE *f = fopen(argv[3], "rb");
    if (!f) {
        perror(argv[3]);
        return 1;
    }
    size_t got = fread(text, 1, size, f);
    fclose(f);
    for (size_t i = got; got > 0 && i < size; i++) text[i] = text[i - got]; // repeat a short file
    bench("text", text, size, runs, enc, dec, scratch);

    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < size; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(text + i, &x, size - i < 8 ? size - i : 8);
    }
    bench("random", text, size, runs, enc, dec, scratch);
    return 0;
}
