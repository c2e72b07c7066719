#!/usr/bin/env python3
"""Our LZFSE encoder against the reference (pip `lzfse`, Apple's reference code), side by side in one run:
best-of-N encode time and compressed size on text, random and mixed inputs (see corpus.py), plus a check
that the reference decoder gives our output back. Written for this project.

  python3 scripts/codec/bench_encode.py [--runs 5] [--sets text,random,mixed]
"""
import argparse
import os
import subprocess
import sys
import time

import lzfse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import corpus  # noqa: E402

SRC = os.path.join(ROOT, 'Sources', 'CAppleCompression')


def build():
    exe = '/tmp/ac-bench-encode'
    srcs = [os.path.join(SRC, f) for f in sorted(os.listdir(SRC)) if f.endswith('.c')]
    # -O3 as Package.swift builds the target.
    subprocess.check_call(['gcc', '-O3', '-I', os.path.join(SRC, 'include'), *srcs,
                           os.path.join(HERE, 'bench_encode.c'), '-o', exe, '-llz4', '-llzma', '-lz'])
    return exe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--sets', default='text,random,mixed')
    args = ap.parse_args()
    exe = build()
    makers = {'text': corpus.text, 'random': corpus.rand, 'mixed': corpus.mixed}
    print(f"{'set':8} {'bytes':>10} {'ours B':>10} {'ref B':>10} {'size':>6} {'ours s':>8} {'ref s':>8} {'time':>6}")
    for name in args.sets.split(','):
        path = corpus.cached(name, makers[name])
        data = open(path, 'rb').read()
        out = f'/tmp/ac-bench-{name}.lzfse'
        # Alternate the two so that machine load hits both alike.
        ours_t, ref_t = [], []
        ours_size = ref_size = None
        for _ in range(args.runs):
            r = subprocess.run([exe, path, '1', '801', out], check=True, capture_output=True, text=True)
            size, secs = r.stdout.split()
            ours_size, ours_t = int(size), ours_t + [float(secs)]
            t0 = time.perf_counter()
            ref = lzfse.compress(data)
            ref_t.append(time.perf_counter() - t0)
            ref_size = len(ref)
        ok = lzfse.decompress(open(out, 'rb').read()) == data
        o, rt = min(ours_t), min(ref_t)
        print(f"{name:8} {len(data):10} {ours_size:10} {ref_size:10} {ours_size / ref_size:6.3f} {o:8.3f} {rt:8.3f} {o / rt:6.2f}"
              f"{'' if ok else '  ROUND TRIP FAILED'}")
        if not ok:
            sys.exit(1)


if __name__ == '__main__':
    main()
