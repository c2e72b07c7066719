#!/usr/bin/env python3
"""Round-trip tests of the encoders through the REFERENCE decoders. Written for this project.

Builds scripts/codec/test_encode.c with the library (plain -O2, and with --asan under
-fsanitize=address,undefined), generates the inputs below, runs the harness on each (it checks
determinism, bounds and AC_ERROR_OUTPUT_FULL itself), then decodes every output with the references:
LZFSE with `lzfse.decompress` (Apple's reference code), LZ4 by walking Apple's bv41/bv4-/bv4$ frame and
decoding each block with `lz4.block.decompress` (the output so far as its dictionary: blocks are chained),
LZMA with `lzma.decompress` (xz), zlib with `zlib.decompressobj(-15)` (raw DEFLATE).

  python3 scripts/codec/check_encode.py [--asan] [--quick] [--small-rebase]
"""
import argparse
import ctypes
import lzma
import os
import random
import struct
import subprocess
import sys
import tempfile
import zlib

import lz4.block
import lzfse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(ROOT, 'Sources', 'CAppleCompression')
MAX_D = 262139


def build(asan, small_rebase=False):
    exe = os.path.join(tempfile.gettempdir(), 'ac-test-encode' + ('-asan' if asan else '') + ('-rebase' if small_rebase else ''))
    srcs = [os.path.join(SRC, f) for f in sorted(os.listdir(SRC)) if f.endswith('.c')]
    flags = ['-O1', '-g', '-fsanitize=address,undefined', '-fno-sanitize-recover=undefined'] if asan else ['-O2']
    if small_rebase:
        # Move the LZFSE match finder's position base every 1 MiB instead of every 1 GiB.
        flags.append('-DLZFSE_ENC_REBASE_AT=((size_t)1<<20)')
    subprocess.check_call([os.environ.get('CC', 'gcc'), *flags, '-Wall', '-Wextra', '-I', os.path.join(SRC, 'include'), *srcs,
                           os.path.join(HERE, 'test_encode.c'), '-o', exe, '-llz4', '-llzma', '-lz'])
    return exe


def text_like(n, rng):
    words = [b'the', b'of', b'and', b'archive', b'asset', b'pack', b'compression', b'block', b'function',
             b'return', b'int', b'size_t', b'{', b'}', b';', b'\n', b'    ', b'static', b'const', b'uint8_t']
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words) + (b' ' if rng.random() < 0.8 else b'\n')
    return bytes(out[:n])


