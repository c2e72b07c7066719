#!/usr/bin/env python3
"""Sizes and times of ours vs the reference LZFSE encoder on the pieces Apple Archive actually encodes: the
corpus cut into pbz-sized blocks (64 KiB, 1 MiB, 4 MiB), each block encoded alone. Written for this project.

  python3 scripts/codec/blocks_encode.py [--sets text,mixed] [--limit-mib 16]
"""
import argparse
import ctypes
import os
import subprocess
import sys
import time

import lzfse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(ROOT, 'Sources', 'CAppleCompression')
sys.path.insert(0, HERE)
import corpus  # noqa: E402


def load():
    so = '/tmp/ac-libcodec.so'
    srcs = [os.path.join(SRC, f) for f in sorted(os.listdir(SRC)) if f.endswith('.c')]
    subprocess.check_call(['gcc', '-O3', '-shared', '-fPIC', '-I', os.path.join(SRC, 'include'), *srcs, '-o', so,
                           '-llz4', '-llzma', '-lz'])
    lib = ctypes.CDLL(so)
    lib.ac_lzfse_encode.restype = ctypes.c_ssize_t
    lib.ac_lzfse_encode.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
    lib.ac_lzfse_encode_scratch_size.restype = ctypes.c_size_t
    return lib


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sets', default='text,mixed')
    ap.add_argument('--limit-mib', type=int, default=16)
    args = ap.parse_args()
    lib = load()
    scratch = ctypes.create_string_buffer(lib.ac_lzfse_encode_scratch_size())
    makers = {'text': corpus.text, 'random': corpus.rand, 'mixed': corpus.mixed}
    print(f"{'set':6} {'block':>8} {'ours B':>10} {'ref B':>10} {'size':>6} {'ours s':>7} {'ref s':>7} {'time':>5}")
    for name in args.sets.split(','):
        data = open(corpus.cached(name, makers[name]), 'rb').read()[:args.limit_mib << 20]
        for block in (4096, 65536, 1 << 20, 4 << 20):
            pieces = [data[i:i + block] for i in range(0, len(data), block)]
            out = ctypes.create_string_buffer(block + block // 8 + 4096)
            t0 = time.perf_counter()
            ours = 0
            for p in pieces:
                r = lib.ac_lzfse_encode(out, len(out), p, len(p), scratch)
                assert r > 0
                ours += r
            t_ours = time.perf_counter() - t0
            t0 = time.perf_counter()
            ref = sum(len(lzfse.compress(p)) for p in pieces)
            t_ref = time.perf_counter() - t0
            print(f"{name:6} {block:8} {ours:10} {ref:10} {ours / ref:6.3f} {t_ours:7.3f} {t_ref:7.3f} {t_ours / t_ref:5.2f}")


if __name__ == '__main__':
    main()
