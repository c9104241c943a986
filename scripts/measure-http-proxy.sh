#!/usr/bin/env bash
# weft-proxy against nginx (keep-alive upstream) and HAProxy 2.6 as reverse proxies in front of one
# backend (weft-hello, one loop): the proxy's own CPU per request (its process only) on /plaintext,
# 256 connections, no pipelining, wrk. Proxies on CPU 0; wrk and the backend on CPU 1. The three
# proxies take turns within each round, and each figure is the median of the rounds.
#
#   scripts/measure-http-proxy.sh [BUILD_DIR] [ROUNDS] [SECONDS]     (default build/release 5 10)
#   WEFT_PROXY_ARGS="--transport io_uring" scripts/measure-http-proxy.sh ...   (weft-proxy's extra flags)
#
# Needs nginx-light, haproxy and wrk (scripts/install-deps.sh), and ../shared/peers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
rounds=${2:-5}
secs=${3:-10}
peers=${WEFT_PEERS_DIR:-$root/../shared/peers}
bin=$build/bin
backend_port=24090 weft_port=24100 nginx_port=24101 haproxy_port=24102
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing on port $1" >&2; exit 1; }

taskset -c 1 "$bin/weft-hello" --port $backend_port --host 127.0.0.1 --loops 1 >/dev/null 2>&1 &
pids+=($!)
wait_port $backend_port
taskset -c 0 "$bin/weft-proxy" --listen $weft_port --host 127.0.0.1 --loops 1 ${WEFT_PROXY_ARGS:-} --backend http://127.0.0.1:$backend_port >/dev/null 2>&1 &
weft_pid=$!
pids+=($weft_pid)
nginx_pid=$("$peers/serve-peer.sh" nginx-proxy $nginx_port $backend_port)
pids+=($nginx_pid)
haproxy_pid=$("$peers/serve-peer.sh" haproxy $haproxy_port $backend_port)
pids+=($haproxy_pid)
for p in $weft_port $nginx_port $haproxy_port; do wait_port $p; done

declare -A cpu rps sys
for name in weft nginx haproxy; do cpu[$name]="" rps[$name]="" sys[$name]=""; done
# user and system clock ticks of PID and its children ("U S")
ticks() { local u=0 s=0 p a b; for p in $1 $(pgrep -P "$1"); do read -r a b < <(awk '{print $14, $15}' /proc/$p/stat); u=$((u + a)); s=$((s + b)); done; echo "$u $s"; }
measure() {  # NAME PID PORT SECONDS: load.sh's line, then "sys_share=F", the kernel's part of the proxy's CPU
  local u0 s0 u1 s1 out
  read -r u0 s0 < <(ticks "$2")
  out=$("$peers/load.sh" "$2" "$3" /plaintext 1 256 "$4")
  read -r u1 s1 < <(ticks "$2")
  awk -v o="$out" -v u=$((u1 - u0)) -v s=$((s1 - s0)) 'BEGIN { printf "%s sys_share=%.3f\n", o, (u + s) ? s / (u + s) : 0 }'
}
for name in weft nginx haproxy; do  # warm-up: connections made, pools filled
  eval "measure $name \$${name}_pid \$${name}_port 2" >/dev/null
done
for r in $(seq "$rounds"); do
  for name in weft nginx haproxy; do
    out=$(eval "measure $name \$${name}_pid \$${name}_port $secs")
    echo "round $r $name: $out"
    case "$out" in *Non-2xx*|*"Socket errors"*) echo "  (errors: the figure does not count)";; esac
    cpu[$name]+="$(sed -E 's/.*server_us_per_req=([0-9.]+).*/\1/' <<<"$out") "
    sys[$name]+="$(sed -E 's/.*server_us_per_req=([0-9.]+).*sys_share=([0-9.]+).*/\1 \2/' <<<"$out" | awk '{ printf "%.3f", $1 * $2 }') "
    rps[$name]+="$(sed -E 's/rps=([0-9]+).*/\1/' <<<"$out") "
  done
done
median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
w=$(median "${cpu[weft]}") n=$(median "${cpu[nginx]}") h=$(median "${cpu[haproxy]}")
printf '\nmedians of %s rounds of %s s, /plaintext, 256 connections, the proxy on CPU 0:\n' "$rounds" "$secs"
printf '  %-8s %10s req/s  %8s us/req (proxy CPU; %s of it the kernel'"'"'s)\n' \
  weft "$(median "${rps[weft]}")" "$w" "$(median "${sys[weft]}")" \
  nginx "$(median "${rps[nginx]}")" "$n" "$(median "${sys[nginx]}")" \
  haproxy "$(median "${rps[haproxy]}")" "$h" "$(median "${sys[haproxy]}")"
awk -v w="$w" -v n="$n" -v h="$h" 'BEGIN{printf "  weft-proxy / nginx = %.2fx (target <= 0.5x), weft-proxy / HAProxy = %.2fx (target <= 0.7x)\n", w/n, w/h}'
# The floor a proxy's user-space work cannot go under: its system calls' share, against nginx's whole CPU.
awk -v ws="$(median "${sys[weft]}")" -v ns="$(median "${sys[nginx]}")" -v hs="$(median "${sys[haproxy]}")" -v n="$n" \
  'BEGIN{printf "  kernel time alone, as a share of nginx'"'"'s whole CPU per request: weft-proxy %.2fx, nginx %.2fx, HAProxy %.2fx\n", ws/n, ns/n, hs/n}'
