"""Builds the benchmark and test inputs for the codec scripts, the same bytes on the same machine.

text:   ~50 MiB of text (/usr/share/doc, /usr/include, Python's library sources, man pages unpacked), files
        in sorted order.
random: 50 MiB from a seeded generator (incompressible).
mixed:  ~50 MiB of shared libraries from /usr/lib (binary with repeats, much like game assets' code and
        tables).
Written for this project.
"""
import gzip
import os
import random
import sys

MIB = 1 << 20


def _gather(roots, exts, limit, unpack_gz=False):
    out = bytearray()
    for root in roots:
        for dirpath, dirnames, filenames in sorted(os.walk(root)):
            dirnames.sort()
            for name in sorted(filenames):
                if len(out) >= limit:
                    return bytes(out[:limit])
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                if exts and not any(name.endswith(e) for e in exts):
                    continue
                try:
                    with open(path, 'rb') as f:
                        data = f.read()
                    if unpack_gz and name.endswith('.gz'):
                        data = gzip.decompress(data)
                except (OSError, EOFError, gzip.BadGzipFile):
                    continue
                out += data
    return bytes(out[:limit])


def text(size=50 * MIB):
    parts = [
        _gather(['/usr/share/man'], ['.gz'], size // 4, unpack_gz=True),
        _gather(['/usr/include'], ['.h'], size // 4),
        _gather(['/usr/share/doc', '/usr/share/common-licenses'], ['', ], size // 8),
    ]
    rest = size - sum(len(p) for p in parts)
    py = '/usr/lib/python3' if os.path.isdir('/usr/lib/python3') else sys.prefix + '/lib'
    parts.append(_gather([py, '/usr/share/perl', '/usr/share/perl5', '/work/.library/env'], ['.py', '.pm', '.txt', '.pod', ''], rest))
    data = b''.join(parts)
    # Top up by repeating nothing: report what we have (sizes are printed by the bench).
    return data


def rand(size=50 * MIB, seed=1):
    return random.Random(seed).randbytes(size)


def mixed(size=50 * MIB):
    return _gather(['/usr/lib/x86_64-linux-gnu', '/usr/lib', '/usr/bin'], ['.so', '.a', ''], size)


def cached(name, maker, directory='/tmp/ac-corpus'):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        data = maker()
        with open(path + '.tmp', 'wb') as f:
            f.write(data)
        os.replace(path + '.tmp', path)
    return path


if __name__ == '__main__':
    for n, m in [('text', text), ('random', rand), ('mixed', mixed)]:
        p = cached(n, m)
        print(n, p, os.path.getsize(p))
