#!/usr/bin/env python3
"""How soon after the last join of scenarios/gauntlet/scale_out.toml are the shares equal again?

    scripts/scale_out_rejoin.py [ALGORITHM]      (default fair-share)

The gauntlet's target for fair-share on scale_out: "back within 5 min of the last join" (3
processes join at 1 h; 2 of them leave at 3 h). `fairness_windowed` averages over 10-minute
windows and the whole run, so this looks closer, over seeds 42-51 (the gauntlet's), from each
run's series.csv:

- rate Jain: Jain's index over the active processes of their per-thread rate (1 / sleep) at
  every 10 s tick; "settled" is the first tick after 1 h from which it stays >= 0.98 until 3 h;
- count Jain: Jain's index over the threads of their 2xx counts in each 5-minute window from
  1 h to 3 h (every thread is active through all of them).

Environment: THROTTLE_SIM (the binary; default release/throttle-sim under $CARGO_TARGET_DIR,
or under target when that is unset). Standard library only; the run folders go to a temporary
directory that is removed at the end.
"""

import collections
import csv
import os
import subprocess
import sys
import tempfile

JOIN, LEAVE, TICK_JAIN, WINDOW = 3600.0, 3 * 3600.0, 0.98, 300.0


def jain(values):
    total = sum(values)
    squares = sum(v * v for v in values)
    return total * total / (len(values) * squares) if squares > 0 else float("nan")


def one_seed(binary, algorithm, seed, out):
    subprocess.run(
        [binary, "run", "scenarios/gauntlet/scale_out.toml", "--seed", str(seed),
         "--out", out, "--quiet", "--no-charts", "--set", f"clients.*.algorithm={algorithm}"],
        check=True, stderr=subprocess.DEVNULL)
    sleeps = collections.defaultdict(dict)
    counts = collections.defaultdict(collections.Counter)
    with open(os.path.join(out, "series.csv")) as f:
        for row in csv.DictReader(f):
            t = float(row["t"])
            if not JOIN < t <= LEAVE:
                continue
            process = (row["group"], row["process"])
            sleeps[t][process] = float(row["sleep"])
            counts[int((t - JOIN - 1e-9) // WINDOW)][(process, row["thread"])] += int(row["ok"])
    settled = None
    for t in sorted(sleeps):
        if jain([1.0 / s for s in sleeps[t].values() if s > 0]) >= TICK_JAIN:
            settled = t if settled is None else settled
        else:
            settled = None
    windows = [jain(list(counts[w].values())) for w in sorted(counts)]
    return (None if settled is None else settled - JOIN), windows


def main():
    algorithm = sys.argv[1] if len(sys.argv) > 1 else "fair-share"
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    binary = os.environ.get("THROTTLE_SIM", os.path.join(target, "release", "throttle-sim"))
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    print(f"{algorithm} on scale_out; seed: s after the join until rate Jain stays >= {TICK_JAIN}"
          f" | 5-min count Jain: first window, lowest, mean (1 h to 3 h)")
    settles, firsts, means = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(42, 52):
            settle, windows = one_seed(binary, algorithm, seed, os.path.join(tmp, str(seed)))
            mean = sum(windows) / len(windows)
            print(f"{seed}: {'never' if settle is None else f'{settle:.0f} s'}"
                  f" | {windows[0]:.3f} {min(windows):.3f} {mean:.3f}")
            if settle is not None:
                settles.append(settle)
            firsts.append(windows[0])
            means.append(mean)
    print(f"settled on {len(settles)} of 10 seeds"
          + (f", {min(settles):.0f} to {max(settles):.0f} s (mean {sum(settles) / len(settles):.0f} s)"
             if settles else "")
          + f"; first 5-min window's count Jain {sum(firsts) / 10:.3f} on the mean,"
          f" all windows {sum(means) / 10:.3f}")


if __name__ == "__main__":
    main()
