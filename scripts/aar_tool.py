#!/usr/bin/env python3
"""aar_tool.py - independent Apple Archive (.aar) writer / lister / extractor.

Written for ba-mock's tests from the format's public description alone (Apple's compression_tool(1) and
AppleArchive.h; see the README's "Apple Archive" section), never from ba-mock's Swift reader or writer: the
tests hold our archives to it, and give it archives to read.

Container ("pbz" stream, Apple compression_tool(1) "BLOCK COMPRESSION FILE FORMAT"):
    'p' 'b' 'z' <algo>            algo: 'e' lzfse, 'z' zlib, 'x' lzma(xz), '4' lz4, 'b' lzbitmap
    u64 BE block size
    repeat until EOF:
        u64 BE raw size, u64 BE compressed size, payload
        (compressed size == raw size  =>  payload stored uncompressed)
    An uncompressed archive has no wrapper at all: it starts with "AA01".

Archive = concatenation of entries:
    "AA01" | u16 LE header size (incl. magic+size) | fields ... | blob payloads (in blob-field order)
    field = 3-char key + subtype char + value (all integers little-endian)

Usage:
    aar_tool.py write OUT.aar --algorithm lzfse|lz4|lzma|zlib|none [--block-size N]
                [--sha256] [--manifest FILE] [--root-entry] [--zlib-raw] ROOT
    aar_tool.py list IN.aar [--json] [--fields]
    aar_tool.py extract IN.aar DEST
"""
from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import stat
import struct
import sys
import zlib

try:
    import lzfse  # Apple's reference LZFSE (pip package "lzfse")
except ImportError:  # pragma: no cover
    lzfse = None
try:
    import lz4.block  # pip package "lz4"
except ImportError:  # pragma: no cover
    lz4 = None

# --------------------------------------------------------------------------------------
# constants

AA01 = b"AA01"
YAA1 = b"YAA1"
PBZ = b"pbz"
ALGO_BYTES = {"lzfse": b"e", "zlib": b"z", "lzma": b"x", "lz4": b"4"}
BYTE_ALGOS = {b"e": "lzfse", b"z": "zlib", b"x": "lzma", b"4": "lz4", b"b": "lzbitmap"}
DEFAULT_BLOCK_SIZE = 4 * 1024 * 1024  # `aa archive` default (FACTS §1/§4)
MAX_BLOCK_SIZE = 1 << 32  # sanity limit for readers (we hold one block in memory)

# subtype char -> (kind, fixed value size)
SUBTYPES = {
    ord("*"): ("flag", 0),
    ord("1"): ("uint", 1), ord("2"): ("uint", 2), ord("4"): ("uint", 4), ord("8"): ("uint", 8),
    ord("A"): ("blob", 2), ord("B"): ("blob", 4), ord("C"): ("blob", 8),
    ord("F"): ("hash", 4), ord("G"): ("hash", 20), ord("H"): ("hash", 32),
    ord("I"): ("hash", 48), ord("J"): ("hash", 64),
    ord("S"): ("timespec", 8), ord("T"): ("timespec", 12),
    ord("P"): ("string", None),
}
DIGESTS = {"SH1": "sha1", "SH2": "sha256", "SH3": "sha384", "SH5": "sha512"}
ENTRY_TYPES = {
    "F": "regular file", "D": "directory", "L": "symlink", "P": "fifo", "C": "char device",
    "B": "block device", "S": "socket", "W": "whiteout", "R": "door", "T": "port", "M": "metadata",
}


class FormatError(Exception):
    """Malformed or unsupported input."""


# --------------------------------------------------------------------------------------
# block codecs

def _zlib_header_ok(b: bytes) -> bool:
    return len(b) >= 2 and (b[0] & 0x0F) == 8 and (b[0] >> 4) <= 7 and ((b[0] << 8) | b[1]) % 31 == 0


def lz4_frame_encode(raw: bytes) -> bytes:
    """Compression.framework LZ4 frame: bv41 blocks + bv4$ end marker (FACTS §1)."""
    out = bytearray()
    step = 1 << 20  # keep individual bv41 blocks modest; each is an independent LZ4 block
    for off in range(0, len(raw), step):
        chunk = raw[off:off + step]
        comp = lz4.block.compress(chunk, store_size=False)
        if len(comp) < len(chunk):
            out += b"bv41" + struct.pack("<II", len(chunk), len(comp)) + comp
        else:
            out += b"bv4-" + struct.pack("<I", len(chunk)) + chunk
    out += b"bv4$"
    return bytes(out)


