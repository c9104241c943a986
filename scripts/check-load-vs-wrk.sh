#!/usr/bin/env bash
# Compares weft-load with wrk against the same server: requests/s must agree within 10%, and the
# load generator's own CPU time per response is printed for both (server pinned to CPU 0, load to
# CPU 1, the same connections and pipeline depth). Runs against nginx (when installed) and weft-hello.
#
#   [CONNS=64] scripts/check-load-vs-wrk.sh [PRESET=release] [SECONDS=3] [REPEATS=3]
#
# Exit status 1 when a pair disagrees by more than 10% (medians of REPEATS alternating runs).
#
# Where the load generator, not the server, is the limit (weft-hello /plaintext at pipeline 16 costs
# the server about what it costs wrk per request), the cheaper generator reports more requests/s:
# compare the CPU columns there. The last row (weft-hello --mode loop-async /json-async, ~30 us of
# server CPU per request) is bound by the server and checks that both count alike.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
preset=${1:-release} secs=${2:-3} repeats=${3:-3} conns=${CONNS:-64}
bin=$root/build/$preset/bin
peers=${WEFT_PEERS:-$root/../shared/peers}
[ -x "$bin/weft-load" ] && [ -x "$bin/weft-hello" ] || { echo "build weft-load and weft-hello first (cmake --build build/$preset --target weft-load weft-hello)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is not installed (scripts/install-deps.sh)" >&2; exit 2; }

lua=$(mktemp --suffix=.lua)
cat > "$lua" <<'LUA'
init = function(args)
  local r = {}
  for i = 1, (tonumber(args[1]) or 1) do r[i] = wrk.format(nil) end
  req = table.concat(r)
end
request = function() return req end
LUA
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -f "$lua"; }
trap cleanup EXIT

# Prints "RPS CPU_US_PER_RESPONSE" for one run; CPU is the load generator's user+system time.
run_wrk() {  # url conns depth
  local out t
  out=$( { TIMEFORMAT='%U %S'; time taskset -c 1 wrk -t1 -c"$2" -d"${secs}s" -s "$lua" "$1" -- "$3"; } 2>&1 )
  t=$(echo "$out" | tail -1)
  echo "$out" | awk -v t="$t" '/requests in/{n=$1} /Requests\/sec/{r=$2} END{split(t,a," "); printf "%.0f %.3f\n", r, (a[1]+a[2])*1e6/n}'
}
run_weft() {  # url conns depth
  local out t
  out=$( { TIMEFORMAT='%U %S'; time taskset -c 1 "$bin/weft-load" http "$1" -c "$2" -t 1 -d "$secs" --pipeline "$3"; } 2>&1 )
  t=$(echo "$out" | tail -1)
  echo "$out" | awk -v t="$t" '/responses in/{n=$4} /Requests\/sec/{r=$2} END{split(t,a," "); printf "%.0f %.3f\n", r, (a[1]+a[2])*1e6/n}'
}
median() { sort -n | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }

status=0
compare() {  # name url conns depth
  local w=() l=() wc=() lc=() i r
  for ((i = 0; i < repeats; i++)); do
    r=$(run_wrk "$2" "$3" "$4"); w+=("${r% *}"); wc+=("${r#* }")
    r=$(run_weft "$2" "$3" "$4"); l+=("${r% *}"); lc+=("${r#* }")
  done
  local wm lm wcm lcm
  wm=$(printf '%s\n' "${w[@]}" | median); lm=$(printf '%s\n' "${l[@]}" | median)
  wcm=$(printf '%s\n' "${wc[@]}" | median); lcm=$(printf '%s\n' "${lc[@]}" | median)
  awk -v n="$1" -v c="$3" -v d="$4" -v w="$wm" -v l="$lm" -v wc="$wcm" -v lc="$lcm" 'BEGIN{
    diff = (l - w) / w * 100; ok = (diff <= 10 && diff >= -10)
    printf "%-16s c=%-4d pipeline=%-3d wrk %9.0f req/s %6.3f us/req | weft-load %9.0f req/s %6.3f us/req | diff %+5.1f%% %s\n",
      n, c, d, w, wc, l, lc, diff, ok ? "ok" : "DISAGREE"; exit ok ? 0 : 1 }' || status=1
}

port=$((20000 + RANDOM % 12000))  # below the ephemeral range
taskset -c 0 "$bin/weft-hello" --loops 1 --port "$port" >/dev/null 2>&1 & pids+=($!)
if command -v nginx >/dev/null && [ -x "$peers/serve-peer.sh" ]; then
  nport=$((port + 1))
  pids+=("$("$peers/serve-peer.sh" nginx "$nport")")
fi
aport=$((port + 2))
taskset -c 0 "$bin/weft-hello" --loops 1 --mode loop-async --port "$aport" >/dev/null 2>&1 & pids+=($!)
sleep 1
for depth in 1 16; do
  compare weft-hello "http://127.0.0.1:$port/plaintext" "$conns" "$depth"
  [ -n "${nport:-}" ] && compare nginx "http://127.0.0.1:$nport/plaintext" "$conns" "$depth"
done
compare weft-hello/async "http://127.0.0.1:$aport/json-async" "$conns" 1
exit $status
