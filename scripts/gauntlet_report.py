#!/usr/bin/env python3
"""docs/gauntlet.md and its chart from the compare folders scripts/gauntlet.sh wrote.

    gauntlet_report.py --md OUT.md --svg OUT.svg --seeds N --case=FILE... -- WORKDIR

WORKDIR/<case>/ holds each case's `compare --out` folder (compare.json, compare.md). Standard
library only: the chart is SVG written by hand.
"""

import argparse
import html
import json
import math
import re
import sys
import tomllib
from pathlib import Path

# 20 colours that stay apart on white (one per algorithm; more algorithms reuse them with
# another marker).
PALETTE = [
    "#1f5fa8", "#e0701b", "#2a9a3c", "#c62d2d", "#7b4fb0", "#8a5a44", "#d65aa8", "#6b6b6b",
    "#a8a81b", "#17a5b8", "#0b3d73", "#9c4a00", "#145c22", "#7a1313", "#4a2a70", "#52342a",
    "#8f2f6c", "#333333", "#5f5f00", "#0c6470",
]
# Algorithms drawn larger, outlined and named on the chart: the recommendation and the bound.
HIGHLIGHT = ("fair-share", "oracle")


def load_case(case_file: Path, work: Path):
    stem = case_file.stem
    folder = work / stem
    cmp = json.loads((folder / "compare.json").read_text())
    if "cells" in cmp:
        return load_matrix(case_file, cmp)
    table = [
        line for line in (folder / "compare.md").read_text().splitlines() if line.startswith("|")
    ]
    scenario = tomllib.loads(case_file.read_text())
    groups = scenario.get("clients", [])
    # Churn: a group that joins after the start or leaves before the end. There, fairness over
    # the whole run counts joins and leaves as unfairness; fairness_windowed does not.
    zero = re.compile(r"^\s*0+(\.0*)?\s*[a-z]*\s*$")
    churn = any(not zero.match(str(g.get("start", 0))) or "stop" in g for g in groups)
    return {
        "stem": stem,
        "name": cmp["scenario"],
        "description": " ".join(str(scenario.get("description", "")).split()),
        "churn": churn,
        "compare": cmp,
        "table": table,
        "expect": scenario.get("expect", {}),
    }


SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(text):
    """A duration as the scenario files write it ("15m", "1h", "24h") in seconds."""
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)", str(text)):
        total += float(number) * SECONDS[unit]
    return total


def capacity_class(server):
    """per second, minute, 15 minutes, hour or day: the period the quota is stated over."""
    period = seconds(server.get("period", server.get("window", "1h")))
    for limit, name in [(1, "per second"), (60, "per minute"), (900, "per 15 minutes"),
                        (3600, "per hour")]:
        if period <= limit:
            return name
    return "per day"


def load_matrix(case_file, cmp):
    """A file with [[axes]]: each cell's comparison, and what each level of each axis is."""
    scenario = tomllib.loads(case_file.read_text())
    groups = {}  # (axis, level) -> the groups it counts in: itself, and for servers rule and class
    for axis in scenario.get("axes", []):
        for level in axis["levels"]:
            keys = [f"{axis['name']} {level['name']}"]
            server = level.get("set", {}).get("server")
            if axis["name"] == "server" and isinstance(server, dict):
                keys = [f"rule {server.get('kind', 'gcra')}", capacity_class(server)] + keys
            groups[(axis["name"], level["name"])] = keys
    return {
        "stem": case_file.stem,
        "name": cmp["scenario"],
        "description": " ".join(str(scenario.get("description", "")).split()),
        "matrix": cmp,
        "axes": [a["name"] for a in scenario.get("axes", [])],
        "groups": groups,
    }


def uf(v):
    u, f = mean(v, "utilization"), mean(v, "fairness")
    return None if u is None or f is None else u * f


