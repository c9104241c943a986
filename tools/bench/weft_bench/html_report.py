"""One self-contained HTML report (no network, no external JS): per table a headline (weft's best
column against each peer), a bar chart of the figure with error bars and one of server CPU per
request beside it, the warnings, and the raw numbers; an A-vs-B page coloured by compare's verdicts;
the same tables as Markdown and CSV."""
import csv
import html
import io
import math
import os

from . import compare as compare_mod
from . import conditions
from .results import cell
from .stats import jmh_score, spread_pct
from .tables import fmt_us, fmt_value

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]
W, H, LEFT, RIGHT, TOP, BOTTOM = 600, 300, 64, 12, 16, 64  # two charts side by side fit 1280 px

# Runs in the browser: proves the SVG was parsed as SVG and laid out (the chromium test reads these marks).
CHECK_SCRIPT = """
window.addEventListener('load', function () {
  var charts = document.querySelectorAll('svg.chart'), points = 0, drawn = 0;
  charts.forEach(function (svg) {
    var c = svg.querySelectorAll('[data-value]');
    if (svg.getAttribute('data-metric') === 'figure') points += c.length;
    if (c.length && svg.getBBox().width > 0) drawn++;
  });
  document.body.setAttribute('data-charts-drawn', drawn);
  document.body.setAttribute('data-points', points);
});
"""


def _esc(v):
    return html.escape(str(v), quote=True)


def human(v):
    """A tick label people read: 150k, 1.2M, 0.25, 12."""
    if v == 0:
        return "0"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{suffix}"
    return f"{v:.3g}"


def nice_ticks(top, count=5):
    """Ticks 0..>=top at a step of 1, 2 or 5 x 10^k."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return [step * i for i in range(int(math.ceil(top / step)) + 1)]


def is_weft_column(column):
    command = column.get("command") or []
    return bool(command) and os.path.basename(str(command[0])).startswith("weft")


def series(table, metric):
    """{(row, column): (value, low, high)}: the figure (median; JMH: Score with its Error) or the server
    CPU per request, with the repeats' range as its error bar."""
    out = {}
    jmh = table.get("layout") == "jmh"
    for c in table["cells"]:
        key = "value" if metric == "figure" else "cpu_us_per_req"
        values = [r.get(key) for r in c.get("repeats", []) if r.get(key) is not None]
        if c.get(key) is None or not values:
            continue
        if jmh and metric == "figure":
            score, error, _ = jmh_score(values)
            out[(c["row"], c["column"])] = (score, score - (error or 0), score + (error or 0))
        else:
            out[(c["row"], c["column"])] = (c[key], min(values), max(values))
    return out


def bar_chart(table, metric):
    """Grouped bars (a group per row, a bar per column) with error bars; a log axis when the values span
    more than two orders of magnitude, so that low series are not squashed onto zero."""
    names = [c["name"] for c in table["columns"] if not c.get("note")]
    data = series(table, metric)
    if not names or not data:
        return ""
    unit = table["unit"] if metric == "figure" else "µs server CPU / request"
    lows = [v for _, lo, _ in data.values() for v in (lo,) if v > 0]
    highs = [hi for _, _, hi in data.values()]
    log = bool(lows) and max(highs) / min(lows) > 100
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    if log:
        lo_exp, hi_exp = math.floor(math.log10(min(lows))), math.ceil(math.log10(max(highs)))
        ticks = [10.0 ** e for e in range(lo_exp, hi_exp + 1)]
        y = lambda v: TOP + ph - ph * (math.log10(max(v, ticks[0])) - lo_exp) / max(1, hi_exp - lo_exp)
    else:
        ticks = nice_ticks(max(highs) * 1.05)
        y = lambda v: TOP + ph - ph * v / ticks[-1]
    rows = table["rows"]
    group = pw / len(rows)
    bar = group * 0.8 / len(names)
    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'data-table="{_esc(table["id"])}" data-metric="{metric}" data-scale="{"log" if log else "linear"}">',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#999"/>']
    for t in ticks:
        out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
                   f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end" font-size="11">{human(t)}</text>')
    for i, r in enumerate(rows):
        out.append(f'<text x="{LEFT + group * (i + 0.5):.1f}" y="{TOP + ph + 16}" text-anchor="middle" '
                   f'font-size="11">{_esc(r)}</text>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{TOP + ph + 32}" text-anchor="middle" font-size="12">'
               f'{_esc(table["row_label"])}</text>'
               f'<text x="12" y="{TOP + ph / 2}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 12 {TOP + ph / 2})">{_esc(unit)}{" (log)" if log else ""}</text>')
    for j, name in enumerate(names):
        color = COLORS[j % len(COLORS)]
        for i, r in enumerate(rows):
            if (r, name) not in data:
                continue
            v, lo, hi = data[(r, name)]
            x0 = LEFT + group * i + group * 0.1 + bar * j
            top_y = y(v)
            out.append(f'<rect class="bar" x="{x0:.1f}" y="{top_y:.1f}" width="{bar * 0.9:.1f}" '
                       f'height="{max(0.5, TOP + ph - top_y):.1f}" fill="{color}" data-column="{_esc(name)}" '
                       f'data-row="{_esc(r)}" data-value="{v:.6g}"><title>{_esc(name)} @ {_esc(r)}: {human(v)} '
                       f'{_esc(unit)} ({human(lo)}..{human(hi)})</title></rect>')
            cx = x0 + bar * 0.45
            out.append(f'<line class="error" x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(lo):.1f}" y2="{y(hi):.1f}" '
                       f'stroke="#222"/><line x1="{cx - 3:.1f}" x2="{cx + 3:.1f}" y1="{y(hi):.1f}" y2="{y(hi):.1f}" '
                       f'stroke="#222"/><line x1="{cx - 3:.1f}" x2="{cx + 3:.1f}" y1="{y(lo):.1f}" '
                       f'y2="{y(lo):.1f}" stroke="#222"/>')
    legend_y = TOP + ph + 48
    x_at = LEFT
    for j, name in enumerate(names):
        out.append(f'<rect x="{x_at}" y="{legend_y - 9}" width="10" height="10" fill="{COLORS[j % len(COLORS)]}"/>'
                   f'<text x="{x_at + 14}" y="{legend_y}" font-size="11">{_esc(name)}</text>')
        x_at += 24 + 7 * len(name)
    out.append("</svg>")
    return "\n".join(out)