def lz4_frame_decode(payload: bytes, expected: int) -> bytes:
    if not payload.startswith(b"bv4"):
        # tolerate a bare LZ4 block (not what Apple writes)
        return lz4.block.decompress(payload, uncompressed_size=expected)
    out = bytearray()
    pos = 0
    n = len(payload)
    while True:
        if pos + 4 > n:
            raise FormatError("lz4: truncated frame (no bv4$ end marker)")
        magic = payload[pos:pos + 4]
        pos += 4
        if magic == b"bv4$":
            break
        if magic == b"bv41":
            if pos + 8 > n:
                raise FormatError("lz4: truncated bv41 header")
            dsize, csize = struct.unpack_from("<II", payload, pos)
            pos += 8
            if pos + csize > n:
                raise FormatError("lz4: truncated bv41 payload")
            dict_ = bytes(out[-65536:]) if out else None
            try:
                if dict_:
                    blk = lz4.block.decompress(payload[pos:pos + csize], uncompressed_size=dsize, dict=dict_)
                else:
                    blk = lz4.block.decompress(payload[pos:pos + csize], uncompressed_size=dsize)
            except Exception as e:  # lz4.block.LZ4BlockError
                raise FormatError(f"lz4: bad block: {e}") from None
            if len(blk) != dsize:
                raise FormatError("lz4: block size mismatch")
            out += blk
            pos += csize
        elif magic == b"bv4-":
            if pos + 4 > n:
                raise FormatError("lz4: truncated bv4- header")
            (dsize,) = struct.unpack_from("<I", payload, pos)
            pos += 4
            if pos + dsize > n:
                raise FormatError("lz4: truncated bv4- payload")
            out += payload[pos:pos + dsize]
            pos += dsize
        else:
            raise FormatError(f"lz4: unknown block magic {magic!r}")
        if len(out) > expected:
            raise FormatError("lz4: more output than the pbz block size says")
    if pos != n:
        raise FormatError("lz4: trailing bytes after bv4$")
    return bytes(out)


def compress_block(algo: str, raw: bytes, zlib_raw: bool = False) -> bytes:
    if algo == "lzfse":
        return lzfse.compress(raw)
    if algo == "lz4":
        return lz4_frame_encode(raw)
    if algo == "zlib":
        # AA_COMPRESSION_ALGORITHM_ZLIB 0x505: "ZLIB level 5 (RFC1950 zlib format, includes 2 bytes
        # header before raw deflate)".  --zlib-raw writes raw deflate (Compression.framework 0x205).
        co = zlib.compressobj(5, zlib.DEFLATED, -15 if zlib_raw else 15)
        return co.compress(raw) + co.flush()
    if algo == "lzma":
        return lzma.compress(raw, format=lzma.FORMAT_XZ, preset=6)
    raise ValueError(algo)


def decompress_block(algo: str, payload: bytes, raw_size: int) -> bytes:
    try:
        if algo == "lzfse":
            out = lzfse.decompress(payload)
        elif algo == "lz4":
            out = lz4_frame_decode(payload, raw_size)
        elif algo == "zlib":
            d = zlib.decompressobj(15 if _zlib_header_ok(payload) else -15)
            out = d.decompress(payload, raw_size + 1) if raw_size else d.decompress(payload)
            if len(out) <= raw_size:
                out += d.flush()
        elif algo == "lzma":
            out = lzma.decompress(payload)
        elif algo == "lzbitmap":
            raise FormatError("LZBITMAP ('pbzb') blocks are not supported (no public codec)")
        else:
            raise FormatError(f"unknown algorithm {algo}")
    except FormatError:
        raise
    except Exception as e:
        raise FormatError(f"{algo}: cannot decode block: {e}") from None
    if len(out) != raw_size:
        raise FormatError(f"{algo}: block decoded to {len(out)} bytes, header says {raw_size}")
    return out


# --------------------------------------------------------------------------------------
# output stream (pbz writer or plain)

