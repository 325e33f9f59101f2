#!/usr/bin/env python3
"""docs/gauntlet.md and its chart from the compare folders scripts/gauntlet.sh wrote.

    gauntlet_report.py --md OUT.md --svg OUT.svg --seeds N --case=FILE... -- WORKDIR
    gauntlet_report.py --svg OUT.svg --seeds N --from-md docs/gauntlet.md

WORKDIR/<case>/ holds each case's `compare --out` folder (compare.json, compare.md). Standard
library only: the chart is SVG written by hand.
"""

import argparse
import html
import json
import re
import sys
import tomllib
from pathlib import Path

# Algorithms whose rows are outlined and named in bold: the recommendation and the bound.
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


def uf(v, fairness="fairness"):
    u, f = mean(v, "utilization"), mean(v, fairness)
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
    return out + pass_bar(m, algorithms)


def judged_fairness(v):
    """The fairness a cell is judged on: fairness_windowed where its [expect] names it (the
    population changes), else fairness."""
    judged = {e["metric"] for e in v.get("expect") or []}
    return "fairness_windowed" if "fairness_windowed" in judged else "fairness"


def judged_uf(v):
    return uf(v, judged_fairness(v))


# The issue's pass bar for the recommended law on the matrix.
BAR_ALGORITHM, BAR_BOUND, BAR_SHARE, BAR_GAP = "fair-share", "oracle", 0.95, 0.05
# Bounds told what no client knows (the thread count): never counted as another blind algorithm.
BOUNDS = (BAR_BOUND, "independent")


def pass_bar(m, algorithms):
    """The pass bar of fair-share on one matrix file: the share of cells it meets (at least
    95 %), the cells where its utilization × fairness is more than 0.05 below the oracle's,
    and the cells where another blind algorithm beats it on both the 429 ratio and
    utilization × fairness. Fairness is the one each cell is judged on."""
    cells = m["matrix"]["cells"]
    met, far, beaten, compared = 0, [], [], 0
    for c in cells:
        by_name = {v["name"]: v for v in c["comparison"]["variants"]}
        fs = by_name.get(BAR_ALGORITHM)
        if fs is None:
            return []
        met += fs["missed"] == 0
        ours, our_ratio = judged_uf(fs), mean(fs, "ratio_429")
        bound = by_name.get(BAR_BOUND)
        best = None if bound is None else judged_uf(bound)
        if ours is not None and best is not None:
            compared += 1
            if best - ours > BAR_GAP:
                far.append((best - ours, c["cell"], ours, best))
        if ours is None or our_ratio is None:
            continue
        for name, v in by_name.items():
            if name == BAR_ALGORITHM or name in BOUNDS:
                continue
            theirs, their_ratio = judged_uf(v), mean(v, "ratio_429")
            if theirs is not None and their_ratio is not None and \
                    theirs > ours and their_ratio < our_ratio:
                beaten.append((c["cell"], name, their_ratio, theirs, our_ratio, ours))
    others = [a for a in algorithms if a != BAR_ALGORITHM and a not in BOUNDS
              and any(v["name"] == a for v in cells[0]["comparison"]["variants"])]
    out = [
        "",
        f"Pass bar of {BAR_ALGORITHM} on {m['stem']}:",
        "",
        f"- cells met: {met} of {len(cells)} ({100 * met / len(cells):.0f} %; the bar is "
        f"{100 * BAR_SHARE:.0f} %);",
    ]
    if compared:
        out.append(
            f"- utilization × fairness within {BAR_GAP} of the {BAR_BOUND}'s: "
            f"{compared - len(far)} of {compared} cells"
            + ("" if not far else f"; the {min(len(far), 10)} farthest below it:"))
        for gap, name, ours, bound in sorted(far, reverse=True)[:10]:
            out.append(f"  - {name}: {ours:.3f} against {bound:.3f}")
    if others:
        out.append(
            f"- cells where another blind algorithm ({', '.join(others)}) has both fewer 429s "
            f"and a higher utilization × fairness: {len({b[0] for b in beaten})}"
            + ("" if not beaten else
               f" ({len(beaten)} algorithm and cell pairs), the first 10 pairs:"))
        for name, a, r, theirs, our_r, ours in beaten[:10]:
            out.append(f"  - {name}: {a} {r * 100:.2f} % / {theirs:.3f} against "
                       f"{our_r * 100:.2f} % / {ours:.3f}")
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


