#!/usr/bin/env bash
# Instructions and simulated cache misses per request of weft-hello under load: deterministic where
# timings on this machine are not. Collection starts once the connections are up (steady state).
#   scripts/callgrind-http.sh [HELLO] [PATH] [DEPTH] [CONNS] [HELLO OPTIONS...]
#   e.g. scripts/callgrind-http.sh build/prof/bin/weft-hello /json 1 256
#        scripts/callgrind-http.sh build/prof/bin/weft-hello /plaintext 16 256 --accept reuseport
#   HELLO_ARGS=--no-metrics scripts/callgrind-http.sh ...   (more arguments for weft-hello)
# build/prof is release with -g: cmake --preset release -B build/prof -DCMAKE_CXX_FLAGS_RELEASE="-O2 -g -DNDEBUG"
# Cache model: 32 KiB L1 data/instruction, 1 MiB last level; with 256 connections the per-connection
# state does not stay in L1, so D1 misses per request count the cold lines a request touches.
# The profile is left in build/callgrind.http.out for callgrind_annotate (--auto=yes for lines).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
hello=${1:-build/prof/bin/weft-hello} path=${2:-/plaintext} depth=${3:-16} conns=${4:-256}
shift $(($# < 4 ? $# : 4))
p=$(port)
valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --I1=32768,8,64 --LL=1048576,16,64 \
  --instr-atstart=no --callgrind-out-file=build/callgrind.http.out "$hello" --loops 1 --port "$p" ${HELLO_ARGS:-} "$@" >/dev/null 2>&1 &
vg=$!
pids+=($vg)
wait_port "$p"
wrk -t1 -c"$conns" -d6s -s ../shared/peers/pipeline.lua "http://127.0.0.1:$p$path" -- "$depth" >/dev/null 2>&1 &
load=$!
sleep 3
callgrind_control -i on "$vg" >/dev/null 2>&1
wait "$load"
callgrind_control -i off "$vg" >/dev/null 2>&1
kill -INT "$vg"
wait "$vg" || true
python3 scripts/callgrind-per-request.py build/callgrind.http.out '.*ServerCodec::emit_request'
