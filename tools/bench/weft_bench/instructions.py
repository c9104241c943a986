"""Instructions per operation of a server run under callgrind: a figure that a loaded machine does not
move, where timed figures drift by more than the regressions they are meant to catch (seed 004's 14%).

The server runs as `valgrind --tool=callgrind --callgrind-out-file=DIR/callgrind.out.%p SERVER...`
(wrap()). Before each measurement its counters are zeroed (`callgrind_control -z`); after it they are
dumped (`callgrind_control -d`) and the dump's total, over the operations the load counted, is the
point's value. Warm-up, connection setup and everything between measurements are left out.
"""
import glob
import os
import re
import shutil
import subprocess

VALGRIND_MISSING = "n/a: valgrind is not installed (apt-get install valgrind)"
OUT_FLAG = "--callgrind-out-file="


class InstructionCountError(RuntimeError):
    pass


def available():
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


def wrap(argv, out_dir):
    """`argv` run under callgrind, its profiles written in out_dir."""
    return ["valgrind", "--tool=callgrind", "--quiet", f"{OUT_FLAG}{out_dir}/callgrind.out.%p", *argv]


def _control(pid, command):
    done = subprocess.run(["callgrind_control", command, str(pid)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise InstructionCountError(f"callgrind_control {command} {pid} failed: {(done.stderr or done.stdout).strip()}")


def _out_dir(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        args = f.read().decode(errors="replace").split("\0")
    for a in args:
        if a.startswith(OUT_FLAG):
            return os.path.dirname(a[len(OUT_FLAG):])
    raise InstructionCountError(f"process {pid} is not running under callgrind with {OUT_FLAG}")


def zero(pid):
    """Zeroes the counters of the callgrind process `pid`."""
    _control(pid, "-z")


def _dump_number(path):
    m = re.search(r"\.(\d+)$", path)
    return int(m.group(1)) if m else -1


def dump_total(pid):
    """Dumps the counters of the callgrind process `pid` and returns the instructions since they were last
    zeroed or dumped (the new dump's `totals:` line)."""
    out_dir = _out_dir(pid)
    _control(pid, "-d")
    dumps = sorted(glob.glob(os.path.join(out_dir, f"callgrind.out.{pid}.*")), key=_dump_number)
    if not dumps:
        raise InstructionCountError(f"callgrind wrote no dump for process {pid} in {out_dir}")
    with open(dumps[-1]) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise InstructionCountError(f"{dumps[-1]} has no totals line")
