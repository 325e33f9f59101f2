#!/usr/bin/env python3
"""The pass bar of fair-share on generated API shapes: `throttle-sim shapes` draws COUNT shapes
of SEED, every algorithm runs in every shape over the file's 3 seeds, and this prints how
fair-share compares with the `independent` bound and with the other blind algorithms.

    python3 scripts/shapes.py --count 300 --seed 7            # the pass bar's count
    python3 scripts/shapes.py --count 30 --seed 7 --jobs 2    # a quick look
    python3 scripts/shapes.py --count 300 --seed 7 --work results/shapes-7   # keep, resume

Each shape is judged on the targets its level states (docs/shapes.md; the API-shape matrix's),
on the means over its 3 seeds. What is printed, item by item of fair-share's pass bar on
generated shapes:
- in how many shapes fair-share meets the targets among those where `independent` (told its
  fair share, load 1, each process on its own phase) meets them (the bar: 97 %);
- in how many its utilization × fairness (windowed fairness where the fleet churns) is at
  least `independent`'s minus 0.05 (the bar: 99 %), and, where the fleet has at most 5
  processes and `independent` reaches 0.95, at least 0.9; the shapes that miss, with numbers;
- for each other blind algorithm (`throttle-sim list --json`'s `blind`: what a client without
  shared state could run), in how many shapes it reaches utilization 0.9 and beats fair-share
  on both the 429 ratio and utilization × fairness, strictly (the bar: at most 2 % for every
  one of them), and in how many any of them does.
Beside them, a fixed list of fair-share runs (seeds 42 to 44, means) for two items a random
draw reaches too rarely to judge, labelled as such:
- small buckets: one thread alone and one process of 4 threads on a GCRA bucket of 1, 2 and 3
  tokens per second, 30 minutes: utilization at least 0.95 with at most 0.5 % 429s;
- started from nothing: 1 × 1, 3 × 4 and 20 × 5 threads on a fresh key of 100 per minute (a
  sliding window, a fixed window, a GCRA bucket), each run as long as max(3 server periods, 10
  of a thread's fair-share periods N/R): utilization over the last server period at least 0.9,
  at most 1 % 429s over the whole run (no fleet has more threads than the key has tokens, so no
  refusal is forced). `--no-fixed` leaves the list out.
Each item ends in MET or MISSED, and a summary of the verdicts closes the output. Before it, the
first item's counts broken down by rule, by header dialect and by fleet size (one process, 2 to
5, 6 or more; header-less shapes apart, as a blind client's share depends on how many share the
quota): the README's decision table quotes the header-less lines.

How it runs: one `throttle-sim check FILE --cell SHAPE --set clients.*.algorithm=A --json` per
shape and algorithm, `--jobs` of them at a time (default 2), each stopped after `--timeout`
seconds (default 120, for its 3 seeds). Not one `compare FILE` over every cell: a run in which
an algorithm polls at nanosecond intervals while it waits out a long refusal (fair-share did on
one of the first 30 shapes of seed 7: four simulated minutes cost 235 s) would hold the whole
comparison for hours; alone, it is stopped and listed. With `--work DIR` every verdict is kept
there (`runs/SHAPE/ALGORITHM.json`, the fixed list's results folders under `fixed/`) and a
second call with the same DIR reuses them. `--so-far` with the `--work` of a run still under
way reports on the shapes whose every run is already there, and runs nothing.

A change of the law, shape by shape: `--against OLD`, the `--work` of an earlier run of the same
count and seed (the law before the change), takes the other algorithms' runs from OLD where the
work folder has none (only the law is run again: they do not depend on it), and closes the
report with every shape whose fair-share verdict, utilization × fairness (by more than 0.01)
or 429 share (by more than 0.2 points) moved, the largest loss first:

    python3 scripts/shapes.py --count 300 --seed 7 --work old --bin OLD_BIN --no-fixed
    python3 scripts/shapes.py --count 300 --seed 7 --work new --against old --no-fixed

A part of the draw: `--only PATTERN` (a Python regular expression) runs and judges only the
shapes whose name or description it matches, such as every header-less shape (`--only 'none
headers'`), every stacked limit (`--only stack`) or one shape by name (its `+` escaped). The report and the pass
bar's lines then count that part only, and say so (the bar itself is held on the whole draw),
and the fixed list is left out.

Timing on two cores with the release build: 30 shapes × 16 algorithms about 4 minutes, 300
shapes about an hour (seed 7: 60 minutes with other builds sharing the cores; most runs take
milliseconds, the polling algorithms on the 2,000-thread, 48-hour shapes tens of seconds a
seed).

The binary: --bin, else THROTTLE_SIM, else ${CARGO_TARGET_DIR:-target}/release/throttle-sim
(built with `cargo build --release` when missing). Standard library only.
"""

