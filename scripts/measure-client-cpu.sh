#!/usr/bin/env bash
# The HTTP client's CPU per request (user+sys of the client process, µs) against a keep-alive
# HTTP/1.1 server on one core, the client on another: curl --parallel, weft-fetch and weft-load's raw
# client, each at 16 connections; the median of RUNS runs each. (docs/client.md, "Performance")
#   scripts/measure-client-cpu.sh [BUILD] [N] [RUNS] [SERVER]
#   e.g. scripts/measure-client-cpu.sh build/release 100000 5 weft-hello    (or SERVER=nginx: ../shared/peers/nginx.conf)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
build=${1:-build/release} n=${2:-100000} runs=${3:-5} server=${4:-weft-hello}
tmp=$(mktemp -d)
pids+=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
if [[ $server == nginx ]]; then
  p=8081
  taskset -c 0 nginx -c "$PWD/../shared/peers/nginx.conf" -p "$tmp" >/dev/null 2>&1 &
else
  p=$(port)
  taskset -c 0 "$build/bin/weft-hello" --loops 1 --port "$p" >/dev/null 2>&1 &
fi
pids+=($!)
wait_port "$p"
url="http://127.0.0.1:$p/plaintext"
for _ in $(seq "$n"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$url"; done >"$tmp/curl.cfg"
for _ in $(seq "$n"); do echo "$url"; done >"$tmp/urls"
# cpu_us_per_request REQUESTS CMD...: the client's user+sys, in µs per request
cpu() {
  local count=$1
  shift
  local seconds
  seconds=$(cpu_seconds "$tmp/out" taskset -c 1 "$@") || { cat "$tmp/out" >&2; return 1; }
  [[ $count == json ]] && count=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["responses"])' "$tmp/load.json")
  awk -v s="$seconds" -v n="$count" 'BEGIN { printf "%.3f\n", s * 1e6 / n }'
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
declare -A all
for _ in $(seq "$runs"); do
  all[curl]+="$(cpu "$n" curl --parallel --parallel-max 16 -s -K "$tmp/curl.cfg") "
  all[weft-fetch]+="$(cpu "$n" "$build/bin/weft-fetch" --concurrency 16 --input "$tmp/urls") "
  all[weft-load]+="$(cpu json "$build/bin/weft-load" http "$url" -c 16 --pipeline 1 -d 2 --json "$tmp/load.json") "
done
echo "server: $server (core 0); clients on core 1; $n requests (weft-load: 2 s); CPU µs per request, median of $runs"
for k in curl weft-fetch weft-load; do
  echo "$k: $(tr ' ' '\n' <<<"${all[$k]}" | grep . | median)   (runs: ${all[$k]})"
done
# Run by run (each pair measured back to back), then their median.
ratios=$(paste <(tr ' ' '\n' <<<"${all[weft-fetch]}" | grep .) <(tr ' ' '\n' <<<"${all[weft-load]}" | grep .) |
  awk '{ printf "%.3f ", $1 / $2 }')
echo "weft-fetch / weft-load: $(tr ' ' '\n' <<<"$ratios" | grep . | median)   (runs: $ratios)"

