#!/usr/bin/env python3
"""Writes decode test vectors for CAppleCompression into a folder (default: a new temp folder, printed).

Written for this project. The LZFSE streams come from Apple's reference encoder (pip package `lzfse`); LZ4 from
liblz4 (pip `lz4`), xz and raw DEFLATE from Python's lzma and zlib. The reference encoder never writes `bvx1`
blocks, so those are made here by unpacking a `bvx2` header into the v1 layout (checked by decoding them with
the reference decoder). Hostile streams are made by hand or by editing valid ones.

manifest.txt: one vector a line: `<algorithm hex> <expect> <encoded file> <original file or ->`, where expect is
`ok` (must decode to the original exactly) or an AC_ERROR_* number (must return that).
"""
import os
import random
import struct
import sys
import tempfile
import zlib
import lzma

try:
    import lzfse
    import lz4.block
except ImportError as error:
    sys.exit(f"missing reference module ({error}): run `make deps`")

LZFSE, LZ4, ZLIB, LZMA, LZBITMAP = 0x801, 0x100, 0x205, 0x306, 0x702
CORRUPT, OUTPUT_FULL, UNSUPPORTED = -1, -2, -3
SIZES = [0, 1, 100, 4095, 4096, 65536, 1 << 20, 8 << 20]


def text_corpus(size):
    """Deterministic text: this repository's own sources (Sources/ and Tests/, .swift, .c and .h files, in sorted
    order), repeated if need be. The same commit gives the same text on every machine; /usr/include, read here
    before, differs from one machine to the next, and so did the vectors made from it."""
    repository = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    out = bytearray()
    for top in ("Sources", "Tests"):
        for root, dirs, files in sorted(os.walk(os.path.join(repository, top))):
            dirs.sort()
            for name in sorted(files):
                if name.endswith((".swift", ".c", ".h")):
                    with open(os.path.join(root, name), "rb") as f:
                        out += f.read()
                if len(out) >= size:
                    return bytes(out[:size])
    while len(out) < size:
        out += bytes(out)
    return bytes(out[:size])


def refused_by_reference(stream):
    """Whether Apple's reference decoder refuses `stream`."""
    try:
        lzfse.decompress(stream)
        return False
    except Exception:
        return True


def blocks(stream):
    """Splits an LZFSE stream into (magic, bytes) blocks, bvx$ excluded."""
    out, p = [], 0
    while True:
        magic = stream[p:p + 4]
        if magic == b"bvx$":
            assert p + 4 == len(stream)
            return out
        if magic == b"bvx-":
            n = 8 + struct.unpack_from("<I", stream, p + 4)[0]
        elif magic == b"bvxn":
            n = 12 + struct.unpack_from("<I", stream, p + 8)[0]
        elif magic == b"bvx2":
            v0, v1, v2 = struct.unpack_from("<QQQ", stream, p + 8)
            n = (v2 & 0xFFFFFFFF) + ((v0 >> 20) & 0xFFFFF) + ((v1 >> 40) & 0xFFFFF)
        elif magic == b"bvx1":
            lit, lmd = struct.unpack_from("<II", stream, p + 20)
            n = 772 + lit + lmd
        else:
            raise ValueError(f"unknown block {magic!r} at {p}")
        out.append((magic, stream[p:p + n]))
        p += n


def freq_decode(data):
    """The 360 frequencies of a bvx2 header's variable-length part (LSB-first prefix codes)."""
    bits = int.from_bytes(data, "little")
    out = []
    for _ in range(360):
        if bits & 1 == 0:
            n, v = 2, (bits >> 1) & 1
        elif bits & 2 == 0:
            n, v = 3, 2 + ((bits >> 2) & 1)
        elif bits & 4 == 0:
            n, v = 5, 4 + ((bits >> 3) & 3)
        elif bits & 8 == 0:
            n, v = 8, 8 + ((bits >> 4) & 15)
        else:
            n, v = 14, 24 + ((bits >> 4) & 1023)
        out.append(v)
        bits >>= n
    return out


