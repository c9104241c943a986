"""Compares two results files cell by cell and flags regressions that exceed the noise.

Rule: change = (new median - base median) / base median. A cell regressed when it got worse by more than
its noise and by more than the threshold (default 10%). The noise is the part of the change that the
spread of the repeats can explain: from the base median to its worst-side extreme plus from the new
median to its best-side extreme, so "worse than the noise" means every new repeat is worse than every
base repeat. The threshold covers the drift between two runs on one machine that the spread inside
one run does not show.
"""
from .results import cell
from .stats import jmh_score, median
from .tables import JMH_BENCHMARK_PREFIX, grid

DEFAULT_THRESHOLD = 10.0


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


def compare_jmh_cells(base_table, new_table, threshold):
    """For JMH-layout tables (the grpc suite): per cell, each series of _jmh_series (the Score, higher is
    better; CPU per operation, lower is better; as ratios to the reference column's when the table has one)
    compared as a reader of JMH's output does: its mean over the repeats with its 99.9% Error; a change
    counts when the two intervals do not overlap, i.e. it exceeds the sum of both Errors (the noise), and
    exceeds the threshold. One dict per (cell, metric)."""
    out = []
    for row in base_table["rows"]:
        for col in [c["name"] for c in base_table["columns"]]:
            b, n = _jmh_series(base_table, row, col), _jmh_series(new_table, row, col)
            if b is None or n is None:
                continue
            for metric, (bvalues, higher) in b.items():
                if metric not in n:
                    continue
                bs, be, _ = jmh_score(bvalues)
                ns, ne, _ = jmh_score(n[metric][0])
                if not bs or ns is None:
                    continue
                change = (ns - bs) / bs * 100.0
                worse = -change if higher else change
                # Fewer than two repeats: no Error (JMH's NaN), nothing is beyond the noise.
                noise = (be + ne) / bs * 100.0 if be is not None and ne is not None else float("inf")
                out.append({"row": row, "column": col, "metric": metric, "base": bs, "new": ns,
                            "base_error": be, "new_error": ne, "change_pct": change, "noise_pct": noise,
                            "regression": worse > max(threshold, noise)})
    return out


def compare_jmh(bt, nt, threshold):
    """(text, regressions) for one JMH-layout table."""
    rows = compare_jmh_cells(bt, nt, threshold)
    if not rows:
        return f"{bt['id']}: no cell measured in both", 0
    body = []
    for r in rows:
        params = next((c.get("params") or {} for c in bt["columns"] if c["name"] == r["column"]), {})
        err = lambda e: "NaN" if e is None else f"{e:.2g}"
        body.append([JMH_BENCHMARK_PREFIX + str(r["row"]), params.get("direct", "-"), params.get("transport", r["column"]),
                     r["metric"], f"{r['base']:.4g} ± {err(r['base_error'])}", f"{r['new']:.4g} ± {err(r['new_error'])}",
                     f"{r['change_pct']:+.1f}% ±{r['noise_pct']:.1f}" + (" REGRESSION" if r["regression"] else "")])
    ref = f"; score/ref: the Score as ratios to {bt['reference_column']}'s of the same round" if bt.get("reference_column") else ""
    text = grid(f"{bt['title']}: new vs base (score: higher is better, cpu/op: lower is better{ref}; noise: both "
                "99.9% Errors)", ["Benchmark", "(direct)", "(transport)", "metric", "base", "new", "change"], body)
    lines = [text]
    regressions = 0
    for r in rows:
        if r["regression"]:
            regressions += 1
            lines.append(f"  REGRESSION {bt['id']} {r['row']} {r['column']} {r['metric']}: {r['base']:.4g} -> "
                         f"{r['new']:.4g} ({r['change_pct']:+.1f}%, noise {r['noise_pct']:.1f}%, threshold {threshold:g}%)")
    return "\n".join(lines), regressions


def compare_cells(base_table, new_table, threshold=DEFAULT_THRESHOLD):
    """One dict per cell present in both tables: change %, noise %, and whether it regressed."""
    out = []
    better_up = base_table["higher_is_better"]
    for row in base_table["rows"]:
        for col in [c["name"] for c in base_table["columns"]]:
            b, n = cell(base_table, row, col), cell(new_table, row, col)
            if b is None or n is None or not b.get("value") or n.get("value") is None:
                continue
            bv = [r["value"] for r in b["repeats"]]
            nv = [r["value"] for r in n["repeats"]]
            bm, nm = median(bv), median(nv)
            change = (nm - bm) / bm * 100.0
            worse = -change if better_up else change
            if better_up:
                noise = ((bm - min(bv)) + (max(nv) - nm)) / bm * 100.0
            else:
                noise = ((max(bv) - bm) + (nm - min(nv))) / bm * 100.0
            out.append({"row": row, "column": col, "base": bm, "new": nm, "change_pct": change,
                        "noise_pct": noise, "regression": worse > max(threshold, noise)})
    return out


def compare(base, new, threshold=None):
    """(report text, number of regressions). threshold None: each table's own (threshold_pct), else
    DEFAULT_THRESHOLD."""
    new_tables = {t["id"]: t for t in new["tables"]}
    texts, regressions = [], 0
    for bt in base["tables"]:
        nt = new_tables.get(bt["id"])
        if nt is None:
            texts.append(f"{bt['id']}: not in the new results")
            continue
        if bt.get("layout") == "jmh":
            text, n = compare_jmh(bt, nt, threshold if threshold is not None else bt.get("threshold_pct", DEFAULT_THRESHOLD))
            texts.append(text)
            regressions += n
            continue
        threshold_here = threshold if threshold is not None else DEFAULT_THRESHOLD
        rows = compare_cells(bt, nt, threshold_here)
        if not rows:
            texts.append(f"{bt['id']}: no cell measured in both")
            continue
        by_key = {(r["row"], r["column"]): r for r in rows}
        names = [c["name"] for c in bt["columns"] if any(r["column"] == c["name"] for r in rows)]
        body = []
        for row in bt["rows"]:
            line = [row]
            for name in names:
                r = by_key.get((row, name))
                line.append("-" if r is None else
                            f"{r['change_pct']:+.1f}% ±{r['noise_pct']:.1f}" + (" REGRESSION" if r["regression"] else ""))
            body.append(line)
        direction = "higher is better" if bt["higher_is_better"] else "lower is better"
        texts.append(grid(f"{bt['title']}: change new vs base ({direction})", [bt["row_label"]] + names, body))
        for r in rows:
            if r["regression"]:
                regressions += 1
                texts.append(f"  REGRESSION {bt['id']} {r['column']} {bt['row_label']}={r['row']}: "
                             f"{r['base']:.0f} -> {r['new']:.0f} {bt['unit']} ({r['change_pct']:+.1f}%, "
                             f"noise {r['noise_pct']:.1f}%, threshold {threshold_here:.0f}%)")
    commits = f"base {base['environment'].get('git_commit', '?')[:12]} vs new {new['environment'].get('git_commit', '?')[:12]}"
    rule = f"{threshold:g}%" if threshold is not None else "the table's threshold (default " + f"{DEFAULT_THRESHOLD:g}%)"
    summary = f"{regressions} regression(s); {commits}; rule: worse than the noise of the repeats and by more than {rule}"
    return "\n".join(texts + [summary]), regressions
