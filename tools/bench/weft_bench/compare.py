"""Compares two results files cell by cell and flags regressions that exceed the noise.

Rule: change = (new median - base median) / base median. A cell regressed when it got worse by more than
its noise and by more than the threshold (default 10%). The noise is the part of the change that the
spread of the repeats can explain: from the base median to its worst-side extreme plus from the new
median to its best-side extreme, so "worse than the noise" means every new repeat is worse than every
base repeat. The threshold covers the drift between two runs on one machine that the spread inside
one run does not show.
"""
from .results import cell
from .stats import median
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
            if better_up:
                noise = ((bm - min(bv)) + (max(nv) - nm)) / bm * 100.0
            else:
                noise = ((max(bv) - bm) + (nm - min(nv))) / bm * 100.0
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
    summary = f"{regressions} regression(s); {commits}; rule: worse than the noise of the repeats and by more than {threshold:g}%"
    return "\n".join(texts + [summary]), regressions
