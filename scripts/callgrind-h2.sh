#!/usr/bin/env bash
# Instructions and simulated cache misses per HTTP/2 request of weft-hello (h2c, prior knowledge)
# under h2load: deterministic where timings on this machine are not. Collection starts once the
# connections are up (steady state). The request count is the calls of http2::ServerCodec::dispatch.
#   scripts/callgrind-h2.sh [HELLO] [PATH] [STREAMS] [CONNS] [HELLO OPTIONS...]
#   e.g. scripts/callgrind-h2.sh build/release/bin/weft-hello /plaintext 16 64
#   HELLO_ARGS=--no-metrics scripts/callgrind-h2.sh ...   (more arguments for weft-hello)
# Cache model as scripts/callgrind-http.sh. The profile is left in build/callgrind.h2.out.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
hello=${1:-build/release/bin/weft-hello} path=${2:-/plaintext} streams=${3:-16} conns=${4:-64}
shift $(($# < 4 ? $# : 4))
p=$(port)
valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --I1=32768,8,64 --LL=1048576,16,64 \
  --instr-atstart=no --callgrind-out-file=build/callgrind.h2.out "$hello" --loops 1 --port "$p" ${HELLO_ARGS:-} "$@" >/dev/null 2>&1 &
vg=$!
pids+=($vg)
wait_port "$p"
h2load -c"$conns" -m"$streams" -t1 -D6 "http://127.0.0.1:$p$path" >/dev/null 2>&1 &
load=$!
sleep 3
callgrind_control -i on "$vg" >/dev/null 2>&1
wait "$load" || true
callgrind_control -i off "$vg" >/dev/null 2>&1
kill -INT "$vg"
wait "$vg" || true
python3 scripts/callgrind-per-request.py build/callgrind.h2.out 'weft::http2::ServerCodec::dispatch\('