import argparse
import concurrent.futures
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from independent_floor import metrics, value  # noqa: E402  (check's verdicts, read alike)

ROOT = Path(__file__).resolve().parent.parent
LAW, BOUND, ORACLE = "fair-share", "independent", "oracle"
# The pass bar: the shares and margins fair-share is held to.
MEETS_SHARE, UF_SHARE, UF_GAP, BEATEN_SHARE = 0.97, 0.99, 0.05, 0.02
SMALL_FLEET, SMALL_BOUND, SMALL_FLOOR = 5, 0.95, 0.9
BEATING_UTILIZATION = 0.9


def binary(given):
    given = given or os.environ.get("THROTTLE_SIM")
    if given:
        return given
    path = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "throttle-sim"
    if not path.exists():
        subprocess.run(["cargo", "build", "--release"], cwd=ROOT, check=True)
    return str(path)


def blind_algorithms(bin_):
    listing = json.loads(subprocess.run([bin_, "list", "--json"], capture_output=True,
                                        text=True, check=True).stdout)
    return [a for a in listing["blind"] if a != LAW]


def shapes_of(path):
    """Each shape's name, description and fleet, in the file's order."""
    doc = tomllib.loads(path.read_text())
    out = []
    for level in doc["axes"][0]["levels"]:
        clients = level["set"]["clients"]
        out.append({
            "name": level["name"],
            "description": level.get("description", ""),
            "processes": sum(c.get("processes", 1) for c in clients),
            # The header dialect its server speaks (the draw always writes it out).
            "dialect": level["set"]["server"].get("headers", "full"),
            "churn": any("start" in c or "stop" in c for c in clients),
        })
    return out


def run_pair(bin_, file, shape, algorithm, timeout, out):
    """One shape's verdicts for one algorithm (3 seeds), kept in `out`; a run past `timeout`
    is stopped and kept as such."""
    if out.exists():
        return json.loads(out.read_text()) | {"reused": True}
    cmd = [bin_, "check", str(file), "--cell", shape, "--set", f"clients.*.algorithm={algorithm}",
           "--json", "--quiet", "--jobs", "1"]
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        result = {"timeout": timeout}
    else:
        # check exits 1 when the shape misses its targets: that is the result, not a failure.
        if done.returncode not in (0, 1) or not done.stdout.strip():
            sys.exit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        result = json.loads(done.stdout)[0]
    result["seconds"] = round(time.monotonic() - started, 2)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result))
    return result


def run_file(work, shape, algorithm):
    """Where `--work` keeps one algorithm's verdict on one shape."""
    return work / "runs" / shape / f"{algorithm}.json"


def run_all(bin_, file, shapes, algorithms, jobs, timeout, work):
    pairs = [(s["name"], a) for s in shapes for a in algorithms]
    results = {}
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {
            pool.submit(run_pair, bin_, file, s, a, timeout, run_file(work, s, a)): (s, a)
            for s, a in pairs
        }
        for i, f in enumerate(concurrent.futures.as_completed(futures), 1):
            results[futures[f]] = f.result()
            if i % 50 == 0 or i == len(pairs):
                print(f"  {i}/{len(pairs)} runs, {time.monotonic() - started:.0f} s",
                      file=sys.stderr)
    return results


