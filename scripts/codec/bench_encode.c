// Times ac_lzfse_encode (or ac_block_encode with another algorithm) on one file: best of RUNS, printed as
// "size seconds". Written for this project; used by bench_encode.py.
//   bench_encode FILE RUNS [ALGORITHM_HEX] [OUT]
#include "apple_compression.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FILE RUNS [ALGORITHM_HEX] [OUT]\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) return perror(argv[1]), 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *src = malloc((size_t)n + 1);
    if (fread(src, 1, (size_t)n, f) != (size_t)n) return perror("read"), 1;
    fclose(f);
    int runs = atoi(argv[2]);
    unsigned alg = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 16) : AC_ALGORITHM_LZFSE;
    size_t cap = (size_t)n + (size_t)n / 4 + 65536;
    unsigned char *dst = malloc(cap);
    void *scratch = malloc(ac_lzfse_encode_scratch_size());
    double best = 1e30;
    ptrdiff_t r = 0;
    for (int i = 0; i < runs; i++) {
        double t0 = now();
        r = alg == AC_ALGORITHM_LZFSE ? ac_lzfse_encode(dst, cap, src, (size_t)n, scratch)
                                      : ac_block_encode(alg, dst, cap, src, (size_t)n);
        double t = now() - t0;
        if (r < 0) {
            fprintf(stderr, "encode failed: %td\n", r);
            return 1;
        }
        if (t < best) best = t;
    }
    if (argc > 4) {
        FILE *o = fopen(argv[4], "wb");
        fwrite(dst, 1, (size_t)r, o);
        fclose(o);
    }
    printf("%td %.6f\n", r, best);
    return 0;
}
