#!/usr/bin/env bash
# Server CPU per echo round trip and per stream message on epoll and io_uring, alternating the two
# transports RUNS times and printing medians (server pinned to CPU 0, weft-load to CPU 1; CPU time of
# the server process from /proc).
#   scripts/compare-transports-echo-stream.sh [RUNS] [BIN_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-3} bin=${2:-build/release/bin}
source scripts/measure-lib.sh
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
results=$(mktemp)
trap 'rm -f "$results"; kill "${pids[@]}" 2>/dev/null || true' EXIT
echo_point() {  # transport -> server us per round trip
  local p; p=$(port)
  taskset -c 0 "$bin/weft-echo-server" --port "$p" --ports 10 --loops 1 --transport "$1" >/dev/null 2>&1 & local pid=$!
  sleep 0.4
  local t0; t0=$(ticks $pid)
  taskset -c 1 "$bin/weft-load" echo "127.0.0.1:$p+10" --threads 200 --rounds 1024 --size 256 >/dev/null
  local t1; t1=$(ticks $pid)
  kill $pid; wait $pid 2>/dev/null || true
  awk -v t=$((t1 - t0)) -v hz="$hz" 'BEGIN{printf "%.3f", t / hz * 1e6 / (200 * 1024)}'
}
stream_point() {  # transport conns size -> server us per message
  local p; p=$(port)
  taskset -c 0 "$bin/weft-stream-server" "$p" 1 0 "$1" >/dev/null 2>&1 & local pid=$!
  sleep 0.4
  local t0; t0=$(ticks $pid)
  taskset -c 1 "$bin/weft-load" stream "127.0.0.1:$p" -c "$2" --size "$3" -d 4 --json "$results.json" >/dev/null
  local t1; t1=$(ticks $pid)
  kill $pid; wait $pid 2>/dev/null || true
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('%.4f' % ($((t1 - t0)) / $hz * 1e6 / max(1, d['sent_messages'])))" "$results.json"
}
for ((i = 0; i < runs; i++)); do
  for t in epoll io_uring; do
    echo "echo $t $(echo_point $t)" >>"$results"
    echo "stream-64x4 $t $(stream_point $t 4 64)" >>"$results"
    echo "stream-4096x1 $t $(stream_point $t 1 4096)" >>"$results"
  done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    point, transport, value = line.split()
    rows.setdefault(point, {}).setdefault(transport, []).append(float(value))
labels = {"echo": "echo 256 B, 200 threads, us/round trip", "stream-64x4": "stream 64 B, 4 conns, us/msg",
          "stream-4096x1": "stream 4 KiB, 1 conn, us/msg"}
print(f"{'server CPU (median of %d)' % len(next(iter(rows.values()))['epoll']):42} {'epoll':>10} {'io_uring':>10} {'ratio':>7}")
for point, by in rows.items():
    e, u = statistics.median(by["epoll"]), statistics.median(by["io_uring"])
    print(f"{labels[point]:42} {e:10.3f} {u:10.3f} {u / e:6.2f}x")
PY
rm -f "$results.json"
