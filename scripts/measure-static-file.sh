#!/usr/bin/env bash
# weft-static-server against nginx (sendfile on) serving one static file over HTTP/1.1 keep-alive:
# each server's own CPU per response (so per byte: the same file), wrk with 16 connections. The
# servers on CPU 0, one worker or loop each; wrk on CPU 1. They take turns within each round, and
# each figure is the median of the rounds.
#
#   scripts/measure-static-file.sh [BUILD_DIR] [ROUNDS] [SECONDS] [SIZE_KIB]   (default build/release 5 5 1024)
#   WEFT_STATIC_ARGS="--transport io_uring" scripts/measure-static-file.sh ...   (weft's extra flags)
#
# Needs nginx-light and wrk (scripts/install-deps.sh), and ../shared/peers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
rounds=${2:-5}
secs=${3:-5}
kib=${4:-1024}
peers=${WEFT_PEERS_DIR:-$root/../shared/peers}
weft_port=24110 nginx_port=24111
dir=$(mktemp -d)
chmod 755 "$dir"  # nginx's worker runs as another user
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing on port $1" >&2; exit 1; }

head -c $((kib * 1024)) /dev/urandom > "$dir/file.bin"
chmod 644 "$dir/file.bin"
taskset -c 0 "$build/bin/weft-static-server" --root "$dir" --port $weft_port --loops 1 ${WEFT_STATIC_ARGS:-} >/dev/null 2>&1 &
weft_pid=$!
pids+=($weft_pid)
nginx_pid=$("$peers/serve-peer.sh" nginx-files $nginx_port "$dir")
pids+=($nginx_pid)
for p in $weft_port $nginx_port; do wait_port $p; done
# Both must answer the file whole, byte for byte, before anything is timed.
for p in $weft_port $nginx_port; do
  curl -sf "http://127.0.0.1:$p/file.bin" | cmp -s - "$dir/file.bin" || { echo "port $p: not the file" >&2; exit 1; }
done

declare -A cpu rps
for name in weft nginx; do cpu[$name]="" rps[$name]=""; done
measure() { "$peers/load.sh" "$2" "$3" /file.bin 1 16 "$4"; }  # NAME PID PORT SECONDS
for name in weft nginx; do eval "measure $name \$${name}_pid \$${name}_port 1" >/dev/null; done  # warm-up
for r in $(seq "$rounds"); do
  for name in weft nginx; do
    out=$(eval "measure $name \$${name}_pid \$${name}_port $secs")
    echo "round $r $name: $out"
    case "$out" in *Non-2xx*|*"Socket errors"*) echo "  (errors: the figure does not count)";; esac
    cpu[$name]+="$(sed -E 's/.*server_us_per_req=([0-9.]+).*/\1/' <<<"$out") "
    rps[$name]+="$(sed -E 's/rps=([0-9]+).*/\1/' <<<"$out") "
  done
done
median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
w=$(median "${cpu[weft]}") n=$(median "${cpu[nginx]}")
printf '\nmedians of %s rounds of %s s, a %s KiB file, 16 keep-alive connections, the server on CPU 0:\n' "$rounds" "$secs" "$kib"
printf '  %-6s %8s responses/s  %9s us/response  %6.3f ns/byte (server CPU)\n' \
  weft "$(median "${rps[weft]}")" "$w" "$(awk -v u="$w" -v b=$((kib * 1024)) 'BEGIN{print u*1000/b}')" \
  nginx "$(median "${rps[nginx]}")" "$n" "$(awk -v u="$n" -v b=$((kib * 1024)) 'BEGIN{print u*1000/b}')"
awk -v w="$w" -v n="$n" 'BEGIN{printf "  weft / nginx = %.2fx CPU per byte (target <= 0.8x)\n", w/n}'
