#!/usr/bin/env python3
"""The cells of a matrix that no law of independent senders can meet: the `independent` bound's
scan over loads.

`independent` (src/throttle/independent.rs) is told each thread's fair share R/N, as the oracle
is, and sends at `load` times it, each process's threads in line from a random phase, never
reacting to an answer and never lining up with other processes. This script runs
`throttle-sim check FILE` with every client switched to it, once per load, and lists the cells
it misses at every load: there, whatever a law does, as long as its processes send
independently of each other, the targets cannot all be met (many one-thread processes on a
small bucket or a short window are refused more than the targets allow at the utilization they
ask for). For each such cell it shows the load with the fewest second-half 429s among those
that reach 0.97 utilization (else the load with the highest utilization).

Cells it misses on utilization alone, with no 429s, are a start it does not spend (it leaves a
bucket's initial tokens unused), not a floor: they are listed apart.

    python3 scripts/independent_floor.py                       # api_shapes.toml, ~3 minutes
    python3 scripts/independent_floor.py --file scenarios/gauntlet/api_dialects.toml
    python3 scripts/independent_floor.py --bin target/release/throttle-sim --loads 0.97,1,1.03

Standard library only; `check` runs 10 seeds per cell (the file's), so the same build gives
the same table.
"""

import argparse
import json
import subprocess
import sys

DEFAULT_LOADS = "0.96,0.965,0.97,0.975,0.98,0.985,0.99,0.995,1,1.005,1.01,1.015,1.02,1.06,1.1"


def check(binary, path, load, jobs):
    """`check --json` of `path` with every client `independent` at `load`: cell -> verdicts."""
    cmd = [binary, "check", path, "--json",
           "--set", "clients.*.algorithm=independent", "--set", f"clients.*.load={load}"]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    # check exits 1 when a cell misses its targets: that is the result, not a failure.
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode not in (0, 1) or not done.stdout.strip():
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return {r["cell"]: r for r in json.loads(done.stdout)}


def metrics(verdict):
    return {v["metric"]: v for v in verdict["verdicts"]}


def value(m, metric):
    """A judged metric's value, or None where the cell does not judge it."""
    return m[metric]["value"] if metric in m else None


def late(m):
    """The second half's 429 ratio where it is judged, else the whole run's (0 if neither)."""
    for metric in ("ratio_429_late", "ratio_429"):
        if metric in m:
            return m[metric]["value"]
    return 0.0


def utilization(m):
    """Utilization where it is judged; a cell that does not judge it reaches any target."""
    return m["utilization"]["value"] if "utilization" in m else 1.0


def shown(x, scale=1.0, digits=3):
    return "–" if x is None else f"{scale * x:.{digits}f}"


def best(runs, cell):
    """The load with the fewest second-half 429s at utilization >= 0.97, else the load with
    the highest utilization: (load, metrics)."""
    by_load = [(load, metrics(r[cell])) for load, r in runs.items()]
    at_target = [lm for lm in by_load if utilization(lm[1]) >= 0.97]
    if at_target:
        return min(at_target, key=lambda lm: late(lm[1]))
    return max(by_load, key=lambda lm: utilization(lm[1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="throttle-sim", help="the throttle-sim binary")
    ap.add_argument("--file", default="scenarios/gauntlet/api_shapes.toml")
    ap.add_argument("--loads", default=DEFAULT_LOADS, help="comma-separated shares of the rate")
    ap.add_argument("--jobs", type=int, default=0, help="check's --jobs (default: its own)")
    a = ap.parse_args()
    try:
        loads = [float(x) for x in a.loads.split(",")]
    except ValueError:
        ap.error(f"--loads: not a list of numbers: {a.loads}")
    if not loads or any(not load > 0 for load in loads):
        ap.error("--loads: every load must be above 0")
    runs = {}
    for load in loads:
        print(f"load {load:g} ...", file=sys.stderr)
        runs[load] = check(a.bin, a.file, load, a.jobs)
    cells = list(runs[loads[0]])
    missed = [c for c in cells if all(r[c]["outcome"] != "pass" for r in runs.values())]
    floor, start = [], []
    for cell in missed:
        load, m = best(runs, cell)
        failing = [k for k, v in m.items() if not v["pass"]]
        no_429 = all(value(m, k) in (None, 0) for k in ("ratio_429", "ratio_429_late"))
        (start if failing == ["utilization"] and no_429 else floor).append((cell, load, m, failing))
    print(f"{a.file}: independent senders meet {len(cells) - len(missed)} of {len(cells)} cells "
          f"at some load of {len(loads)} ({min(loads):g}-{max(loads):g}); "
          f"{len(floor)} missed at every load, {len(start)} more on the start alone.\n")
    print("| cell | best load | 429 % | second half 429 % | utilization | fairness | misses |")
    print("|---|---|---|---|---|---|---|")
    for cell, load, m, failing in floor:
        print(f"| {cell} | {load:g} | {shown(value(m, 'ratio_429'), 100, 2)} | "
              f"{shown(value(m, 'ratio_429_late'), 100, 2)} | "
              f"{shown(value(m, 'utilization'))} | {shown(value(m, 'fairness'))} | "
              f"{', '.join(failing)} |")
    if start:
        print("\nMissed on utilization alone with no 429s (a bucket's initial tokens left "
              "unspent, not a floor): " + ", ".join(c for c, *_ in start) + ".")


if __name__ == "__main__":
    main()
