#!/usr/bin/env bash
# make fuzz, its C part: libFuzzer with ASan and UBSan on the decoders of Sources/CAppleCompression (LZFSE and
# every pbz block algorithm), seeded with vectors from Apple's reference encoder, for SECONDS (default 60);
# then the encoders, which must never write past their capacity and give the same bytes twice.
#   scripts/codec/fuzz.sh [SECONDS]
set -euo pipefail
seconds=${1:-60}
here=$(cd "$(dirname "$0")/../.." && pwd)
clang=$(command -v clang || true)
[ -n "$clang" ] || { echo "fuzz.sh: clang (with libFuzzer) is needed; Swift's toolchain has one" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ac-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
source=(-I "$here/Sources/CAppleCompression/include" "$here"/Sources/CAppleCompression/*.c)
flags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
python3 "$here/scripts/codec/make_vectors.py" "$work/vectors" >/dev/null
python3 "$here/scripts/codec/make_fuzz_seeds.py" "$work/vectors/manifest.txt" "$work/corpus" >/dev/null
"$clang" "${flags[@]}" "${source[@]}" "$here/scripts/codec/fuzz_decode.c" -llz4 -llzma -lz -o "$work/fuzz_decode"
"$clang" "${flags[@]}" "${source[@]}" "$here/scripts/codec/fuzz_encode.c" -llz4 -llzma -lz -o "$work/fuzz_encode"
echo "fuzz.sh: decoders for $((seconds * 2 / 3)) s, encoders for $((seconds / 3)) s"
"$work/fuzz_decode" -max_total_time=$((seconds * 2 / 3)) -max_len=70000 -timeout=10 -print_final_stats=1 \
  "$work/corpus" 2>&1 | grep -E "^(stat::number_of_executed_units|==|SUMMARY|Done)" || true
mkdir -p "$work/encode-corpus"
"$work/fuzz_encode" -max_total_time=$((seconds / 3)) -timeout=10 -print_final_stats=1 "$work/encode-corpus" 2>&1 \
  | grep -E "^(stat::number_of_executed_units|==|SUMMARY|Done)" || true
# A finding leaves a crash-* file and a non-zero exit above: say so.
if ls crash-* leak-* timeout-* >/dev/null 2>&1; then echo "fuzz.sh: findings (crash-*, leak-*, timeout-*) in $PWD" >&2; exit 1; fi
echo "fuzz.sh: no findings"
