"""Compares two results files cell by cell, as a decision: each cell is a regression, an improvement,
no change, or inconclusive (benchstat's manner), with the evidence for it.

The evidence. Median tables: change = (new median - base median) / base median; its noise is the part
of the change the spread of the repeats can explain (from the base median to its worse-side extreme
plus from the new median to its better-side extreme), so a change beyond the noise means every new
repeat is on that side of every base repeat. JMH tables (the grpc suite): the means with their 99.9%
Errors; the noise is the sum of both Errors (the intervals are disjoint beyond it). Every cell also
gets the Mann-Whitney U test's two-sided p-value of its repeats (with three repeats a side, 0.1 is the
strongest it can say: every repeat of one run beyond every repeat of the other).

The verdict, with T the threshold (the drift between two runs on one machine that the spread inside
one run does not show):
- regression / improvement: the change is beyond its noise and beyond T, worse / better;
- no change: the change is beyond its noise but within T, or all the change the noise allows
  (|change| + noise) is within T;
- inconclusive: neither: the runs cannot tell (more repeats, longer points or a quieter machine can).
"""
import math

from .results import cell
from .stats import jmh_score, median
from .tables import JMH_BENCHMARK_PREFIX

DEFAULT_THRESHOLD = 10.0
REGRESSION, IMPROVEMENT, NO_CHANGE, INCONCLUSIVE = "regression", "improvement", "no change", "inconclusive"
WIDTH = 120  # the report fits a terminal this wide


def mann_whitney_p(xs, ys):
    """Two-sided p-value of the Mann-Whitney U test of two samples: exact (ties given half a count,
    the distribution without ties), or None when a sample is empty."""
    xs, ys = [x for x in xs if x is not None], [y for y in ys if y is not None]
    m, n = len(xs), len(ys)
    if m == 0 or n == 0:
        return None
    u = sum((x > y) + 0.5 * (x == y) for x in xs for y in ys)
    # counts[k]: the orderings of m x's and n y's with U = k (the x's above y's), by the recurrence
    # f(m, n, k) = f(m - 1, n, k - n) + f(m, n - 1, k), built up over n for each m.
    counts = _u_counts(m, n)
    total = math.comb(m + n, m)
    lo = min(u, m * n - u)
    tail = sum(c for k, c in enumerate(counts) if k <= lo + 1e-9)
    return min(1.0, 2.0 * tail / total)


def _u_counts(m, n):
    table = {(0, j): [1] for j in range(n + 1)}
    for i in range(1, m + 1):
        table[(i, 0)] = [1]
        for j in range(1, n + 1):
            a, b = table[(i - 1, j)], table[(i, j - 1)]  # the largest is an x (adds j to U), or a y
            out = [0] * (i * j + 1)
            for k, c in enumerate(a):
                out[k + j] += c
            for k, c in enumerate(b):
                out[k] += c
            table[(i, j)] = out
    return table[(m, n)]


def verdict(change, noise, threshold, higher_is_better):
    """The decision for one cell (see the module's text)."""
    if noise is None or math.isinf(noise):
        return INCONCLUSIVE
    better = change if higher_is_better else -change
    if abs(change) > noise:
        if abs(change) <= threshold:
            return NO_CHANGE
        return IMPROVEMENT if better > 0 else REGRESSION
    return NO_CHANGE if abs(change) + noise <= threshold else INCONCLUSIVE


def _jmh_series(table, row, column):
    """{metric: (values per repeat, higher_is_better)} of one cell of a JMH-layout table: its Score and server
    CPU per operation, and its executors' CPU per operation when measured. With the table's reference
    column (grpc++) measured in the same rounds, the Score is divided, repeat by repeat, by the reference's
    Score of that round: what the machine's load did to the throughput of both cancels (the peers' rule:
    compare ratios taken together). CPU per operation is compared as it is: CPU time already leaves out
    the time other work held the CPU, and the reference's own CPU per operation moves with how its load
    drives it (grpc++'s doubled between two runs of one hour while weft's moved 10%), so dividing by it
    only adds its noise. None for the reference column itself (the yardstick)."""
    c = cell(table, row, column)
    if c is None:
        return None
    ref_name = table.get("reference_column")
    ref = cell(table, row, ref_name) if ref_name else None
    if ref_name and column == ref_name:
        return None
    get = lambda cc, key: [r.get(key) for r in cc["repeats"]]
    raw = {"score": (get(c, "value"), True), "cpu/op": (get(c, "cpu_us_per_req"), False)}
    if any(v is not None for v in get(c, "exec_cpu_us_per_req")):
        raw["executor cpu/op"] = (get(c, "exec_cpu_us_per_req"), False)
    if ref is None or len(ref["repeats"]) != len(c["repeats"]):
        return raw
    ratio = lambda xs, ys: [x / y if x is not None and y else None for x, y in zip(xs, ys)]
    out = {"score/ref": (ratio(raw["score"][0], get(ref, "value")), True)}
    out.update((metric, series) for metric, series in raw.items() if metric != "score")
    return out


