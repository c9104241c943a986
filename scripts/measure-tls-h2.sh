#!/usr/bin/env bash
# Server CPU of weft-hello against a peer in the same minute, alternating, for the TLS and HTTP/2
# targets (issues 16 and 17); and instruction counts with callgrind, which do not depend on the
# machine's load. The server runs on CPU 0, the load on CPU 1.
#
#   scripts/measure-tls-h2.sh json [ROUNDS] [CONNS]   HTTPS /json p1: weft (epoll) vs nginx, h2load --h1
#   scripts/measure-tls-h2.sh handshake [ROUNDS]      full TLS 1.3 handshakes (openssl s_time -new): weft vs nginx
#   scripts/measure-tls-h2.sh h2 [ROUNDS]             /plaintext 64 x 16, h2c and h2 over TLS: weft vs h2o
#   scripts/measure-tls-h2.sh callgrind-https         instructions per HTTPS /json request (weft only)
#   scripts/measure-tls-h2.sh callgrind-handshake     instructions per full handshake (weft only)
#   scripts/measure-tls-h2.sh callgrind-h2c           instructions per h2c /plaintext request (weft only)
#
# Needs: nginx-light, h2o, nghttp2-client (h2load), openssl, valgrind; the peers come from
# ../shared/peers (serve-peer.sh, make-cert.sh, nginx-tls.conf, h2-load.sh). HELLO overrides the
# weft-hello binary (default build/release/bin/weft-hello).
set -euo pipefail
cd "$(dirname "$0")/.."
peers=$(cd ../shared/peers && pwd)
hello=${HELLO:-build/release/bin/weft-hello}
mode=${1:?mode}; rounds=${2:-5}; conns=${3:-256}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-measure-XXXXXX")
cert=$tmp/cert
"$peers/make-cert.sh" "$cert"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
port() { echo $(( 20000 + RANDOM % 12000 )); }  # below the ephemeral range
hz=$(getconf CLK_TCK)
ticks() { local s=0 p; for p in $1 $(pgrep -P "$1"); do s=$((s + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $s; }

start_weft() {  # PORT [ARGS...]: the pid
  local p=$1; shift
  taskset -c 0 "$hello" --port "$p" --loops 1 "$@" >/dev/null 2>&1 &
  pids+=($!); echo $!
}
start_nginx() {  # PORT: the master's pid (its worker is counted as its child)
  local p=$1
  sed -e "s/8443/$p/" -e "s/8444/$(( p + 1 ))/" -e "s|CERTDIR|$cert|" -e "s|/tmp/peer-nginx-tls.pid|$tmp/nginx.pid|" \
    "$peers/nginx-tls.conf" > "$tmp/nginx.conf"
  taskset -c 0 nginx -e "$tmp/nginx-error.log" -c "$tmp/nginx.conf" >/dev/null 2>&1 &
  pids+=($!); echo $!
}
wait_port() { for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; return 1; }
handshakes() {  # PID PORT: server CPU per full handshake over 5 s
  local t0 t1 out n
  t0=$(ticks "$1"); out=$(taskset -c 1 openssl s_time -connect "127.0.0.1:$2" -new -time 5 2>&1); t1=$(ticks "$1")
  n=$(echo "$out" | sed -n 's/^\([0-9]*\) connections in .* real seconds.*/\1/p' | head -1)
  awk -v t=$((t1 - t0)) -v hz="$hz" -v n="${n:-0}" 'BEGIN{printf "handshakes=%d server_us_per_handshake=%.1f\n", n, (n > 0 ? t/hz*1e6/n : -1)}'
}
callgrind() {  # OUT-NAME COUNT LOAD-COMMAND... (run twice: warm-up, then measured): Ir per unit
  local name=$1 count=$2; shift 2
  local p; p=$(port)
  taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$tmp/$name.out" "$hello" --port "$p" --loops 1 \
    $EXTRA >/dev/null 2>&1 &
  local vg=$!; pids+=($vg)
  wait_port "$p"
  "$@" "$p" >/dev/null 2>&1 || true
  callgrind_control -z "$vg" >/dev/null
  local measured; measured=$("$@" "$p" 2>&1 || true)
  callgrind_control -d "$vg" >/dev/null; sleep 2; kill "$vg"; wait "$vg" 2>/dev/null || true
  local f; f=$(ls -t "$tmp/$name.out".* | head -1)
  local total; total=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
  if [ "$count" = handshakes ]; then
    count=$(echo "$measured" | sed -n 's/^\([0-9]*\) connections in .* real seconds.*/\1/p' | head -1)
  fi
  echo "$name: $(( total / count )) instructions per unit ($count units)"
}

case "$mode" in
  json)
    pw=$(port); pn=$(port)
    w=$(start_weft "$pw" --tls-cert "$cert/cert.pem" --tls-key "$cert/key.pem"); n=$(start_nginx "$pn")
    wait_port "$pw"; wait_port "$pn"
    bash "$peers/h2-load.sh" "$w" "https://127.0.0.1:$pw/json" "$conns" 1 2 --h1 >/dev/null
    bash "$peers/h2-load.sh" "$n" "https://127.0.0.1:$pn/json" "$conns" 1 2 --h1 >/dev/null
    for _ in $(seq "$rounds"); do
      echo "weft  $(bash "$peers/h2-load.sh" "$w" "https://127.0.0.1:$pw/json" "$conns" 1 5 --h1)"
      echo "nginx $(bash "$peers/h2-load.sh" "$n" "https://127.0.0.1:$pn/json" "$conns" 1 5 --h1)"
    done ;;
  handshake)
    pw=$(port); pn=$(port)
    w=$(start_weft "$pw" --tls-cert "$cert/cert.pem" --tls-key "$cert/key.pem"); n=$(start_nginx "$pn")
    wait_port "$pw"; wait_port "$pn"
    handshakes "$w" "$pw" >/dev/null; handshakes "$n" "$pn" >/dev/null
    for _ in $(seq "$rounds"); do echo "weft  $(handshakes "$w" "$pw")"; echo "nginx $(handshakes "$n" "$pn")"; done ;;
  h2)
    p1=$(port); p2=$(port); ph=$(port)
    w1=$(start_weft "$p1"); w2=$(start_weft "$p2" --tls-cert "$cert/cert.pem" --tls-key "$cert/key.pem")
    h=$("$peers/serve-peer.sh" h2o "$ph"); pids+=("$h")
    wait_port "$p1"; wait_port "$p2"; wait_port "$ph"; wait_port $(( ph + 1 ))
    for _ in $(seq "$rounds"); do
      echo "weft h2c $(bash "$peers/h2-load.sh" "$w1" "http://127.0.0.1:$p1/plaintext" 64 16 5)"
      echo "h2o  h2c $(bash "$peers/h2-load.sh" "$h" "http://127.0.0.1:$ph/plaintext" 64 16 5)"
      echo "weft h2  $(bash "$peers/h2-load.sh" "$w2" "https://127.0.0.1:$p2/plaintext" 64 16 5)"
      echo "h2o  h2  $(bash "$peers/h2-load.sh" "$h" "https://127.0.0.1:$(( ph + 1 ))/plaintext" 64 16 5)"
    done ;;
  callgrind-https)
    EXTRA="--tls-cert $cert/cert.pem --tls-key $cert/key.pem"
    load() { h2load --h1 -c 8 -m 1 -n 20000 "https://127.0.0.1:$1/json"; }
    callgrind https-json 20000 load ;;
  callgrind-handshake)
    EXTRA="--tls-cert $cert/cert.pem --tls-key $cert/key.pem"
    load() { taskset -c 1 openssl s_time -connect "127.0.0.1:$1" -new -time 15; }
    callgrind handshake handshakes load ;;
  callgrind-h2c)
    EXTRA=""
    load() { h2load -c 64 -m 16 -n 64000 "http://127.0.0.1:$1/plaintext"; }
    callgrind h2c-plaintext 64000 load ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
