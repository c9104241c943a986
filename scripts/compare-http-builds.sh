#!/usr/bin/env bash
# Two builds of weft-hello and the floor, measured in interleaved rounds, for steering on a noisy
# machine: one compare-http.sh run swings by 20-30% here, a median of per-round ratios much less.
#   scripts/compare-http-builds.sh OLD_HELLO NEW_HELLO [PATH] [DEPTH] [CONNS] [ROUNDS] [SECONDS]
#   e.g. scripts/compare-http-builds.sh /tmp/old/bin/weft-hello build/release/bin/weft-hello /json 1 256 11 3
# Servers on CPU 0, wrk on CPU 1. Prints user/system CPU microseconds per request (medians) and, per
# build, the median over rounds of its total CPU per request divided by the floor's in that round.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
old=$1 new=$2 path=${3:-/plaintext} depth=${4:-16} conns=${5:-256} rounds=${6:-11} secs=${7:-3}
work=$(mktemp -d)
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
gcc -O2 -o "$work/floor" ../shared/peers/floor.c
po=$(port); taskset -c 0 "$old" --loops 1 --port "$po" >/dev/null 2>&1 & pids+=($!); pid_old=$!
pn=$(port); taskset -c 0 "$new" --loops 1 --port "$pn" >/dev/null 2>&1 & pids+=($!); pid_new=$!
pf=$(port); taskset -c 0 "$work/floor" "$pf" >/dev/null 2>&1 & pids+=($!); pid_floor=$!
wait_port "$po"; wait_port "$pn"; wait_port "$pf"
# one: NAME PID PORT -> "NAME user sys total" in microseconds per request
one() {
  local u0 s0 u1 s1 out n
  read -r u0 s0 < <(awk '{print $14, $15}' /proc/"$2"/stat)
  out=$(taskset -c 1 wrk -t1 -c"$conns" -d"${secs}s" -s ../shared/peers/pipeline.lua "http://127.0.0.1:$3$path" -- "$depth" 2>&1)
  read -r u1 s1 < <(awk '{print $14, $15}' /proc/"$2"/stat)
  n=$(echo "$out" | awk '/requests in/{print $1}')
  awk -v k="$1" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v n="$n" -v hz="$(getconf CLK_TCK)" \
    'BEGIN{printf "%s %.4f %.4f %.4f\n", k, u/hz*1e6/n, s/hz*1e6/n, (u+s)/hz*1e6/n}'
}
one old "$pid_old" "$po" >/dev/null; one new "$pid_new" "$pn" >/dev/null  # warm up
for _ in $(seq "$rounds"); do
  one old "$pid_old" "$po"; one new "$pid_new" "$pn"; one floor "$pid_floor" "$pf"
done >"$work/rounds"
python3 - "$work/rounds" "$path" "$depth" "$conns" <<'PY'
import statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    k, u, s, t = line.split()
    rows.setdefault(k, []).append((float(u), float(s), float(t)))
print(f"{sys.argv[2]} pipeline {sys.argv[3]}, {sys.argv[4]} conns, {len(rows['floor'])} rounds: CPU us/request (medians)")
for k in ("old", "new", "floor"):
    v = rows[k]
    line = f"  {k:5} user {st.median(x[0] for x in v):.3f}  sys {st.median(x[1] for x in v):.3f}  total {st.median(x[2] for x in v):.3f}"
    if k != "floor":
        ratios = [a[2] / f[2] for a, f in zip(v, rows["floor"])]
        line += f"   {st.median(ratios):.2f}x the floor (rounds {min(ratios):.2f}..{max(ratios):.2f})"
    print(line)
PY
