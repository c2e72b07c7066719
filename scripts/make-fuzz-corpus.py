#!/usr/bin/env python3
"""Writes the binary inputs of Tests/AssetPackFormatTests/Corpus/ (the JSON ones are written by hand).

Run from the repository root: python3 scripts/make-fuzz-corpus.py. Needs the PyPI module lzfse (make deps).
Each input has a `<name>.expected` beside it, written by hand, that FuzzTests.corpusOutcomes holds it to;
this script never touches those. The outputs are reproducible (fixed times, owners and modes).
"""

import hashlib
import io
import os
import struct
import subprocess
import sys
import tarfile
import tempfile

import lzfse

CORPUS = os.path.join("Tests", "AssetPackFormatTests", "Corpus")
OK = b"fine"


def index(files, pack_id="Hostile", **override):
    rows = ",".join(
        '{"path":"%s","size":%d,"sha256":"%s"}' % (name, len(data), hashlib.sha256(data).hexdigest())
        for name, data in files
    )
    fields = {
        "formatVersion": "1",
        "assetPackID": '"%s"' % pack_id,
        "downloadPolicy": '{"onDemand":{}}',
        "platforms": '["iOS"]',
        "installSize": str(sum(len(d) for _, d in files)),
        "fileCount": str(len(files)),
    }
    fields.update(override)
    head = ",".join('"%s":%s' % (k, v) for k, v in fields.items())
    return ('{%s,"files":[%s]}' % (head, rows)).encode()


def tar(entries):
    """entries: (name, bytes | ("symlink", target))."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if isinstance(data, tuple):
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, data[1], 0o755
                archive.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def write(name, data):
    with open(os.path.join(CORPUS, name), "wb") as f:
        f.write(data)


def aar(algorithm):
    """A one-file pack (Contents/a.txt holding "fine", Manifest.json at the root) from scripts/aar_tool.py."""
    with tempfile.TemporaryDirectory() as scratch:
        root = os.path.join(scratch, "root")
        os.mkdir(root, 0o755)
        with open(os.path.join(root, "a.txt"), "wb") as f:
            f.write(OK)
        os.chmod(os.path.join(root, "a.txt"), 0o644)
        manifest = os.path.join(scratch, "Manifest.json")
        with open(manifest, "w") as f:
            f.write(
                '{"assetPackID": "Tiny", "downloadPolicy": {"onDemand": {}}, '
                '"fileSelectors": [{"file": "a.txt"}], "platforms": ["iOS"]}'
            )
        out = os.path.join(scratch, "out.aar")
        subprocess.run(
            [sys.executable, "scripts/aar_tool.py", "write", out, root, "-a", algorithm, "--sha256",
             "--manifest", manifest],
            check=True,
        )
        with open(out, "rb") as f:
            return f.read()


def main():
    good = [("Contents/a.txt", OK), ("Index.json", index([("a.txt", OK)]))]
    write("archive-tar-valid.pack", tar(good))
    whole = tar(good)
    write("archive-tar-truncated.pack", whole[:700])  # inside the first entry's header area
    write("archive-tar-dotdot.pack", tar([("Contents/../../escape.txt", OK), ("Index.json", index([]))]))
    write("archive-tar-absolute.pack", tar([("/tmp/ba-escape.txt", OK), ("Index.json", index([]))]))
    write("archive-tar-symlink.pack", tar([("Contents/link", ("symlink", "/etc/passwd")), ("Index.json", index([]))]))
    write(
        "archive-tar-lying-count.pack",
        tar([("Contents/a.txt", OK), ("Index.json", index([("a.txt", OK)], fileCount="1000000000000"))]),
    )
    write(
        "archive-tar-huge-size.pack",
        tar([("Contents/a.txt", OK), ("Index.json", index([("a.txt", OK)], installSize="99999999999999999999"))]),
    )
    write("archive-not-an-archive.pack", b"just some notes, not an archive\n")

    plain = aar("none")
    write("archive-aar-valid.pack", plain)
    assert plain[:4] == b"AA01"
    # The first header says it is 3 bytes long: less than its own magic and size field.
    write("archive-aar-bad-header.pack", plain[:4] + struct.pack("<H", 3) + plain[6:])
    packed = aar("lzfse")
    # pbz: magic(4) block size(8), then each block: raw size(8) stored size(8) payload. The one block's
    # LZFSE stream claims 64 KiB more raw bytes than it holds (n_raw_bytes at +4 of its first block header).
    assert packed[:4] == b"pbze"
    raw_size, stored_size = struct.unpack(">QQ", packed[12:28])
    payload = bytearray(packed[28 : 28 + stored_size])
    assert payload[:3] == b"bvx" and stored_size < raw_size, payload[:4]
    claimed = struct.unpack("<I", payload[4:8])[0]
    payload[4:8] = struct.pack("<I", claimed + 65536)
    write("archive-aar-lying-lzfse.pack", packed[:28] + bytes(payload) + packed[28 + stored_size :])

    # Deltas from a base of one file, bound to PackDelta.Binding.hostile (the tests' binding): rows of the
    # files a delta leaves with the base are paths from a peer too.
    binding = ('{"assetPackID":"Hostile","fromSHA256":"%s","toSHA256":"%s"}' % ("a" * 64, "b" * 64)).encode()
    new = b"new!"

    def delta(rows, entries, bound=binding):
        files = [(row, OK) for row in rows]
        head = [("Delta.json", bound)] if bound is not None else []
        return tar(head + entries + [("Index.json", index(files))])

    write("delta-valid.pack", delta(["a.txt", "b.txt"], [("Contents/b.txt", OK)]))
    write("delta-row-dotdot.pack", delta(["../1-installed/b.txt"], []))
    write("delta-row-absolute.pack", delta(["/etc/passwd"], []))
    write("delta-row-dot.pack", delta(["a/./b.txt"], []))
    write("delta-content-differs.pack", delta(["a.txt"], [("Contents/a.txt", new)]))
    write("delta-other-binding.pack", delta(["a.txt"], [], bound=binding.replace(b"Hostile", b"Other")))
    write("delta-no-binding.pack", delta(["a.txt"], [], bound=None))

    # Raw LZFSE streams for the decoder, decoded into 64 KiB.
    text = b"the level's enemies: 3, the boss: 1; " * 40
    write("lzfse-valid.bin", lzfse.compress(text))
    stored = lzfse.compress(b"ab")
    assert stored[:4] == b"bvx-"
    write("lzfse-stored-lying-size.bin", stored[:4] + struct.pack("<I", 1000) + stored[8:])
    compressed = bytearray(lzfse.compress(text))
    assert compressed[:4] in (b"bvxn", b"bvx2"), compressed[:4]
    compressed[4:8] = struct.pack("<I", struct.unpack("<I", compressed[4:8])[0] + 4096)
    write("lzfse-compressed-lying-size.bin", bytes(compressed))
    write("lzfse-no-end-of-stream.bin", lzfse.compress(text)[:-4])
    write("lzfse-huge-size.bin", b"bvx-" + struct.pack("<I", 0xFFFFFFFF) + b"ab" + b"bvx$")


if __name__ == "__main__":
    main()
