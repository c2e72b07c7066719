#!/usr/bin/env bash
# make bench: ba-mock and ba-sync side by side with the reference tools, on the same data in the same run.
#
#   scripts/bench.sh [--smoke] [--rounds N] [--only STEPS] [--out DIR] BIN_DIR
#
# BIN_DIR holds ba-mock and ba-sync (make bench passes the release build). Data sets are generated under a
# temporary folder (BENCH_TMP, default: mktemp -d) and removed at the end (or by the next run there, when this
# one was killed: see sweep_leftovers). Each step runs ours and the
# reference alternately (who goes first alternates too), --rounds times (default 3); the table shows
# medians and ratios ours / reference and is written to OUT/results.md and OUT/results.json (default
# OUT: bench/). --smoke: tiny data, one round, short durations (make test runs it so the script cannot rot).
# --only: a comma-separated subset of pack,serve,ensure,aar,codec,reads,update,scaling,publish,nosha (reads need ensure,
# which it implies). aar: ensure of the big and mixed sets as Apple Archives (LZFSE) against the same content
# as tar.zst packs, both from nginx; codec: LZFSE decode and encode against Apple's reference implementation
# (scripts/codec-bench.py). update: four updates (10 of 1 024 files rewritten; one 1.4 KiB file of 3 000; 1 MiB
# rewritten in the middle of a 200 MiB file; 1 MiB inserted at its start), ensure --latest through a delta,
# and without one, vs rsync of the extracted folder from an rsync daemon on 127.0.0.1. publish: ba-mock publish
# of 8 packs (1 GiB) to an S3-compatible store on loopback (moto's server, scripts/s3-store.py), first into an
# empty prefix and again after one file changed, vs aws s3 sync of export's tree of the same packs. nosha: the
# big set's SHA-256 pass, pack, build and ensure again as on a CPU without SHA extensions (emulated, below).
# Where the folder is on ext4 without a journal, the installs go to a journaled ext4 of their own on a loop
# device, as root: BENCH_FS=auto (the default), loop or here; BENCH_FS_SIZE=bytes (README, make bench: why).
set -euo pipefail
. "$(dirname "$0")/first-line.sh"

smoke=0
rounds=3
only=pack,serve,ensure,aar,codec,reads,update,scaling,publish,nosha
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1; rounds=1 ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    --only) only=${2:?--only needs a list}; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    *) bin=$1 ;;
  esac
  shift
done
bin=${bin:?usage: bench.sh [--smoke] [--rounds N] [--out DIR] BIN_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
out=${out:-$here/bench}
mock="$bin/ba-mock"
sync="$bin/ba-sync"
for tool in "$mock" "$sync"; do
  [ -x "$tool" ] || { echo "bench.sh: $tool is missing: build first (make bench does)" >&2; exit 1; }
done
for tool in bsdtar curl nginx wrk rsync /usr/bin/time sha256sum; do
  command -v "$tool" >/dev/null || { echo "bench.sh: $tool is missing: run make deps" >&2; exit 1; }
done
cc=$(command -v cc || command -v clang || true)
[ -n "$cc" ] || { echo "bench.sh: no C compiler (cc or clang) for bench/benchtool.c" >&2; exit 1; }

tmp_root=${BENCH_TMP:-${TMPDIR:-/tmp}}
work=$(mktemp -d "$tmp_root/ba-bench.XXXXXX")
chmod 755 "$work"  # nginx workers run as another user when started by root
# Which process this run is (its PID and its start time, which a PID used again would not have), so that a later
# run can tell this folder from a live run's if this one is killed past its traps (sweep_leftovers).
started() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d ' ' -f 20; }  # clock ticks after boot
echo "$$ $(started $$)" >"$work.run"
pids=()
fs_image="" fs_loop="" fs_note=""
clients="$work"  # where the installs go (app groups, update folders): a file system of their own, below
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # Whatever did not take the TERM (its mask, inherited from a test runner, may block it) is killed, never waited
  # on forever.
  sleep 0.5
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$fs_loop" ]; then
    # The installs lived on a file system of their own: dropping it is their delete.
    umount "$work/clients" 2>/dev/null || umount -l "$work/clients" 2>/dev/null || true
    losetup -d "$fs_loop" 2>/dev/null || true
    rm -f "$fs_image"
  fi
  if [ "$smoke" = 1 ] || [ "${BENCH_KEEP_WAITING:-0}" = 1 ]; then
    rm -rf "$work"
  else
    # Hundreds of thousands of files take a while to delete: the table is out, let it happen behind.
    nohup rm -rf "$work" >/dev/null 2>&1 &
  fi
  rm -f "$work.run"
}
trap cleanup EXIT
# A TERM or HUP would end bash without its EXIT trap: the loop file system and its image would stay behind.
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
want() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
want reads && only="$only,ensure"
log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }

