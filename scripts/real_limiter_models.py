#!/usr/bin/env python3
"""fair-share (or another algorithm) on the simulator's models of the real limiters that
tests/real starts, judged as tests/real judges a live run: 50 per 5 s, 3 processes x 4 threads,
40 s, measured after the first two periods (429s, utilization of the configured limit, Jain's
fairness over the processes' 2xx, and the longest run of periods in which one process had more
than twice another's 2xx). Means and spreads over SEEDS seeds. Where the limiter states no count
(HAProxy), fair-share is told the quota, 50 per 5 s, as tests/real tells it.

    python3 scripts/real_limiter_models.py                 # every model, 20 seeds
    python3 scripts/real_limiter_models.py --models express,flask-counter --seeds 5

The numbers of crates/fair-share/CHANGELOG.md 0.18.0 come from this script. The
binary: --bin, else THROTTLE_SIM, else ${CARGO_TARGET_DIR:-target}/release/throttle-sim (built
when missing), found as scripts/shapes.py finds it.
Standard library only.
"""
import argparse
import concurrent.futures
import csv
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shapes import binary  # noqa: E402  (--bin, else THROTTLE_SIM, else the release build)

PERIOD = 5.0  # seconds: every model's (longest) window
RATE = 10.0  # the configured limit, requests per second
SKIP_PERIODS = 2
PROCESSES = 3

FIXED = 'kind = "fixed-window"\nlimit = 50\nwindow = "5s"\nstart = "first-request"\n'
MODELS = {
    "express": FIXED + 'headers = "ietf"\nlatency = "1ms"',
    "fastify": FIXED + 'headers = "fastify"\nlatency = "1ms"',
    "flask-fixed": FIXED + 'headers = "flask-limiter"\nlatency = "1.3ms"',
    "flask-moving": 'kind = "sliding-window"\nlimit = 50\nwindow = "5s"\nreset = "oldest"\n'
                    'headers = "flask-limiter"\nlatency = "1.3ms"',
    "flask-counter": 'kind = "sliding-window-counter"\nlimit = 50\nwindow = "5s"\n'
                     'reset = "next-drop"\n'
                     'headers = "flask-limiter"\nlatency = "1.3ms"',
    "flask-two-limits": 'kind = "stacked"\nlimits = [\n'
                        '  { kind = "fixed-window", limit = 20, window = "1s", start = "first-request" },\n'
                        '  { kind = "fixed-window", limit = 50, window = "5s", start = "first-request" },\n'
                        ']\nshows = "first"\nheaders = "flask-limiter"\nlatency = "1.3ms"',
    "haproxy": 'kind = "sliding-window-counter"\nlimit = 50\nwindow = "5s"\nstart = "first-request"\n'
               'refused = "counted"\nheaders = "none"\nlatency = "300us"',
}
# The limiters that state no count: fair-share is told the quota, as tests/real tells it.
TOLD = {"haproxy"}


def scenario(server, algorithm, told=False):
    quota = f'quota = {int(RATE * PERIOD)}\nperiod = "{PERIOD:g}s"\n' if told and algorithm == "fair-share" else ""
    return (f'name = "model"\n[run]\nduration = "40s"\nsample_every = "5s"\n[server]\n{server}\n'
            f'[[clients]]\nname = "client"\nprocesses = {PROCESSES}\nthreads = 4\n'
            f'algorithm = "{algorithm}"\n{quota}')


def one(bin_, file, seed):
    """One seed: (429 share, utilization, fairness, longest lopsided run in periods)."""
    out = Path(tempfile.mkdtemp(prefix="model-"))
    try:
        subprocess.run([bin_, "run", str(file), "--seed", str(seed), "--out", str(out / "o"),
                        "-q", "--no-charts", "--log-requests"], check=True)
        with open(out / "o" / "requests.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if not rows:
        sys.exit(f"{file}: seed {seed} made no requests")
    end = round(max(float(r["t"]) for r in rows) / PERIOD + 0.49) * PERIOD
    start = SKIP_PERIODS * PERIOD
    late = [r for r in rows if float(r["t"]) >= start]
    ok = [r for r in late if r["status"] == "ok"]
    refused = sum(1 for r in late if r["status"] == "limited")
    per_process = [0] * PROCESSES
    for r in ok:
        per_process[int(r["process"])] += 1
    total = sum(per_process)
    fairness = total * total / (PROCESSES * sum(n * n for n in per_process)) if total else 0.0
    periods = [[0] * PROCESSES for _ in range(int(end / PERIOD))]
    for r in rows:
        k = int(float(r["t"]) // PERIOD)
        if r["status"] == "ok" and k < len(periods):
            periods[k][int(r["process"])] += 1
    longest = run = 0
    for p in periods:
        run = run + 1 if max(p) > 2 * min(p) else 0
        longest = max(longest, run)
    return refused / max(1, len(late)), len(ok) / (RATE * (end - start)), fairness, longest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated, of: " + ", ".join(MODELS))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--algorithm", default="fair-share")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--bin", help="the throttle-sim binary")
    a = ap.parse_args()
    names = a.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown or a.seeds < 1 or a.jobs < 1:
        ap.error(f"unknown models {unknown}" if unknown else "--seeds and --jobs must be above 0")
    bin_ = binary(a.bin)
    work = Path(tempfile.mkdtemp(prefix="models-"))
    try:
        for name in names:
            file = work / f"{name}.toml"
            file.write_text(scenario(MODELS[name], a.algorithm, name in TOLD))
            with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
                runs = list(pool.map(lambda s: one(bin_, file, s), range(a.seeds)))
            cols = list(zip(*runs))
            mean = [statistics.mean(c) for c in cols[:3]]
            sd = [statistics.pstdev(c) for c in cols[:3]]
            lopsided = sum(1 for x in cols[3] if x > 2)
            print(f"{name}: 429s {100 * mean[0]:.2f} % ± {100 * sd[0]:.2f}, utilization "
                  f"{mean[1]:.3f} ± {sd[1]:.3f}, fairness {mean[2]:.3f} ± {sd[2]:.3f}, "
                  f"one process over twice another's 2xx for more than 2 periods in {lopsided} "
                  f"of {a.seeds} seeds")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
