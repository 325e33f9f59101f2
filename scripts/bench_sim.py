#!/usr/bin/env python3
"""Sim engine benchmark: simulated requests per wall-clock second and peak memory.

Runs the release binary on
  (a) heroku_5x5 over 24 h and 48 h (seed 002's run, throttled: few requests, many ticks), and
  (b) 10,000 threads (400 processes x 25) over 24 h and 48 h against a limit high enough to
      keep them busy and low enough to keep them contended,
with series recording on (charts off: they are drawn after the run), and prints one line per
run. Peak memory must not grow with the
run's length, so each case runs at two durations.

Usage: python3 scripts/bench_sim.py            (builds with cargo build --release first)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "throttle-sim")

CASES = [
    ("heroku_5x5", "scenarios/heroku_5x5.toml", []),
    (
        "10k_threads",
        "scenarios/heroku_5x5.toml",
        [
            "clients.*.processes=400",
            "clients.*.threads=25",
            "server.limit=10000000",
            "clients.*.max_limit=10000000.0",
            "run.sample_every=60s",
            "expect={}",
        ],
    ),
]


def run(scenario, sets, duration):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r")
        cmd = [BIN, "run", os.path.join(ROOT, scenario), "--duration", duration, "--no-charts", "--out", out]
        for s in sets:
            cmd += ["--set", s]
        with open(os.path.join(tmp, "stderr"), "w+") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
            # wait4 gives this child's own resource usage, peak resident memory included.
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            err.seek(0)
            stderr = err.read()
        if proc.returncode not in (0, 1):
            sys.exit(f"{' '.join(cmd)} failed:\n{stderr}")
        m = re.search(r"simulated (\d+) requests in ([\d.]+) s", stderr)
        summary = json.load(open(os.path.join(out, "summary.json")))
        series_mb = os.path.getsize(os.path.join(out, "series.csv")) / 1e6
        return {
            "requests": int(m.group(1)),
            "wall_s": float(m.group(2)),
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mb": usage.ru_maxrss / 1024,  # kB on Linux
            "series_mb": series_mb,
            "ratio_429": summary["ratio_429"],
        }


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    print(f"{'case':<14}{'duration':>9}{'requests':>14}{'wall s':>9}{'M req/s':>9}{'peak MB':>9}{'series MB':>11}")
    for name, scenario, sets in CASES:
        for duration in ["24h", "48h"]:
            r = run(scenario, sets, duration)
            rate = r["requests"] / r["wall_s"] / 1e6
            print(
                f"{name:<14}{duration:>9}{r['requests']:>14,}{r['wall_s']:>9.2f}{rate:>9.2f}"
                f"{r['peak_mb']:>9.1f}{r['series_mb']:>11.1f}"
            )


if __name__ == "__main__":
    main()