def _jmh_unit(table, metric):
    return "" if metric == "score/ref" else "µs" if "cpu/op" in metric else table.get("unit", "")


def compare_jmh_cells(base_table, new_table, threshold):
    """For JMH-layout tables (the grpc suite): per cell, each series of _jmh_series (the Score, higher is
    better; CPU per operation, lower is better; as ratios to the reference column's when the table has one)
    compared as a reader of JMH's output does: its mean over the repeats with its 99.9% Error; the noise is
    the sum of both Errors. One dict per (cell, metric)."""
    out = []
    for row in base_table["rows"]:
        for col in [c["name"] for c in base_table["columns"]]:
            b, n = _jmh_series(base_table, row, col), _jmh_series(new_table, row, col)
            if b is None or n is None:
                continue
            for metric, (bvalues, higher) in b.items():
                if metric not in n:
                    continue
                bs, be, bn = jmh_score(bvalues)
                ns, ne, nn = jmh_score(n[metric][0])
                if not bs or ns is None:
                    continue
                change = (ns - bs) / bs * 100.0
                # Fewer than two repeats: no Error (JMH's NaN), nothing is beyond the noise.
                noise = (be + ne) / bs * 100.0 if be is not None and ne is not None else float("inf")
                v = verdict(change, noise, threshold, higher)
                out.append({"row": row, "column": col, "metric": metric, "unit": _jmh_unit(base_table, metric),
                            "base": bs, "new": ns, "base_error": be, "new_error": ne, "change_pct": change,
                            "noise_pct": noise, "p": mann_whitney_p(bvalues, n[metric][0]), "n": (bn, nn),
                            "verdict": v, "regression": v == REGRESSION})
    return out


def compare_cells(base_table, new_table, threshold=DEFAULT_THRESHOLD):
    """One dict per cell present in both median tables: medians, change %, noise %, p, verdict."""
    out = []
    better_up = base_table["higher_is_better"]
    for row in base_table["rows"]:
        for col in [c["name"] for c in base_table["columns"]]:
            b, n = cell(base_table, row, col), cell(new_table, row, col)
            if b is None or n is None or not b.get("value") or n.get("value") is None:
                continue
            bv = [r["value"] for r in b["repeats"] if r.get("value") is not None]
            nv = [r["value"] for r in n["repeats"] if r.get("value") is not None]
            bm, nm = median(bv), median(nv)
            if not bm or nm is None:
                continue
            change = (nm - bm) / bm * 100.0
            if better_up:
                noise = ((bm - min(bv)) + (max(nv) - nm)) / bm * 100.0
            else:
                noise = ((max(bv) - bm) + (nm - min(nv))) / bm * 100.0
            v = verdict(change, noise, threshold, better_up)
            out.append({"row": row, "column": col, "metric": base_table.get("metric", "value"),
                        "unit": base_table.get("unit", ""), "base": bm, "new": nm, "change_pct": change,
                        "noise_pct": noise, "p": mann_whitney_p(bv, nv), "n": (len(bv), len(nv)),
                        "verdict": v, "regression": v == REGRESSION})
    return out


def _number(x, unit):
    text = f"{x:.4g}"
    if "e" in text:  # 4 significant digits without an exponent
        text = f"{x:.0f}"
    return f"{text} {unit}".strip()


def _line(cells, widths):
    return "  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()


def render_rows(title, rows, threshold, jmh=False):
    """The cells of one table, a line each: what was measured, base, new, the change with its noise, and
    the verdict with its p-value; at most WIDTH columns."""
    header = ["cell", "metric", "base", "new", "change", "verdict"]
    body = []
    for r in rows:
        name = (JMH_BENCHMARK_PREFIX + str(r["row"]) if jmh else str(r["row"])) + " " + str(r["column"])
        base, new = _number(r["base"], r["unit"]), _number(r["new"], r["unit"])
        if jmh:
            err = lambda e: "NaN" if e is None else f"{e:.2g}"
            base, new = f"{base} ±{err(r['base_error'])}", f"{new} ±{err(r['new_error'])}"
        noise = "∞" if math.isinf(r["noise_pct"]) else f"{r['noise_pct']:.1f}"
        p = "" if r["p"] is None else f" p={r['p']:.2g} n={r['n'][0]}+{r['n'][1]}"
        body.append([name, r["metric"], base, new, f"{r['change_pct']:+.1f}% ±{noise}", r["verdict"] + p])
    widths = [max(len(str(line[i])) for line in [header] + body) for i in range(len(header))]
    over = sum(widths) + 2 * (len(widths) - 1) - WIDTH
    if over > 0:  # the cell's name gives way (it is first and the rest is fixed-width numbers)
        cut = max(12, widths[0] - over)
        for line in body:
            if len(line[0]) > cut:
                line[0] = line[0][:cut - 1] + "…"
        widths[0] = cut
    out = [title, _line(header, widths)]
    out += [_line(line, widths) for line in body]
    out.append(f"  (threshold {threshold:g}%)")
    return "\n".join(out)