# What an earlier run left when it was killed past its traps (SIGKILL, the OOM killer): its folder (the data sets,
# tens of GiB), the loop file system mounted in it, the loop device and its image (16 GiB, allocated), and the
# servers it had started (nginx, ba-mock serve, rsync, the S3 store), which name the folder in their command line
# or hold a file in it (nginx's workers, their logs). A run whose process is gone is such a run; a run still going is
# left alone.
holders() {  # the processes whose command line names folder $1, or whose working folder or an open file is in it
  local proc link
  pgrep -f -- "$1/" || true
  for proc in /proc/[0-9]*; do
    for link in "$proc/cwd" "$proc"/fd/*; do
      case "$(readlink "$link" 2>/dev/null)" in "$1" | "$1"/*) echo "${proc#/proc/}"; break ;; esac
    done
  done
}
sweep_leftovers() {
  local mark dir pid start loop
  for mark in "$tmp_root"/ba-bench.*.run; do
    dir=${mark%.run}
    [ -f "$mark" ] && [ "$dir" != "$work" ] || continue
    read -r pid start <"$mark" || true
    [ -n "${pid:-}" ] && [ "$(started "$pid")" = "${start:-}" ] && continue  # still running
    log "removing what an earlier run left (it was killed): $dir"
    for pid in $(holders "$dir" | sort -u); do [ "$pid" = $$ ] || kill -KILL "$pid" 2>/dev/null || true; done
    if mountpoint -q "$dir/clients" 2>/dev/null; then
      umount "$dir/clients" 2>/dev/null || umount -l "$dir/clients" 2>/dev/null || true
    fi
    for loop in $(losetup -n -O NAME -j "$dir.img" 2>/dev/null); do losetup -d "$loop" 2>/dev/null || true; done
    rm -rf "$dir" "$dir.img"
    rm -f "$mark"
  done
}
sweep_leftovers

# The file system the installs write to. ext4 without a journal (this kind of machine's root fs) passes over the
# inodes freed in the last 60-360 s when it allocates one, reading inode tables to find them: creating many files
# soon after many were deleted took up to 15x longer (ensure of 10 000 files: 0.5 s on a journaled ext4, 7 s on
# the root fs after the round before's rm -rf), for ours and the reference alike, by when each ran. There the
# installs (the ensure, aar and update steps' folders) get a journaled ext4 of their own, as a Linux install has
# it: a loop device (direct I/O) over a preallocated file beside the folder; packs, exports and data stay where
# they were (a single output file is not affected, and the loop device's writeback would slow bsdtar's pack).
# BENCH_FS=here keeps the folder's file system, BENCH_FS=loop insists on a loop device, the default (auto) takes
# one when the folder is on ext4 without a journal and this runs as root (not --smoke). BENCH_FS_SIZE: bytes.
journal_less() {
  local source
  source=$(findmnt -n -o SOURCE -T "$1" 2>/dev/null) || return 1
  # ext4 names a file system by its block device: /dev/mapper/root is dm-0 there.
  [ "$(cat "/sys/fs/ext4/$(basename "$(readlink -f "$source")")/journal_task" 2>/dev/null)" = "<none>" ]
}
own_fs() {
  local size free
  free=$(df -B1 --output=avail "$work" | tail -n 1)
  size=${BENCH_FS_SIZE:-$((16 << 30))}
  [ "$free" -gt $((size + (24 << 30))) ] || size=$((free - (24 << 30)))  # 24 GiB left for the data sets and exports
  if [ "$size" -lt $((8 << 30)) ]; then
    log "no loop file system: $((free >> 30)) GiB free beside $work, 32 needed"
    return 1
  fi
  fs_image="$work.img"
  mkdir -p "$work/clients"
  # Inode tables and journal written now, not by a kernel thread while the steps run.
  if fallocate -l "$size" "$fs_image" && mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$fs_image" \
    && fs_loop=$(losetup --direct-io=on -f --show "$fs_image") && mount "$fs_loop" "$work/clients"; then
    clients="$work/clients"
    chmod 755 "$clients"
    return 0
  fi
  [ -z "$fs_loop" ] || losetup -d "$fs_loop" 2>/dev/null || true
  fs_loop=""
  rm -f "$fs_image"
  rmdir "$work/clients"
  return 1
}
fs_mode=${BENCH_FS:-auto}
case "$fs_mode" in
  loop) own_fs || { echo "bench.sh: BENCH_FS=loop: cannot make a loop file system (root, losetup, mkfs.ext4)" >&2; exit 1; } ;;
  auto) if [ "$smoke" = 0 ] && journal_less "$work"; then
          if [ "$(id -u)" = 0 ] && own_fs; then :; else
            log "warning: $work is on ext4 without a journal: installs after deletes will vary (see BENCH_FS)"
          fi
        fi ;;
  here) ;;
  *) echo "bench.sh: BENCH_FS is auto, loop or here, not $fs_mode" >&2; exit 64 ;;
esac
if [ -n "$fs_loop" ]; then
  fs_note="installs on a journaled ext4 of their own ($(($(stat -c %s "$fs_image") >> 30)) GiB, loop device, direct I/O)"
else
  fs_note="files on $(findmnt -n -o FSTYPE -T "$work" 2>/dev/null || echo unknown)$(journal_less "$work" && echo " without a journal")"
fi
log "$fs_note"
records="$work/records.tsv"
: >"$records"

tool="$work/benchtool"
"$cc" -O3 -o "$tool" "$here/bench/benchtool.c" -lpthread

# Sizes: the issue's data sets, or tiny ones for --smoke.
if [ $smoke = 1 ]; then
  big_count=4 big_size=$((256 << 10))
  many_count=200 many_min=1024 many_max=$((64 << 10))
  mixed_big=2 mixed_min=$((1 << 20)) mixed_max=$((2 << 20)) mixed_small=100
  scale_sizes="65536 262144 1048576"
  scale_counts="10 100 1000"
  update_count=100 update_size=$((16 << 10)) update_changed=1 small_count=100
  huge_size=$((2 << 20)) huge_change=$((64 << 10))
  read_seconds=0.2 wrk_seconds=1 layer_calls=2000
else
  big_count=4 big_size=$((256 << 20))
  many_count=20000 many_min=1024 many_max=$((64 << 10))
  mixed_big=3 mixed_min=$((20 << 20)) mixed_max=$((100 << 20)) mixed_small=3000
  scale_sizes="$((64 << 20)) $((256 << 20)) $((1 << 30))"
  scale_counts="1000 10000 100000"
  update_count=1024 update_size=$((1 << 20)) update_changed=10 small_count=3000
  huge_size=$((200 << 20)) huge_change=$((1 << 20))
  read_seconds=1 wrk_seconds=2 layer_calls=20000
fi

# --- helpers ---------------------------------------------------------------------------------------------

now_ns() { date +%s%N; }

# record STEP SET TOOL VALUE UNIT [RSS_KB]
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "${6:-}" >>"$records"; }

# timed SECONDS_VAR RSS_VAR cmd...: wall time in seconds and peak RSS in KiB of one command.
timed() {
  local -n seconds_ref=$1 rss_ref=$2
  shift 2
  local start end
  start=$(now_ns)
  /usr/bin/time -f %M -o "$work/rss" "$@" >"$work/cmd.out" 2>"$work/cmd.err" || {
    echo "bench.sh: failed: $*" >&2
    cat "$work/cmd.err" >&2
    exit 1
  }
  end=$(now_ns)
  seconds_ref=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')
  rss_ref=$(tail -n 1 "$work/rss")
}

# warm DIR: reads every file under DIR, so that a step starts with its input in the page cache (pages idle
# for ~30 s are paged out on this kind of machine, and whoever ran first would pay for it).
warm() { find "$1" -type f -exec cat {} + >/dev/null; }

mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", (s > 0 ? b / s / 1e6 : 0) }'; }
bytes_of() { find "$1" -type f -printf '%s\n' | awk '{ total += $1 } END { print total + 0 }'; }

free_port() {
  # Below the kernel's range for outgoing connections' ports: a port nobody listens on can still be the local end
  # of a connection (a test suite's, a download's), and a bind to it fails (nginx: "Address already in use").
  local port low
  low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$low" -gt 11000 ] || low=32768
  while :; do
    port=$((10000 + RANDOM % (low - 10000)))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}

# make_set NAME: the asset folder $work/sets/NAME with one pack NAME over its files/ folder.
manifest() {
  cat >"$work/sets/$1/$1.json" <<EOF
{ "assetPackID": "$1", "downloadPolicy": { "onDemand": {} }, "fileSelectors": [ { "directory": "files" } ], "platforms": ["iOS"] }
EOF
}

# serve_mock SET [FORMAT]: starts ba-mock on the set (tar packs unless FORMAT says aar, Apple Archive, serve's
# default); sets mock_url and mock_pid.
serve_mock() {
  # One output file per server started: a second server of the same set must not be taken for the first,
  # whose URL is still in a file of the same name until the new process truncates it.
  local out="$work/mock-$1-${2:-tar}-$RANDOM"
  "$mock" serve "$work/sets/$1" --port 0 --quiet --format "${2:-tar}" >"$out.out" 2>"$out.err" &
  mock_pid=$!
  pids+=("$mock_pid")
  mock_url=$(first_line "$out.out" "$out.err" "$mock_pid" 600)
}

stop() { kill -INT "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# nginx with sendfile over the export tree of every set ($work/www/SET/{manifest,assets/ID}).
start_nginx() {
  nginx_port=$(free_port)
  mkdir -p "$work/nginx"
  cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    default_type application/octet-stream;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    server { listen 127.0.0.1:$nginx_port; root $work/www; }
}
EOF
  nginx -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" &
  nginx_pid=$!
  pids+=("$nginx_pid")
  for _ in $(seq 1 100); do
    # Any HTTP answer (the root has no index: 403 or 404) means nginx is listening.
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$nginx_port/")" != 000 ] && break
    sleep 0.1
  done
  nginx_url="http://127.0.0.1:$nginx_port"
}

# pack_rounds ROW SET [sizes]: times the commands in the arrays ours_cmd and ref_cmd, which both write
# $work/pack.out, in turns (ours first in odd rounds), every round, from a warm cache; with "sizes" it also
# records each archive's size as ROW-size.
pack_rounds() {
  local row=$1 set=$2 sizes=${3:-} bytes seconds rss r who
  bytes=$(bytes_of "$work/sets/$set/files")
  for r in $(seq 1 "$rounds"); do
    for who in $( [ $((r % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
      rm -f "$work/pack.out"
      warm "$work/sets/$set/files"
      if [ "$who" = ours ]; then timed seconds rss "${ours_cmd[@]}"; else timed seconds rss "${ref_cmd[@]}"; fi
      record "$row" "$set" "$who" "$(mbps "$bytes" "$seconds")" "MB/s" "$rss"
      if [ -n "$sizes" ]; then record "$row-size" "$set" "$who" "$(stat -c %s "$work/pack.out")" "B"; fi
    done
  done
  rm -f "$work/pack.out"
}

# pack_step SET: ba-mock package vs bsdtar --zstd, same level (3), every round.
pack_step() {
  local set=$1
  ours_cmd=("$mock" package "$work/sets/$set/$set.json" --root "$work/sets/$set" --compression zstd --level 3
    -o "$work/pack.out")
  ref_cmd=(bsdtar --zstd --options zstd:compression-level=3 -cf "$work/pack.out" -C "$work/sets/$set" files)
  pack_rounds pack "$set"
}

# pack_aar_step SET: what Apple's format (the default) costs to build: ba-mock package of an Apple Archive
# (LZFSE, 4 MiB blocks) vs ba-mock package of a tar (zstd 3), every round.
pack_aar_step() {
  local set=$1
  ours_cmd=("$mock" package "$work/sets/$set/$set.json" --root "$work/sets/$set" --format aar -o "$work/pack.out")
  ref_cmd=("$mock" package "$work/sets/$set/$set.json" --root "$work/sets/$set" --format tar --compression zstd
    --level 3 -o "$work/pack.out")
  pack_rounds pack-aar "$set" sizes
}

# build_step SET: what serve and export do to publish a folder (build the pack, its index and, for deltas, its
# chunk lists) then copy it out: ba-mock export --format tar (zstd 3) from a fresh state vs bsdtar --zstd, every
# round, input MB/s.
build_step() {
  local set=$1 bytes seconds rss r who
  bytes=$(bytes_of "$work/sets/$set/files")
  for r in $(seq 1 "$rounds"); do
    for who in $( [ $((r % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
      rm -rf "$work/sets/$set/.ba-mock" "$work/build.out" "$work/pack.out"
      warm "$work/sets/$set/files"
      if [ "$who" = ours ]; then
        timed seconds rss "$mock" export "$work/sets/$set" --format tar --compression zstd --level 3 --out "$work/build.out"
      else
        timed seconds rss bsdtar --zstd --options zstd:compression-level=3 -cf "$work/pack.out" -C "$work/sets/$set" files
      fi
      record "build-export" "$set" "$who" "$(mbps "$bytes" "$seconds")" "MB/s" "$rss"
    done
  done
  rm -rf "$work/sets/$set/.ba-mock" "$work/build.out" "$work/pack.out"
}

# export_set SET [FORMAT]: the static tree nginx serves at $work/www/SET (tar packs, which the reference
# extracts with bsdtar), or at $work/www/SET-aar with FORMAT aar.
export_set() {
  local name=$1${2:+-$2}
  "$mock" export "$work/sets/$1" --format "${2:-tar}" --out "$work/www/$name" --base-url "$nginx_url/$name" \
    >/dev/null 2>"$work/export.err" || { cat "$work/export.err" >&2; exit 1; }
}

# ensure_step SET [LABEL]: ba-sync ensure vs curl | bsdtar -xf - && sync, both from nginx, fresh folders.
ensure_step() {
  local set=$1 label=${2:-ensure} seconds rss r dir
  for r in $(seq 1 "$rounds"); do
    for who in $( [ $((r % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
      dir="$clients/client-$who-$r"
      warm "$work/www/$set/assets"
      if [ "$who" = ours ]; then
        timed seconds rss "$sync" --server "$nginx_url/$set" --app-group "$dir" ensure "$set"
      else
        mkdir -p "$dir"
        timed seconds rss bash -c 'set -o pipefail; curl -fsS "$1" | bsdtar -xf - -C "$2" && sync' _ \
          "$nginx_url/$set/assets/$set" "$dir"
      fi
      record "$label" "$set" "$who" "$seconds" "s" "$rss"
    done
    # Keep the last round's app group for the read steps; delete the rest (both sides alike).
    if [ "$r" -lt "$rounds" ]; then rm -rf "$clients/client-ours-$r" "$clients/client-ref-$r"; fi
  done
  rm -rf "$clients/app-$set"
  mv "$clients/client-ours-$rounds" "$clients/app-$set"
  rm -rf "$clients/client-ref-$rounds"
}

# bench_csv ARGS...: one ba-sync bench case; prints its CSV row.
bench_csv() { "$sync" bench --csv "$@" | tail -n 1; }
csv_field() { echo "$1" | cut -d, -f"$2"; }  # 9 MB/s, 10 ops/s, 13 p99 µs

# --- data ------------------------------------------------------------------------------------------------
log "data sets in $work (smoke=$smoke, rounds=$rounds)"
mkdir -p "$work/sets" "$work/www"
"$tool" random "$work/sets/big/files" "$big_count" "$big_size"
manifest big
mkdir -p "$work/sets/many/files"
"$tool" many "$work/sets/many/files" "$many_count" "$many_min" "$many_max" 7
manifest many
mkdir -p "$work/sets/mixed/files"
"$tool" mixed "$work/sets/mixed/files" "$mixed_big" "$mixed_min" "$mixed_max" "$mixed_small" 11
manifest mixed
"$tool" random "$work/sets/small/files" 1 $((60 << 10))
manifest small
# Issue 31's many small files: 1 000 of 1-16 KiB (text and noise), packed every round (the scaling rows pack
# 1-4 KiB files once).
mkdir -p "$work/sets/files1000-16k/files"
"$tool" many "$work/sets/files1000-16k/files" 1000 1024 $((16 << 10)) 3
manifest files1000-16k
for set in big many mixed small files1000-16k; do log "  $set: $(find "$work/sets/$set/files" -type f | wc -l) files, $(bytes_of "$work/sets/$set/files") bytes"; done

# sha256_pass SET: one SHA-256 pass over the set's files with OpenSSL (the fastest implementation here), from
# a warm cache, every round: the floor of any step that checks every byte once (issue 31's limit), recorded
# as input MB/s (beside pack) and seconds (beside ensure).
sha256_pass() {
  local set=$1 bytes seconds rss r
  bytes=$(bytes_of "$work/sets/$set/files")
  for r in $(seq 1 "$rounds"); do
    warm "$work/sets/$set/files"
    timed seconds rss find "$work/sets/$set/files" -type f -exec openssl dgst -sha256 {} + >/dev/null
    record "sha256-pass" "$set" "ours" "$(mbps "$bytes" "$seconds")" "MB/s"
    record "sha256-pass-time" "$set" "ours" "$seconds" "s"
  done
}
if want pack || want ensure; then
  for set in big many mixed; do log "one SHA-256 pass over $set"; sha256_pass "$set"; done
fi

# --- build -----------------------------------------------------------------------------------------------
if want pack; then
  for set in big many mixed; do
    log "pack $set"
    pack_step "$set"
    log "pack $set: Apple Archive (LZFSE) vs tar (zstd 3)"
    pack_aar_step "$set"
    log "build and export $set (serve's build: pack, index, chunk lists)"
    build_step "$set"
  done
  log "pack files1000-16k"
  pack_step files1000-16k
fi

# --- serve -----------------------------------------------------------------------------------------------
start_nginx
for set in big many mixed small; do export_set "$set"; done
if want serve; then
log "serve big, one stream"
serve_mock big
big_pack_bytes=$(stat -c %s "$work/www/big/assets/big")
for r in $(seq 1 "$rounds"); do
  for who in $( [ $((r % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
    url=$([ "$who" = ours ] && echo "$mock_url/assets/big" || echo "$nginx_url/big/assets/big")
    curl -fsS -o /dev/null "$url"  # the pages of the pack are warm for both
    seconds=$(curl -fsS -o /dev/null -w '%{time_total}' "$url")
    record "serve-1-stream" "big" "$who" "$(mbps "$big_pack_bytes" "$seconds")" "MB/s"
  done
done
log "serve big to 8 clients at once (peak RSS)"
for _ in 1 2 3 4 5 6 7 8; do curl -fsS -o /dev/null "$mock_url/assets/big" & done
wait_curls() { for job in $(jobs -p); do [ "$job" = "$mock_pid" ] || [ "$job" = "$nginx_pid" ] || wait "$job"; done; }
wait_curls
record "rss-serve-8-clients" "big" "ours" "$(awk '/VmHWM/ { print $2 }' "/proc/$mock_pid/status")" "KiB"
stop "$mock_pid"

log "serve big as an Apple Archive (serve's default), one stream"
export_set big aar
serve_mock big aar
aar_pack_bytes=$(stat -c %s "$work/www/big-aar/assets/big")
for r in $(seq 1 "$rounds"); do
  for who in $( [ $((r % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
    url=$([ "$who" = ours ] && echo "$mock_url/assets/big" || echo "$nginx_url/big-aar/assets/big")
    curl -fsS -o /dev/null "$url"
    seconds=$(curl -fsS -o /dev/null -w '%{time_total}' "$url")
    record "serve-1-stream-aar" "big" "$who" "$(mbps "$aar_pack_bytes" "$seconds")" "MB/s"
  done
done
stop "$mock_pid"
rm -rf "$work/www/big-aar"

log "serve a $(stat -c %s "$work/www/small/assets/small")-byte pack, 32 connections (wrk)"
serve_mock small
for r in $(seq 1 "$rounds"); do
  for who in $( [ $((r % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
    url=$([ "$who" = ours ] && echo "$mock_url/assets/small" || echo "$nginx_url/small/assets/small")
    rps=$(wrk -t2 -c32 -d"${wrk_seconds}s" "$url" | awk '/^Requests\/sec:/ { print $2 }')
    record "serve-64k-32-connections" "small" "$who" "$rps" "req/s"
  done
done
# The dashboard's cost: 100 connections downloading at once (wrk -c100) with a dashboard's event stream open
# ("ours") and with none ("ref"), the same server; the stream reads every response's counters 4 times a second.
log "serve the same pack, 100 connections, dashboard open vs closed"
for r in $(seq 1 "$rounds"); do
  for who in $( [ $((r % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
    events_pid=""
    if [ "$who" = ours ]; then
      # Bounded and detached from this script's output: a stream left over must not hold a caller's pipes.
      curl -fsSN --max-time $((wrk_seconds + 60)) -o /dev/null "$mock_url/_mock/events" </dev/null >/dev/null 2>&1 &
      events_pid=$!
    fi
    rps=$(timeout -k 5 $((wrk_seconds + 60)) wrk -t2 -c100 -d"${wrk_seconds}s" "$mock_url/assets/small" </dev/null \
      | awk '/^Requests\/sec:/ { print $2 }' || true)
    # SIGKILL: a caller may pass SIGTERM on ignored (a Swift test process that ran a service group does), and
    # an ignored signal stays ignored across exec, so curl would never end and wait would not return.
    [ -z "$events_pid" ] || { kill -KILL "$events_pid" 2>/dev/null || true; wait "$events_pid" 2>/dev/null || true; }
    [ -n "$rps" ] || { log "  wrk gave no result ($who); recorded as 0"; rps=0; }
    record "serve-dashboard-open-100" "small" "$who" "$rps" "req/s"
  done
done
stop "$mock_pid"
fi

# --- download and install -----------------------------------------------------------------------------------
if want ensure; then
  for set in big many mixed; do
    log "ensure $set"
    ensure_step "$set"
  done
fi

# --- without SHA extensions (emulated) -------------------------------------------------------------------
# Issue 31 asks its limits on a CPU without SHA extensions too (many cloud CI runners). OPENSSL_ia32cap clears
# the SHA bit (CPUID leaf 7, EBX bit 29) for OpenSSL (the reference pass) and for BoringSSL (swift-crypto,
# which ours hash with): both then run the code they run on such a CPU (BoringSSL's SSSE3 code here, as perf
# shows, and its AVX code on Intel, per its sha/internal.h). The rest of the CPU is unchanged: these rows show
# the design where hashing sets the pace, not one given machine. The set is big's files under another pack ID (big-nosha).
if want nosha; then
  mkdir -p "$work/sets/big-nosha"
  cp -al "$work/sets/big/files" "$work/sets/big-nosha/files"
  manifest big-nosha
  export_set big-nosha
  (
    export OPENSSL_ia32cap=':~0x20000000'
    log "one SHA-256 pass over big, SHA extensions masked"
    sha256_pass big-nosha
    log "pack big, SHA extensions masked"
    pack_step big-nosha
    log "build and export big, SHA extensions masked"
    build_step big-nosha
    log "ensure big, SHA extensions masked"
    ensure_step big-nosha
  )
  rm -rf "$work/sets/big-nosha" "$work/www/big-nosha" "$clients/app-big-nosha"
fi

# --- Apple Archive ---------------------------------------------------------------------------------------
# ensure of the same content as an Apple Archive (ours) and as a tar.zst pack (the reference), both from nginx.
if want aar; then
  for set in big mixed; do
    log "ensure $set: Apple Archive (LZFSE) vs tar.zst"
    export_set "$set" aar
    for r in $(seq 1 "$rounds"); do
      for who in $( [ $((r % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
        dir="$clients/client-aar-$who-$r"
        server=$([ "$who" = ours ] && echo "$nginx_url/$set-aar" || echo "$nginx_url/$set")
        warm "$work/www/$set-aar/assets"
        warm "$work/www/$set/assets"
        timed seconds rss "$sync" --server "$server" --app-group "$dir" ensure "$set"
        record "ensure-aar" "$set" "$who" "$seconds" "s" "$rss"
        rm -rf "$dir"
      done
    done
    record "aar-size" "$set" "ours" "$(stat -c %s "$work/www/$set-aar/assets/$set")" "B"
    record "aar-size" "$set" "ref" "$(stat -c %s "$work/www/$set/assets/$set")" "B"
    rm -rf "$work/www/$set-aar"
  done
fi
if want codec; then
  log "LZFSE: ours vs Apple's reference implementation"
  python3 "$here/scripts/codec-bench.py" --rounds "$rounds" $( [ "$smoke" = 1 ] && echo --smoke ) >>"$records"
fi

# --- reads -----------------------------------------------------------------------------------------------
if want reads; then
mapfile -t big_files < <(find "$clients/app-big/AssetPacks" -type f -name 'file-*.bin' | sort)
log "reads of the installed big set (${#big_files[@]} files)"
for r in $(seq 1 "$rounds"); do
  row=$(bench_csv --app-group "$clients/app-big" --method contents --pattern sequential --cache warm --duration "$read_seconds")
  record "read-contents-whole-warm" "big" "ours" "$(csv_field "$row" 9)" "MB/s"
  line=$("$tool" mmap "$read_seconds" "${big_files[@]}")
  record "read-contents-whole-warm" "big" "ref" "$(echo "$line" | awk -F'[:,}]' '{ printf "%.1f", $4 / $6 / 1e6 }')" "MB/s"
  row=$(bench_csv --app-group "$clients/app-big" --method descriptor --pattern random --block 4k --cache warm --duration "$read_seconds")
  record "read-descriptor-random-4k-warm" "big" "ours" "$(csv_field "$row" 10)" "ops/s"
  line=$("$tool" pread "$read_seconds" 4096 1 "${big_files[@]}")
  record "read-descriptor-random-4k-warm" "big" "ref" "$(echo "$line" | awk -F'[:,}]' '{ printf "%.1f", $2 / $6 }')" "ops/s"
done
log "contents(at:) calls on the installed many set"
for r in $(seq 1 "$rounds"); do
  row=$(bench_csv --app-group "$clients/app-many" --method contents --pattern first-byte --cache warm --duration "$read_seconds")
  record "contents-call-p99-warm" "many" "ours" "$(csv_field "$row" 13)" "µs"
done
# Apple's declarations (import BackgroundAssets) against the engine underneath, on the same installed files:
# the first contents(at:) after ensureLocalAvailability in a fresh manager (median of 20), and contents(at:) p99.
log "BackgroundAssets against the engine underneath (many)"
layer_field() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(d[sys.argv[1]][sys.argv[2]] if sys.argv[2] == "firstReadMedian" else d[sys.argv[1]]["contentsCall"]["p99"])' "$@"; }
for r in $(seq 1 "$rounds"); do
  "$sync" bench --app-group "$clients/app-many" --layers --pack many --iterations "$layer_calls" --json >"$work/layers.json"
  for who in ours ref; do
    layer=$([ "$who" = ours ] && echo backgroundAssets || echo engine)
    record "backgroundassets-first-read" "many" "$who" "$(layer_field "$layer" firstReadMedian <"$work/layers.json")" "µs"
    record "backgroundassets-contents-call" "many" "$who" "$(layer_field "$layer" p99 <"$work/layers.json")" "µs"
  done
done

log "hash the installed big set: ba-sync verify vs sha256sum"
for r in $(seq 1 "$rounds"); do
  for who in $( [ $((r % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
    warm "$clients/app-big/AssetPacks"
    if [ "$who" = ours ]; then
      timed seconds rss "$sync" --app-group "$clients/app-big" verify big
    else
      timed seconds rss sha256sum "${big_files[@]}"
    fi
    record "hash-installed" "big" "$who" "$(mbps "$((big_count * big_size))" "$seconds")" "MB/s"
  done
done
fi

# --- update ------------------------------------------------------------------------------------------------
# Four updates of a pack (issue 22), each a set of its own: update = update_count files, update_changed of
# them rewritten; update-small = small_count files of 1.4 KiB, one rewritten; update-middle = one file of
# huge_size with huge_change bytes rewritten in its middle; update-insert = the same with huge_change bytes
# inserted at its start (shifted data). Each: ba-sync ensure --latest through the delta export wrote, and
# with --no-delta, each into version 1 installed by ba-sync, vs rsync -a --delete of the extracted folder
# from an rsync daemon (the tool a user would otherwise script) into a copy of version 1's files, then sync.
# change_SET SET: changes version 1's files into version 2's and sets $changed to the files changed.
change_update() {
  # awk reads all its input: `head` would leave sort writing into a closed pipe, which pipefail makes fatal.
  changed=$(find "$work/sets/$1/files" -type f | sort | awk -v n="$update_changed" 'NR <= n')
  for file in $changed; do head -c "$update_size" /dev/urandom >"$file"; done
  # shellcheck disable=SC2046  # one argument per changed file
  changed_compressed=$(cd "$work/sets/$1" && bsdtar --zstd --options zstd:compression-level=3 -cf - \
    $(for file in $changed; do echo "${file#"$work/sets/$1/"}"; done) | wc -c)
}
change_update_small() {
  changed=$(find "$work/sets/$1/files" -type f | sort | awk 'NR == 1')
  head -c 1434 /dev/urandom >"$changed"
}
change_update_middle() {
  changed="$work/sets/$1/files/huge.bin"
  dd if=/dev/urandom of="$changed" bs="$huge_change" count=1 seek=$((huge_size / huge_change / 2)) conv=notrunc \
    status=none
}
change_update_insert() {
  changed="$work/sets/$1/files/huge.bin"
  { head -c "$huge_change" /dev/urandom; cat "$changed"; } >"$work/inserted.bin"
  mv "$work/inserted.bin" "$changed"
}
# update_case SET: version 1 of the set exported and installed, changed, exported again, then the rounds.
update_case() {
  local set=$1 r who dir seconds rss received delta_bytes full_bytes rsync_port rsync_pid
  manifest "$set"
  # Version 1 stays served beside version 2: each of our runs installs it afresh (below).
  "$mock" export "$work/sets/$set" --format tar --out "$work/www/$set-v1" --base-url "$nginx_url/$set-v1" >/dev/null \
    2>"$work/export.err" || { cat "$work/export.err" >&2; exit 1; }
  cp -a "$work/sets/$set/files" "$work/update-v1-files"
  sleep 1.1  # a change in the second of the copy would keep the file's time: rsync's quick check would skip it
  "change_${set//-/_}" "$set"
  export_set "$set"
  # The first downloadSize after "deltas" in the manifest is the delta's.
  delta_bytes=$(tr -d ' \n' <"$work/www/$set/manifest" | grep -o '"deltas":\[{[^]]*' \
    | grep -o '"downloadSize":[0-9]*' | awk -F: 'NR == 1 { print $2 }' || true)
  if [ -z "$delta_bytes" ]; then
    echo "bench.sh: the export of $set lists no delta:" >&2
    cat "$work/export.err" >&2
    exit 1
  fi
  full_bytes=$(stat -c %s "$work/www/$set/assets/$set")
  rsync_port=$(free_port)
  printf 'use chroot = no\nuid = root\ngid = root\npid file = %s\n[v2]\npath = %s\nread only = yes\n' \
    "$work/rsyncd.pid" "$work/sets/$set/files" >"$work/rsyncd.conf"
  rsync --daemon --no-detach --config="$work/rsyncd.conf" --port="$rsync_port" --address=127.0.0.1 &
  rsync_pid=$!
  pids+=("$rsync_pid")
  for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$rsync_port") 2>/dev/null && break; sleep 0.1; done
  for r in $(seq 1 "$rounds"); do
    for who in $( [ $((r % 2)) = 1 ] && echo "delta full rsync" || echo "rsync full delta"); do
      dir="$clients/update-$who"
      rm -rf "$dir"
      if [ "$who" = rsync ]; then
        cp -a "$work/update-v1-files" "$dir"
        sync && warm "$dir"  # the copy's dirty pages are not the update's to write
        timed seconds rss bash -c 'rsync -a --delete --stats "$1" "$2/" >"$3" && sync' _ \
          "rsync://127.0.0.1:$rsync_port/v2/" "$dir" "$work/rsync.stats"
        received=$(awk -F': ' '/^Total bytes received/ { gsub(/,/, "", $2); print $2 + 0 }' "$work/rsync.stats")
        for file in $changed; do
          cmp -s "$file" "$dir/${file#"$work/sets/$set/files/"}" || { echo "bench.sh: rsync missed $file" >&2; exit 1; }
        done
        record "update-time" "$set" "ref" "$seconds" "s" "$rss"
        record "update-time-no-delta" "$set" "ref" "$seconds" "s" "$rss"
        record "update-bytes" "$set" "ref" "$received" "B"
      else
        # Installed, not copied: a copy is a new inode with a new change time, which no device's installed
        # files have (rsync's copy keeps what its quick check looks at, sizes and modification times).
        "$sync" --server "$nginx_url/$set-v1" --app-group "$dir" ensure "$set" >/dev/null 2>"$work/cmd.err" \
          || { cat "$work/cmd.err" >&2; exit 1; }
        sync && warm "$dir"
        if [ "$who" = delta ]; then
          timed seconds rss "$sync" --server "$nginx_url/$set" --app-group "$dir" ensure --latest --delta "$set"
          if ! grep -q 'delta from v1' "$work/cmd.err" || grep -q 'delta failed' "$work/cmd.err"; then
            echo "bench.sh: the update did not use the delta:" >&2
            cat "$work/cmd.err" >&2
            exit 1
          fi
          record "update-time" "$set" "ours" "$seconds" "s" "$rss"
          record "update-time-vs-full" "$set" "ours" "$seconds" "s" "$rss"
          record "update-bytes" "$set" "ours" "$delta_bytes" "B"
          if [ "$set" = update ]; then
            record "update-bytes-vs-goal" "$set" "ours" "$delta_bytes" "B"
            record "update-bytes-vs-goal" "$set" "ref" "$((2 * changed_compressed + 65536))" "B"
          fi
        else
          timed seconds rss "$sync" --server "$nginx_url/$set" --app-group "$dir" ensure --latest --no-delta "$set"
          record "update-time-no-delta" "$set" "ours" "$seconds" "s" "$rss"
          record "update-time-vs-full" "$set" "ref" "$seconds" "s" "$rss"
          record "update-bytes-no-delta" "$set" "ours" "$full_bytes" "B"
        fi
      fi
      rm -rf "$dir"
    done
  done
  kill -TERM "$rsync_pid" 2>/dev/null || true; wait "$rsync_pid" 2>/dev/null || true
  rm -rf "$work/sets/$set" "$work/www/$set" "$work/www/$set-v1" "$work/update-v1-files"
}
if want update; then
  log "update: $update_count files of $update_size bytes, $update_changed changed"
  "$tool" random "$work/sets/update/files" "$update_count" "$update_size"
  update_case update
  log "update-small: $small_count files of 1434 bytes, one changed"
  "$tool" random "$work/sets/update-small/files" "$small_count" 1434
  update_case update-small
  for set in update-middle update-insert; do
    log "$set: one file of $huge_size bytes, $huge_change changed"
    "$tool" random "$work/sets/$set/files" 1 "$huge_size"
    mv "$work/sets/$set/files/"* "$work/sets/$set/files/huge.bin"
    update_case "$set"
  done
fi

# --- scaling ---------------------------------------------------------------------------------------------
if want scaling; then
rounds_saved=$rounds
rounds=1
for size in $scale_sizes; do
  set="size$((size >> 10))k"
  log "scaling: one file of $size bytes"
  "$tool" random "$work/sets/$set/files" 1 "$size"
  manifest "$set"
  pack_step "$set"
  export_set "$set"
  ensure_step "$set"
  rm -rf "$work/sets/$set" "$work/www/$set" "$clients/app-$set"
done
for count in $scale_counts; do
  set="files$count"
  log "scaling: $count files of 1-4 KiB"
  mkdir -p "$work/sets/$set/files"
  "$tool" many "$work/sets/$set/files" "$count" 1024 4096 3
  manifest "$set"
  pack_step "$set"
  export_set "$set"
  ensure_step "$set"
  row=$(bench_csv --app-group "$clients/app-$set" --pattern lookup --duration "$read_seconds")
  record "lookup-p99" "$set" "ours" "$(csv_field "$row" 13)" "µs"
done
rounds=$rounds_saved
fi

# --- publish ---------------------------------------------------------------------------------------------
# publish_round R: a store of its own (moto keeps objects in memory), our publish and aws s3 sync of the same
# packs (export's tree; both built beforehand, so that both time the upload), then one file changed and both
# again. Who goes first alternates.
publish_round() {
  local r=$1 who seconds rss ep store_pid order bytes objects
  python3 -u "$here/scripts/s3-store.py" serve bench >"$work/store.out" 2>"$work/store.err" &
  store_pid=$!
  pids+=("$store_pid")
  ep=$(first_line "$work/store.out" "$work/store.err" "$store_pid" 600 | sed 's/.*"endpoint": "\([^"]*\)".*/\1/')
  order=$( [ $((r % 2)) = 1 ] && echo "ours ref" || echo "ref ours")
  for phase in first change; do
    if [ "$phase" = change ]; then
      dd if=/dev/urandom of="$work/sets/publish/p3/data.bin" bs=64K count=1 seek=$((publish_size / 131072)) \
        conv=notrunc status=none
    fi
    "$mock" export "$work/sets/publish" --out "$work/www/publish" >/dev/null 2>"$work/export.err" \
      || { cat "$work/export.err" >&2; exit 1; }
    warm "$work/www/publish"
    for who in $order; do
      if [ "$who" = ours ]; then
        timed seconds rss "$mock" publish "$work/sets/publish" s3://bench/ours --endpoint-url "$ep" --json
        bytes=$(grep -o '"uploadedBytes":[0-9]*' "$work/cmd.out" | cut -d: -f2)
        objects=$(python3 -c 'import json, sys; print(sum(s["action"] == "upload" for s in json.load(sys.stdin)["steps"]))' \
          <"$work/cmd.out")
      else
        timed seconds rss aws s3 sync "$work/www/publish" s3://bench/ref --endpoint-url "$ep" --no-progress \
          --exclude .ba-mock-export.json
        bytes=$(awk '/^upload: / { print $2 }' "$work/cmd.out" | xargs -r stat -c %s | awk '{ s += $1 } END { print s + 0 }')
        objects=$(grep -c '^upload: ' "$work/cmd.out" || true)
      fi
      record "publish-$phase" "8packs" "$who" "$seconds" "s" "$rss"
      record "publish-$phase-bytes" "8packs" "$who" "$bytes" "B"
      record "publish-$phase-objects" "8packs" "$who" "$objects" "objects"
    done
  done
  # SIGKILL: a process started from a test runner may have SIGTERM blocked (Python keeps the mask it is given),
  # and moto holds nothing that needs a clean stop; waiting on a TERM it never takes hung make test.
  kill -KILL "$store_pid" 2>/dev/null || true; wait "$store_pid" 2>/dev/null || true
}
if want publish; then
  command -v aws >/dev/null && python3 -c "import moto.server" 2>/dev/null \
    || { echo "bench.sh: aws (PyPI awscli) or moto is missing: run make deps" >&2; exit 1; }
  publish_size=$( [ $smoke = 1 ] && echo $((256 << 10)) || echo $((128 << 20)) )
  log "publish: 8 packs of $publish_size bytes to moto, then one file changed, vs aws s3 sync"
  for i in 1 2 3 4 5 6 7 8; do
    "$tool" random "$work/sets/publish/p$i" 1 "$publish_size"
    mv "$work/sets/publish/p$i/"* "$work/sets/publish/p$i/data.bin"
    printf '{ "assetPackID": "p%s", "downloadPolicy": { "onDemand": {} }, "fileSelectors": [ { "directory": "p%s" } ], "platforms": ["iOS"] }\n' \
      "$i" "$i" >"$work/sets/publish/p$i.json"
  done
  export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null \
    AWS_SHARED_CREDENTIALS_FILE=/dev/null
  for r in $(seq 1 "$rounds"); do publish_round "$r"; done
  rm -rf "$work/sets/publish" "$work/www/publish"
