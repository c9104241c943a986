#!/usr/bin/env bash
# loop-async against coroutine-async on /json-async (the issue's 0.6x target), alternating ROUNDS times:
# server CPU per request (../shared/peers/load.sh: weft-hello and its executors on CPU 0, wrk on CPU 1)
# and the server's context switches per request (all its threads, from /proc).
#   scripts/compare-async-modes.sh [ROUNDS=3] [CONNS=256] [BIN_DIR=build/release/bin]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-3} conns=${2:-256} bin=${3:-build/release/bin}
peers=${WEFT_PEERS:-../shared/peers}
source scripts/measure-lib.sh
switches() { cat /proc/"$1"/task/*/status | awk '/ctxt_switches/{s+=$2} END{print s}'; }
for _ in $(seq "$rounds"); do
  for mode in loop-async coroutine-async; do
    p=$(port)
    taskset -c 0 "$bin/weft-hello" --loops 1 --mode "$mode" --port "$p" >/dev/null 2>&1 & pid=$!; pids+=($pid)
    wait_port "$p"
    "$peers/load.sh" "$pid" "$p" /json-async 1 "$conns" 2 >/dev/null  # warm-up
    c0=$(switches "$pid")
    out=$("$peers/load.sh" "$pid" "$p" /json-async 1 "$conns" 4)
    c1=$(switches "$pid")
    rps=$(echo "$out" | sed -n 's/.*rps=\([0-9]*\).*/\1/p')
    printf '%-16s %s switches_per_req=%s\n' "$mode" "$out" "$(awk -v a="$c0" -v b="$c1" -v r="$rps" 'BEGIN{printf "%.2f", (b-a)/(r*4)}')"
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done
