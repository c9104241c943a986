"""Runs the tables of a suite: one server per column, warmed up, each row repeated, every process stopped."""
import subprocess
import sys
import time

from . import conditions, instructions
from .load import NOT_BUILT
from .processes import CLK_TCK, ProcessError, free_port, memory_kib
from .stats import median


DEFAULT_REPEAT = 3  # measurements per point unless --repeat or the table says otherwise


class Measurement(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Runner:
    def __init__(self, supervisor, adapter, cpus, repeat, duration, warmup):
        self.sup, self.adapter = supervisor, adapter
        self.server_cpus, self.load_cpus = cpus
        self.repeat, self.duration, self.warmup = repeat, duration, warmup

    def run_table(self, table):
        out = {"id": table.id, "suite": table.suite, "title": table.title, "row_label": table.row_label,
               "rows": table.rows, "metric": table.metric, "unit": table.unit,
               "higher_is_better": table.higher_is_better, "columns": [], "cells": []}
        if table.show:
            out["show"] = table.show
        if table.layout:
            out["layout"] = table.layout
        if table.threshold_pct is not None:
            out["threshold_pct"] = table.threshold_pct
        if table.reference_column is not None:
            out["reference_column"] = table.reference_column
        if table.instructions:
            out["instructions"] = True  # counted under callgrind: a busy machine does not move them
        # What this table ran with (a table may set its own repeats and durations: the run's settings
        # are only the defaults).
        out["settings"] = {"repeat": table.repeat or self.repeat or table.default_repeat or DEFAULT_REPEAT,
                           "duration_s": table.duration or self.duration,
                           "warmup_s": self.warmup if table.warmup is None else table.warmup}
        entries = []
        for column in table.columns:
            entry = {"name": column.name, "command": column.argv, "note": column.note}
            if column.params:
                entry["params"] = column.params
            out["columns"].append(entry)
            adapter = table.loader or self.adapter
            if entry["note"] is None and not adapter.supports(table.load_kind):
                entry["note"] = getattr(adapter, "missing_note", NOT_BUILT)
            entries.append((column, entry))
        if table.interleave_columns:
            self._run_interleaved(table, [(c, e) for c, e in entries if e["note"] is None], out["cells"])
        for column, entry in entries:
            if entry["note"] is None and not table.interleave_columns:
                entry["note"] = self._run_column(table, column, out["cells"])
            if entry["note"]:
                log(f"{table.id} {column.name}: {entry['note']}")
        return out

    def _run_interleaved(self, table, entries, cells):
        """Every column's server runs at once; each round measures every row on every column in turn, so
        that all columns see the same minutes of the machine (the peers' rule: compare what was measured
        together). A column whose server or load fails gets its note and leaves the rounds."""
        repeat = table.repeat or self.repeat or table.default_repeat or DEFAULT_REPEAT
        duration = table.duration or self.duration
        warmup = self.warmup if table.warmup is None else table.warmup
        servers = {}
        try:
            for column, entry in entries:
                try:
                    servers[column.name] = self._start(table, column, warmup)
                except (ProcessError, Measurement, ValueError) as e:
                    entry["note"] = f"n/a: {e}"
            by_cell = {(c.name, row): [] for c, _ in entries for row in table.rows}
            for _ in range(repeat):
                for row in table.rows:
                    for column, entry in entries:
                        if column.name not in servers:
                            continue
                        server, port = servers[column.name]
                        try:
                            by_cell[(column.name, row)].append(self._measure(table, column, server, port, row, duration))
                        except (ProcessError, Measurement, ValueError) as e:
                            entry["note"] = f"n/a: {e}"
                            self.sup.release(servers.pop(column.name)[0], table.stop_grace)
            for column, entry in entries:
                if entry["note"] is not None:
                    continue
                for row in table.rows:
                    cells.append(self._cell(row, column.name, by_cell[(column.name, row)]))
        finally:
            for server, _ in servers.values():
                self.sup.release(server, table.stop_grace)

    @staticmethod
    def _cell(row, column, repeats):
        keys = ("value", "cpu_us_per_req", "exec_cpu_us_per_req", "p99_us", "mean_us", "peak_rss_kib", "idle_rss_kib")
        return {"row": row, "column": column, "repeats": repeats,
                **{k: median([r.get(k) for r in repeats]) for k in keys}}

    def _run_column(self, table, column, cells):
        repeat = table.repeat or self.repeat or table.default_repeat or DEFAULT_REPEAT
        duration = table.duration or self.duration
        warmup = self.warmup if table.warmup is None else table.warmup
        server = None
        try:
            by_row = {row: [] for row in table.rows}
            # Rounds over all rows rather than repeats back to back, so that the spread of a cell's repeats
            # also shows the machine's drift over the run, which is what compare calls noise.
            for _ in range(repeat):
                for row in table.rows:
                    if server is None:
                        server, port = self._start(table, column, warmup, row)
                    by_row[row].append(self._measure(table, column, server, port, row, duration))
                    if table.restart_per_row or table.loops_per_row:
                        self.sup.release(server, table.stop_grace)
                        server = None
            for row, repeats in by_row.items():
                cells.append(self._cell(row, column.name, repeats))
            return None
        except (ProcessError, Measurement, ValueError) as e:
            return f"n/a: {e}"
        finally:
            if server is not None:
                self.sup.release(server, table.stop_grace)

    def server_cpus_for(self, table, row):
        """The CPUs a server runs on: the server's share, or with loops_per_row its first `row` CPUs."""
        if not table.loops_per_row or not self.server_cpus:
            return self.server_cpus
        cpus = self.server_cpus.split(",")
        if row > len(cpus):
            raise Measurement(f"{row} loops need {row} server CPUs; this machine gives the server {len(cpus)}")
        return ",".join(cpus[:row])

    def _start(self, table, column, warmup, row=None):
        port = free_port(table.ports)
        argv = [a.format(port=port, ports=table.ports, loops=row) for a in column.argv]
        server = self.sup.start(f"{table.id}-{column.name}", argv, cpus=self.server_cpus_for(table, row))
        try:
            timeout = 60.0 if table.instructions else 10.0  # valgrind starts slowly
            server.wait_listening(port, timeout=max(timeout, column.start_timeout or 0))
            server.idle_rss_kib = memory_kib(server.pid).get("VmRSS")
            if warmup > 0:
                warmup = max(warmup, column.min_warmup or 0)  # a JVM peer's JIT needs its seconds
                rows = [row] if table.loops_per_row else table.rows if table.warmup_each_row else [max(table.rows)]
                for warm_row in rows:
                    self._measure(table, column, server, port, warm_row, warmup)
        except BaseException:
            self.sup.release(server, table.stop_grace)
            raise
        return server, port

    @staticmethod
    def _callgrind(step, server):
        try:
            return step(server.pid)
        except (instructions.InstructionCountError, OSError, subprocess.TimeoutExpired) as e:
            raise Measurement(f"instruction count: {e}") from e

    def _measure(self, table, column, server, port, row, duration):
        argv, parse = table.load_argv(table.loader or self.adapter, column, port, row, duration)
        if table.precise_cpu:
            ns0, exec0 = server.cpu_ns(), (server.cpu_ns(table.thread_cpu_prefix) if table.thread_cpu_prefix else 0)
        if table.instructions:
            self._callgrind(instructions.zero, server)
        t0, w0 = server.cpu_ticks(), time.monotonic()
        watch = conditions.PointWatch()
        code, stdout = self.sup.run(f"{table.id}-{column.name}-load", argv, cpus=self.load_cpus,
                                    timeout=duration + 60 + (row * 0.05 if isinstance(row, (int, float)) else 0))
        ticks, wall = server.cpu_ticks() - t0, time.monotonic() - w0
        if table.precise_cpu:
            cpu_ns = server.cpu_ns() - ns0
            exec_ns = server.cpu_ns(table.thread_cpu_prefix) - exec0 if table.thread_cpu_prefix else 0
        if not server.alive():
            raise Measurement(f"server exited with {server.popen.returncode}: {server.last_error_line()}")
        if code != 0:
            lines = [l for l in stdout.strip().splitlines() if l.strip()]
            raise Measurement(f"{argv[0]} exited with {code}: {lines[-1] if lines else 'no output'}")
        result = parse(stdout)
        count = result.get(table.count_key) or 0
        if table.instructions:
            total = self._callgrind(instructions.dump_total, server)
            result[table.metric] = total / count if count else None
        cpu_us = ticks / CLK_TCK * 1e6 / count if count else None
        exec_us = None
        if table.precise_cpu and count:
            cpu_us = cpu_ns / 1e3 / count  # exact, where ticks are 10 ms
            # Threads named thread_cpu_prefix (the executors): None when the server has none (direct, peers).
            exec_us = exec_ns / 1e3 / count if table.thread_cpu_prefix and exec_ns > 0 else None
        p99 = (result.get("latency_us") or {}).get("p99")
        value = result.get(table.metric)
        mean = (result.get("latency_us") or {}).get("mean")
        peak_rss = memory_kib(server.pid).get("VmHWM")
        other_pct, steal_pct = watch.other_core_pct(cpu_ns / 1e9 if table.precise_cpu else ticks / CLK_TCK)
        log(f"  {table.id} {column.name} {table.row_label}={row}: {value:.0f} {table.unit}"
            + (f", {cpu_us:.2f} us/req" if cpu_us else "") + (f" (executors {exec_us:.3f})" if exec_us else "")
            + f" ({wall:.1f} s)")
        if value is None:
            raise Measurement(f"{argv[0]} gave no {table.metric}")
        return {"value": value, "cpu_us_per_req": cpu_us, "exec_cpu_us_per_req": exec_us, "p99_us": p99, "mean_us": mean,
                "peak_rss_kib": peak_rss, "idle_rss_kib": getattr(server, "idle_rss_kib", None),
                "server_cpu_s": ticks / CLK_TCK, "other_core_pct": other_pct, "steal_core_pct": steal_pct, "load": result}

