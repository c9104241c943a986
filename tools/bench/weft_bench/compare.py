"""Compares two results files cell by cell and flags regressions that exceed the noise.

Rule: change = (new median - base median) / base median, signed so that negative is worse. The noise of
a cell is the sum of the spreads ((max - min) / median) of its base and new repeats. A cell regressed
when it got worse by more than max(threshold, noise); the threshold (default 10%) covers the drift
between two runs on one machine that the spread inside a run does not show.
"""
from .results import cell
from .stats import median, spread_pct
from .tables import grid

DEFAULT_THRESHOLD = 10.0


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
            noise = spread_pct(bv) + spread_pct(nv)
            out.append({"row": row, "column": col, "base": bm, "new": nm, "change_pct": change,
                        "noise_pct": noise, "regression": worse > max(threshold, noise)})
    return out


def compare(base, new, threshold=DEFAULT_THRESHOLD):
    """(report text, number of regressions)."""
    new_tables = {t["id"]: t for t in new["tables"]}
    texts, regressions = [], 0
    for bt in base["tables"]:
        nt = new_tables.get(bt["id"])
        if nt is None:
            texts.append(f"{bt['id']}: not in the new results")
            continue
        rows = compare_cells(bt, nt, threshold)
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
                             f"noise {r['noise_pct']:.1f}%, threshold {threshold:.0f}%)")
    commits = f"base {base['environment'].get('git_commit', '?')[:12]} vs new {new['environment'].get('git_commit', '?')[:12]}"
    summary = f"{regressions} regression(s); {commits}; rule: worse by more than max({threshold:g}%, spread of both)"
    return "\n".join(texts + [summary]), regressions