fi

# Peak RSS of packing and ensuring 1 GiB and 100 000 files: from the scaling runs of the largest size and
# the largest count.
for top in "size$(( ${scale_sizes##* } >> 10 ))k" "files${scale_counts##* }"; do
  awk -F'\t' -v set="$top" '$2 == set && $3 == "ours" && ($1 == "pack" || $1 == "ensure") { print $1 "\t" $6 }' \
    "$records" | while IFS=$'\t' read -r step rss; do record "rss-$step" "$top" "ours" "$rss" "KiB"; done
done

# --- report ----------------------------------------------------------------------------------------------
mkdir -p "$out"
machine="$(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr)"
# The CPU, and whether it has SHA extensions: without them SHA-256 runs 5-10x slower and sets the pace.
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
sha_ext=$(grep -qw sha_ni /proc/cpuinfo && echo "with SHA extensions (sha_ni)" || echo "no SHA extensions")
sha_rate=$(awk -F'\t' '$1 == "sha256-pass" && $2 == "big" { print $4; exit }' "$records")
machine="$machine · CPU ${cpu:-unknown}, $sha_ext${sha_rate:+, one SHA-256 pass (openssl dgst, the big set) $sha_rate MB/s}"
masked_rate=$(awk -F'\t' '$1 == "sha256-pass" && $2 == "big-nosha" { print $4; exit }' "$records")
[ -z "$masked_rate" ] || machine="$machine; with them masked (OPENSSL_ia32cap, the *-nosha rows) $masked_rate MB/s"
machine="$machine · $fs_note"
# The commit measured, "+changes" when the tree differs from it.
commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
# (what make bench itself rewrites does not count)
[ -z "$(git -C "$here" status --porcelain --untracked-files=no -- . ':(exclude)bench/results.*' ':(exclude)README.md' \
  2>/dev/null)" ] || commit="$commit+changes"
awk -F'\t' -v date="$(date -u +%Y-%m-%dT%H:%MZ)" -v machine="$machine" -v rounds="$rounds" -v smoke="$smoke" \
  -v commit="$commit" -v md="$out/results.md" -v json="$out/results.json" -f "$here/bench/report.awk" "$records"
cat "$out/results.md"
