# Sourced by demo.sh, bench.sh and bench-report-sample.sh.
# first_line OUT ERR PID [TENTHS]: waits (up to TENTHS tenths of a second, default 300) for a server started in
# the background with stdout to OUT and stderr to ERR to print its first line (ba-mock prints its URL once its
# packs are built), and prints that line; if the server ends first, shows its stderr and exits 1.
first_line() {
  local out=$1 err=$2 pid=$3 tenths=${4:-300}
  for _ in $(seq 1 "$tenths"); do
    [ -s "$out" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$err" >&2; exit 1; }
    sleep 0.1
  done
  head -n 1 "$out"
}
