"""Terminal tables shaped like the ones people post (rows: concurrency, columns: modes and peers)."""

from . import conditions
from .results import cell
from .stats import jmh_score


def fmt_value(v):
    if v is None:
        return "-"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def fmt_us(v):
    if v is None:
        return "-"
    return f"{v / 1000:.2f}ms" if v >= 1000 else f"{v:.2f}us"


def fmt_seconds(us):
    return "-" if us is None else f"{us / 1e6:.2f}s"


def fmt_mib(kib):
    return "-" if kib is None else f"{kib / 1024:.1f}MiB"


def cell_text(c, show):
    if c is None:
        return "n/a"
    parts = []
    for key in show:
        if key in ("rps", "value"):
            parts.append(fmt_value(c["value"]))
        elif key == "cpu":
            parts.append(fmt_us(c["cpu_us_per_req"]) + "/req")
        elif key == "p99":
            parts.append("p99 " + fmt_us(c["p99_us"]))
        elif key == "mean":
            parts.append(fmt_seconds(c.get("mean_us")))
        elif key == "rss":
            parts.append(fmt_mib(c.get("peak_rss_kib")))
    failed = conditions.failures(c)[0]
    if failed:
        parts.append(f"!{failed} failed")
    return " ".join(parts)


def grid(title, header, body):
    """ASCII table: a title box over a header row and body rows, every cell centred."""
    widths = [max(len(str(r[i])) for r in [header] + body) + 2 for i in range(len(header))]
    line = "+" + "+".join("-" * w for w in widths) + "+"
    inner = len(line) - 2
    if len(title) + 2 > inner:
        widths[-1] += len(title) + 2 - inner
        line = "+" + "+".join("-" * w for w in widths) + "+"
        inner = len(line) - 2
    row = lambda cells: "|" + "|".join(str(c).center(w) for c, w in zip(cells, widths)) + "|"
    out = ["+" + "-" * inner + "+", "|" + title.center(inner) + "|", line, row(header), line]
    out += [row(r) for r in body]
    out.append(line)
    return "\n".join(out)


JMH_BENCHMARK_PREFIX = "GrpcBenchmark."


def jmh_rows(table):
    """One dict per measured (row, column) of a JMH-layout table, in JMH's order (benchmark, then the
    columns): benchmark, the column's params, mode, count, score, error, units, and the median server CPU
    per operation."""
    out = []
    for row in table["rows"]:
        for col in table["columns"]:
            c = cell(table, row, col["name"])
            if c is None:
                continue
            score, error, count = jmh_score([r.get("value") for r in c["repeats"]])
            params = col.get("params") or {}
            out.append({"benchmark": JMH_BENCHMARK_PREFIX + str(row), "column": col["name"],
                        "direct": params.get("direct", "-"), "transport": params.get("transport", col["name"]),
                        "mode": "thrpt", "count": count, "score": score, "error": error, "units": table["unit"],
                        "cpu_us": c.get("cpu_us_per_req"), "exec_cpu_us": c.get("exec_cpu_us_per_req")})
    return out


def render_jmh(table):
    """The table as JMH prints it (shared/seeds/004):
    Benchmark  (direct)  (transport)  Mode  Cnt  Score  Error  Units, Score ± Error (99.9% CI)."""
    rows = jmh_rows(table)
    header = ["Benchmark", "(direct)", "(transport)", "Mode", "Cnt", "Score", "", "Error", "Units"]
    body = [[r["benchmark"], r["direct"], r["transport"], r["mode"], str(r["count"]),
             "-" if r["score"] is None else f"{r['score']:.3f}", "±",
             "NaN" if r["error"] is None else f"{r['error']:.3f}", r["units"]] for r in rows]
    widths = [max(len(x[i]) for x in [header] + body) for i in range(len(header))]
    left = {0}  # the benchmark name is left-aligned, the rest right-aligned, as JMH does
    lines = ["  ".join(x[i].ljust(widths[i]) if i in left else x[i].rjust(widths[i]) for i in range(len(header)))
             for x in [header] + body]
    cpu = [f"  {r['benchmark'].removeprefix(JMH_BENCHMARK_PREFIX)} {r['column']}: {fmt_us(r['cpu_us'])}/op"
           + (f" (executor threads {r['exec_cpu_us'] * 1000:.0f} ns/op)" if r.get("exec_cpu_us") else "")
           for r in rows if r["cpu_us"] is not None]
    notes = [f"  {c['name']}: {c['note']}" for c in table["columns"] if c.get("note")]
    text = table["title"] + "\n" + "\n".join(line.rstrip() for line in lines)
    if cpu:
        text += "\n  server CPU per operation (median of the repeats):\n" + "\n".join(cpu)
    warn = conditions.warnings(table)
    return text + ("\n" + "\n".join(notes) if notes else "") + ("\n" + "\n".join(warn) if warn else "")


def render(table, show=("rps",)):
    if table.get("layout") == "jmh":
        return render_jmh(table)
    if table.get("show") and list(show) == ["rps"]:
        show = table["show"]
    names = [c["name"] for c in table["columns"]]
    body = [[r] + [cell_text(cell(table, r, n), show) for n in names] for r in table["rows"]]
    text = grid(table["title"], [table["row_label"]] + names, body)
    notes = [f"  {c['name']}: {c['note']}" for c in table["columns"] if c.get("note")]
    legend = ""
    if len(show) > 1 or show[0] != "rps":
        meaning = {"rps": table["unit"], "cpu": "server CPU per request", "p99": "p99 latency",
                   "mean": "mean response time", "rss": "server peak RSS (VmHWM)"}
        legend = f"\n  cells: {', '.join(meaning[k] for k in show)}"
    idle = [c.get("idle_rss_kib") for c in table.get("cells", []) if c.get("idle_rss_kib")]
    if "rss" in show and idle:
        legend += f"; idle RSS {fmt_mib(min(idle))}..{fmt_mib(max(idle))}"
    warn = conditions.warnings(table)
    return text + legend + ("\n" + "\n".join(notes) if notes else "") + ("\n" + "\n".join(warn) if warn else "")
