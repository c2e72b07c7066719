// Differential check of our LZFSE decoder against the reference (the lzfse/lzfse C code in the PyPI extension,
// loaded as in bench_decode.c), written for this project: for each file (a fuzz corpus, say: byte 0 is the
// fuzz selector and is skipped), both decode; whenever the reference succeeds, ours must give the same bytes,
// except where ours is stricter on purpose (bytes after bvx$, a block whose size disagrees with its header,
// incomplete FSE tables), which are counted apart.
//
//   gcc -O2 -I Sources/CAppleCompression/include Sources/CAppleCompression/*.c scripts/codec/diff_decode.c
//       -llz4 -llzma -lz -ldl -o /tmp/diff_decode
//   /tmp/diff_decode LZFSE_EXTENSION.so LIBPYTHON.so /tmp/fuzz_corpus/*
#include "apple_compression.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef size_t (*ref_decode_fn)(uint8_t *, size_t, const uint8_t *, size_t, void *);

int main(int argc, char **argv) {
    if (argc < 4 || !dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)) return 2;
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) return 2;
    ref_decode_fn dec = (ref_decode_fn)dlsym(lib, "lzfse_decode_buffer");
    size_t cap = 8u << 20;
    uint8_t *ours = malloc(cap + 1), *ref = malloc(cap + 1), *buf = malloc(1 << 20);
    int same = 0, both_fail = 0, stricter = 0, differ = 0;
    for (int i = 3; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) continue;
        size_t n = fread(buf, 1, 1 << 20, f);
        fclose(f);
        if (n < 2) continue;
        // The reference returns the bytes written, 0 on errors; a full buffer (cap + 1) means "did not fit".
        size_t r = dec(ref, cap + 1, buf + 1, n - 1, NULL);
        ptrdiff_t o = ac_lzfse_decode(ours, cap, buf + 1, n - 1);
        if (r == 0 || r > cap) {
            if (o < 0) both_fail++;
            else if (r == 0 && o == 0) same++;
            else {
                differ++;
                printf("ours ok (%td), reference failed (%zu): %s\n", o, r, argv[i]);
            }
        } else if (o == (ptrdiff_t)r && memcmp(ours, ref, r) == 0) {
            same++;
        } else if (o < 0) {
            stricter++;
            printf("ours %td, reference %zu bytes: %s\n", o, r, argv[i]);
        } else {
            differ++;
            printf("DIFFERENT output (ours %td, reference %zu): %s\n", o, r, argv[i]);
        }
    }
    printf("same %d, both failed %d, ours stricter %d, different %d\n", same, both_fail, stricter, differ);
    return differ != 0;
}
