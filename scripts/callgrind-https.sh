#!/usr/bin/env bash
# Instructions per HTTPS/1.1 request of weft-hello under load (h2load --h1 over TLS 1.3), counted by
# callgrind once the connections are up: deterministic where timings on this machine are not, so
# two builds compare by it (OpenSSL's share included, the kernel's not).
#   scripts/callgrind-https.sh [HELLO] [PATH] [CONNS] [DEPTH]
#   e.g. scripts/callgrind-https.sh build/release/bin/weft-hello /json 64 1
# The certificate is made once in /tmp/weft-peer-cert (../shared/peers/make-cert.sh). The profile is
# left in build/callgrind.https.out (callgrind_annotate --inclusive=yes shows where it goes).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
hello=${1:-build/release/bin/weft-hello} path=${2:-/json} conns=${3:-64} depth=${4:-1}
cert=/tmp/weft-peer-cert
[ -f "$cert/cert.pem" ] || ../shared/peers/make-cert.sh "$cert" >/dev/null
mkdir -p build
p=$(port)
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=build/callgrind.https.out \
  "$hello" --loops 1 --port "$p" --tls-cert "$cert/cert.pem" --tls-key "$cert/key.pem" >/dev/null 2>&1 &
vg=$!
pids+=($vg)
wait_port "$p"
h2load --h1 -c "$conns" -m "$depth" -D 14 "https://127.0.0.1:$p$path" >/dev/null 2>&1 &
load=$!
sleep 6  # the handshakes are done: steady state from here
callgrind_control -i on "$vg" >/dev/null 2>&1
sleep 6
callgrind_control -i off "$vg" >/dev/null 2>&1
wait "$load" || true
kill -INT "$vg"
wait "$vg" || true
python3 - build/callgrind.https.out <<'PY'
import re, sys
text = open(sys.argv[1]).read()
total = int(re.search(r"^totals: (\d+)", text, re.M).group(1))
ids = set(re.findall(r"^c?fn=\((\d+)\) .*ServerCodec::emit_request", text, re.M))
lines = text.splitlines()
n = sum(int(lines[i + 1].split("=")[1].split()[0]) for i, l in enumerate(lines)
        if (m := re.match(r"^cfn=\((\d+)\)", l)) and m.group(1) in ids and lines[i + 1].startswith("calls="))
print(f"{n} requests; Ir per request: {total / n:.1f}")
PY
