# Shared by the measurement scripts (source it after `cd` to the repository root).
#   port            a free 127.0.0.1 port below the ephemeral range (32768+), where no client
#                   connection of this machine takes it between this check and the server's bind
#   wait_port PORT  waits up to 10 s for a listener
#   pids+=(PID)     processes stopped when the script exits
port() {
  python3 -c '
import random, socket
for _ in range(200):
    p = random.randint(20000, 32000)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("no free port")'
}
wait_port() {
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "nothing listens on $1" >&2
  return 1
}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
