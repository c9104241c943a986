#!/usr/bin/env bash
# Instructions per unary gRPC call of weft-grpc-bench-server (default --api generated: bench.proto's
# generated service) serving UnaryCall to weft-load grpc unary (10 calls in flight on one
# connection): deterministic where timings on this machine are not. Collection runs for the last
# ~3 s of a 6 s load (steady state). The call count is the constructions of grpc::ServerCall.
#   scripts/callgrind-grpc-unary.sh [SERVER ARGS...]   e.g. scripts/callgrind-grpc-unary.sh --api coroutine --direct true
# The profile is left in build/callgrind.grpc-unary.out (callgrind_annotate --inclusive=yes).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
server_args=("$@"); [ ${#server_args[@]} -gt 0 ] || server_args=(--api generated)
p=$(port)
out=build/callgrind.grpc-unary.out
taskset -c 0 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$out \
  build/release/bin/weft-grpc-bench-server --port "$p" "${server_args[@]}" >/dev/null 2>&1 &
vg=$!
pids+=($vg)
wait_port "$p"
taskset -c 1 build/release/bin/weft-load grpc unary "127.0.0.1:$p" -d 6 >/dev/null 2>&1 &
load=$!
sleep 3  # the connection and the pools warm up first
callgrind_control -i on "$vg" >/dev/null 2>&1
wait "$load" || true
callgrind_control -i off "$vg" >/dev/null 2>&1
kill -INT "$vg"
wait "$vg" || true
python3 scripts/callgrind-per-request.py "$out" 'weft::grpc::ServerCall::ServerCall\('
