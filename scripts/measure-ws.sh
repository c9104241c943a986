#!/usr/bin/env bash
# WebSocket echo: server CPU per message (µs, from /proc/PID/schedstat: exact) of weft-hello's /ws
# (loop and coroutine modes on epoll, loop on io_uring), Boost.Beast's echo and node's ws echo, each server pinned to CPU 0,
# weft-load ws on CPU 1: 100 connections, one binary message in flight each, 64 B and 16 KiB; with
# the kernel's part of each (system ticks over all ticks), the floor user-space work cannot go under.
# The servers run side by side and alternate within each round; the medians of RUNS rounds are printed,
# with weft's ratios to Beast and to node. (docs/weft-bench.md, "WebSocket")
#   scripts/measure-ws.sh [BUILD] [RUNS] [SECONDS]       e.g. scripts/measure-ws.sh build/release 3 5
#   WS_IN_FLIGHT=16 scripts/measure-ws.sh ...   (messages in flight per connection, default 1)
#   WS_IDLE=0 scripts/measure-ws.sh ...         (leave out the idle-connection RSS)
# Needs libboost1.81-dev (Beast) and nodejs node-ws; the peers' sources in ../shared/peers/ws.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
build=${1:-build/release} runs=${2:-3} secs=${3:-5}
peers=${WEFT_WS_PEER_DIR:-$PWD/../shared/peers/ws}
tmp=$(mktemp -d)
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
beast_dir=${WEFT_WS_PEER_OUT:-${TMPDIR:-/tmp}/weft-peer-ws}  # serve-peer.sh's; built once (build.sh)
bash "$peers/build.sh" "$beast_dir"

declare -A pid portof
start() {  # NAME CMD...: the server on CPU 0
  local name=$1 p
  shift
  p=$(port)
  taskset -c 0 "${@//\{port\}/$p}" >"$tmp/$name.log" 2>&1 &
  pid[$name]=$!
  portof[$name]=$p
  pids+=($!)
  wait_port "$p"
}
start weft-loop "$build/bin/weft-hello" --loops 1 --port '{port}' --mode loop
start weft-coroutine "$build/bin/weft-hello" --loops 1 --port '{port}' --mode coroutine
start weft-io_uring "$build/bin/weft-hello" --loops 1 --port '{port}' --mode loop --transport io_uring
start beast "$beast_dir/beast-ws-echo" '{port}'
NODE_PATH=/usr/share/nodejs start node node "$peers/node_ws_echo.js" '{port}'
servers=(weft-loop weft-coroutine weft-io_uring beast node)

