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
# cpu_seconds OUT CMD...: runs CMD (its output to OUT) and prints its user+sys CPU in seconds, to the
# microsecond (time(1)'s %U and %S count 10 ms ticks). Fails as CMD does.
cpu_seconds() {
  local out=$1
  shift
  python3 - "$out" "$@" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as out:
    pid = os.fork()
    if pid == 0:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        os.execvp(sys.argv[2], sys.argv[2:])
    _, status, usage = os.wait4(pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(1)
print(f"{usage.ru_utime + usage.ru_stime:.6f}")
PY
}
