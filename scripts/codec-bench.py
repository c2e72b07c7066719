#!/usr/bin/env python3
"""LZFSE, ours against Apple's reference implementation, on the same data in the same process.

    scripts/codec-bench.py [--smoke] [--rounds N] [--size BYTES]

Builds Sources/CAppleCompression as a shared library (cc -O3, as the package builds it), loads it and the
reference (the C library inside PyPI's `lzfse`, which binds lzfse/lzfse) with ctypes, and times the C calls
alone: lzfse_decode_buffer against ac_lzfse_decode, lzfse_encode_buffer against ac_lzfse_encode, each with
its scratch allocated once, on text and on incompressible bytes, rounds alternating who goes first. Prints
scripts/bench.sh records (step, data, tool, value, unit; tab-separated) on stdout: decode MB/s, encode
seconds and encoded bytes; ours = "ours", the reference = "ref".
"""
import argparse
import ctypes
import os
import random
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_ours(folder):
    source = os.path.join(here, "Sources", "CAppleCompression")
    library = os.path.join(folder, "libapplecompression.so")
    files = sorted(os.path.join(source, f) for f in os.listdir(source) if f.endswith(".c"))
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O3", "-shared", "-fPIC", "-I", os.path.join(source, "include"), "-o", library] + files
                   + ["-llz4", "-llzma", "-lz"], check=True)
    ours = ctypes.CDLL(library)
    ours.ac_lzfse_decode.restype = ctypes.c_ssize_t
    ours.ac_lzfse_decode.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
    ours.ac_lzfse_encode.restype = ctypes.c_ssize_t
    ours.ac_lzfse_encode.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_void_p]
    ours.ac_lzfse_encode_scratch_size.restype = ctypes.c_size_t
    return ours


def load_reference():
    try:
        import lzfse
    except ImportError:
        sys.exit("codec-bench.py: the reference (PyPI lzfse) is missing: run make deps")
    ref = ctypes.CDLL(lzfse.__file__)
    for name in ("lzfse_decode_buffer_with_scratch", "lzfse_encode_buffer_with_scratch"):
        function = getattr(ref, name)
        function.restype = ctypes.c_size_t
        function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    ref.lzfse_decode_scratch_size.restype = ctypes.c_size_t
    ref.lzfse_encode_scratch_size.restype = ctypes.c_size_t
    return ref


def text(size, seed=19):
    """English-like text: words of a fixed vocabulary in sentences and lines, the same for every seed."""
    rng = random.Random(seed)
    words = [("".join(rng.choice("etaoinshrdlucmfwypvbgkjqxz") for _ in range(rng.randint(1, 9))))
             for _ in range(5000)]
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    out = []
    total = 0
    while total < size:
        sentence = " ".join(rng.choices(words, weights, k=rng.randint(4, 18))).capitalize() + ". "
        if rng.random() < 0.2:
            sentence += "\n"
        out.append(sentence)
        total += len(sentence)
    return "".join(out).encode()[:size]


def timed(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=32 << 20)
    args = parser.parse_args()
    size = (1 << 20) if args.smoke else args.size
    rounds = 1 if args.smoke else args.rounds
    with tempfile.TemporaryDirectory() as folder:
        ours = build_ours(folder)
        ref = load_reference()
        sets = {"text": text(size), "random": random.Random(23).randbytes(size)}
        capacity = size + size // 8 + (1 << 20)
        dst = ctypes.create_string_buffer(capacity)
        back = ctypes.create_string_buffer(size + 4096)
        ours_scratch = ctypes.create_string_buffer(ours.ac_lzfse_encode_scratch_size())
        ref_encode_scratch = ctypes.create_string_buffer(ref.lzfse_encode_scratch_size())
        ref_decode_scratch = ctypes.create_string_buffer(ref.lzfse_decode_scratch_size())
        for name, data in sets.items():
            src = ctypes.create_string_buffer(data, len(data))
            for r in range(rounds):
                order = ("ours", "ref") if r % 2 == 0 else ("ref", "ours")
                for who in order:
                    if who == "ours":
                        seconds, encoded = timed(lambda: ours.ac_lzfse_encode(dst, capacity, src, len(data),
                                                                               ours_scratch))
                    else:
                        seconds, encoded = timed(lambda: ref.lzfse_encode_buffer_with_scratch(
                            dst, capacity, src, len(data), ref_encode_scratch))
                    if encoded <= 0:
                        sys.exit(f"codec-bench.py: {who} failed to encode {name} ({encoded})")
                    stream = ctypes.create_string_buffer(dst.raw[:encoded], encoded)
                    print(f"lzfse-encode-time\t{name}\t{who}\t{seconds:.4f}\ts")
                    print(f"lzfse-encode-size\t{name}\t{who}\t{encoded}\tB")
                    # Each decoder decodes the same stream (the reference encoder's, then ours'): the time of
                    # decoding, whoever wrote it.
                    for decoder in order:
                        if decoder == "ours":
                            seconds, decoded = timed(lambda: ours.ac_lzfse_decode(back, len(back), stream, encoded))
                        else:
                            seconds, decoded = timed(lambda: ref.lzfse_decode_buffer_with_scratch(
                                back, len(back), stream, encoded, ref_decode_scratch))
                        if decoded != len(data) or back.raw[:len(data)] != data:
                            sys.exit(f"codec-bench.py: {decoder} decoded {who}'s {name} stream wrong ({decoded})")
                        if who == "ref":  # decode speed is measured on the reference encoder's streams
                            print(f"lzfse-decode\t{name}\t{decoder}\t{len(data) / seconds / 1e6:.1f}\tMB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
