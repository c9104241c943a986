#!/usr/bin/env bash
# Streamed bodies through weft-hello (issue 30): uploads SIZE bytes to POST /upload and downloads as
# many from GET /download?bytes=SIZE with curl (HTTP/1.1: the upload chunked from a pipe, curl -T -, the download
# chunked), in each mode given, and reports the server's resident memory before, its peak (VmHWM)
# (VmHWM, reset before each direction) and its growth. The upload's answer must count every byte; the download is compared byte for byte
# with the pattern it follows (byte i is (i * 7 + 3) % 251). Issue target: growth within +16 MiB each.
#   scripts/measure-stream-bodies.sh [BUILD] [SIZE_MIB] [MODES...]
#   e.g. scripts/measure-stream-bodies.sh build/release 1024 loop coroutine
# A slow peer on each side: STREAM_RATE=50M (curl --limit-rate) slows the upload's sender and the
# download's reader; unset, both go as fast as the machine does (the server's bounds hold either way).
# STREAM_HTTP=h2: over h2c instead (curl --http2-prior-knowledge; the upload's DATA frames as they come).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-lib.sh
build=${1:-build/release} mib=${2:-1024}
shift 2 2>/dev/null || shift $#
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(loop coroutine)
size=$((mib * 1024 * 1024))
curl_opts=()
[ -n "${STREAM_RATE:-}" ] && curl_opts=(--limit-rate "$STREAM_RATE")
[ "${STREAM_HTTP:-}" = h2 ] && curl_opts+=(--http2-prior-knowledge)
tmp=$(mktemp -d)
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT

# The pattern, SIZE bytes, made from one 251-byte period (the download is compared with it).
pattern() { python3 -c '
import sys
period = bytes((i * 7 + 3) % 251 for i in range(251))
block = period * (4 * 1024 * 1024 // 251 + 1)
n, out = int(sys.argv[1]), sys.stdout.buffer
while n > 0:
    i = (int(sys.argv[1]) - n) % 251
    piece = block[i:i + min(n, 4 * 1024 * 1024)]
    out.write(piece)
    n -= len(piece)
' "$1"; }
kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$2/status"; }

printf '%-10s %-9s %10s %10s %10s %8s  %s\n' mode direction "RSS KiB" "VmHWM KiB" "growth" MiB/s check
for mode in "${modes[@]}"; do
  p=$(port)
  "$build/bin/weft-hello" --loops 1 --port "$p" --mode "$mode" >"$tmp/hello.log" 2>&1 &
  server=$!
  pids+=($server)
  wait_port "$p"
  curl -s "http://127.0.0.1:$p/plaintext" >/dev/null  # warm: the loop's buffers, the allocator's first chunks
  for direction in upload download; do
    echo 5 >"/proc/$server/clear_refs"  # VmHWM from now: this direction's peak
    before=$(kib VmRSS "$server")
    start=$(date +%s.%N)
    if [ "$direction" = upload ]; then
      answer=$(pattern "$size" | curl -s "${curl_opts[@]}" -X POST -T - "http://127.0.0.1:$p/upload")
      check=$([ "${answer%% *}" = "$size" ] && echo "ok ($answer)" || echo "FAILED: $answer")
    else
      if cmp -s <(curl -s "${curl_opts[@]}" "http://127.0.0.1:$p/download?bytes=$size") <(pattern "$size"); then
        check="ok (byte-exact)"
      else
        check=FAILED
      fi
    fi
    end=$(date +%s.%N)
    hwm=$(kib VmHWM "$server")
    rate_mib=$(awk -v s="$start" -v e="$end" -v m="$mib" 'BEGIN {printf "%.0f", m / (e - s)}')
    printf '%-10s %-9s %10s %10s %+9.1fM %8s  %s\n' "$mode" "$direction" "$before" "$hwm" \
      "$(awk -v a="$hwm" -v b="$before" 'BEGIN {print (a - b) / 1024}')" "$rate_mib" "$check"
  done
  kill "$server"
  wait "$server" 2>/dev/null || true
done
