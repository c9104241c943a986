"""One self-contained HTML report: an inline SVG chart per table and the raw numbers (no network, no external JS)."""
import html
import json
import os

from .results import cell
from .stats import spread_pct
from .tables import fmt_us, fmt_value

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]
W, H, LEFT, RIGHT, TOP, BOTTOM = 720, 340, 80, 170, 20, 50

# Runs in the browser: proves the SVG was parsed as SVG and laid out (the chromium test reads these marks).
CHECK_SCRIPT = """
window.addEventListener('load', function () {
  var charts = document.querySelectorAll('svg.chart'), points = 0, drawn = 0;
  charts.forEach(function (svg) {
    var c = svg.querySelectorAll('circle[data-value]');
    points += c.length;
    if (c.length && svg.getBBox().width > 0) drawn++;
  });
  document.body.setAttribute('data-charts-drawn', drawn);
  document.body.setAttribute('data-points', points);
});
"""


def _esc(v):
    return html.escape(str(v), quote=True)


def chart(table):
    names = [c["name"] for c in table["columns"] if not c.get("note")]
    rows = table["rows"]
    values = [c["value"] for c in table["cells"] if c.get("value") is not None]
    if not names or not values:
        return "<p>no data in this table</p>"
    top = max(values) * 1.1
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    x = lambda i: LEFT + (pw * (i + 0.5) / len(rows))
    y = lambda v: TOP + ph - ph * v / top
    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" data-table="{_esc(table["id"])}">',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#999"/>']
    for k in range(5):
        v = top * k / 4
        out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
                   f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11">{fmt_value(v)}</text>')
    for i, r in enumerate(rows):
        out.append(f'<text x="{x(i):.1f}" y="{TOP + ph + 18}" text-anchor="middle" font-size="11">{_esc(r)}</text>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{H - 8}" text-anchor="middle" font-size="12">{_esc(table["row_label"])}</text>'
               f'<text x="14" y="{TOP + ph / 2}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 14 {TOP + ph / 2})">{_esc(table["unit"])}</text>')
    for j, name in enumerate(names):
        color = COLORS[j % len(COLORS)]
        pts = [(x(i), y(c["value"]), r, c["value"]) for i, r in enumerate(rows)
               if (c := cell(table, r, name)) is not None and c.get("value") is not None]
        if len(pts) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for px, py, r, v in pts:
            out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="4" fill="{color}" data-column="{_esc(name)}" '
                       f'data-row="{_esc(r)}" data-value="{v:.6g}"><title>{_esc(name)} @ {_esc(r)}: '
                       f'{fmt_value(v)} {_esc(table["unit"])}</title></circle>')
        ly = TOP + 14 + j * 18
        out.append(f'<rect x="{LEFT + pw + 12}" y="{ly - 9}" width="12" height="12" fill="{color}"/>'
                   f'<text x="{LEFT + pw + 30}" y="{ly + 1}" font-size="12">{_esc(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


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
            tds.append(f"<td><b>{fmt_value(c['value'])}</b><br><small>repeats: {reps} (spread {spread:.1f}%)<br>"
                       f"server CPU {fmt_us(c['cpu_us_per_req'])}/req, p99 {fmt_us(c['p99_us'])}</small></td>")
        body.append(f"<tr><th>{_esc(r)}</th>{''.join(tds)}</tr>")
    notes = "".join(f"<li>{_esc(c['name'])}: {_esc(c['note'])}</li>" for c in table["columns"] if c.get("note"))
    return (f'<table class="raw"><tr><th>{_esc(table["row_label"])}</th>{head}</tr>{"".join(body)}</table>'
            + (f"<ul class='notes'>{notes}</ul>" if notes else ""))


def render(results):
    env = results.get("environment", {})
    env_rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in env.items())
    settings = _esc(json.dumps(results.get("settings", {})))
    sections = "".join(f'<section><h2>{_esc(t["title"])}</h2>{chart(t)}{raw_numbers(t)}</section>'
                       for t in results["tables"])
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>weft-bench report</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; vertical-align: top; }}
section {{ margin-bottom: 2em; }}
</style></head>
<body>
<h1>weft-bench report: {_esc(results.get("suite", ""))}</h1>
<p>settings: <code>{settings}</code></p>
{sections}
<h2>Environment</h2><table>{env_rows}</table>
<script>{CHECK_SCRIPT}</script>
</body></html>
"""


def write(results, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(render(results))
