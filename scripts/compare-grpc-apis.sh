#!/usr/bin/env bash
# weft-grpc-bench-server's --api generated (bench.proto's generated service) against --api coroutine
# (hand-encoded messages), both --direct true, and grpc++'s callback server, alternating round by round:
# server on CPU 0, grpc++'s client on CPU 1 (../shared/peers/grpc-load.sh), 10 calls on one connection,
# empty messages. Prints each server's µs of CPU per message, sorted, per round set.
#
#   scripts/compare-grpc-apis.sh [ROUNDS] [SECONDS] [MODE]     default 7 rounds of 4 s, stream
#   (MODE: stream, unary or pingpong). BENCH_SERVER overrides the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
peers=$(cd ../shared/peers && pwd)
server=${BENCH_SERVER:-build/release/bin/weft-grpc-bench-server}
rounds=${1:-7} secs=${2:-4} mode=${3:-stream}
port() { echo $(( 20000 + RANDOM % 12000 )); }  # below the ephemeral range
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
declare -A cpu
for round in $(seq "$rounds"); do
  for who in generated coroutine grpc++; do
    p=$(port)
    if [ "$who" = grpc++ ]; then
      spid=$("$peers/serve-peer.sh" grpc "$p")
    else
      taskset -c 0 "$server" --port "$p" --direct true --api "$who" >/dev/null 2>&1 & spid=$!
    fi
    wait_port "$p"
    "$peers/grpc-load.sh" "$spid" "$p" "$mode" 10 1 >/dev/null  # warm-up
    out=$("$peers/grpc-load.sh" "$spid" "$p" "$mode" 10 "$secs")
    kill "$spid"; wait "$spid" 2>/dev/null || true
    echo "round $round $who: $out"
    cpu[$who]+="$(sed -n 's/.*server_us_per_msg=\([0-9.]*\).*/\1/p' <<< "$out") "
  done
done
for who in generated coroutine grpc++; do
  echo "$mode $who µs per message, sorted: $(tr ' ' '\n' <<< "${cpu[$who]}" | grep -v '^$' | sort -g | tr '\n' ' ')"
done