def score(r, u, f):
    """One number per algorithm and case, higher better, in [0, 1]: the share of requests not
    refused × utilization × fairness (windowed where the population changes); utilization
    counts 1 where the server states no capacity."""
    if r is None or f is None:
        return None
    return max(0.0, min(1.0, (1 - r) * (1.0 if u is None else min(u, 1.0)) * f))


def grid_from_compare(cases):
    """The heat map's data from the compare folders: the cases' names, whether each has
    [expect] ranges, and per (case, algorithm) its means, whether it met them and a tooltip."""
    cells = {}
    for c in cases:
        for v in c["compare"]["variants"]:
            r, u, f = mean(v, "ratio_429"), mean(v, "utilization"), mean(v, fairness_metric(c))
            cells[(c["name"], v["name"])] = {
                "score": score(r, u, f),
                "met": bool(c["expect"]) and v["missed"] == 0,
                "tip": cell(v, c),
            }
    return [(c["name"], bool(c["expect"])) for c in cases], cells


def grid_from_md(text):
    """The same from the summary table of a docs/gauntlet.md this script wrote (each cell
    "429 % / utilization / fairness", ✓ where met), to draw the chart again without running."""
    lines = [l for l in text.splitlines() if l.startswith("| ")]
    head = [x.strip() for x in lines[0].strip("|").split("|")]
    names = head[1:]
    cells, algorithms = {}, []
    for line in lines[1:]:
        row = [x.strip() for x in line.strip("|").split("|")]
        if len(row) != len(head) or " / " not in row[1]:
            break
        a = row[0].strip("*")
        algorithms.append(a)
        for name, text in zip(names, row[1:]):
            parts = text.replace("✓", "").split(" / ")
            num = lambda x: None if x.strip() in ("–", "") else float(x)
            if len(parts) != 3:
                continue
            r, u, f = num(parts[0]), num(parts[1]), num(parts[2])
            cells[(name, a)] = {
                "score": score(None if r is None else r / 100, u, f),
                "met": "✓" in text,
                "tip": text,
            }
    has_expect = {n: any(cells.get((n, a), {}).get("met") for a in algorithms) for n in names}
    return [(n, has_expect[n]) for n in names], cells, algorithms


def heat(x):
    """A colour for a score: dark red at 0 through amber to green at 1 (perceived steps even
    enough to read 0.7 from 0.9)."""
    stops = [(0.0, (165, 0, 38)), (0.5, (244, 109, 67)), (0.8, (254, 224, 139)),
             (0.9, (166, 217, 106)), (1.0, (26, 152, 80))]
    for (x0, c0), (x1, c1) in zip(stops, stops[1:]):
        if x <= x1:
            t = 0 if x1 == x0 else (x - x0) / (x1 - x0)
            rgb = [round(a + (b - a) * t) for a, b in zip(c0, c1)]
            return "#%02x%02x%02x" % tuple(rgb)
    return "#%02x%02x%02x" % stops[-1][1]