def reuse_others(old, work, shapes, others):
    """Copies the runs of `others` (not the law) kept in `old` into `work`, where it has none."""
    for shape in shapes:
        for algorithm in others:
            src = run_file(old, shape["name"], algorithm)
            dst = run_file(work, shape["name"], algorithm)
            if src.exists() and not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)


# A shape moved where the law's verdict changed, or its utilization × fairness or 429 share by
# more than these (unitless): the spread of a shape's 3-seed means under changes that do not
# touch it is far below them.
MOVED_UF, MOVED_429 = 0.01, 0.002


def moved(old, shapes, judged):
    """The shapes where fair-share moved against the runs kept in `old`, largest loss first."""
    rows = []
    for shape in shapes:
        name = shape["name"]
        path = run_file(old, name, LAW)
        if not path.exists() or (name, LAW) not in judged:
            continue
        before, after = Judged(json.loads(path.read_text())), judged[(name, LAW)]
        if before.uf is None or after.uf is None:
            if before.timeout != after.timeout:
                rows.append((0.0, f"   - {name}: {before.numbers()} → {after.numbers()}"))
            continue
        du, dr = after.uf - before.uf, (after.ratio or 0.0) - (before.ratio or 0.0)
        if before.met == after.met and abs(du) <= MOVED_UF and abs(dr) <= MOVED_429:
            continue
        verdict = lambda j: "met" if j.met else "missed"
        rows.append((du, f"   - {name}: utilization × fairness {before.uf:.3f} → {after.uf:.3f}, "
                         f"429s {100 * (before.ratio or 0):.2f} → {100 * (after.ratio or 0):.2f} %, "
                         f"{verdict(before)} → {verdict(after)}"))
    rows.sort(key=lambda r: r[0])
    gained = sum(1 for d, _ in rows if d > 0)
    head = (f"\nAgainst {old}: fair-share moved in {len(rows)} of {len(shapes)} shapes "
            f"({gained} up, {len(rows) - gained} down or only in its 429s)")
    return [head + (":" if rows else ", none moved.")] + [r for _, r in rows]


class Judged:
    """One algorithm's means on one shape, as check judged them."""

    def __init__(self, result):
        self.timeout = "timeout" in result
        m = {} if self.timeout else metrics(result)
        self.met = not self.timeout and result["outcome"] == "pass"
        self.ratio = value(m, "ratio_429")
        self.late = value(m, "ratio_429_late")
        self.utilization = value(m, "utilization")
        # Windowed fairness where the shape judges it (its fleet churns), else fairness.
        self.fairness_metric = "fairness_windowed" if "fairness_windowed" in m else "fairness"
        self.fairness = value(m, self.fairness_metric)
        self.missed = [k for k, v in m.items() if not v["pass"]]

    @property
    def uf(self):
        if self.timeout or self.utilization is None or self.fairness is None:
            return None
        return self.utilization * self.fairness

    def numbers(self):
        if self.timeout:
            return "did not finish"
        pct = lambda x: "–" if x is None else f"{100 * x:.2f} %"
        num = lambda x: "–" if x is None else f"{x:.3f}"
        text = f"429s {pct(self.ratio)}"
        if self.late is not None:
            text += f" (second half {pct(self.late)})"
        fair = "windowed fairness" if self.fairness_metric == "fairness_windowed" else "fairness"
        text += f", utilization {num(self.utilization)}, {fair} {num(self.fairness)}"
        return text


def share(n, d, bar, most=False):
    """"12 of the 15 (80 %; the bar: 97 %)"."""
    pct = f"{100 * n / d:.0f} %; " if d else ""
    return f"{n} of the {d} ({pct}the bar: {'at most ' if most else ''}{100 * bar:.0f} %)"


