# Shared by the measurement scripts (source it after `cd` to the repository root).
#   port            weft-bench's free_port: a free 127.0.0.1 port below the ephemeral range, where no client
#                   connection of this machine takes it between this check and the server's bind
#   wait_port PORT  waits up to 10 s for a listener
#   pids+=(PID)     processes stopped when the script exits
port() { PYTHONPATH=tools/bench python3 -c 'from weft_bench.processes import free_port; print(free_port())'; }
wait_port() {
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "nothing listens on $1" >&2
  return 1
}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