def matrix_section(m, algorithms):
    """Pass counts per algorithm: overall, per server rule and capacity class, per level of
    every other axis; and each algorithm's worst cell (lowest utilization × fairness)."""
    cells = m["matrix"]["cells"]
    columns = []  # group names in first-seen order
    counts = {}  # (algorithm, group) -> [met, total]
    worst = {}
    for c in cells:
        names = []
        for axis, level in zip(m["axes"], c["levels"]):
            names += m["groups"].get((axis, level), [f"{axis} {level}"])
        for g in ["all"] + names:
            if g not in columns:
                columns.append(g)
        for v in c["comparison"]["variants"]:
            a = v["name"]
            met = v["missed"] == 0
            for g in ["all"] + names:
                t = counts.setdefault((a, g), [0, 0])
                t[0] += met
                t[1] += 1
            score = uf(v)
            if score is not None and (a not in worst or score < worst[a][0]):
                worst[a] = (score, c["cell"], mean(v, "ratio_429"))
    # All, then rules, then capacity classes, then each axis's levels in the file's order.
    classes = ["per second", "per minute", "per 15 minutes", "per hour", "per day"]
    rank = lambda g: (0 if g == "all" else 1 if g.startswith("rule ") else
                      2 + classes.index(g) / 10 if g in classes else 3)
    # Levels in the file's order (the groups were made axis by axis, level by level).
    first = {g: i for i, g in enumerate(columns)}
    order = {keys[-1]: i for i, keys in enumerate(m["groups"].values())}
    columns.sort(key=lambda g: (rank(g), order.get(g, first[g])))
    present = [a for a in algorithms if (a, "all") in counts]
    out = ["", f"### {m['stem']}", ""]
    if m["description"]:
        out += [m["description"], ""]
    out += [
        f"{len(cells)} cells; each entry: cells where the algorithm meets every `[expect]` range "
        "of the cell / cells. Worst cell: the lowest utilization × fairness, with its 429 %.",
        "",
    ]
    # Columns in chunks, so no table is wider than a page.
    chunk = 8
    for start in range(0, len(columns), chunk):
        cols = columns[start:start + chunk]
        out += ["| algorithm | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
        for a in present:
            row = [f"{counts[(a, g)][0]}/{counts[(a, g)][1]}" if (a, g) in counts else "–"
                   for g in cols]
            out.append(f"| {a} | " + " | ".join(row) + " |")
        out.append("")
    out += ["| algorithm | worst cell | utilization × fairness | 429 % |", "|---|---|---|---|"]
    for a in present:
        if a in worst:
            score, cell_name, r = worst[a]
            ratio = "–" if r is None else f"{r * 100:.2f}"
            out.append(f"| {a} | {cell_name} | {score:.3f} | {ratio} |")
    return out


def mean(v, metric):
    m = v["metrics"].get(metric)
    return None if m is None else m["mean"]


def fairness_metric(case):
    return "fairness_windowed" if case["churn"] else "fairness"


def cell(v, case):
    r, u, f = mean(v, "ratio_429"), mean(v, "utilization"), mean(v, fairness_metric(case))
    fmt = lambda x, spec: "–" if x is None else format(x, spec)
    text = f"{fmt(None if r is None else r * 100, '.2f')} / {fmt(u, '.3f')} / {fmt(f, '.3f')}"
    if case["expect"] and v["missed"] == 0:
        text += " ✓"
    return text


def summary_table(cases, algorithms):
    head = "| algorithm | " + " | ".join(c["name"] for c in cases) + " |"
    rule = "|---|" + "---|" * len(cases)
    rows = [head, rule]
    for a in algorithms:
        cells = []
        for c in cases:
            v = next((v for v in c["compare"]["variants"] if v["name"] == a), None)
            cells.append("–" if v is None else cell(v, c))
        rows.append(f"| {a} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def x_pos(ratio_percent):
    """Symmetric-log position in [0, 1] of a 429 ratio in %, linear below 0.01 %."""
    return math.log10(1 + max(ratio_percent, 0.0) / 0.01) / math.log10(1 + 100 / 0.01)


def chart(cases, algorithms, seeds):
    w, h = 1000, 640
    left, right, top, bottom = 70, 230, 50, 60
    pw, ph = w - left - right, h - top - bottom
    y_low = 0.0
    px = lambda r: left + x_pos(r) * pw
    py = lambda f: top + (1 - (f - y_low) / (1 - y_low)) * ph
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="DejaVu Sans, sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left}" y="28" font-size="16">The gauntlet: 429 ratio against fairness, '
        f"one point per algorithm and case (means over {seeds} seeds)</text>",
    ]
    for r in [0, 0.01, 0.1, 1, 10, 100]:
        x = px(r)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{r:g} %</text>')
    for f in [0, 0.2, 0.4, 0.6, 0.8, 1.0]:
        y = py(f)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{f:.1f}</text>')
    out.append(
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>'
    )
    out.append(
        f'<text x="{left + pw / 2}" y="{h - 18}" text-anchor="middle">ratio_429 '
        "(log scale above 0.01 %; better to the left)</text>"
    )
    out.append(
        f'<text transform="translate(20 {top + ph / 2}) rotate(-90)" text-anchor="middle">'
        "fairness (windowed where the population changes; better up)</text>"
    )
    style = {a: (PALETTE[i % len(PALETTE)], i // len(PALETTE)) for i, a in enumerate(algorithms)}
    # Highlighted algorithms last, so they are drawn on top.
    order = [a for a in algorithms if a not in HIGHLIGHT] + [a for a in algorithms if a in HIGHLIGHT]
    for a in order:
        colour, shape = style[a]
        big = a in HIGHLIGHT
        for c in cases:
            v = next((v for v in c["compare"]["variants"] if v["name"] == a), None)
            if v is None:
                continue
            r, f = mean(v, "ratio_429"), mean(v, fairness_metric(c))
            if r is None or f is None:
                continue
            x, y = px(r * 100), py(max(f, y_low))
            tip = html.escape(f"{a} on {c['name']}: {r * 100:.2f} % 429, fairness {f:.3f}")
            size = 6 if big else 4
            stroke = ' stroke="black" stroke-width="1.2"' if big else ' fill-opacity="0.8"'
            if shape == 0:
                mark = f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{size}" fill="{colour}"{stroke}>'
                end = "</circle>"
            else:
                mark = (
                    f'<rect x="{x - size:.1f}" y="{y - size:.1f}" width="{2 * size}" '
                    f'height="{2 * size}" fill="{colour}"{stroke}>'
                )
                end = "</rect>"
            out.append(f"{mark}<title>{tip}</title>{end}")
    ly = top
    for a in algorithms:
        colour, shape = style[a]
        x = left + pw + 20
        if shape == 0:
            out.append(f'<circle cx="{x}" cy="{ly + 6}" r="5" fill="{colour}"/>')
        else:
            out.append(f'<rect x="{x - 5}" y="{ly + 1}" width="10" height="10" fill="{colour}"/>')
        weight = ' font-weight="bold"' if a in HIGHLIGHT else ""
        out.append(f'<text x="{x + 12}" y="{ly + 10}"{weight}>{html.escape(a)}</text>')
        ly += 20
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--md", required=True)
    p.add_argument("--svg", required=True)
    p.add_argument("--seeds", type=int, required=True)
    p.add_argument("--case", action="append", default=[])
    p.add_argument("work")
    args = p.parse_args()
    work = Path(args.work)
    loaded = [load_case(Path(c), work) for c in args.case]
    cases = [c for c in loaded if "matrix" not in c]
    matrices = [c for c in loaded if "matrix" in c]
    if not cases:
        sys.exit("no cases")
    algorithms = []
    for c in cases:
        for v in c["compare"]["variants"]:
            if v["name"] not in algorithms:
                algorithms.append(v["name"])
    svg_path, md_path = Path(args.svg), Path(args.md)
    svg_path.write_text(chart(cases, algorithms, args.seeds))
    try:
        svg_ref = svg_path.resolve().relative_to(md_path.resolve().parent)
    except ValueError:
        svg_ref = svg_path.resolve()

    md = [
        "# The gauntlet",
        "",
        f"Written by `scripts/gauntlet.sh`: every algorithm `throttle-sim list` names, on every "
        f"scenario in `scenarios/gauntlet/`, {args.seeds} seeds each (the scenario's seed and "
        f"the ones after it), in sim mode, with `throttle-sim compare FILE --algorithms <all> "
        f"--seeds {args.seeds}`. Each group of a case runs the algorithm of its row.",
        "",
        "## Summary",
        "",
        "Each cell: 429 % / utilization / fairness, means over the seeds. Fairness is "
        "`fairness_windowed` in the cases whose population changes (marked *churn*), else "
        "`fairness`. ✓: the algorithm meets every `[expect]` range of the case (judged on the "
        "means, as `throttle-sim check` does).",
        "",
        summary_table(cases, algorithms),
        "",
        "Cases: "
        + "; ".join(
            f"[{c['name']}](#{c['stem'].lower()})"
            + (" (*churn*)" if c["churn"] else "")
            for c in cases
        )
        + ".",
        "",
        f"![429 ratio against fairness, one point per algorithm per case]({svg_ref})",
        "",
        "## Cases",
    ]
    for c in cases:
        cmp = c["compare"]
        md += ["", f"### {c['stem']}", ""]
        if c["description"]:
            md += [c["description"], ""]
        if c["expect"]:
            ranges = ", ".join(f"`{k}` in [{lo}, {hi}]" for k, (lo, hi) in c["expect"].items())
            met = [v["name"] for v in cmp["variants"] if v["missed"] == 0]
            md += [
                f"`[expect]`: {ranges}. Met by: {', '.join(met) if met else 'none'}.",
                "",
            ]
        md += c["table"]
        md += ["", "Ranking: " + ", ".join(cmp["ranking"]) + "."]
    if matrices:
        md += [
            "",
            "## The API-shape matrix",
            "",
            "The files with `[[axes]]` stand for one case per cell (a level of every axis); "
            "`throttle-sim check FILE` judges each cell, `throttle-sim compare FILE --cell NAME` "
            "shows one. Each cell's own table and a heat map per metric are in the report "
            "`compare FILE --algorithms …` writes.",
        ]
        for m in matrices:
            md += matrix_section(m, algorithms)
    md += [
        "",
        "## How to read the tables",
        "",
        cases[0]["compare"]["method"],
        "",
    ]
    md_path.write_text("\n".join(md))


if __name__ == "__main__":
    main()
