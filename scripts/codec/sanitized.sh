#!/usr/bin/env bash
# make test, its C part: the codecs' own checks built with ASan and UBSan, a short pass (about 40 s): every
# decode vector (the 18 checked in beside the Swift tests first) (Apple's reference encoder's LZFSE blocks, lz4, xz, deflate, hostile streams) decoded exactly
# or refused with its error, one-byte-short buffers included; then 260 encodes of every algorithm, decoded
# by the reference decoders. The longer runs (truncations, bit flips, libFuzzer) are `make fuzz`.
#   scripts/codec/sanitized.sh        (CC picks the compiler; Swift's clang by default)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cc=${CC:-clang}
work=$(mktemp -d "${TMPDIR:-/tmp}/ac-sanitized.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 "$here/scripts/codec/make_vectors.py" "$work/vectors" >/dev/null
# First the vectors checked in beside the Swift tests (the same bytes on every machine): a hostile one must be
# refused as corrupt (-1), the others decode to their original; then the larger set made above from this
# repository's sources.
vectors="$here/Tests/AssetPackFormatTests/BlockVectors"
awk -F '\t' -v dir="$vectors" '{
  hostile = ($1 ~ /^hostile/)
  printf "%s %s %s/%s %s\n", substr($2, 3), hostile ? "-1" : "ok", dir, $3, hostile ? "-" : dir "/" $4
}' "$vectors/vectors.txt" > "$work/checked-in.txt"
cat "$work/checked-in.txt" "$work/vectors/manifest.txt" > "$work/all.txt"
# The linker's notes on ASan's local symbols are noise: a step's output is shown when it fails.
if ! "$cc" -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
  -I "$here/Sources/CAppleCompression/include" "$here"/Sources/CAppleCompression/*.c \
  "$here/scripts/codec/test_decode.c" -llz4 -llzma -lz -o "$work/test_decode" 2>"$work/build.log"; then
  grep -v "ld.gold: warning" "$work/build.log" >&2
  exit 1
fi
if ! decode=$("$work/test_decode" "$work/all.txt" --quick 2>&1); then
  echo "$decode" | tail -40 >&2
  echo "codecs under ASan/UBSan: decoding FAILED" >&2
  exit 1
fi
echo "codecs under ASan/UBSan: decoding: $(echo "$decode" | tail -1)"
if ! encode=$(CC="$cc" python3 "$here/scripts/codec/check_encode.py" --asan --quick 2>&1); then
  echo "$encode" | grep -v "ld.gold: warning" | tail -40 >&2
  echo "codecs under ASan/UBSan: encoding FAILED" >&2
  exit 1
fi
echo "codecs under ASan/UBSan: encoding: $(echo "$encode" | tail -1)"
