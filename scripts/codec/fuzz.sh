#!/usr/bin/env bash
# make fuzz, its C part: libFuzzer with ASan and UBSan on the decoders of Sources/CAppleCompression (LZFSE and
# every pbz block algorithm), seeded with vectors from Apple's reference encoder, for SECONDS (default 60);
# then the encoders, which must never write past their capacity and give the same bytes twice.
#   scripts/codec/fuzz.sh [SECONDS]
# FUZZ_DECODE=BINARY runs that libFuzzer binary in place of the decoders' (to check that a finding fails the run).
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
# Findings (crash-*, leak-*, oom-*, timeout-*, slow-unit-*) are kept in .build/fuzz-findings, and a fuzzer that
# exits non-zero fails the run whether or not it left one (its log's end is shown).
findings="$here/.build/fuzz-findings"
mkdir -p "$findings"
failed=()
fuzz() {  # NAME BINARY ARGS...
  local name=$1 status
  shift
  set +e
  "$@" -artifact_prefix="$findings/$name-" 2>&1 | tee "$work/$name.log" \
    | grep -E "^(stat::number_of_executed_units|==|SUMMARY|Done)"
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -ne 0 ]; then
    echo "fuzz.sh: the $name fuzzer failed (exit $status); its log ends:" >&2
    tail -25 "$work/$name.log" >&2
    failed+=("$name")
  fi
}
echo "fuzz.sh: decoders for $((seconds * 2 / 3)) s, encoders for $((seconds / 3)) s"
fuzz decode "${FUZZ_DECODE:-$work/fuzz_decode}" -max_total_time=$((seconds * 2 / 3)) -max_len=70000 -timeout=10 \
  -print_final_stats=1 "$work/corpus"
mkdir -p "$work/encode-corpus"
fuzz encode "$work/fuzz_encode" -max_total_time=$((seconds / 3)) -timeout=10 -print_final_stats=1 \
  "$work/encode-corpus"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: FAILED: ${failed[*]}; findings in $findings (replay one: the fuzzer binary with the file as argument)" >&2
  exit 1
fi
echo "fuzz.sh: no findings"
