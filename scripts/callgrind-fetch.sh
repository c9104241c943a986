#!/usr/bin/env bash
# Instructions per request of weft-fetch (the HTTP client, HTTP/1.1 keep-alive, 16 at a time)
# against weft-hello: deterministic where timings on this machine are not. Two runs, N and 2N
# URLs: the difference over N is the cost of a request without the process's start and end.
#   scripts/callgrind-fetch.sh [BUILD] [N]      e.g. scripts/callgrind-fetch.sh build/release 2000
# The 2N run's profile is left in build/callgrind.fetch.out (callgrind_annotate --inclusive=yes).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
build=${1:-build/release} n=${2:-2000}
p=$(port)
"$build/bin/weft-hello" --loops 1 --port "$p" >/dev/null 2>&1 &
pids+=($!)
wait_port "$p"
ir() {
  local count=$1
  mapfile -t urls < <(for _ in $(seq "$count"); do echo "http://127.0.0.1:$p/plaintext"; done)
  valgrind --tool=callgrind --callgrind-out-file=build/callgrind.fetch.out "$build/bin/weft-fetch" --concurrency 16 \
    "${urls[@]}" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
one=$(ir "$n")
two=$(ir $((2 * n)))
echo "weft-fetch, $n URLs: $one Ir ($((one / n)) per URL); $((2 * n)) URLs: $two Ir; per request: $(((two - one) / n)) Ir"