def freq_encode(freqs):
    acc, nbits = 0, 0
    for v in freqs:
        if v < 2:
            code, n = v << 1, 2
        elif v < 4:
            code, n = ((v - 2) << 2) | 1, 3
        elif v < 8:
            code, n = ((v - 4) << 3) | 3, 5
        elif v < 24:
            code, n = ((v - 8) << 4) | 7, 8
        else:
            code, n = ((v - 24) << 4) | 15, 14
        acc |= code << nbits
        nbits += n
    return acc.to_bytes((nbits + 7) // 8, "little")


def v2_fields(block):
    v0, v1, v2 = struct.unpack_from("<QQQ", block, 8)
    header_size = v2 & 0xFFFFFFFF
    f = dict(
        n_raw=struct.unpack_from("<I", block, 4)[0],
        n_literals=v0 & 0xFFFFF, n_lit_payload=(v0 >> 20) & 0xFFFFF, n_matches=(v0 >> 40) & 0xFFFFF,
        literal_bits=((v0 >> 60) & 7) - 7,
        literal_state=[(v1 >> (10 * i)) & 0x3FF for i in range(4)],
        n_lmd_payload=(v1 >> 40) & 0xFFFFF, lmd_bits=((v1 >> 60) & 7) - 7,
        l_state=(v2 >> 32) & 0x3FF, m_state=(v2 >> 42) & 0x3FF, d_state=(v2 >> 52) & 0x3FF,
        header_size=header_size,
        freq=freq_decode(block[32:header_size]) if header_size > 32 else [0] * 360,
    )
    return f, block[header_size:]


def v2_pack(f, payload):
    """A bvx2 block from fields (inverse of v2_fields)."""
    table = freq_encode(f["freq"]) if any(f["freq"]) else b""
    v0 = f["n_literals"] | f["n_lit_payload"] << 20 | f["n_matches"] << 40 | (f["literal_bits"] + 7) << 60
    v1 = sum(s << (10 * i) for i, s in enumerate(f["literal_state"])) | f["n_lmd_payload"] << 40
    v1 |= (f["lmd_bits"] + 7) << 60
    v2 = (32 + len(table)) | f["l_state"] << 32 | f["m_state"] << 42 | f["d_state"] << 52
    return b"bvx2" + struct.pack("<IQQQ", f["n_raw"], v0, v1, v2) + table + payload


def v1_pack(f, payload):
    """The same block in the v1 layout: the reference's C struct, 770 bytes padded to 772."""
    head = b"bvx1" + struct.pack(
        "<IIIIIIi4Hi3H", f["n_raw"], f["n_lit_payload"] + f["n_lmd_payload"], f["n_literals"], f["n_matches"],
        f["n_lit_payload"], f["n_lmd_payload"], f["literal_bits"], *f["literal_state"], f["lmd_bits"],
        f["l_state"], f["m_state"], f["d_state"])
    head += struct.pack("<360H", *f["freq"]) + b"\0\0"
    assert len(head) == 772
    return head + payload


def to_v1(stream):
    out = b""
    for magic, block in blocks(stream):
        if magic == b"bvx2":
            f, payload = v2_fields(block)
            out += v1_pack(f, payload)
        else:
            out += block
    return out + b"bvx$"


def lz4_apple(data, chunk=65536, raw_every=0):
    """Apple's COMPRESSION_LZ4 framing around liblz4 blocks (independent blocks; ours may also use the dict)."""
    out = b""
    for i, start in enumerate(range(0, len(data), chunk)):
        piece = data[start:start + chunk]
        if raw_every and i % raw_every == raw_every - 1:
            out += b"bv4-" + struct.pack("<I", len(piece)) + piece
            continue
        enc = lz4.block.compress(piece, store_size=False)
        out += b"bv41" + struct.pack("<II", len(piece), len(enc)) + enc
    return out + b"bv4$"


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="ac_vectors_")
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(1234)
    manifest, kinds = [], set()

    def add(name, algorithm, encoded, original=None, expect="ok"):
        enc_path = os.path.join(folder, name + ".enc")
        with open(enc_path, "wb") as f:
            f.write(encoded)
        orig_path = "-"
        if original is not None:
            orig_path = os.path.join(folder, name + ".orig")
            with open(orig_path, "wb") as f:
                f.write(original)
        manifest.append(f"{algorithm:x} {expect} {enc_path} {orig_path}")

    text_all = text_corpus(max(SIZES))
    inputs = {}
    for size in SIZES:
        inputs[f"text{size}"] = text_all[:size]
        inputs[f"random{size}"] = rng.randbytes(size)
        inputs[f"zeros{size}"] = bytes(size)
        inputs[f"pattern{size}"] = (b"abcdefghijk\x00\x01\x02" * (size // 14 + 1))[:size]
    for name, data in inputs.items():
        enc = lzfse.compress(data)
        assert not data or lzfse.decompress(enc) == data  # the binding reports an empty result as an error
        for magic, _ in blocks(enc):
            kinds.add(magic)
        add("lzfse_" + name, LZFSE, enc, data)
        if b"bvx2" in enc[:4] and len(data) <= (1 << 20):
            v1 = to_v1(enc)
            assert lzfse.decompress(v1) == data, "bvx1 layout rejected by the reference decoder"
            kinds.add(b"bvx1")
            add("lzfse_v1_" + name, LZFSE, v1, data)
        if len(data) <= (1 << 20):
            add("lz4_" + name, LZ4, lz4_apple(data, raw_every=3), data)
            add("lz4raw_" + name, LZ4, lz4.block.compress(data, store_size=False), data)
            add("xz_" + name, LZMA, lzma.compress(data, format=lzma.FORMAT_XZ), data)
            add("lzmaalone_" + name, LZMA, lzma.compress(data, format=lzma.FORMAT_ALONE), data)
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            add("deflate_" + name, ZLIB, c.compress(data) + c.flush(), data)
            add("zlibwrapped_" + name, ZLIB, zlib.compress(data), data)
    assert kinds >= {b"bvx-", b"bvxn", b"bvx2", b"bvx1"}, kinds

    # One stream with every block kind, in turn (matches stay inside their block, so concatenation is valid).
    parts = [inputs["text4095"], inputs["random4096"], inputs["text65536"], inputs["zeros4096"]]
    mixed, mixed_orig = b"", b""
    for i, data in enumerate(parts):
        enc = lzfse.compress(data)
        if i == 3:
            enc = to_v1(enc)
        mixed += enc[:-4]
        mixed_orig += data
    mixed += b"bvx$"
    assert {m for m, _ in blocks(mixed)} == {b"bvxn", b"bvx-", b"bvx2", b"bvx1"}
    assert lzfse.decompress(mixed) == mixed_orig
    add("lzfse_mixed_kinds", LZFSE, mixed, mixed_orig)

    # A bvx2 header re-packed unchanged must still decode (checks the packer used by the hostile ones below).
    base = lzfse.compress(inputs["text65536"])
    (magic, block), = blocks(base)
    f, payload = v2_fields(block)
    assert lzfse.decompress(v2_pack(f, payload) + b"bvx$") == inputs["text65536"]

    # Hostile: frequency tables that do not sum to their state count (v2 and v1), in each table.
    for which, index in [("l", 0), ("m", 20), ("d", 40), ("lit", 104)]:
        for delta in (1, -1):
            g = dict(f, freq=list(f["freq"]))
            i = index + max(range(len(g["freq"][index:index + 20])), key=lambda k: g["freq"][index + k])
            g["freq"][i] += delta
            add(f"hostile_v2_sum_{which}{delta:+d}", LZFSE, v2_pack(g, payload) + b"bvx$", expect=CORRUPT)
            add(f"hostile_v1_sum_{which}{delta:+d}", LZFSE, v1_pack(g, payload) + b"bvx$", expect=CORRUPT)
    # Hostile: states out of range, literal count past the block limit, payload sizes past the end.
    for key, value in [("l_state", 64), ("m_state", 100), ("d_state", 256), ("n_literals", 40004),
                       ("n_matches", 10001), ("n_lmd_payload", f["n_lmd_payload"] + 1),
                       ("n_lit_payload", 0xFFFFF), ("literal_bits", 0)]:
        g = dict(f, **{key: value})
        if key == "literal_bits" and refused_by_reference(v2_pack(g, payload) + b"bvx$") is False:
            # Whether a wrong count of the literals' last bits shows depends on the text: where Apple's decoder
            # takes it (decoding other bytes), it is no hostile input, and no refusal is asked of ours.
            continue
        add(f"hostile_v1_{key}", LZFSE, v1_pack(g, payload) + b"bvx$", expect=CORRUPT)
        if key not in ("n_matches",) or value < (1 << 20):
            add(f"hostile_v2_{key}", LZFSE, v2_pack(g, payload) + b"bvx$", expect=CORRUPT)
    # Hostile: the raw size disagrees with what the block produces.
    add("hostile_v2_rawsize_small", LZFSE, v2_pack(dict(f, n_raw=f["n_raw"] - 1), payload) + b"bvx$",
        expect=CORRUPT)
    add("hostile_v2_rawsize_big", LZFSE, v2_pack(dict(f, n_raw=f["n_raw"] + 1), payload) + b"bvx$",
        expect=CORRUPT)

    # Hostile LZVN: a literal run past the block's output, a distance before the start, a match with no
    # distance yet, an undefined opcode, no end-of-stream opcode.
    def lzvn(n_raw, ops):
        return b"bvxn" + struct.pack("<II", n_raw, len(ops)) + ops + b"bvx$"

    eos = b"\x06" + b"\0" * 7
    add("lzvn_ok_handmade", LZFSE, lzvn(7, b"\xe4abcd" + b"\x00\x03" + eos), b"abcdbcd")
    add("hostile_lzvn_literal_past_output", LZFSE, lzvn(4, b"\xe8abcdefgh" + eos), expect=CORRUPT)
    add("hostile_lzvn_distance_before_start", LZFSE, lzvn(4, b"\xe1a" + b"\x00\x05" + eos), expect=CORRUPT)
    add("hostile_lzvn_match_without_distance", LZFSE, lzvn(4, b"\xf4" + eos), expect=CORRUPT)
    add("hostile_lzvn_undefined_opcode", LZFSE, lzvn(1, b"\xe1a\x70" + eos), expect=CORRUPT)
    add("hostile_lzvn_no_eos", LZFSE, lzvn(1, b"\xe1a"), expect=CORRUPT)
    add("hostile_lzvn_literal_past_payload", LZFSE, lzvn(10, b"\xeaab"), expect=CORRUPT)
    # Hostile stored blocks and stream ends.
    add("hostile_raw_past_end", LZFSE, b"bvx-" + struct.pack("<I", 100) + b"abc" + b"bvx$", expect=CORRUPT)
    add("hostile_no_end_marker", LZFSE, lzfse.compress(b"hello")[:-4], expect=CORRUPT)
    add("hostile_trailing_garbage", LZFSE, lzfse.compress(b"hello") + b"x", expect=CORRUPT)
    add("hostile_empty_input", LZFSE, b"", expect=CORRUPT)
    add("hostile_bad_magic", LZFSE, b"bvxZ" + b"\0" * 16 + b"bvx$", expect=CORRUPT)
    # A cross-block reference: a later block of a multi-block stream, alone, reaches before its start.
    big = lzfse.compress(inputs["text8388608"])
    later = [b for m, b in blocks(big) if m == b"bvx2"][1]
    add("hostile_v2_distance_before_start", LZFSE, later + b"bvx$", expect=CORRUPT)
    # The other algorithms: unsupported, truncated and trailing garbage.
    add("lzbitmap_unsupported", LZBITMAP, b"ZBM\x09" + b"\0" * 12, expect=UNSUPPORTED)
    add("unknown_algorithm", 0x999, b"\0" * 8, expect=UNSUPPORTED)
    xz = lzma.compress(inputs["text65536"], format=lzma.FORMAT_XZ)
    add("hostile_xz_trailing", LZMA, xz + b"\0\0\0\0", expect=CORRUPT)
    add("hostile_xz_truncated", LZMA, xz[:-1], expect=CORRUPT)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    deflate = c.compress(inputs["text65536"]) + c.flush()
    add("hostile_deflate_trailing", ZLIB, deflate + b"junk", expect=CORRUPT)
    add("hostile_deflate_truncated", ZLIB, deflate[:-3], expect=CORRUPT)
    framed = lz4_apple(inputs["text65536"], chunk=8192)
    add("hostile_lz4_trailing", LZ4, framed + b"x", expect=CORRUPT)
    add("hostile_lz4_no_end", LZ4, framed[:-4], expect=CORRUPT)
    # Apple's LZ4 blocks may refer to the previous block: a block made with the previous one as dictionary.
    first, second = inputs["text65536"][:32768], inputs["text65536"][32768:]
    e1 = lz4.block.compress(first, store_size=False)
    add("lz4_two_size_raw_block", LZ4, b"bv4-" + struct.pack("<II", 5, 5) + b"hello" + b"bv4$", b"hello")
    add("lz4_one_size_raw_block", LZ4, b"bv4-" + struct.pack("<I", 5) + b"hello" + b"bv4$", b"hello")
    try:
        e2 = lz4.block.compress(second, store_size=False, dict=first)
        add("lz4_linked_blocks", LZ4, b"bv41" + struct.pack("<II", len(first), len(e1)) + e1 + b"bv41" +
            struct.pack("<II", len(second), len(e2)) + e2 + b"bv4$", first + second)
    except TypeError:
        pass  # an lz4 module without dict support: skip that vector

    with open(os.path.join(folder, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    print(folder)


if __name__ == "__main__":
    main()
