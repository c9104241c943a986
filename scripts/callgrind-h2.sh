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
python3 - build/callgrind.h2.out <<'PY'
import re, subprocess, sys
f = sys.argv[1]
out = subprocess.run(["callgrind_annotate", "--inclusive=no", f], capture_output=True, text=True).stdout
totals = [int(x.replace(",", "")) for x in re.findall(r"([\d,]+) \(", next(l for l in out.splitlines() if "PROGRAM TOTALS" in l))]
text = open(f).read()
ids = set(re.findall(r"^c?fn=\((\d+)\) weft::http2::ServerCodec::dispatch\(", text, re.M))
lines = text.splitlines()
n = sum(int(lines[i + 1].split("=")[1].split()[0]) for i, l in enumerate(lines)
        if (m := re.match(r"^cfn=\((\d+)\)", l)) and m.group(1) in ids and lines[i + 1].startswith("calls="))
names = "Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw".split()
print(f"{n} requests; per request: " + " ".join(f"{k}={v / n:.1f}" for k, v in zip(names, totals)))
PY
