#!/usr/bin/env python3
"""Turns make_vectors.py's small vectors into libFuzzer seeds for fuzz_decode.c (written for this project):
each seed is a selector byte (algorithm, and a capacity that fits the original) then the encoded block.

usage: make_fuzz_seeds.py VECTORS/manifest.txt CORPUS_DIR
"""
import os
import sys

ALGORITHM_BITS = {0x100: 0, 0x205: 1, 0x306: 2, 0x801: 4}
CAPS = [0, 1, 15, 100, 4096, 65536, 1 << 20, 4 << 20]


def main():
    manifest, corpus = sys.argv[1], sys.argv[2]
    os.makedirs(corpus, exist_ok=True)
    for line in open(manifest):
        algorithm, expect, enc, orig = line.split()
        algorithm = int(algorithm, 16)
        if algorithm not in ALGORITHM_BITS or os.path.getsize(enc) > 70000:
            continue
        size = os.path.getsize(orig) if orig != "-" else 0
        if size > CAPS[-1]:
            continue
        cap_index = next(i for i, cap in enumerate(CAPS) if cap >= size)
        selector = ALGORITHM_BITS[algorithm] | cap_index << 3
        with open(enc, "rb") as f:
            data = f.read()
        with open(os.path.join(corpus, os.path.basename(enc)), "wb") as f:
            f.write(bytes([selector]) + data)


if __name__ == "__main__":
    main()