def chart(cases, cells, algorithms, seeds):
    """A heat map: a row per algorithm (those that meet the most cases first, fair-share and
    the oracle marked), a column per case; each cell coloured by its score, with the score
    written in it and a tick where the algorithm meets every [expect] range of the case.
    `cases`: (name, has [expect]) in order; `cells`: grid_from_compare's or grid_from_md's."""

    def met(a, c):
        return cells.get((c[0], a), {}).get("met", False)

    def total(a):
        scores = [cells[(c[0], a)]["score"] for c in cases if (c[0], a) in cells]
        scores = [x for x in scores if x is not None]
        return sum(scores) / len(scores) if scores else 0.0

    rows = sorted(algorithms, key=lambda a: (-sum(met(a, c) for c in cases), -total(a)))
    cw, rh = 40, 24
    left, top = 150, 190
    w = left + cw * len(cases) + 140
    h = top + rh * len(rows) + 80
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="DejaVu Sans, sans-serif" font-size="11">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="10" y="24" font-size="16">The gauntlet: which algorithm is best where '
        f"(means over {seeds} seeds)</text>",
        '<text x="10" y="44" font-size="12">Each cell: (1 − 429 ratio) × utilization × '
        "fairness (windowed where the population changes), 1 = no 429s, full use, equal "
        "shares;</text>",
        '<text x="10" y="60" font-size="12">✓ the algorithm meets every [expect] range of the '
        "case. Rows: most cases met first.</text>",
    ]
    for j, c in enumerate(cases):
        x = left + j * cw + cw / 2
        out.append(
            f'<text transform="translate({x + 4:.1f} {top - 8}) rotate(-60)">'
            f"{html.escape(c[0])}</text>"
        )
    for i, a in enumerate(rows):
        y = top + i * rh
        bold = a in HIGHLIGHT
        weight = ' font-weight="bold"' if bold else ""
        n_met = sum(met(a, c) for c in cases)
        out.append(
            f'<text x="{left - 8}" y="{y + rh / 2 + 4:.1f}" text-anchor="end"{weight}>'
            f"{html.escape(a)}</text>"
        )
        for j, c in enumerate(cases):
            x = left + j * cw
            got = cells.get((c[0], a))
            sc = None if got is None else got["score"]
            fill = "#eeeeee" if sc is None else heat(sc)
            tip = a + " on " + c[0]
            if got is not None:
                tip += ": " + got["tip"]
            out.append(
                f'<rect x="{x}" y="{y}" width="{cw - 1}" height="{rh - 1}" fill="{fill}">'
                f"<title>{html.escape(tip)}</title></rect>"
            )
            if sc is not None:
                ink = "white" if sc < 0.45 else "black"
                text = ("✓" if met(a, c) else "") + f"{sc:.2f}".lstrip("0")
                out.append(
                    f'<text x="{x + (cw - 1) / 2:.1f}" y="{y + rh / 2 + 4:.1f}" '
                    f'text-anchor="middle" font-size="10" fill="{ink}">{text}</text>'
                )
        out.append(
            f'<text x="{left + len(cases) * cw + 8}" y="{y + rh / 2 + 4:.1f}"{weight}>'
            f"{n_met} of {sum(1 for c in cases if c[1])} met</text>"
        )
        if bold:
            out.append(
                f'<rect x="{left - 1}" y="{y - 1}" width="{len(cases) * cw + 1}" '
                f'height="{rh + 1}" fill="none" stroke="black" stroke-width="2"/>'
            )
    ky = top + rh * len(rows) + 30
    out.append(f'<text x="{left}" y="{ky + 12}">score</text>')
    for k, x in enumerate([0.0, 0.25, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0]):
        kx = left + 50 + k * 44
        out.append(f'<rect x="{kx}" y="{ky}" width="42" height="16" fill="{heat(x)}"/>')
        ink = "white" if x < 0.45 else "black"
        out.append(
            f'<text x="{kx + 21}" y="{ky + 12}" text-anchor="middle" font-size="10" '
            f'fill="{ink}">{x:g}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


MATRIX_INTRO = (
    "The files with `[[axes]]` stand for one case per cell (a level of every axis); "
    "`throttle-sim check FILE` judges each cell, `throttle-sim compare FILE --cell NAME` "
    "shows one. Each cell's own table and a heat map per metric are in the report "
    "`compare FILE --algorithms …` writes."
)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--md")
    p.add_argument("--svg", required=True)
    p.add_argument("--seeds", type=int, required=True)
    p.add_argument("--case", action="append", default=[])
    p.add_argument(
        "--from-md",
        help="only draw the chart again from the summary table of this gauntlet.md",
    )
    p.add_argument("work", nargs="?")
    args = p.parse_args()
    if args.from_md:
        names, cells, algorithms = grid_from_md(Path(args.from_md).read_text())
        Path(args.svg).write_text(chart(names, cells, algorithms, args.seeds))
        return
    if not args.md or not args.work:
        sys.exit("--md and WORKDIR are needed (or --from-md)")
    work = Path(args.work)
    loaded = [load_case(Path(c), work) for c in args.case]
    cases = [c for c in loaded if "matrix" not in c]
    matrices = [c for c in loaded if "matrix" in c]
    if not cases and not matrices:
        sys.exit("no cases")
    algorithms = []
    for c in cases:
        for v in c["compare"]["variants"]:
            if v["name"] not in algorithms:
                algorithms.append(v["name"])
    svg_path, md_path = Path(args.svg), Path(args.md)
    if not cases:
        # Matrix files alone (GAUNTLET_DIR holding only them): their section, no chart.
        for m in matrices:
            for c in m["matrix"]["cells"]:
                for v in c["comparison"]["variants"]:
                    if v["name"] not in algorithms:
                        algorithms.append(v["name"])
        md = ["## Cells met per rule, capacity class and fleet", "", MATRIX_INTRO]
        for m in matrices:
            md += matrix_section(m, algorithms)
        md_path.write_text("\n".join(md) + "\n")
        return
    names, cells = grid_from_compare(cases)
    svg_path.write_text(chart(names, cells, algorithms, args.seeds))
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
        f"![which algorithm is best where: a heat map of every algorithm on every case]({svg_ref})",
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
            MATRIX_INTRO,
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