def family(name):
    """The rule's family, the second part of a shape's name (`gcra`, `tb`, `fwf`, `nginx`, …)."""
    part = name.split("-")[1]
    return part + ("-churn" if name.endswith("-churn") else "")


def fleet_size(processes):
    """A fleet's size class by its processes: what a blind client's share depends on."""
    return "1 process" if processes == 1 else (
        f"2-{SMALL_FLEET} processes" if processes <= SMALL_FLEET else
        f"{SMALL_FLEET + 1}+ processes")


def verdict(ok):
    return "MET" if ok else "MISSED"


def report(shapes, judged, others, timeout):
    """The pass bar's items on the runs, each with its numbers, its bar and MET or MISSED, the
    shapes that miss listed; then a summary of the verdicts."""
    law = {s["name"]: judged[(s["name"], LAW)] for s in shapes}
    bound = {s["name"]: judged[(s["name"], BOUND)] for s in shapes}
    lines, summary = [], []
    met = lambda a: sum(judged[(s["name"], a)].met for s in shapes)
    lines.append(f"Shapes met: {LAW} {met(LAW)}, {ORACLE} {met(ORACLE)}, {BOUND} {met(BOUND)} "
                 f"of {len(shapes)}.")
    # 1. Targets met where independent meets them.
    where = [s for s in shapes if bound[s["name"]].met]
    misses = [s for s in where if not law[s["name"]].met]
    kept = len(where) - len(misses)
    ok1 = bool(where) and kept >= MEETS_SHARE * len(where)
    lines += ["", f"1. Of the shapes where {BOUND} meets the targets, {LAW} meets them in "
                  f"{share(kept, len(where), MEETS_SHARE)}: {verdict(ok1)}"]
    summary.append(f"1. targets met where {BOUND} meets them: {kept}/{len(where)} "
                   f"(bar {100 * MEETS_SHARE:.0f} %) {verdict(ok1)}")
    for s in misses:
        j = law[s["name"]]
        lines.append(f"   - {s['name']}: {j.numbers()}; missed {', '.join(j.missed) or '–'} "
                     f"(independent: {bound[s['name']].numbers()})")
    # 2. Utilization x fairness against independent's.
    compared, far, small, small_far, no_bound = 0, [], 0, [], []
    for s in shapes:
        ours, theirs = law[s["name"]], bound[s["name"]]
        if theirs.uf is None:
            no_bound.append(s["name"])
            continue
        compared += 1
        if ours.uf is None or ours.uf < theirs.uf - UF_GAP:
            far.append(s)
        if s["processes"] <= SMALL_FLEET and theirs.uf >= SMALL_BOUND:
            small += 1
            if ours.uf is None or ours.uf < SMALL_FLOOR:
                small_far.append(s)
    near = compared - len(far)
    ok2a = bool(compared) and near >= UF_SHARE * compared
    ok2b = not small_far
    lines += ["", f"2a. Its utilization × fairness is at least {BOUND}'s minus {UF_GAP} in "
                  f"{share(near, compared, UF_SHARE)}: {verdict(ok2a)}",
              f"2b. and at least {SMALL_FLOOR} in {small - len(small_far)} of the {small} shapes "
              f"with at most {SMALL_FLEET} processes where {BOUND}'s reaches {SMALL_BOUND} (the "
              f"bar: every one): {verdict(ok2b)}"]
    summary.append(f"2a. utilization × fairness ≥ {BOUND}'s − {UF_GAP}: {near}/{compared} "
                   f"(bar {100 * UF_SHARE:.0f} %) {verdict(ok2a)}")
    summary.append(f"2b. ≥ {SMALL_FLOOR} in fleets of ≤ {SMALL_FLEET} processes where {BOUND} "
                   f"reaches {SMALL_BOUND}: {small - len(small_far)}/{small} (bar: all) "
                   f"{verdict(ok2b)}")
    if far or small_far:
        lines.append("   The shapes that miss either ([2b]: below 0.9 in a small fleet):")
    for s in sorted({x["name"]: x for x in far + small_far}.values(),
                    key=lambda s: (law[s["name"]].uf or 0) - bound[s["name"]].uf):
        ours, theirs = law[s["name"]], bound[s["name"]]
        flag = " [2b]" if s in small_far else ""
        flag += "" if s in far else " (within 0.05 of independent)"
        uf = "–" if ours.uf is None else f"{ours.uf:.3f}"
        lines.append(f"   - {s['name']}{flag}: {uf} against {theirs.uf:.3f} ({LAW} "
                     f"{ours.numbers()}; {BOUND} {theirs.numbers()}); {s['description']}")
    if no_bound:
        lines.append(f"   ({BOUND} did not finish on {', '.join(no_bound)}: not compared)")
    # 3. Another blind algorithm better on both counts: per algorithm, as the bar words it.
    beaten, unknown = {a: [] for a in others}, []
    for s in shapes:
        ours = law[s["name"]]
        if ours.uf is None or ours.ratio is None:
            unknown.append(s["name"])
            continue
        for a in others:
            t = judged[(s["name"], a)]
            if t.uf is None or t.ratio is None or (t.utilization or 0) < BEATING_UTILIZATION:
                continue
            if t.ratio < ours.ratio and t.uf > ours.uf:
                beaten[a].append((s["name"], t, ours))
    judged_n = len(shapes) - len(unknown)
    worst = max(others, key=lambda a: len(beaten[a])) if others else None
    worst_n = len(beaten[worst]) if worst else 0
    ok3 = judged_n > 0 and worst_n <= BEATEN_SHARE * judged_n
    any_shape = len({b[0] for a in others for b in beaten[a]})
    lines += ["", f"3. Another blind algorithm with utilization ≥ {BEATING_UTILIZATION} that "
                  f"beats it on both the 429 ratio and utilization × fairness (both strictly), "
                  f"in the most shapes: "
                  + (f"{worst} in {share(worst_n, judged_n, BEATEN_SHARE, True)}"
                     if worst else "none run")
                  + f": {verdict(ok3)}. Any of them, in {any_shape} of the {judged_n}."]
    summary.append(f"3. shapes the best other blind algorithm beats it in: {worst} "
                   f"{worst_n}/{judged_n} (bar ≤ {100 * BEATEN_SHARE:.0f} %) {verdict(ok3)}")
    for a in sorted(others, key=lambda a: -len(beaten[a])):
        if not beaten[a]:
            continue
        lines.append(f"   {a}, {len(beaten[a])} shapes (429s / utilization × fairness, "
                     f"against {LAW}'s):")
        for name, t, ours in beaten[a]:
            lines.append(f"   - {name}: {100 * t.ratio:.2f} % / {t.uf:.3f} against "
                         f"{100 * ours.ratio:.2f} % / {ours.uf:.3f}")
    if unknown:
        lines.append(f"   ({LAW} did not finish on {', '.join(unknown)}: not compared)")
    # Item 1 broken down three ways, each group as "fair-share / independent meet / shapes".
    def counts(key):
        groups = sorted({key(s) for s in shapes})
        return "   " + ", ".join(
            f"{g} {sum(law[s['name']].met for s in shapes if key(s) == g)}/"
            f"{sum(bound[s['name']].met for s in shapes if key(s) == g)}/"
            f"{sum(key(s) == g for s in shapes)}" for g in groups)
    lines += ["", "Per rule (shapes where fair-share / independent meet the targets / shapes):",
              counts(lambda s: family(s["name"])),
              "Per header dialect (the same counts):", counts(lambda s: s["dialect"]),
              "Per fleet size, header-less shapes apart (the same counts):",
              counts(lambda s: ("no headers, " if s["dialect"] == "none" else "")
                     + fleet_size(s["processes"]))]
    stopped = sorted(f"{s}/{a}" for (s, a), j in judged.items() if j.timeout)
    if stopped:
        lines += ["", f"Stopped after {timeout} s (3 seeds): {', '.join(stopped)}."]
    return "\n".join(lines), summary


