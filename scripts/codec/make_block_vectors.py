#!/usr/bin/env python3
"""Writes the block-decoder vectors that LZFSEDecoderTests reads (Tests/AssetPackFormatTests/BlockVectors).

Run once, by hand (`make deps` installs the references): `python3 scripts/codec/make_block_vectors.py`. The
vectors are checked in, so every machine tests the same inputs (they were made at test time from each machine's
/usr/include before, so two machines tested different bytes).

Encoders: Apple's reference LZFSE (PyPI `lzfse`), liblz4 (PyPI `lz4`), Python's lzma and zlib. `bvx1` is made
from `bvx2` (the reference encoder never writes v1) and checked with the reference decoder; the `hostile`
vectors are v1 blocks whose frequency tables do not sum to their state count (their original is empty).

vectors.txt: one vector a line, tab-separated: name, algorithm (hex), encoded file, original file.
"""
import hashlib, lzma, os, random, struct, sys, zlib
try:
    import lzfse, lz4.block
except ImportError as e:
    print(f"missing {e}", file=sys.stderr); sys.exit(3)

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "AssetPackFormatTests", "BlockVectors")
os.makedirs(OUT, exist_ok=True)
for old in os.listdir(OUT):  # only what an earlier run wrote: the folder may be one the user named
    if old == "vectors.txt" or old.endswith(".enc") or (old.startswith("original-") and old.endswith(".bin")):
        os.remove(os.path.join(OUT, old))
LINES = []


def freqs(data):
    bits, out = int.from_bytes(data, "little"), []
    for _ in range(360):
        if bits & 1 == 0: n, v = 2, (bits >> 1) & 1
        elif bits & 2 == 0: n, v = 3, 2 + ((bits >> 2) & 1)
        elif bits & 4 == 0: n, v = 5, 4 + ((bits >> 3) & 3)
        elif bits & 8 == 0: n, v = 8, 8 + ((bits >> 4) & 15)
        else: n, v = 14, 24 + ((bits >> 4) & 1023)
        out.append(v); bits >>= n
    return out

def to_v1(stream, bump=None):
    assert stream[:4] == b"bvx2" and stream[-4:] == b"bvx$"
    v0, v1, v2 = struct.unpack_from("<QQQ", stream, 8)
    size = v2 & 0xFFFFFFFF
    f = freqs(stream[32:size])
    if bump is not None: f[bump] += 1
    lit, lmd = (v0 >> 20) & 0xFFFFF, (v1 >> 40) & 0xFFFFF
    head = b"bvx1" + struct.pack("<IIIIIIi4Hi3H", struct.unpack_from("<I", stream, 4)[0], lit + lmd,
        v0 & 0xFFFFF, (v0 >> 40) & 0xFFFFF, lit, lmd, ((v0 >> 60) & 7) - 7,
        *[(v1 >> (10 * i)) & 0x3FF for i in range(4)], ((v1 >> 60) & 7) - 7,
        (v2 >> 32) & 0x3FF, (v2 >> 42) & 0x3FF, (v2 >> 52) & 0x3FF)
    head += struct.pack("<360H", *f) + b"\0\0"
    rest = stream[size:size + lit + lmd]
    assert stream[size + lit + lmd:] == b"bvx$", "one block only"
    return head + rest + b"bvx$"

def emit(name, algorithm, original, encoded):
    """Writes the encoded block, and the original once per content; adds a line to vectors.txt."""
    slug = name.replace(" ", "-")
    with open(os.path.join(OUT, slug + ".enc"), "wb") as f:
        f.write(encoded)
    original_name = "original-" + hashlib.sha256(original).hexdigest()[:16] + ".bin"
    with open(os.path.join(OUT, original_name), "wb") as f:
        f.write(original)
    LINES.append(f"{name}\t{algorithm:#x}\t{slug}.enc\t{original_name}")

# Text: the first 64 KiB of this repository's README as it was when the vectors were made (our own text, with
# UTF-8 in it; the vectors are checked in, so later edits of the README do not change them).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md"), "rb") as f:
    text = f.read()[:65536]
rng = random.Random(7)
noise = rng.randbytes(5000)
cases = [("stored", "bvx-", noise), ("lzvn", "bvxn", text[:3000]), ("v2", "bvx2", text),
         ("v2 zeros", "bvx2", bytes(20000)), ("empty", "bvx-", b"")]
for name, kind, data in cases:
    enc = lzfse.compress(data)
    assert enc[:4].decode() == kind, (name, enc[:4])
    emit("lzfse " + name, 0x801, data, enc)
v1 = to_v1(lzfse.compress(text))
assert lzfse.decompress(v1) == text
emit("lzfse bvx1", 0x801, text, v1)
emit("hostile l-sum", 0x801, b"", to_v1(lzfse.compress(text), bump=0))
emit("hostile literal-sum", 0x801, b"", to_v1(lzfse.compress(text), bump=104))
for name, data in [("text", text), ("noise", noise)]:
    blocks, out = [data[i:i + 16384] for i in range(0, len(data), 16384)], b""
    for i, b in enumerate(blocks):
        if i % 2:
            out += b"bv4-" + struct.pack("<I", len(b)) + b
        else:
            e = lz4.block.compress(b, store_size=False)
            out += b"bv41" + struct.pack("<II", len(b), len(e)) + e
    emit("lz4 " + name, 0x100, data, out + b"bv4$")
    emit("lz4 raw " + name, 0x100, data, lz4.block.compress(data, store_size=False))
    emit("xz " + name, 0x306, data, lzma.compress(data, format=lzma.FORMAT_XZ))
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    emit("deflate " + name, 0x205, data, c.compress(data) + c.flush())
    emit("zlib " + name, 0x205, data, zlib.compress(data))

with open(os.path.join(OUT, "vectors.txt"), "w") as f:
    f.write("\n".join(LINES) + "\n")
print(f"{len(LINES)} vectors in {os.path.normpath(OUT)}")