def headline(table):
    """Weft's best column against each peer, per row: the ratio of throughput (or of the figure, with
    its direction) and of server CPU per request. Empty without both weft and peer columns."""
    cols = [c for c in table["columns"] if not c.get("note")]
    weft = [c["name"] for c in cols if is_weft_column(c)]
    peers = [c["name"] for c in cols if not is_weft_column(c)]
    if not weft or not peers:
        return ""
    better_up = table["higher_is_better"]
    items = []
    for r in table["rows"]:
        measured = [(n, cell(table, r, n)) for n in weft]
        measured = [(n, c) for n, c in measured if c is not None and c.get("value") is not None]
        if not measured:
            continue
        best_name, best = (max if better_up else min)(measured, key=lambda nc: nc[1]["value"])
        for p in peers:
            pc = cell(table, r, p)
            if pc is None or not pc.get("value"):
                continue
            ratio = best["value"] / pc["value"]
            cpu = (f", server CPU per request {best['cpu_us_per_req'] / pc['cpu_us_per_req']:.2f}x"
                   if best.get("cpu_us_per_req") and pc.get("cpu_us_per_req") else "")
            items.append(f"<li>{_esc(table['row_label'])} {_esc(r)}: <b>{_esc(best_name)}</b> vs {_esc(p)}: "
                         f"<b>{ratio:.2f}x</b> the {_esc(table['unit'])}{cpu}</li>")
    return f'<ul class="headline">{"".join(items)}</ul>' if items else ""


def raw_numbers(table):
    names = [c["name"] for c in table["columns"]]
    head = "".join(f"<th>{_esc(n)}</th>" for n in names)
    body = []
    for r in table["rows"]:
        tds = []
        for n in names:
            c = cell(table, r, n)
            if c is None:
                tds.append("<td>n/a</td>")
                continue
            reps = ", ".join(fmt_value(x["value"]) for x in c["repeats"])
            spread = spread_pct([x["value"] for x in c["repeats"]])
            failed, _, answered = conditions.failures(c)
            extra = ""
            if c.get("mean_us") is not None:
                extra += f", mean response {fmt_us(c['mean_us'])}"
            if c.get("peak_rss_kib"):
                extra += f", RSS {c['peak_rss_kib'] / 1024:.1f} MiB"
            if failed:
                extra += f", <b>{failed} failed</b> (availability {answered / (answered + failed) * 100:.1f}%)"
            tds.append(f"<td><b>{fmt_value(c['value'])}</b><br><small>repeats: {reps} (spread {spread:.1f}%)<br>"
                       f"server CPU {fmt_us(c['cpu_us_per_req'])}/req, p99 {fmt_us(c.get('p99_us'))}{extra}</small></td>")
        body.append(f"<tr><th>{_esc(r)}</th>{''.join(tds)}</tr>")
    notes = "".join(f"<li>{_esc(c['name'])}: {_esc(c['note'])}</li>" for c in table["columns"] if c.get("note"))
    return (f'<table class="raw"><tr><th>{_esc(table["row_label"])}</th>{head}</tr>{"".join(body)}</table>'
            + (f"<ul class='notes'>{notes}</ul>" if notes else ""))


def _key_values(d):
    return "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in d.items())


STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1240px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: 3px 7px; text-align: right; vertical-align: top; }
.charts { display: flex; flex-wrap: wrap; gap: 8px; }
.warnings { color: #a40; }
.regression { background: #fcc; } .improvement { background: #cfc; }
.inconclusive { background: #eee; } .no-change { background: #fff; }
section { margin-bottom: 2em; }
"""


def _page(title, body):
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{_esc(title)}</title><style>{STYLE}</style></head>
<body>
{body}
<script>{CHECK_SCRIPT}</script>
</body></html>
"""


def render(results):
    sections = []
    for t in results["tables"]:
        warn = conditions.warnings(t)
        warn_html = "".join(f"<li>{_esc(w.strip())}</li>" for w in warn)
        sections.append(f'<section><h2>{_esc(t["title"])}</h2>{headline(t)}'
                        f'<div class="charts">{bar_chart(t, "figure")}{bar_chart(t, "cpu")}</div>'
                        + (f'<ul class="warnings">{warn_html}</ul>' if warn_html else "") + raw_numbers(t) + "</section>")
    body = (f'<h1>weft-bench report: {_esc(results.get("suite", ""))}</h1>'
            f'<h2>Settings</h2><table>{_key_values(results.get("settings", {}))}</table>'
            + "".join(sections) + f'<h2>Environment</h2><table>{_key_values(results.get("environment", {}))}</table>')
    return _page("weft-bench report", body)


def write(results, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(render(results))


def render_compare(base, new, threshold=None):
    """The A-vs-B page: what differs between the runs, then per table each cell's base, new, change and
    verdict, its row coloured by the verdict."""
    parts = ["<h1>weft-bench compare</h1>"]
    diff = compare_mod.differences(base, new)
    if diff:
        parts.append("<h2>Differences between the runs</h2><ul>" + "".join(f"<li>{_esc(d.strip())}</li>" for d in diff)
                     + "</ul>")
    new_tables = {t["id"]: t for t in new["tables"]}
    for bt in base["tables"]:
        nt = new_tables.get(bt["id"])
        if nt is None:
            continue
        jmh = bt.get("layout") == "jmh"
        here = threshold if threshold is not None else bt.get("threshold_pct") or compare_mod.DEFAULT_THRESHOLD
        rows = compare_mod.compare_jmh_cells(bt, nt, here) if jmh else compare_mod.compare_cells(bt, nt, here)
        if not rows:
            continue
        trs = []
        for r in rows:
            p = "" if r["p"] is None else f" (p={r['p']:.2g})"
            noise = "∞" if math.isinf(r["noise_pct"]) else f"{r['noise_pct']:.1f}"
            trs.append(f'<tr class="{r["verdict"].replace(" ", "-")}"><th>{_esc(r["row"])}</th><td>{_esc(r["column"])}</td>'
                       f'<td>{_esc(r["metric"])}</td><td>{human(r["base"])} {_esc(r["unit"])}</td>'
                       f'<td>{human(r["new"])} {_esc(r["unit"])}</td><td>{r["change_pct"]:+.1f}% ±{noise}</td>'
                       f'<td>{_esc(r["verdict"])}{p}</td></tr>')
        parts.append(f'<section><h2>{_esc(bt["title"])}</h2><p>threshold {here:g}%</p><table>'
                     f'<tr><th>{_esc(bt["row_label"])}</th><th>column</th><th>metric</th><th>base</th><th>new</th>'
                     f'<th>change</th><th>verdict</th></tr>{"".join(trs)}</table></section>')
    return _page("weft-bench compare", "".join(parts))


def write_compare(base, new, path, threshold=None):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(render_compare(base, new, threshold))


def _flat_rows(results):
    """One row per cell: table, row, column, the figure and its unit, spread, server CPU, p99, failures."""
    for t in results["tables"]:
        for c in t["cells"]:
            values = [r.get("value") for r in c.get("repeats", [])]
            yield {"table": t["id"], "row": c["row"], "column": c["column"],
                   "value": c.get("value"), "unit": t["unit"], "spread_pct": round(spread_pct(values), 1),
                   "cpu_us_per_req": c.get("cpu_us_per_req"), "p99_us": c.get("p99_us"),
                   "failed": conditions.failures(c)[0]}


def to_csv(results):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["table", "row", "column", "value", "unit", "spread_pct", "cpu_us_per_req",
                                             "p99_us", "failed"])
    writer.writeheader()
    for row in _flat_rows(results):
        writer.writerow(row)
    return out.getvalue()


def to_markdown(results):
    """Each table as a Markdown table: rows by columns, the figure (and server CPU per request)."""
    out = []
    for t in results["tables"]:
        names = [c["name"] for c in t["columns"]]
        out.append(f"### {t['title']}\n")
        out.append("| " + " | ".join([t["row_label"]] + names) + " |")
        out.append("|" + "---|" * (len(names) + 1))
        for r in t["rows"]:
            cells = []
            for n in names:
                c = cell(t, r, n)
                cells.append("n/a" if c is None or c.get("value") is None else
                             f"{fmt_value(c['value'])} {t['unit']}"
                             + (f" ({fmt_us(c['cpu_us_per_req'])}/req)" if c.get("cpu_us_per_req") else ""))
            out.append("| " + " | ".join([str(r)] + cells) + " |")
        out.append("")
    return "\n".join(out)