class PlainWriter:
    def __init__(self, f):
        self.f = f

    def write(self, data: bytes):
        self.f.write(data)

    def close(self):
        pass


class PbzWriter:
    def __init__(self, f, algo: str, block_size: int, zlib_raw: bool = False, single_block: bool = False):
        if block_size <= 0:
            raise ValueError("block size must be > 0")
        self.f, self.algo, self.block_size, self.zlib_raw = f, algo, block_size, zlib_raw
        # single_block: the whole archive as one block whatever the header's block size, as a public Apple
        # Archive library writes it (9 MiB raw under a header of 4 MiB was seen).
        self.single_block = single_block
        self.buf = bytearray()
        self.blocks = 0
        self.stored = 0
        f.write(PBZ + ALGO_BYTES[algo] + struct.pack(">Q", block_size))

    def write(self, data: bytes):
        self.buf += data
        while not self.single_block and len(self.buf) >= self.block_size:
            self._emit(bytes(self.buf[:self.block_size]))
            del self.buf[:self.block_size]

    def _emit(self, raw: bytes):
        comp = compress_block(self.algo, raw, self.zlib_raw)
        if len(comp) >= len(raw):  # rule: csize == rsize means "stored"
            comp = raw
            self.stored += 1
        self.f.write(struct.pack(">QQ", len(raw), len(comp)))
        self.f.write(comp)
        self.blocks += 1

    def close(self):
        if self.buf:
            self._emit(bytes(self.buf))
            self.buf = bytearray()


# --------------------------------------------------------------------------------------
# header encoding

def f_uint(key: str, value: int, width: int | None = None) -> bytes:
    if width is None:
        width = 1 if value < 1 << 8 else 2 if value < 1 << 16 else 4 if value < 1 << 32 else 8
    return key.encode("ascii") + str(width).encode("ascii") + value.to_bytes(width, "little")


def f_string(key: str, value: bytes) -> bytes:
    if len(value) > 0xFFFF:
        raise ValueError(f"{key} string too long ({len(value)} bytes)")
    return key.encode("ascii") + b"P" + struct.pack("<H", len(value)) + value


def f_blob(key: str, size: int) -> bytes:
    if size < 1 << 16:
        return key.encode("ascii") + b"A" + struct.pack("<H", size)
    if size < 1 << 32:
        return key.encode("ascii") + b"B" + struct.pack("<I", size)
    return key.encode("ascii") + b"C" + struct.pack("<Q", size)


def f_hash(key: str, digest: bytes) -> bytes:
    sub = {4: b"F", 20: b"G", 32: b"H", 48: b"I", 64: b"J"}[len(digest)]
    return key.encode("ascii") + sub + digest


def make_header(fields: list[bytes]) -> bytes:
    body = b"".join(fields)
    size = 6 + len(body)
    if size > 0xFFFF:
        raise ValueError("entry header exceeds 65535 bytes")
    return AA01 + struct.pack("<H", size) + body


# --------------------------------------------------------------------------------------
# write

def _sha256_file(path: bytes) -> bytes:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()


def collect(root: bytes):
    """Yield (relative path bytes, absolute path bytes, lstat) for everything below root."""
    items = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in dirnames + filenames:
            abs_ = os.path.join(dirpath, name)
            rel = os.path.relpath(abs_, root)
            items.append((rel, abs_, os.lstat(abs_)))
    # parents before children, component-wise byte order
    items.sort(key=lambda t: t[0].split(b"/"))
    return items


