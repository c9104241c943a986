#!/usr/bin/env bash
# Compares weft-load h2 with h2load (Debian nghttp2-client) against one weft-hello: h2c /plaintext,
# CONNS connections x STREAMS streams, server pinned to CPU 0, load to CPU 1, runs alternating. Prints,
# per run, the responses per second each reports, its own CPU time (user + system) per response, and
# the server's CPU time per response over that run; then the medians.
#
#   [CONNS=64] [STREAMS=16] [ROUTE=/plaintext] [MODE=loop] scripts/check-load-vs-h2load.sh [PRESET=release] [SECONDS=5] [REPEATS=3]
#
# ROUTE=/plaintext-async MODE=loop-async makes the server the limit (each body made on an executor
# thread): there both must report the same rate.
#
# Exit status 1 when the medians of requests/s differ by more than 10% while the server, not the load
# generator, is the limit (the server's CPU over the run above 90% of the run's time for both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
preset=${1:-release} secs=${2:-5} repeats=${3:-3} conns=${CONNS:-64} streams=${STREAMS:-16}
route=${ROUTE:-/plaintext} mode=${MODE:-loop}
bin=$root/build/$preset/bin
[ -x "$bin/weft-load" ] && [ -x "$bin/weft-hello" ] || { echo "build weft-load and weft-hello first (cmake --build build/$preset --target weft-load weft-hello)" >&2; exit 2; }
command -v h2load >/dev/null || { echo "h2load is not installed (apt-get install nghttp2-client)" >&2; exit 2; }

port=$((20000 + RANDOM % 12000))
taskset -c 0 "$bin/weft-hello" --loops 1 --mode "$mode" --port "$port" >/dev/null 2>&1 &
spid=$!
json=$(mktemp --suffix=.json)
trap 'kill $spid 2>/dev/null || true; rm -f "$json"' EXIT
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$port$route
server_ticks() { awk '{print $14 + $15}' /proc/$spid/stat; }

# Prints "RPS CLIENT_US_PER_RESPONSE SERVER_US_PER_RESPONSE SERVER_BUSY_FRACTION" for one run.
run() {  # weft|h2load
  local t0 t1 out times n rps elapsed
  t0=$(server_ticks)
  if [ "$1" = weft ]; then
    out=$( { TIMEFORMAT='%U %S %R'; time taskset -c 1 "$bin/weft-load" h2 "$url" -c "$conns" -m "$streams" -d "$secs" --json "$json" >/dev/null; } 2>&1 )
    n=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['responses'])" "$json")
  else
    out=$( { TIMEFORMAT='%U %S %R'; time taskset -c 1 h2load -c "$conns" -m "$streams" -t 1 -D "$secs" "$url"; } 2>&1 )
    n=$(echo "$out" | grep -oP 'requests: \d+ total, \d+ started, \d+ done, \K\d+')
  fi
  t1=$(server_ticks)
  times=$(echo "$out" | tail -1)
  awk -v n="$n" -v s="$secs" -v t="$times" -v st="$(( t1 - t0 ))" -v hz="$(getconf CLK_TCK)" 'BEGIN {
    split(t, a, " "); printf "%.0f %.3f %.3f %.2f\n", n / s, (a[1] + a[2]) * 1e6 / n, st / hz * 1e6 / n, st / hz / s }'
}

declare -A rows
for r in $(seq "$repeats"); do
  for tool in weft h2load; do
    line=$(run "$tool")
    rows[$tool]+="$line"$'\n'
    printf '%-7s run %d: %s\n' "$tool" "$r" "$(echo "$line" | awk '{printf "%9d req/s  client %6.3f us/req  server %6.3f us/req  server busy %.0f%%", $1, $2, $3, $4 * 100}')"
  done
done
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for tool in weft h2load; do
  for col in 1 2 3 4; do eval "${tool}_$col=$(echo -n "${rows[$tool]}" | awk -v c=$col '{print $c}' | median)"; done
done
printf 'median  weft-load h2: %9.0f req/s  client %6.3f us/req  server %6.3f us/req\n' "$weft_1" "$weft_2" "$weft_3"
printf 'median  h2load:       %9.0f req/s  client %6.3f us/req  server %6.3f us/req\n' "$h2load_1" "$h2load_2" "$h2load_3"
awk -v a="$weft_1" -v b="$h2load_1" -v ba="$weft_4" -v bb="$h2load_4" 'BEGIN {
  d = (a - b) / b * 100; printf "weft-load vs h2load: %+.1f%% req/s\n", d
  if (ba > 0.9 && bb > 0.9 && (d > 10 || d < -10)) { print "disagree by more than 10% on a server-bound load"; exit 1 } }'
