#!/usr/bin/env bash
# Run the echo demo: start weft-echo-server on 4 consecutive ports, drive it with weft-echo-client,
# stop the server, exit with the client's status.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

BIN=${BIN:-build/release/bin}
PORT=${PORT:-9400}
PORTS=${PORTS:-4}

server=$BIN/weft-echo-server
client=$BIN/weft-echo-client
for exe in "$server" "$client"; do
  if [[ ! -x $exe ]]; then
    echo "echo-demo: $exe not found; run 'make build' first" >&2
    exit 1
  fi
done

server_pid=
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

"$server" --port "$PORT" --ports "$PORTS" --loops 2 &
server_pid=$!

# Wait (at most 10 s) until the first port accepts connections.
ready=0
for _ in $(seq 1 100); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "echo-demo: server exited before accepting connections" >&2
    exit 1
  fi
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    ready=1
    break
  fi
  sleep 0.1
done
if ((ready == 0)); then
  echo "echo-demo: server did not accept on port $PORT within 10 s" >&2
  exit 1
fi

status=0
"$client" --port "$PORT" --ports "$PORTS" --threads 16 --rounds 1024 --size 256 || status=$?
exit "$status"
