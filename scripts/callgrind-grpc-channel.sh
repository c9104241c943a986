#!/usr/bin/env bash
# Client instructions per unary call: weft-load grpc unary (10 calls at once, empty messages) over one
# grpc::Client connection, then over a grpc::ClientChannel balancing round_robin over 2 servers (two
# weft-grpc-bench-server on CPU 0). Collection runs for the last 3 s of a 6 s load (steady state),
# in weft-load (on CPU 1); calls are counted at grpc::Client::call, which every call passes once.
# Deterministic where timings on this machine are not (issue 33: the channel costs <= 3% more).
#   scripts/callgrind-grpc-channel.sh [SERVER] [LOAD]
# The profiles are left in build/callgrind.grpc-{client,channel}.out.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
server=${1:-build/release/bin/weft-grpc-bench-server} load=${2:-build/release/bin/weft-load}
p1=$(port)
taskset -c 0 "$server" --port "$p1" >/dev/null 2>&1 &
pids+=($!)
wait_port "$p1"
p2=$(port)
taskset -c 0 "$server" --port "$p2" >/dev/null 2>&1 &
pids+=($!)
wait_port "$p2"
# profile NAME LOAD-ARGS...: weft-load under callgrind, collecting from its 3rd second to its end
profile() {
  local name=$1
  shift
  taskset -c 1 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="build/callgrind.grpc-$name.out" \
    "$load" grpc unary "$@" -d 6 >/dev/null 2>&1 &
  local vg=$!
  sleep 3
  callgrind_control -i on "$vg" >/dev/null 2>&1
  wait "$vg" || true
  printf '%-8s ' "$name"
  python3 scripts/callgrind-per-request.py "build/callgrind.grpc-$name.out" 'weft::grpc::Client::call\('
}
profile client "127.0.0.1:$p1"
profile channel "ipv4:127.0.0.1:$p1,127.0.0.1:$p2" --balance round_robin