# The fixed list beside the generated shapes: two items of the pass bar that a random draw
# reaches too rarely to judge, each a handful of runs of fair-share over FIXED_SEEDS.
FIXED_SEEDS = (42, 43, 44)
# Small buckets: one thread alone and one process of 4 threads on a GCRA bucket of 1, 2 and 3
# tokens per second (a 20 ms latency), 30 minutes: utilization at least 0.95 with at most
# 0.5 % 429s.
SMALL_BUCKETS, SMALL_FLEETS, SMALL_MINUTES = (1, 2, 3), ((1, 1), (1, 4)), 30
SMALL_UTILIZATION, SMALL_429 = 0.95, 0.005
# Started from nothing: a fleet that knows nothing of the key, on a fresh one, must use at least
# 0.9 of one server period by the time max(3 server periods, 10 of a thread's fair-share
# periods N/R) have passed, with at most 1 % 429s over that time. The rules are 100 per minute
# (the quota a 1-minute window holds), the fleets from one thread to as many threads as tokens,
# so no refusal is forced at the start.
START_RULES = (
    ("sliding-window", 'kind = "sliding-window", limit = 100, window = "1m"', 100, 60),
    ("fixed-window", 'kind = "fixed-window", limit = 100, window = "1m"', 100, 60),
    ("gcra", 'kind = "gcra", limit = 100, period = "1m"', 100, 60),
)
START_FLEETS = ((1, 1), (3, 4), (20, 5))
START_UTILIZATION, START_429, START_PERIODS, START_THREAD_PERIODS = 0.9, 0.01, 3, 10
START_SAMPLE_S = 5


