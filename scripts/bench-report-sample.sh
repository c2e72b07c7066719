#!/usr/bin/env bash
# A sample `ba-sync bench --html` report, for a look or a screenshot: serves the sample assets with ba-mock,
# installs Levels into a scratch app group, saves a baseline run, then writes a second run against it as HTML
# (--repeat 3, so that the throughput bars have whiskers). Everything but the page is removed at the end.
#   scripts/bench-report-sample.sh [bin folder (default .build/debug)] [output (default bench-report.html)]
# BENCH_DURATION=SECONDS sets the length of each case (default 0.2).
set -euo pipefail
. "$(dirname "$0")/first-line.sh"
bin=${1:-.build/debug}
out=${2:-bench-report.html}
duration=${BENCH_DURATION:-0.2}
[ -x "$bin/ba-mock" ] && [ -x "$bin/ba-sync" ] || {
  echo "no ba-mock and ba-sync in $bin: run swift build first, or give the folder" >&2
  exit 1
}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }; rm -rf "$work"' EXIT

cp -R Assets "$work/Assets"
rm -rf "$work/Assets/.ba-mock"
"$bin/ba-mock" serve "$work/Assets" --port 0 >"$work/ba-mock.out" 2>"$work/ba-mock.err" &
pid=$!
url=$(first_line "$work/ba-mock.out" "$work/ba-mock.err" "$pid")
"$bin/ba-sync" ensure --server "$url" --app-group "$work/AppGroup" Levels >/dev/null 2>"$work/ensure.err" ||
  { cat "$work/ensure.err" >&2; exit 1; }

bench=("$bin/ba-sync" bench --app-group "$work/AppGroup" --pack Levels --block 4k,16k --duration "$duration" --repeat 3)
"${bench[@]}" --json >"$work/base.json"
# A later run may be slower than the baseline: its exit status 1 is what --baseline is for, not a failure here.
"${bench[@]}" --baseline "$work/base.json" --tolerance 5 --html "$out" >/dev/null || [ $? -eq 1 ]
echo "wrote $out"