ns() { awk '{print $1}' "/proc/$1/schedstat"; }
task_ns() { local s=0 t; for t in /proc/"$1"/task/*/schedstat; do s=$((s + $(awk '{print $1}' "$t"))); done; echo $s; }
# user and system clock ticks of every thread of PID ("U S"): their ratio splits the exact CPU time
task_ticks() { cat /proc/"$1"/task/*/stat 2>/dev/null | awk '{ u += $14; s += $15 } END { print u + 0, s + 0 }'; }
# us_per_message SERVER SIZE: one run; prints "µs msg/s errors kernel-µs". The CPU counted spans the
# 100 handshakes too (under 1% of a run's messages' cost). kernel-µs: the part of µs spent in the
# kernel (system calls, the TCP stack), from the threads' system ticks over all their ticks.
us_per_message() {
  local name=$1 size=$2 before after u0 s0 u1 s1
  before=$(task_ns "${pid[$name]}")
  read -r u0 s0 < <(task_ticks "${pid[$name]}")
  taskset -c 1 "$build/bin/weft-load" ws "ws://127.0.0.1:${portof[$name]}/ws" -c 100 -m "${WS_IN_FLIGHT:-1}" -s "$size" --binary \
    -d "$secs" --json "$tmp/load.json" >"$tmp/load.out" 2>&1 || { cat "$tmp/load.out" >&2; return 1; }
  after=$(task_ns "${pid[$name]}")
  read -r u1 s1 < <(task_ticks "${pid[$name]}")
  python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
us = (int(sys.argv[3]) - int(sys.argv[2])) / 1e3 / j["responses"]
user, system = int(sys.argv[4]), int(sys.argv[5])
print("%.3f %.0f %d %.3f" % (us, j["rps"], sum(j["errors"].values()), us * system / max(user + system, 1)))' \
    "$tmp/load.json" "$before" "$after" $((u1 - u0)) $((s1 - s0))
}
# idle_kib SERVER: RSS growth per idle WebSocket connection (KiB): 1,000 connections opened (handshake
# done, no compression, no message but one) and held while the server's VmRSS is read.
idle_kib() {
  local name=$1 before during
  before=$(awk '/VmRSS/{print $2}' "/proc/${pid[$name]}/status")
  (ulimit -n 4096; taskset -c 1 "$build/bin/weft-load" ws "ws://127.0.0.1:${portof[$name]}/ws" -c 1000 \
    --rate 0.001 -d 4 --timeout 10 >"$tmp/idle.out" 2>&1) &
  local lp=$!
  for _ in $(seq 300); do  # until the server holds every connection
    (($(ss -Htn state established "( sport = :${portof[$name]} )" | wc -l) >= 1000)) && break
    sleep 0.01
  done
  sleep 0.5
  during=$(awk '/VmRSS/{print $2}' "/proc/${pid[$name]}/status")
  wait "$lp" || { cat "$tmp/idle.out" >&2; return 1; }
  awk -v a="$before" -v b="$during" 'BEGIN{printf "%.2f\n", (b-a)/1000}'
}
declare -A results rates kernel
for name in "${servers[@]}"; do  # node's V8 (and every server's caches) warmed up before the first round
  for size in 64 16384; do us_per_message "$name" "$size" >/dev/null; done
done
for round in $(seq "$runs"); do
  for size in 64 16384; do
    for name in "${servers[@]}"; do
      read -r us rate errors sys_us < <(us_per_message "$name" "$size")
      [[ $errors == 0 ]] || echo "warning: $name $size B: $errors errors" >&2
      results[$name.$size]+="$us "
      kernel[$name.$size]+="$sys_us "
      rates[$name.$size]+="$rate "
    done
  done
done
if [[ ${WS_IDLE:-1} != 0 ]]; then
  echo "RSS growth per idle WebSocket connection (KiB, 1,000 connections, no compression):"
  for name in "${servers[@]}"; do printf '  %-15s %s KiB\n' "$name" "$(idle_kib "$name")"; done
fi
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "server CPU µs per message (median of $runs; msg/s), server on CPU 0, weft-load ws on CPU 1, 100 connections," \
  "${WS_IN_FLIGHT:-1} in flight each"
for size in 64 16384; do
  declare -A m
  for name in "${servers[@]}"; do
    m[$name]=$(median <<<"${results[$name.$size]}")
    printf '%6s B  %-15s %8s µs/msg  (%s msg/s; %s µs of it the kernel'"'"'s)   runs: %s\n' "$size" "$name" "${m[$name]}" \
      "$(median <<<"${rates[$name.$size]}")" "$(median <<<"${kernel[$name.$size]}")" "${results[$name.$size]}"
  done
  # The floor user-space work cannot go under: each server's kernel time alone, against Beast's and
  # node's whole CPU per message.
  for name in "${servers[@]}"; do
    awk -v k="$(median <<<"${kernel[$name.$size]}")" -v b="${m[beast]}" -v n="${m[node]}" -v name="$name" -v s="$size" \
      'BEGIN{printf "%6s B  %-15s kernel time alone: %.2fx Beast'"'"'s whole CPU, %.3fx node'"'"'s\n", s, name, k/b, k/n}'
  done
  for w in weft-loop weft-coroutine weft-io_uring; do
    awk -v w="${m[$w]}" -v b="${m[beast]}" -v n="${m[node]}" -v name="$w" -v s="$size" \
      'BEGIN{printf "%6s B  %-15s %.2fx Beast, %.3fx node\n", s, name, w/b, w/n}'
  done
done
