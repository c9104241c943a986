#!/usr/bin/env bash
# Server CPU per request of every weft-hello mode on every route, at 16 and 256 connections, with
# Netty's /json and /json-async in the same run (the method of ../shared/peers: server pinned to
# CPU 0, wrk to CPU 1, one run per point, CPU time of the server process from /proc).
#   scripts/measure-modes.sh [SECONDS] [BIN_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs=${1:-5} bin=${2:-build/release/bin}
peers=../shared/peers
source scripts/measure-lib.sh
measure() {  # pid port path depth conns -> "us_per_req rps"
  "$peers/load.sh" "$@" "$secs" | sed -n 's/.*rps=\([0-9]*\) server_us_per_req=\([0-9.]*\).*/\2 \1/p'
}
printf '%-16s %-18s %6s %22s\n' mode route conns "CPU us/req (req/s)"
for mode in loop loop-async offload coroutine coroutine-async; do
  p=$(port)
  taskset -c 0 "$bin/weft-hello" --loops 1 --port "$p" --mode "$mode" >/dev/null 2>&1 & pid=$!; pids+=($pid)
  wait_port "$p"
  for route in "/plaintext 16" "/json 1" "/plaintext-async 16" "/json-async 1"; do
    set -- $route
    for conns in 16 256; do
      read -r us rps < <(measure "$pid" "$p" "$1" "$2" "$conns")
      printf '%-16s %-18s %6s %22s\n' "$mode" "$1 p$2" "$conns" "$us ($rps)"
    done
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
np=$(port); npid=$("$peers/serve-peer.sh" netty "$np"); pids+=($npid); wait_port "$np"
"$peers/load.sh" "$npid" "$np" /json 1 256 5 >/dev/null  # JIT warm-up
for route in "/json 1" "/json-async 1"; do
  set -- $route
  for conns in 16 256; do
    read -r us rps < <(measure "$npid" "$np" "$1" "$2" "$conns")
    printf '%-16s %-18s %6s %22s\n' netty "$1 p$2" "$conns" "$us ($rps)"
  done
done