def cases(quick):
    rng = random.Random(7)
    sizes = [0, 1, 2, 7, 8, 15, 16, 17, 100, 4095, 4096, 65536, 65537, 1 << 20]
    if not quick:
        sizes.append(8 << 20)
    for n in sizes:
        yield f'text-{n}', text_like(n, rng)
        yield f'random-{n}', rng.randbytes(n)
        yield f'zeros-{n}', bytes(n)
        yield f'period7-{n}', (b'abcdefg' * (n // 7 + 1))[:n]
    if os.path.exists('/tmp/ac-corpus/text'):
        with open('/tmp/ac-corpus/text', 'rb') as f:
            yield 'corpus-text-3M', f.read(3 << 20)
    # Long matches (a random block repeated, and runs longer than the largest M), and matches at distances
    # around the format's maximum (262139).
    block = rng.randbytes(5000)
    yield 'repeat-5000x200', block * 200
    yield 'long-run', rng.randbytes(1000) + b'x' * 100000 + rng.randbytes(1000)
    for d in (MAX_D - 1, MAX_D, MAX_D + 1, 262144, 300000):
        r = rng.randbytes(d)
        yield f'far-{d}', r + r[:50000] + rng.randbytes(100)
    # Mixed: compressible and incompressible stretches in turn (stored blocks between coded ones).
    mixed = bytearray()
    for i in range(40):
        mixed += text_like(30000, rng) if i % 2 else rng.randbytes(70000)
    yield 'mixed', bytes(mixed)
    # Many short matches with changing distances (fills the 10000-record limit of a block quickly).
    sm = bytearray()
    pieces = [rng.randbytes(8) for _ in range(64)]
    while len(sm) < 2 << 20:
        sm += rng.choice(pieces) + bytes([rng.randrange(256)])
    yield 'short-matches', bytes(sm)


def decode_apple_lz4(b):
    out = bytearray()
    pos = 0
    while True:
        magic = b[pos:pos + 4]
        if magic == b'bv4$':
            if pos + 4 != len(b):
                raise ValueError('bytes after bv4$')
            return bytes(out)
        if magic == b'bv41':
            dsize, csize = struct.unpack_from('<II', b, pos + 4)
            if dsize > 65536:
                raise ValueError('bv41 block over 64 KiB')
            payload = b[pos + 12:pos + 12 + csize]
            out += lz4.block.decompress(payload, uncompressed_size=dsize, dict=bytes(out[-65536:]))
            pos += 12 + csize
        elif magic == b'bv4-':
            (size,) = struct.unpack_from('<I', b, pos + 4)
            out += b[pos + 8:pos + 8 + size]
            pos += 8 + size
        else:
            raise ValueError(f'bad magic {magic!r} at {pos}')


def decode_raw_deflate(b):
    d = zlib.decompressobj(-15)
    out = d.decompress(b) + d.flush()
    if not d.eof or d.unused_data:
        raise ValueError('raw deflate stream not ended exactly')
    return out


# The same reference decoder, called directly with a destination of exactly the decoded size, as a pbz reader
# does (the block header gives the size): the decoder's careful end-of-buffer path must give it all back.
_REF = ctypes.CDLL(lzfse.__file__)
_REF.lzfse_decode_buffer.restype = ctypes.c_size_t
_REF.lzfse_decode_buffer.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]


def decode_lzfse_exact(b, size):
    dst = ctypes.create_string_buffer(size + 1)
    n = _REF.lzfse_decode_buffer(dst, size, b, len(b), None)
    return dst.raw[:n]


DECODERS = {
    'lzfse': lzfse.decompress,
    'lz4': decode_apple_lz4,
    'lzma': lambda b: lzma.decompress(b, format=lzma.FORMAT_XZ),
    'zlib': decode_raw_deflate,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--asan', action='store_true')
    ap.add_argument('--quick', action='store_true', help='skip the 8 MiB inputs')
    ap.add_argument('--small-rebase', action='store_true',
                    help='build with the LZFSE position rebase every 1 MiB (normally 1 GiB) to test it')
    args = ap.parse_args()
    exe = build(args.asan, args.small_rebase)
    failed = 0
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in cases(args.quick):
            inp = os.path.join(tmp, name)
            with open(inp, 'wb') as f:
                f.write(data)
            r = subprocess.run([exe, inp, inp], capture_output=True, text=True)
            if r.returncode != 0:
                print(f'FAIL {name}: harness\n{r.stderr}')
                failed += 1
                continue
            sizes = []
            for ext, dec in DECODERS.items():
                total += 1
                enc = open(f'{inp}.{ext}', 'rb').read()
                try:
                    if ext == 'lzfse' and not data:
                        # The Python binding reports an error for any stream that decodes to nothing (even
                        # its own compress(b'')), so an empty input is checked against the reference's bytes.
                        ok = enc == lzfse.compress(b'')
                    else:
                        ok = dec(enc) == data
                        if ext == 'lzfse' and decode_lzfse_exact(enc, len(data)) != data:
                            ok = False
                            print(f'FAIL {name}.lzfse: exact-size decode')
                except Exception as e:  # noqa: BLE001 - any decoder error is a failure to report
                    ok = False
                    print(f'FAIL {name}.{ext}: {e}')
                if not ok:
                    failed += 1
                    print(f'FAIL {name}.{ext}: round trip')
                sizes.append(f'{ext}={len(enc)}')
            print(f'ok {name:24} {len(data):9}  ' + ' '.join(sizes))
    print(f'{total - failed}/{total} round trips passed' + (' (ASan/UBSan build)' if args.asan else ''))
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
