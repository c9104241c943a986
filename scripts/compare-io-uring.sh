#!/usr/bin/env bash
# Server CPU per request of weft-hello on io_uring and on epoll against the epoll floor (floor.c), in
# one run, the method of ../shared/peers: each server pinned to CPU 0, wrk to CPU 1, CPU time of the
# server process from /proc. Issue 8's points: /json unpipelined and /plaintext pipelined 16 deep, at
# 256 connections.
#   scripts/compare-io-uring.sh [SECONDS] [BIN_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs=${1:-5} bin=${2:-build/release/bin}
peers=../shared/peers
source scripts/measure-lib.sh
measure() {  # pid port path depth -> "us_per_req rps"
  "$peers/load.sh" "$@" 256 "$secs" | sed -n 's/.*rps=\([0-9]*\) server_us_per_req=\([0-9.]*\).*/\2 \1/p'
}
up=$(port); taskset -c 0 "$bin/weft-hello" --loops 1 --port "$up" --transport io_uring >/dev/null 2>&1 & upid=$!; pids+=($upid)
ep=$(port); taskset -c 0 "$bin/weft-hello" --loops 1 --port "$ep" --transport epoll >/dev/null 2>&1 & epid=$!; pids+=($epid)
fp=$(port); fpid=$("$peers/serve-peer.sh" floor "$fp"); pids+=($fpid)
wait_port "$up"; wait_port "$ep"; wait_port "$fp"
printf '%-26s %16s %16s %16s %10s %10s\n' "CPU us/req (req/s)" floor epoll io_uring "uring/floor" "uring/epoll"
for point in "/json 1" "/plaintext 16"; do
  set -- $point
  read -r f fr < <(measure "$fpid" "$fp" "$1" "$2")
  read -r e er < <(measure "$epid" "$ep" "$1" "$2")
  read -r u ur < <(measure "$upid" "$up" "$1" "$2")
  awk -v p="$1 p$2, 256 conns" -v f="$f" -v fr="$fr" -v e="$e" -v er="$er" -v u="$u" -v ur="$ur" \
    'BEGIN{printf "%-26s %16s %16s %16s %9.2fx %9.2fx\n", p, f" ("fr")", e" ("er")", u" ("ur")", u/f, u/e}'
done
