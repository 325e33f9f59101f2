#!/usr/bin/env python3
"""What changed between two runs of `throttle-sim check … --json`: the verdicts of one set of
scenarios (or cells of a file with [[axes]]) judged by two builds, two versions of a client, or
two settings. Prints how many passed before and after, then every scenario whose verdict
changed or one of whose judged metrics moved by more than --tolerance, the verdict's change
first, each metric as before → after.

    throttle-sim check scenarios/gauntlet/api_shapes.toml --json -q > before.json
    (change the law, rebuild)
    throttle-sim check scenarios/gauntlet/api_shapes.toml --json -q > after.json
    python3 scripts/verdicts_diff.py before.json after.json

A scenario is known by its file and cell (or its file and name); those in one run only are
listed apart. Exit 0 whatever moved (it reports, it does not judge); 2 on a file that is not
`check --json`'s output."""

import argparse
import json
import sys


def load(path):
    """{(file, cell or scenario): (outcome, {metric: value})} from one `check --json` output."""
    try:
        with open(path) as f:
            runs = json.load(f)
        out = {}
        for run in runs:
            key = (run["file"], run.get("cell") or run["scenario"])
            out[key] = (run["outcome"], {v["metric"]: v["value"] for v in run["verdicts"]})
        return out
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"verdicts_diff: {path} is not the output of `throttle-sim check --json`: {e}",
              file=sys.stderr)
        sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--tolerance", type=float, default=0.003,
                    help="a metric that moved by no more than this is not listed (default 0.003)")
    a = ap.parse_args()
    before, after = load(a.before), load(a.after)
    both = [k for k in before if k in after]
    passed = lambda runs: sum(runs[k][0] == "pass" for k in both)
    print(f"passed: {passed(before)} → {passed(after)} of {len(both)}")
    moved = []
    for k in both:
        (was, m0), (now, m1) = before[k], after[k]
        metrics = sorted(set(m0) | set(m1))
        shift = max((abs(m0[m] - m1[m]) for m in metrics if m in m0 and m in m1), default=0.0)
        if was != now or shift > a.tolerance or set(m0) != set(m1):
            moved.append((was == now, k, was, now, metrics, m0, m1))
    fmt = lambda m, v: "–" if m not in v else f"{v[m]:.4f}"
    for _, (file, name), was, now, metrics, m0, m1 in sorted(moved, key=lambda x: x[:2]):
        print(f"{file} [{name}]: {was} → {now}; "
              + ", ".join(f"{m} {fmt(m, m0)} → {fmt(m, m1)}" for m in metrics))
    for label, runs, other in (("only before", before, after), ("only after", after, before)):
        for file, name in sorted(k for k in runs if k not in other):
            print(f"{label}: {file} [{name}]")
    if not moved:
        print(f"nothing moved by more than {a.tolerance}")


if __name__ == "__main__":
    main()