def cmd_write(args) -> int:
    root = os.fsencode(args.root)
    if not os.path.isdir(root):
        print(f"error: {args.root} is not a directory", file=sys.stderr)
        return 2
    entries = []  # (pat bytes, kind, abs path or bytes data, mode)
    if args.root_entry:
        entries.append((b"", "D", None, 0o755))
    entries.append((b"Contents", "D", None, stat.S_IMODE(os.stat(root).st_mode)))
    for rel, abs_, st in collect(root):
        pat = b"Contents/" + rel
        if stat.S_ISDIR(st.st_mode):
            entries.append((pat, "D", None, stat.S_IMODE(st.st_mode)))
        elif stat.S_ISREG(st.st_mode):
            entries.append((pat, "F", ("path", abs_), stat.S_IMODE(st.st_mode)))
        elif stat.S_ISLNK(st.st_mode):
            entries.append((pat, "L", os.readlink(abs_), 0o755))
        else:
            print(f"warning: skipping special file {os.fsdecode(abs_)}", file=sys.stderr)
    if args.manifest:
        # ba-package stores the packaging manifest at the archive root as "Manifest.json" (FACTS §3)
        with open(args.manifest, "rb") as fh:
            entries.append((b"Manifest.json", "F", ("data", fh.read()), 0o644))
    entries.sort(key=lambda e: e[0].split(b"/") if e[0] else [])

    with open(args.out, "wb") as f:
        w = (
            PlainWriter(f)
            if args.algorithm == "none"
            else PbzWriter(f, args.algorithm, args.block_size, args.zlib_raw, args.single_block)
        )
        for pat, kind, src, mode in entries:
            fields = [f_uint("TYP", ord(kind), 1), f_string("PAT", pat)]
            if kind == "L":
                fields.append(f_string("LNK", src))
            fields.append(f_uint("MOD", mode, 2))
            if kind != "F":
                w.write(make_header(fields))
                continue
            src_kind, src = src
            if src_kind == "data":
                if args.sha256:
                    fields.append(f_hash("SH2", hashlib.sha256(src).digest()))
                fields.append(f_blob("DAT", len(src)))
                w.write(make_header(fields))
                w.write(src)
                continue
            data_size = os.path.getsize(src)
            if args.sha256:
                fields.append(f_hash("SH2", _sha256_file(src)))
            fields.append(f_blob("DAT", data_size))
            w.write(make_header(fields))
            written = 0
            with open(src, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    w.write(chunk)
                    written += len(chunk)
            if written != data_size:
                raise RuntimeError(f"{os.fsdecode(src)} changed size while archiving")
        w.close()
    if args.verbose:
        extra = "" if args.algorithm == "none" else f", {w.blocks} blocks ({w.stored} stored raw)"
        print(f"wrote {args.out}: {len(entries)} entries{extra}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------------------
# read

class RawReader:
    """Yields the decompressed archive byte stream, block by block."""

    def __init__(self, f):
        self.f = f
        self.buf = b""
        self.pos = 0
        self.info = {"container": "plain", "algorithm": "none", "block_size": None, "blocks": 0, "stored_blocks": 0}
        magic = f.read(4)
        if len(magic) == 4 and magic[:3] == PBZ:
            algo = BYTE_ALGOS.get(magic[3:4])
            if algo is None:
                raise FormatError(f"unknown pbz algorithm byte {magic[3:4]!r}")
            bs = f.read(8)
            if len(bs) != 8:
                raise FormatError("truncated pbz header")
            (self.block_size,) = struct.unpack(">Q", bs)
            if self.block_size == 0 or self.block_size > MAX_BLOCK_SIZE:
                raise FormatError(f"implausible pbz block size {self.block_size}")
            self.algo = algo
            self.info.update(container="pbz" + magic[3:4].decode("latin-1"), algorithm=algo, block_size=self.block_size)
            self.pbz = True
        elif magic in (AA01, YAA1) or magic == b"":
            self.pbz = False
            self.buf = magic
        else:
            raise FormatError(f"not an Apple Archive (magic {magic!r})")

    def _fill(self) -> bool:
        """Load the next chunk into buf. Returns False at clean EOF."""
        if not self.pbz:
            data = self.f.read(1 << 20)
            if not data:
                return False
            self.buf = self.buf[self.pos:] + data
            self.pos = 0
            return True
        hdr = self.f.read(16)
        if not hdr:
            return False
        if len(hdr) != 16:
            raise FormatError("truncated pbz block header")
        rsize, csize = struct.unpack(">QQ", hdr)
        # Each block's own sizes are honoured within the absolute bound (a writer may declare 4 MiB and write one
        # larger block), as ba-mock's reader does.
        if rsize > MAX_BLOCK_SIZE:
            raise FormatError(f"pbz block raw size {rsize} > {MAX_BLOCK_SIZE}")
        if csize > rsize:
            raise FormatError(f"pbz block compressed size {csize} > raw size {rsize}")
        payload = self.f.read(csize)
        if len(payload) != csize:
            raise FormatError("truncated pbz block payload")
        if csize == rsize:
            raw = payload
            self.info["stored_blocks"] += 1
        else:
            raw = decompress_block(self.algo, payload, rsize)
        self.info["blocks"] += 1
        self.buf = self.buf[self.pos:] + raw
        self.pos = 0
        return True

    def at_eof(self) -> bool:
        while self.pos >= len(self.buf):
            if not self._fill():
                return True
        return False

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) - self.pos < n:
            if not self._fill():
                raise FormatError("archive truncated (unexpected end of data)")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def stream(self, n: int):
        """Yield exactly n bytes in chunks."""
        left = n
        while left:
            if self.pos >= len(self.buf):
                if not self._fill():
                    raise FormatError("archive truncated inside a blob")
            take = min(left, len(self.buf) - self.pos, 1 << 20)
            yield self.buf[self.pos:self.pos + take]
            self.pos += take
            left -= take


def parse_fields(hdr: bytes):
    """hdr = whole header incl. magic. Returns list of (key, subtype char, kind, value)."""
    fields = []
    pos, end = 6, len(hdr)
    while pos < end:
        if pos + 4 > end:
            raise FormatError("truncated field key")
        key = hdr[pos:pos + 3]
        sub = hdr[pos + 3]
        pos += 4
        try:
            key_s = key.decode("ascii")
        except UnicodeDecodeError:
            raise FormatError(f"non-ASCII field key {key!r}") from None
        if sub not in SUBTYPES:
            raise FormatError(f"field {key_s}: invalid subtype {chr(sub)!r}")
        kind, size = SUBTYPES[sub]
        if kind == "string":
            if pos + 2 > end:
                raise FormatError(f"field {key_s}: truncated string length")
            (size,) = struct.unpack_from("<H", hdr, pos)
            pos += 2
        if pos + size > end:
            raise FormatError(f"field {key_s}: value runs past header end")
        raw = hdr[pos:pos + size]
        pos += size
        if kind in ("uint", "blob"):
            value = int.from_bytes(raw, "little")
        elif kind == "timespec":
            sec = int.from_bytes(raw[:8], "little")
            nsec = int.from_bytes(raw[8:12], "little") if size == 12 else 0
            value = (sec, nsec)
        elif kind == "flag":
            value = True
        else:  # string, hash
            value = raw
        fields.append((key_s, chr(sub), kind, value))
    return fields


def field_json(kind, value):
    if kind == "hash":
        return value.hex()
    if kind == "string":
        return value.decode("utf-8", "surrogateescape").encode("utf-8", "backslashreplace").decode("utf-8")
    if kind == "timespec":
        return {"sec": value[0], "nsec": value[1]}
    return value


def safe_relpath(pat: bytes) -> bytes:
    if pat.startswith(b"/") or b"\x00" in pat:
        raise FormatError(f"unsafe path {pat!r}")
    parts = pat.split(b"/")
    if any(p in (b"..",) for p in parts):
        raise FormatError(f"unsafe path {pat!r}")
    return b"/".join(p for p in parts if p not in (b"", b"."))


def iter_entries(reader: RawReader, on_blob):
    """Parse entries. on_blob(entry, key, size, chunks_iterable) must consume the chunks."""
    index = 0
    while not reader.at_eof():
        magic = reader.read_exact(4)
        if magic not in (AA01, YAA1):
            raise FormatError(f"entry {index}: bad magic {magic!r}")
        (hsize,) = struct.unpack("<H", reader.read_exact(2))
        if hsize < 6:
            raise FormatError(f"entry {index}: header size {hsize} < 6")
        hdr = magic + struct.pack("<H", hsize) + reader.read_exact(hsize - 6)
        fields = parse_fields(hdr)
        entry = {"index": index, "magic": magic.decode(), "header_size": hsize, "fields": fields}
        by_key = {}
        for k, sub, kind, v in fields:
            by_key.setdefault(k, (sub, kind, v))
        entry["by_key"] = by_key
        for k, sub, kind, v in fields:
            if kind == "blob":
                on_blob(entry, k, v, reader.stream(v))
        yield entry
        index += 1


def entry_summary(entry):
    bk = entry["by_key"]
    typ = bk.get("TYP")
    if typ is None or typ[1] != "uint":
        raise FormatError(f"entry {entry['index']}: missing/invalid TYP")
    t = chr(typ[2]) if 0 < typ[2] < 128 else f"?{typ[2]}"
    pat = bk.get("PAT")
    if pat is not None and pat[1] != "string":
        raise FormatError(f"entry {entry['index']}: PAT is not a string")
    path = pat[2] if pat else None
    dat = bk.get("DAT")
    return t, path, (dat[2] if dat and dat[1] == "blob" else None)


def cmd_list(args) -> int:
    problems = []
    out = []
    try:
        with open(args.archive, "rb") as f:
            reader = RawReader(f)
            digests = {}

            def on_blob(entry, key, size, chunks):
                hs = {}
                if key == "DAT":
                    hs = {k: hashlib.new(DIGESTS[k]) for k in DIGESTS if k in entry["by_key"]}
                for c in chunks:
                    for h in hs.values():
                        h.update(c)
                if key == "DAT":
                    digests[entry["index"]] = {k: h.digest() for k, h in hs.items()}

            for entry in iter_entries(reader, on_blob):
                t, path, size = entry_summary(entry)
                rec = {"type": t, "path": None if path is None else path.decode("utf-8", "surrogateescape").encode("utf-8", "backslashreplace").decode("utf-8"),
                       "size": size}
                bk = entry["by_key"]
                if "SH2" in bk:
                    rec["sh2"] = bk["SH2"][2].hex()
                ok = True
                for k in DIGESTS:
                    if k in bk:
                        stored = bk[k][2]
                        if bk[k][1] != "hash" or len(stored) != hashlib.new(DIGESTS[k]).digest_size:
                            problems.append(f"entry {entry['index']} {rec['path']}: {k} has wrong size")
                            ok = False
                            continue
                        got = digests.get(entry["index"], {}).get(k)
                        if got is None:  # no DAT blob: digest of empty data
                            got = hashlib.new(DIGESTS[k]).digest()
                        if got != stored:
                            problems.append(f"entry {entry['index']} {rec['path']}: {k} mismatch (stored {stored.hex()}, data {got.hex()})")
                            ok = False
                rec["digest_ok"] = ok
                if args.fields:
                    rec["fields"] = [{"key": k, "subtype": s, "kind": kind, "value": field_json(kind, v)} for k, s, kind, v in entry["fields"]]
                out.append(rec)
            info = reader.info
    except FormatError as e:
        problems.append(f"malformed: {e}")
        info = None
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    if args.json:
        print(json.dumps({"archive": args.archive, "container": info, "entries": out, "problems": problems},
                         ensure_ascii=False, indent=1))
    else:
        if info:
            bs = f", block size {info['block_size']}, {info['blocks']} blocks ({info['stored_blocks']} stored)" if info["block_size"] else ""
            print(f"# {info['container']} ({info['algorithm']}){bs}")
        for r in out:
            size = "-" if r["size"] is None else str(r["size"])
            line = f"{r['type']} {size:>12} {r['path'] if r['path'] is not None else '<no PAT>'}"
            if "sh2" in r:
                line += f"  sh2={r['sh2']}" + ("" if r["digest_ok"] else " MISMATCH")
            print(line)
            if args.fields:
                print("    " + " ".join(f"{f['key']}{f['subtype']}={f['value']}" for f in r["fields"]))
        for p in problems:
            print(f"ERROR: {p}", file=sys.stderr)
    return 1 if problems else 0


def _check_inside(dest_real: bytes, target: bytes):
    parent = os.path.realpath(os.path.dirname(target))
    if parent != dest_real and not parent.startswith(dest_real + b"/"):
        raise FormatError(f"path escapes destination: {target!r}")


def cmd_extract(args) -> int:
    dest = os.fsencode(args.dest)
    os.makedirs(dest, exist_ok=True)
    dest_real = os.path.realpath(dest)
    problems = []
    dir_modes = []
    try:
        with open(args.archive, "rb") as f:
            reader = RawReader(f)
            state = {}

            def target_for(entry):
                t, path, _ = entry_summary(entry)
                if path is None:
                    raise FormatError(f"entry {entry['index']}: missing PAT")
                rel = safe_relpath(path)
                return t, (os.path.join(dest, rel) if rel else dest)

            def on_blob(entry, key, size, chunks):
                if key != "DAT":
                    for _ in chunks:
                        pass
                    return
                t, target = target_for(entry)
                if t != "F":
                    for _ in chunks:
                        pass
                    return
                _check_inside(dest_real, target)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if os.path.islink(target):
                    os.unlink(target)
                bk = entry["by_key"]
                hs = {k: hashlib.new(DIGESTS[k]) for k in DIGESTS if k in bk}
                with open(target, "wb") as out:
                    for c in chunks:
                        out.write(c)
                        for h in hs.values():
                            h.update(c)
                for k, h in hs.items():
                    if h.digest() != bk[k][2]:
                        problems.append(f"{os.fsdecode(target)}: {k} mismatch")
                state[entry["index"]] = True

            for entry in iter_entries(reader, on_blob):
                t, target = target_for(entry)
                bk = entry["by_key"]
                mode = bk["MOD"][2] & 0o7777 if "MOD" in bk and bk["MOD"][1] == "uint" else None
                if t == "D":
                    if target != dest:
                        _check_inside(dest_real, target)
                        os.makedirs(target, exist_ok=True)
                    if mode is not None:
                        dir_modes.append((target, mode))
                elif t == "F":
                    if entry["index"] not in state:  # no DAT blob => empty file
                        _check_inside(dest_real, target)
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        open(target, "wb").close()
                        for k in DIGESTS:
                            if k in bk and hashlib.new(DIGESTS[k]).digest() != bk[k][2]:
                                problems.append(f"{os.fsdecode(target)}: {k} mismatch")
                    if mode is not None:
                        os.chmod(target, mode)
                elif t == "L":
                    if "LNK" not in bk:
                        raise FormatError(f"entry {entry['index']}: symlink without LNK")
                    _check_inside(dest_real, target)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    if os.path.lexists(target):
                        os.unlink(target)
                    os.symlink(bk["LNK"][2], target)
                elif t == "M":
                    pass
                else:
                    print(f"warning: skipping entry type {t} at {os.fsdecode(target)}", file=sys.stderr)
        for target, mode in reversed(dir_modes):
            os.chmod(target, mode | 0o700)
    except FormatError as e:
        problems.append(f"malformed: {e}")
    for p in problems:
        print(f"ERROR: {p}", file=sys.stderr)
    return 1 if problems else 0


# --------------------------------------------------------------------------------------

def parse_size(s: str) -> int:
    s = s.strip().lower()
    mult = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    if s and s[-1] in mult:
        return int(s[:-1]) * mult[s[-1]]
    return int(s)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="archive a folder (entries under Contents/)")
    w.add_argument("out")
    w.add_argument("root")
    w.add_argument("--algorithm", "-a", choices=["lzfse", "lz4", "lzma", "zlib", "none"], default="lzfse")
    w.add_argument("--block-size", "-b", type=parse_size, default=DEFAULT_BLOCK_SIZE)
    w.add_argument("--sha256", action="store_true", help="add SH2 digests to regular files")
    w.add_argument("--manifest", help="store this file at the archive root as Manifest.json")
    w.add_argument("--root-entry", action="store_true", help="also emit a D entry with empty PAT")
    w.add_argument("--zlib-raw", action="store_true", help="zlib blocks as raw deflate instead of RFC1950")
    w.add_argument(
        "--single-block", action="store_true",
        help="write the whole archive as one block, whatever --block-size declares (as another writer does)",
    )
    w.add_argument("--verbose", "-v", action="store_true")
    l = sub.add_parser("list", help="decode and verify an archive")
    l.add_argument("archive")
    l.add_argument("--json", action="store_true")
    l.add_argument("--fields", action="store_true", help="also show every header field")
    x = sub.add_parser("extract", help="extract an archive")
    x.add_argument("archive")
    x.add_argument("dest")
    args = ap.parse_args(argv)
    if args.cmd == "write":
        if args.algorithm == "lzfse" and lzfse is None:
            ap.error("python module lzfse is not installed")
        if args.algorithm == "lz4" and lz4 is None:
            ap.error("python module lz4 is not installed")
        return cmd_write(args)
    if args.cmd == "list":
        return cmd_list(args)
    return cmd_extract(args)


if __name__ == "__main__":
    sys.exit(main())
