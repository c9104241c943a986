#!/usr/bin/env bash
# Instructions per gRPC message of weft-grpc-bench-server (--direct false, seed 004's setting)
# serving StreamingFromServer (10 calls on one connection, empty messages) to weft-load grpc:
# deterministic where timings on this machine are not. Collection runs for the last 3 s of a 6 s
# load (steady state). The message count is the calls of grpc::ServerCall::write_framed.
#   scripts/callgrind-grpc.sh [SERVER] [LOAD]
#   e.g. scripts/callgrind-grpc.sh build/release/bin/weft-grpc-bench-server build/release/bin/weft-load
# WEFT_SERVER_ARGS replaces the server's `--direct false` (e.g. "--api generated": bench.proto's
# generated service, whose messages are counted the same way).
# The profile is left in build/callgrind.grpc.out.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
server=${1:-build/release/bin/weft-grpc-bench-server} load=${2:-build/release/bin/weft-load}
p=$(port)
taskset -c 0 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=build/callgrind.grpc.out \
  "$server" --port "$p" ${WEFT_SERVER_ARGS:---direct false} >/dev/null 2>&1 &
vg=$!
pids+=($vg)
wait_port "$p"
taskset -c 1 "$load" grpc stream "127.0.0.1:$p" -d 6 >/dev/null 2>&1 &
ld=$!
sleep 3
callgrind_control -i on "$vg" >/dev/null 2>&1
wait "$ld" || true
callgrind_control -i off "$vg" >/dev/null 2>&1
kill -INT "$vg"
wait "$vg" || true
python3 scripts/callgrind-per-request.py build/callgrind.grpc.out 'weft::grpc::ServerCall::write_framed\(weft::ByteBuf'
