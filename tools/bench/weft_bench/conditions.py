"""The machine's conditions around a run and each point, and its failures: what makes a figure sound
or not.

A point is marked busy when, while it ran, processes other than its server and its load used more
than BUSY_CORE_PCT of a core (from /proc/stat's user+nice+system time less the two processes' own).
A cell is marked noisy when its repeats spread past its table's threshold (default NOISY_SPREAD_PCT),
and failing when its load counted failures (they are never hidden in a median).
"""
import os
import resource
import time

from .stats import spread_pct

BUSY_CORE_PCT = 25.0
NOISY_SPREAD_PCT = 10.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_jiffies(stat_text=None):
    """(user+nice+system, steal) jiffies of all CPUs from /proc/stat's first line (or `stat_text`)."""
    if stat_text is None:
        try:
            with open("/proc/stat") as f:
                stat_text = f.readline()
        except OSError:
            return None
    fields = stat_text.split()
    if not fields or fields[0] != "cpu":
        return None
    values = [int(x) for x in fields[1:]]
    steal = values[7] if len(values) > 7 else 0
    return values[0] + values[1] + values[2], steal


def children_cpu_s():
    """CPU seconds of the waited-for children so far (the load generators once each has exited)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class PointWatch:
    """Started before a point, finished after it (its load waited for): how much of a core other
    processes used meanwhile."""

    def __init__(self):
        self.jiffies, self.children, self.wall = cpu_jiffies(), children_cpu_s(), time.monotonic()

    def other_core_pct(self, server_cpu_s):
        """Percent of one core that processes other than the server and the load used during the point
        (None when /proc/stat cannot be read); and the steal, in the same unit."""
        now = cpu_jiffies()
        wall = time.monotonic() - self.wall
        if now is None or self.jiffies is None or wall <= 0:
            return None, None
        busy_s = (now[0] - self.jiffies[0]) / CLK_TCK
        load_s = children_cpu_s() - self.children
        other = max(0.0, busy_s - server_cpu_s - load_s)
        return other / wall * 100.0, (now[1] - self.jiffies[1]) / CLK_TCK / wall * 100.0


def cpu_mhz(cpuinfo_text=None):
    """The mean of /proc/cpuinfo's "cpu MHz" lines (None when there are none)."""
    if cpuinfo_text is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpuinfo_text = f.read()
        except OSError:
            return None
    values = [float(line.split(":", 1)[1]) for line in cpuinfo_text.splitlines() if line.startswith("cpu MHz")]
    return round(sum(values) / len(values)) if values else None


def _process_ticks():
    """{pid: (name, utime+stime ticks)} of every process readable now."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.find("(") + 1:text.rfind(")")]
        fields = text[text.rfind(")") + 2:].split()
        out[int(entry)] = (name, int(fields[11]) + int(fields[12]))
    return out


def busy_processes(sample_s=0.5, min_core_pct=10.0):
    """[(name, percent of a core)] of the processes that used more than `min_core_pct` of a core over
    `sample_s` seconds now, busiest first (this one left out)."""
    before = _process_ticks()
    time.sleep(sample_s)  # a sample's length, not a synchronisation
    after = _process_ticks()
    busy = []
    for pid, (name, ticks) in after.items():
        if pid == os.getpid() or pid not in before:
            continue
        pct = (ticks - before[pid][1]) / CLK_TCK / sample_s * 100.0
        if pct > min_core_pct:
            busy.append((name, round(pct)))
    return sorted(busy, key=lambda x: -x[1])


def snapshot(label):
    """The machine now: load average and busy processes, under `label` ("before", "after")."""
    return {f"load_average_{label}": [round(x, 2) for x in os.getloadavg()],
            f"busy_processes_{label}": [f"{name} ({pct}%)" for name, pct in busy_processes()]}


def describe(environment, settings):
    """One line of the run's conditions, printed before its tables."""
    cpu = f"{environment.get('cpu_model', '?')}, {environment.get('cpu_count', '?')} CPUs"
    if environment.get("cpu_mhz"):
        cpu += f" at {environment['cpu_mhz']} MHz"
    pin = (f"server on CPUs {settings['server_cpus']}, load on {settings['load_cpus']}" if settings.get("server_cpus")
           else "not pinned")
    load = " ".join(str(x) for x in environment.get("load_average_before", []))
    busy = ", ".join(environment.get("busy_processes_before", [])) or "none"
    return f"conditions: {cpu}; kernel {environment.get('kernel', '?')}; {pin}; load average {load}; busy: {busy}"


def failures(c):
    """(failed, {kind: count}, answered) over a cell's repeats, from each load's `errors` and
    `responses` (timeouts, non-2xx statuses, connect/read/write errors, gRPC failures)."""
    by_kind, answered = {}, 0
    for r in c.get("repeats", []):
        load = r.get("load") or {}
        answered += load.get("responses") or 0
        for kind, n in (load.get("errors") or {}).items():
            if n:
                by_kind[kind] = by_kind.get(kind, 0) + n
    return sum(by_kind.values()), by_kind, answered


def warnings(table):
    """Lines warning about the table's cells: repeats spread past the threshold, points measured while
    other processes were busy (timed tables only)."""
    limit = table.get("noisy_spread_pct") or NOISY_SPREAD_PCT
    out = []
    for c in table.get("cells", []):
        values = [r.get("value") for r in c.get("repeats", []) if r.get("value") is not None]
        where = f"{table['row_label']}={c['row']} {c['column']}"
        spread = spread_pct(values)
        if len(values) > 1 and spread > limit:
            number = lambda v: f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"
            out.append(f"  WARNING {where}: repeats spread {spread:.0f}% ({number(min(values))}..{number(max(values))} "
                       f"{table.get('unit', '')}): its figure is not sound")
        failed, by_kind, answered = failures(c)
        if failed:
            kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(by_kind.items(), key=lambda x: -x[1]))
            out.append(f"  WARNING {where}: {failed} failed ({kinds}), {answered} answered: availability "
                       f"{answered / (answered + failed) * 100:.1f}%")
        busy = [r["other_core_pct"] for r in c.get("repeats", []) if (r.get("other_core_pct") or 0) > BUSY_CORE_PCT]
        if busy and not table.get("instructions"):  # instruction counts do not feel a busy machine
            out.append(f"  WARNING {where}: {len(busy)} of {len(c['repeats'])} repeats ran while other processes used "
                       f"up to {max(busy):.0f}% of a core: a busy machine")
    return out
