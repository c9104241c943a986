#!/usr/bin/env bash
# Instructions per request of weft-proxy (HTTP/1.1 in and out, keep-alive both sides) in front of
# weft-hello, under wrk: deterministic where timings on this machine are not. Collection starts once
# the connections are up (steady state). The profile is left in build/callgrind.proxy.out.
#   scripts/callgrind-proxy.sh [BUILD_DIR] [PATH] [CONNS]      (default build/release /plaintext 64)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
build=${1:-build/release} path=${2:-/plaintext} conns=${3:-64}
backend=$(port)
"$build/bin/weft-hello" --loops 1 --host 127.0.0.1 --port "$backend" >/dev/null 2>&1 &
pids+=($!)
wait_port "$backend"
p=$(port)
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=build/callgrind.proxy.out \
  "$build/bin/weft-proxy" --loops 1 --host 127.0.0.1 --listen "$p" --backend "http://127.0.0.1:$backend" >/dev/null 2>&1 &
vg=$!
pids+=($vg)
wait_port "$p"
wrk -t1 -c"$conns" -d8s "http://127.0.0.1:$p$path" >/dev/null 2>&1 &
load=$!
sleep 4
callgrind_control -i on "$vg" >/dev/null 2>&1
wait "$load"
callgrind_control -i off "$vg" >/dev/null 2>&1
kill -INT "$vg"
wait "$vg" || true
python3 scripts/callgrind-per-request.py build/callgrind.proxy.out 'weft::proxy::ReverseProxy::backend_request\('
