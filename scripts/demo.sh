#!/usr/bin/env bash
# The main job on the sample folder: serve it, fetch from it with curl, mirror it with ba-sync, stop.
set -euo pipefail
. "$(dirname "$0")/first-line.sh"
bin=${1:?usage: demo.sh path/to/ba-mock [asset folder]}
assets=${2:-Assets}
sync="$(dirname "$bin")/ba-sync"
work=$(mktemp -d)
log="$work/ba-mock.out"
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

echo "\$ ba-mock serve $assets --port 0"
"$bin" serve "$assets" --port 0 >"$log" 2>"$work/ba-mock.err" &
pid=$!
url=$(first_line "$log" "$work/ba-mock.err" "$pid")
sed -n '1,/^manifest:/p' "$log"

echo
echo "\$ curl $url/manifest   (first pack)"
curl -fsS "$url/manifest" | sed -n '1,/^    },$/p'

echo
echo "\$ curl -I $url/assets/Tutorial"
curl -fsSI "$url/assets/Tutorial" | tr -d '\r' | grep -E '^(HTTP|Content-Length|ETag|Accept-Ranges|X-Asset-Pack-Version)'

echo
echo "\$ curl -r 0-99 $url/assets/Tutorial   (a range, as a resuming client asks)"
curl -fsS -r 0-99 -o /dev/null -w "status %{http_code}, %{size_download} bytes\n" "$url/assets/Tutorial"

echo
echo "\$ curl -o Tutorial.pack $url/assets/Tutorial && ba-mock inspect Tutorial.pack --verify"
curl -fsS -o "$work/Tutorial.pack" "$url/assets/Tutorial"
"$bin" inspect "$work/Tutorial.pack" --verify

echo
# The commands below take the server and the app group from the environment, as a script would.
echo "\$ export BA_SYNC_SERVER=$url BA_SYNC_APP_GROUP=AppGroup"
export BA_SYNC_SERVER="$url" BA_SYNC_APP_GROUP="$work/AppGroup"
echo "\$ ba-sync sync --event install"
"$sync" sync --event install

echo
echo "\$ ba-sync status"
"$sync" status | sed "s|$work/||"

echo
echo "\$ ba-sync cat Tutorial/strings/en.json   (contents(at:), a memory-mapped read)"
"$sync" cat Tutorial/strings/en.json

echo
echo "\$ ba-sync ensure HighResTextures && ba-sync verify"
"$sync" ensure HighResTextures
"$sync" verify

echo
echo "request log:"
sed -n '/^manifest:/,$p' "$log" | tail -n +2

echo
echo "live dashboard (packs, downloads in flight, request log, faults): run make serve, then open"
echo "  http://127.0.0.1:8443/_mock/   (ba-mock serve prints the URL on stderr as it starts)"