def differences(base, new):
    """Lines naming what differs between the two runs' settings and environments (what the reader must
    weigh before the numbers)."""
    out = []
    if base.get("suite") != new.get("suite"):
        out.append(f"  suite: {base.get('suite')} -> {new.get('suite')}")
    for section in ("settings", "environment"):
        b, n = base.get(section) or {}, new.get(section) or {}
        for key in sorted(set(b) | set(n)):
            if b.get(key) != n.get(key):
                show = lambda v: str(v) if len(str(v)) <= 40 else str(v)[:39] + "…"
                out.append(f"  {section}.{key}: {show(b.get(key))} -> {show(n.get(key))}")
    return out


def compare(base, new, threshold=None):
    """(report text, counts by verdict). threshold None: each table's own (threshold_pct), else
    DEFAULT_THRESHOLD. counts[REGRESSION] is the number of regressions; counts["shared"] the cells
    compared (0: the runs share nothing to compare)."""
    new_tables = {t["id"]: t for t in new["tables"]}
    counts = {REGRESSION: 0, IMPROVEMENT: 0, NO_CHANGE: 0, INCONCLUSIVE: 0, "shared": 0}
    texts = []
    diff = differences(base, new)
    if diff:
        texts.append("Differences between the runs (weigh them first):")
        texts.extend(diff)
    thresholds = set()
    for bt in base["tables"]:
        nt = new_tables.get(bt["id"])
        if nt is None:
            texts.append(f"{bt['id']}: not in the new results")
            continue
        if bt.get("settings") != nt.get("settings"):
            texts.append(f"{bt['id']}: measured with {bt.get('settings')} in the base, {nt.get('settings')} in the new")
        jmh = bt.get("layout") == "jmh"
        here = threshold if threshold is not None else bt.get("threshold_pct") or DEFAULT_THRESHOLD
        rows = compare_jmh_cells(bt, nt, here) if jmh else compare_cells(bt, nt, here)
        if not rows:
            texts.append(f"{bt['id']}: no cell measured in both")
            continue
        thresholds.add(here)
        direction = "higher is better" if bt["higher_is_better"] else "lower is better"
        if jmh:
            direction = "score: higher is better, cpu/op: lower is better"
            if bt.get("reference_column"):
                direction += f"; score/ref: the Score as ratios to {bt['reference_column']}'s of the same round"
        title = f"{bt['title']} [{bt['id']}, {bt['row_label']} then column; {direction}]"
        texts.append(render_rows(title, rows, here, jmh))
        for r in rows:
            counts[r["verdict"]] += 1
            counts["shared"] += 1
            if r["regression"]:
                texts.append(f"  REGRESSION {bt['id']} {r['row']} {r['column']} {r['metric']}: "
                             f"{_number(r['base'], r['unit'])} -> {_number(r['new'], r['unit'])} "
                             f"({r['change_pct']:+.1f}%, noise {r['noise_pct']:.1f}%, threshold {here:g}%)")
    for nt in new["tables"]:
        if nt["id"] not in {t["id"] for t in base["tables"]}:
            texts.append(f"{nt['id']}: not in the base results")
    commits = f"base {base['environment'].get('git_commit', '?')[:12]} vs new {new['environment'].get('git_commit', '?')[:12]}"
    rule = "/".join(f"{t:g}%" for t in sorted(thresholds)) or "-"
    if counts["shared"] == 0:
        summary = f"nothing to compare: the runs share no measured cell; {commits}"
    else:
        summary = (f"{counts[REGRESSION]} regression(s), {counts[IMPROVEMENT]} improvement(s), "
                   f"{counts[NO_CHANGE]} no change, {counts[INCONCLUSIVE]} inconclusive of {counts['shared']}; "
                   f"{commits}; threshold {rule}")
    return "\n".join(texts + [summary]), counts
