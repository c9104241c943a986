#!/usr/bin/env bash
# Issue 18's gRPC performance targets, as stated: server on CPU 0, grpc++'s reference client on CPU 1
# (../shared/peers/grpc-load.sh), 10 calls on one connection, empty messages; weft-grpc-bench-server
# against grpc++'s callback server (../shared/peers/serve-peer.sh grpc), alternating in the same minute.
# Prints every run and, per mode, the medians and the ratio of messages per server CPU second.
#
#   scripts/measure-grpc.sh [ROUNDS] [SECONDS] [WEFT ARGS...]   default 5 rounds of 5 s, --direct true
#   scripts/measure-grpc.sh seed [ROUNDS] [SECONDS]              seed 004's setting: --direct false with and
#       without executor thread caches, alternating, StreamingFromServer; CPU from schedstat (ns) of the
#       whole server and of its executor threads (grpc-exec-*), per message
#
# Targets: StreamingFromServer (stream) weft >= 3x grpc++'s messages per server CPU second; UnaryCall
# (unary) and StreamingCall ping-pong (pingpong) >= 2x. BENCH_SERVER overrides the binary (default
# build/release/bin/weft-grpc-bench-server); MODES the modes measured (default "stream unary pingpong").
set -euo pipefail
cd "$(dirname "$0")/.."
peers=$(cd ../shared/peers && pwd)
server=${BENCH_SERVER:-build/release/bin/weft-grpc-bench-server}
if [ "${1:-}" = seed ]; then
  rounds=${2:-5}; secs=${3:-3}
  ns() { local s=0 t; for t in /proc/$1/task/*; do { [ -z "${2:-}" ] || grep -q "^$2" "$t/comm"; } && s=$((s + $(cut -d' ' -f1 "$t/schedstat"))); done; echo $s; }
  client=${TMPDIR:-/tmp}/weft-peer-grpc/weft-peer-grpc-client
  "$peers/grpc/build.sh" "$(dirname "$client")"
  declare -A ex all
  for round in $(seq "$rounds"); do
    for cache in true false; do
      p=$(( 20000 + RANDOM % 12000 ))
      taskset -c 0 "$server" --port "$p" --direct false --executor-thread-cache "$cache" >/dev/null 2>&1 & spid=$!
      for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.05; done
      taskset -c 1 "$client" "127.0.0.1:$p" stream 10 1 0 1 >/dev/null  # warm-up
      e0=$(ns $spid grpc-exec); a0=$(ns $spid)
      out=$(taskset -c 1 "$client" "127.0.0.1:$p" stream 10 "$secs" 0 1)
      e1=$(ns $spid grpc-exec); a1=$(ns $spid)
      kill $spid; wait $spid 2>/dev/null || true
      n=$(sed -n 's/.*messages=\([0-9]*\).*/\1/p' <<< "$out")
      echo "round $round executor-thread-cache=$cache: messages=$n executor_ns_per_msg=$(( (e1 - e0) / n )) server_ns_per_msg=$(( (a1 - a0) / n ))"
      ex[$cache]+="$(( (e1 - e0) / n )) "; all[$cache]+="$(( (a1 - a0) / n )) "
    done
  done
  median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
  for cache in true false; do
    echo "executor-thread-cache=$cache: median executor $(median <<< "${ex[$cache]}") ns/msg, server $(median <<< "${all[$cache]}") ns/msg"
  done
  exit 0
fi
rounds=${1:-5}; secs=${2:-5}; shift $(( $# > 2 ? 2 : $# ))
weft_args=("$@"); [ ${#weft_args[@]} -gt 0 ] || weft_args=(--direct true)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
port() { echo $(( 20000 + RANDOM % 12000 )); }  # below the ephemeral range
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }

declare -A rate cpu
for round in $(seq "$rounds"); do
  for mode in ${MODES:-stream unary pingpong}; do
    for who in weft grpc++; do
      p=$(port)
      if [ "$who" = weft ]; then
        taskset -c 0 "$server" --port "$p" "${weft_args[@]}" >/dev/null 2>&1 & spid=$!
      else
        spid=$("$peers/serve-peer.sh" grpc "$p")
      fi
      pids+=("$spid")
      wait_port "$p"
      "$peers/grpc-load.sh" "$spid" "$p" "$mode" 10 1 >/dev/null  # warm-up
      out=$("$peers/grpc-load.sh" "$spid" "$p" "$mode" 10 "$secs")
      kill "$spid"; wait "$spid" 2>/dev/null || true
      echo "round $round $mode $who: $out"
      rate[$mode,$who]+="$(sed -n 's/rate=\([0-9.]*\).*/\1/p' <<< "$out") "
      cpu[$mode,$who]+="$(sed -n 's/.*server_us_per_msg=\([0-9.]*\).*/\1/p' <<< "$out") "
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for mode in ${MODES:-stream unary pingpong}; do
  wr=$(median <<< "${rate[$mode,weft]}"); wc=$(median <<< "${cpu[$mode,weft]}")
  gr=$(median <<< "${rate[$mode,grpc++]}"); gc=$(median <<< "${cpu[$mode,grpc++]}")
  awk -v m="$mode" -v wr="$wr" -v wc="$wc" -v gr="$gr" -v gc="$gc" 'BEGIN{
    printf "%-8s weft %8.0f msg/s %7.3f us/msg | grpc++ %8.0f msg/s %7.3f us/msg | messages per server CPU second: %.2fx\n",
      m, wr, wc, gr, gc, gc / wc }'
done
