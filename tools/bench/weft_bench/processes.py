"""Start, pin, watch and stop every process a benchmark needs; none outlives weft-bench."""
import atexit
import ctypes
import os
import random
import re
import signal
import socket
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
_PR_SET_PDEATHSIG = 1


class ProcessError(RuntimeError):
    pass


def free_port(count=1):
    """A first port P such that P..P+count-1 are all free on 127.0.0.1.

    Drawn below the kernel's ephemeral range (32768+ by default), where no client connection of this
    machine takes a local port between this check and the server's bind."""
    for _ in range(200):
        base = random.randint(20000, 32000 - count)
        if all(_port_free(p) for p in range(base, base + count)):
            return base
    raise ProcessError(f"no {count} consecutive free ports found")


def _port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def cpu_plan():
    """(server CPUs, load CPUs) as taskset lists, or (None, None) when there are fewer than 2 CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None
    half = len(cpus) // 2
    return ",".join(map(str, cpus[:half])), ",".join(map(str, cpus[half:]))


def _die_with_parent():
    # The kernel kills the child if weft-bench itself is killed with SIGKILL (no finally runs then).
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def _stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    return text[text.rindex(")") + 2:].split()  # fields from 3 (state) on; comm may hold spaces


def session_members(sid):
    """Pids of the live processes in session `sid` (a process started here and all it forked)."""
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = _stat_fields(name)
        except (OSError, ValueError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            members.append(int(name))
    return members


def session_cpu_ticks(sid):
    """User + system clock ticks of every process in the session (load.sh counts a pid and its children)."""
    total = 0
    for pid in session_members(sid):
        try:
            fields = _stat_fields(pid)
        except (OSError, ValueError):
            continue
        total += int(fields[11]) + int(fields[12])
    return total


def session_cpu_ns(sid, thread_prefix=None):
    """CPU nanoseconds (/proc/PID/task/TID/schedstat: time on a CPU, exact where clock ticks are 10 ms)
    of every thread of every process in the session; with `thread_prefix`, of the threads whose name
    (comm) starts with it only."""
    total = 0
    for pid in session_members(sid):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                if thread_prefix is not None:
                    with open(f"/proc/{pid}/task/{tid}/comm") as f:
                        if not f.read().startswith(thread_prefix):
                            continue
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total


def memory_kib(pid):
    """{'VmRSS': kib, 'VmHWM': kib, ...} from /proc/PID/status; empty once the process is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key.startswith("Vm") and rest.strip().endswith("kB"):
                    out[key] = int(rest.split()[0])
    except (OSError, ValueError):
        pass
    return out


class Proc:
    """One started process, leader of its own session and process group."""

    def __init__(self, name, argv, popen, log_path):
        self.name, self.argv, self.popen, self.log_path = name, argv, popen, log_path

    @property
    def pid(self):
        return self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def cpu_ticks(self):
        return session_cpu_ticks(self.pid)

    def cpu_ns(self, thread_prefix=None):
        return session_cpu_ns(self.pid, thread_prefix)

    def last_error_line(self):
        try:
            with open(self.log_path, errors="replace") as f:
                lines = [l.strip() for l in f if l.strip()]
        except OSError:
            return ""
        return lines[-1] if lines else ""

    def wait_listening(self, port, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise ProcessError(f"exit {self.popen.returncode}: {self.last_error_line()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise ProcessError(f"{self.name}: nothing accepts on 127.0.0.1:{port} after {timeout:.0f} s")

    def stop(self, grace=3.0):
        sid = self.pid
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            if not session_members(sid) and not self.alive():
                break
            try:
                os.killpg(sid, sig)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                self.popen.poll()
                if not session_members(sid):
                    break
                time.sleep(0.02)
        self.popen.poll()


def log_file_name(name):
    """The log file of a process named `name` (a column or peer name, which may hold '/' or spaces)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".log"


class Supervisor:
    """Owns every process it starts; stop_all() runs on exit, exceptions, SIGINT, SIGTERM and SIGHUP."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.procs = []
        self.started = []  # (name, pid, argv) of every process, for the results and the orphan test
        atexit.register(self.stop_all)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def start(self, name, argv, cpus=None, stdout=None):
        if cpus:
            argv = ["taskset", "-c", cpus] + list(argv)
        os.makedirs(self.log_dir, exist_ok=True)
        log_path = os.path.join(self.log_dir, log_file_name(name))
        log = open(log_path, "ab")
        try:
            popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout or log, stderr=log,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        except OSError as e:
            raise ProcessError(f"cannot start {name} ({argv[0]}): {e.strerror}") from None
        finally:
            log.close()
        proc = Proc(name, argv, popen, log_path)
        self.procs.append(proc)
        self.started.append({"name": name, "pid": popen.pid, "argv": argv})
        return proc

    def run(self, name, argv, cpus=None, timeout=60.0):
        """Run to completion (a load generator); returns (exit code, stdout)."""
        proc = self.start(name, argv, cpus, stdout=subprocess.PIPE)
        try:
            out, _ = proc.popen.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ProcessError(f"{name} ran past {timeout:.0f} s") from None
        finally:
            self.release(proc)
        return proc.popen.returncode, out.decode(errors="replace")

    def release(self, proc, grace=3.0):
        proc.stop(grace)
        if proc in self.procs:
            self.procs.remove(proc)

    def stop_all(self):
        while self.procs:
            self.release(self.procs[-1])