def fixed_scenario(name, rule, processes, threads, duration_s, sample_s):
    return (f'name = "{name}"\n'
            f'server = {{ {rule}, latency = "20ms" }}\n'
            f'[[clients]]\nname = "w"\nprocesses = {processes}\nthreads = {threads}\n'
            f'algorithm = "{LAW}"\n'
            f'[run]\nduration = "{duration_s}s"\nsample_every = "{sample_s}s"\n')


def fixed_run(bin_, work, name, seed):
    """One seed of one fixed case (its scenario already in `work`): (summary.json, series.csv's
    rows), kept under `work`."""
    folder = work / "fixed" / f"{name}-{seed}"
    summary = folder / "summary.json"
    if not summary.exists():
        shutil.rmtree(folder, ignore_errors=True)
        file = work / "fixed" / f"{name}.toml"
        subprocess.run([bin_, "run", str(file), "--seed", str(seed), "--out", str(folder),
                        "--quiet", "--no-charts"], check=True, capture_output=True)
    with open(folder / "series.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return json.loads(summary.read_text()), rows


def mean(xs):
    return sum(xs) / len(xs)


def seeds_line(u, r):
    """A case's utilization and 429s: the means over the seeds, each seed's in brackets."""
    return (f"utilization {mean(u):.3f} ({', '.join(f'{x:.3f}' for x in u)}), "
            f"429s {100 * mean(r):.2f} % ({', '.join(f'{100 * x:.2f}' for x in r)})")


def fixed_list(bin_, work, jobs):
    """The small-bucket and start-from-nothing items: their lines and summary lines."""
    cases = []
    for limit in SMALL_BUCKETS:
        for p, t in SMALL_FLEETS:
            name = f"gcra-{limit}ps-{p}x{t}"
            rule = f'kind = "gcra", limit = {limit}, period = "1s"'
            cases.append(("small", name, fixed_scenario(name, rule, p, t, SMALL_MINUTES * 60, 10),
                          None))
    for kind, rule, limit, period in START_RULES:
        for p, t in START_FLEETS:
            rate = limit / period
            span = max(START_PERIODS * period, START_THREAD_PERIODS * p * t / rate)
            span = int(-(-span // START_SAMPLE_S) * START_SAMPLE_S)
            name = f"start-{kind}-{limit}p{period}s-{p}x{t}"
            cases.append(("start", name,
                          fixed_scenario(name, rule, p, t, span, START_SAMPLE_S),
                          (limit, period, span)))
    # Each case's file is written once, before its seeds run side by side.
    (work / "fixed").mkdir(parents=True, exist_ok=True)
    for _, name, text, _ in cases:
        (work / "fixed" / f"{name}.toml").write_text(text)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = {(c[1], seed): pool.submit(fixed_run, bin_, work, c[1], seed)
                for c in cases for seed in FIXED_SEEDS}
        runs = {k: f.result() for k, f in runs.items()}
    lines = ["", f"Fixed list ({LAW}, seeds {', '.join(map(str, FIXED_SEEDS))}, judged on the "
                 f"means; each seed's in brackets):"]
    small_n = start_n = small_met = start_met = 0
    lines.append(f"4. Small buckets, {SMALL_MINUTES} minutes, latency 20 ms: utilization ≥ "
                 f"{SMALL_UTILIZATION} with ≤ {100 * SMALL_429:.1f} % 429s")
    for item, name, _, start in cases:
        summaries = [runs[(name, seed)][0] for seed in FIXED_SEEDS]
        if item == "small":
            u = [x["utilization"] for x in summaries]
            r = [x["ratio_429"] for x in summaries]
            ok = mean(u) >= SMALL_UTILIZATION and mean(r) <= SMALL_429
            small_n += 1
            small_met += ok
            lines.append(f"   - {name}: {seeds_line(u, r)}: {verdict(ok)}")
            continue
        if start_n == 0:
            lines.append(f"5. Started from nothing, latency 20 ms: utilization over the last "
                         f"server period ≥ {START_UTILIZATION} at max({START_PERIODS} server "
                         f"periods, {START_THREAD_PERIODS} N/R), ≤ {100 * START_429:.0f} % 429s "
                         f"until then")
        limit, period, span = start
        u, r = [], []
        for seed in FIXED_SEEDS:
            summary, rows = runs[(name, seed)]
            ok_last = sum(int(row["ok"]) for row in rows
                          if span - period < float(row["t"]) <= span + 1e-9)
            u.append(ok_last / limit)
            r.append(summary["ratio_429"])
        ok = mean(u) >= START_UTILIZATION and mean(r) <= START_429
        start_n += 1
        start_met += ok
        lines.append(f"   - {name}, at {span} s: {seeds_line(u, r)}: {verdict(ok)}")
    summary = [f"4. small buckets (fixed list): {small_met}/{small_n} "
               f"{verdict(small_met == small_n)}",
               f"5. started from nothing (fixed list): {start_met}/{start_n} "
               f"{verdict(start_met == start_n)}"]
    return lines, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=300, help="shapes to draw (default 300)")
    ap.add_argument("--seed", type=int, required=True, help="the seed of the draws")
    ap.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds one shape's 3 seeds of one algorithm may take (default 120)")
    ap.add_argument("--algorithms", help="the other blind algorithms, comma-separated "
                    "(default: every one `list --json` calls blind)")
    ap.add_argument("--work", help="keep the file and every verdict here (reused if present)")
    ap.add_argument("--bin", help="the throttle-sim binary")
    ap.add_argument("--no-fixed", action="store_true",
                    help="skip the fixed list (small buckets, started from nothing)")
    ap.add_argument("--so-far", action="store_true",
                    help="with --work: report on the shapes whose every run is there, run nothing")
    ap.add_argument("--only", metavar="PATTERN",
                    help="run and judge only the shapes whose name or description this regular "
                    "expression matches")
    ap.add_argument("--against", metavar="OLD",
                    help="the --work of an earlier run of the same count and seed: reuse its "
                    "other algorithms' runs, and list the shapes where fair-share moved")
    a = ap.parse_args()
    if a.count < 1 or a.jobs < 1 or a.timeout <= 0:
        ap.error("--count, --jobs and --timeout must be above 0")
    if a.so_far and not a.work:
        ap.error("--so-far reads the runs kept in --work")
    if a.against and not (Path(a.against) / "shapes.toml").is_file():
        ap.error(f"--against {a.against}: no shapes.toml there (not the --work of a run)")
    if a.only is not None:
        try:
            a.only = re.compile(a.only)
        except re.error as e:
            ap.error(f"--only '{a.only}': not a regular expression ({e})")
    bin_ = binary(a.bin)
    others = a.algorithms.split(",") if a.algorithms else blind_algorithms(bin_)
    algorithms = [LAW, ORACLE, BOUND] + [x for x in others if x not in (LAW, ORACLE, BOUND)]
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="shapes-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        summary = passes(a, bin_, algorithms, work)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    part = f" (only the shapes --only '{a.only.pattern}' matches)" if a.only else ""
    print(f"\nPass bar{part}:\n" + "\n".join(f"   {x}" for x in summary))


def passes(a, bin_, algorithms, work):
    """Draw, run and print every item; the summary lines."""
    started = time.monotonic()
    file = work / "shapes.toml"
    if not (a.so_far and file.exists()):  # a run under way reads it: never rewrite it then
        subprocess.run([bin_, "shapes", "--count", str(a.count), "--seed", str(a.seed),
                        "--out", str(file)], check=True, stdout=subprocess.DEVNULL)
    shapes = shapes_of(file)
    if a.only is not None:
        shapes = [s for s in shapes
                  if a.only.search(s["name"]) or a.only.search(s["description"])]
        if not shapes:
            sys.exit(f"--only '{a.only.pattern}': no shape of seed {a.seed} (count {a.count}) "
                     f"matches it")
    old = Path(a.against) if a.against else None
    if old is not None:
        if (old / "shapes.toml").read_bytes() != file.read_bytes():
            sys.exit(f"--against {old}: its shapes are not these (another count, seed or "
                     f"version of `throttle-sim shapes`)")
        reuse_others(old, work, shapes, [x for x in algorithms if x != LAW])
    if a.so_far:
        done = lambda s: all(run_file(work, s["name"], x).exists()
                             for x in algorithms)
        shapes = [s for s in shapes if done(s)]
        print(f"So far: the {len(shapes)} shapes whose every run is in {work}.",
              file=sys.stderr)
    print(f"shapes: {len(shapes)} shapes of seed {a.seed} × {len(algorithms)} algorithms "
          f"({', '.join(algorithms)}), 3 seeds each, {a.jobs} at a time", file=sys.stderr)
    results = run_all(bin_, file, shapes, algorithms, a.jobs, a.timeout, work)
    judged = {k: Judged(v) for k, v in results.items()}
    elapsed = time.monotonic() - started
    reused = sum(bool(v.get("reused")) for v in results.values())
    print(f"throttle-sim shapes --count {a.count} --seed {a.seed}: {len(shapes)} shapes"
          + (f" (those --only '{a.only.pattern}' matches)" if a.only else "")
          + (" (those finished so far)" if a.so_far else "")
          + f", {len(algorithms)} algorithms, 3 seeds each; {elapsed / 60:.1f} minutes with "
          f"{a.jobs} jobs" + (f" ({reused} runs reused from {work})" if reused else "") + ".\n")
    text, summary = report(shapes, judged,
                           [x for x in algorithms if x not in (LAW, ORACLE, BOUND)], a.timeout)
    print(text)
    if old is not None:
        print("\n".join(moved(old, shapes, judged)))
    if not a.no_fixed and not a.so_far and a.only is None:
        lines, more = fixed_list(bin_, work, a.jobs)
        print("\n".join(lines))
        summary += more
    return summary


if __name__ == "__main__":
    main()
