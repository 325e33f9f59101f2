#!/usr/bin/env python3
"""Sim engine benchmark: simulated requests per wall-clock second, peak memory, bytes written.

Runs the release binary on
  (a) heroku_5x5 over 24 h and 48 h (the Heroku GCRA demo client's run, throttled: few
      requests, many ticks);
  (b) "busy": 25, 1,000 and 10,000 threads (processes of 25) against a limit high enough to
      keep them busy and low enough to keep them contended, with series rows every 60 s
      ("on") and with a single tick at the end ("off"); 10,000 threads also over 48 h, since
      peak memory must not grow with the run's length;
  (c) the realistic day: 10,000 threads (400 processes x 25) sharing heroku's 4,500/h for
      24 h, at each `[run] series` level (60 s samples, and the default 10 s for the coarser
      levels; 10 s per thread would be 4.4 GB and is refused without --allow-large-output),
charts off (they are drawn after the run), and prints one line per run: wall time as the
binary reports it, CPU time, M requests/s of wall time, peak resident memory, and the bytes of
series.csv (plus threads.csv at the coarser levels).

The machine's load changes the wall times; compare binaries interleaved (--bin, --runs) and
read the CPU column too.

Usage: python3 scripts/bench_sim.py                     (builds with cargo build --release)
       python3 scripts/bench_sim.py --bin OTHER --runs 3 --only busy
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = os.path.join(TARGET, "release", "throttle-sim")
HEROKU = "scenarios/heroku_5x5.toml"


def busy(threads):
    return [
        f"clients.*.processes={max(1, threads // 25)}",
        f"clients.*.threads={min(threads, 25)}",
        "server.limit=10000000",
        "clients.*.max_limit=10000000.0",
        "expect={}",
    ]


REALISTIC = ["clients.*.processes=400", "clients.*.threads=25", "expect={}"]

# (name, scenario, sets, duration, sample_every or None for the scenario's, series level)
CASES = [
    ("heroku_5x5", HEROKU, [], "24h", None, "thread"),
    ("heroku_5x5", HEROKU, [], "48h", None, "thread"),
]
for threads, duration in [(25, "24h"), (1000, "6h"), (10000, "24h")]:
    for series in ["on", "off"]:
        every = "60s" if series == "on" else duration
        CASES.append((f"busy_{threads}_{series}", HEROKU, busy(threads), duration, every, "thread"))
CASES.append(("busy_10000_on", HEROKU, busy(10000), "48h", "60s", "thread"))
for level, every in [
    ("thread", "60s"),
    ("process", "60s"),
    ("group", "60s"),
    ("process", "10s"),
    ("group", "10s"),
]:
    CASES.append(("realistic_10k", HEROKU, REALISTIC, "24h", every, level))


def run(binary, scenario, sets, duration, every, level):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r")
        cmd = [binary, "run", os.path.join(ROOT, scenario), "--duration", duration, "--no-charts", "--out", out]
        for s in sets:
            cmd += ["--set", s]
        if every:
            cmd += ["--set", f"run.sample_every={every}"]
        if level != "thread":
            cmd += ["--set", f"run.series={level}"]
        with open(os.path.join(tmp, "stderr"), "w+") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
            # wait4 gives this child's own resource usage, peak resident memory included.
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            err.seek(0)
            stderr = err.read()
        if proc.returncode == 2 and "run.series" in stderr:
            return None  # a binary from before `[run] series`
        if proc.returncode not in (0, 1):
            sys.exit(f"{' '.join(cmd)} failed:\n{stderr}")
        m = re.search(r"simulated (\d+) requests in ([\d.]+) s", stderr)
        summary = json.load(open(os.path.join(out, "summary.json")))
        written = sum(
            os.path.getsize(os.path.join(out, f))
            for f in ("series.csv", "threads.csv")
            if os.path.exists(os.path.join(out, f))
        )
        return {
            "requests": int(m.group(1)),
            "wall_s": float(m.group(2)),
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mb": usage.ru_maxrss / 1024,  # kB on Linux
            "series_mb": written / 1e6,
            "ratio_429": summary["ratio_429"],
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", action="append", help="binary to run (repeat to interleave several); default: build and run this tree's")
    ap.add_argument("--runs", type=int, default=1, help="runs of each case per binary (default 1)")
    ap.add_argument("--only", help="only the cases whose name contains this")
    args = ap.parse_args()
    binaries = args.bin
    if not binaries:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        binaries = [BIN]
    print(
        f"{'binary':<14}{'case':<16}{'duration':>9}{'series':>8}{'every':>6}{'requests':>13}"
        f"{'wall s':>8}{'cpu s':>8}{'M req/s':>9}{'peak MB':>9}{'written MB':>12}"
    )
    for name, scenario, sets, duration, every, level in CASES:
        if args.only and args.only not in name:
            continue
        for _ in range(args.runs):
            for binary in binaries:
                r = run(binary, scenario, sets, duration, every, level)
                if r is None:
                    print(f"{os.path.basename(binary)[:13]:<14}{name:<16}{duration:>9}{level:>8}  (no series levels)")
                    continue
                rate = r["requests"] / r["wall_s"] / 1e6
                print(
                    f"{os.path.basename(binary)[:13]:<14}{name:<16}{duration:>9}{level:>8}{every or '':>6}"
                    f"{r['requests']:>13,}{r['wall_s']:>8.2f}{r['cpu_s']:>8.2f}{rate:>9.2f}"
                    f"{r['peak_mb']:>9.1f}{r['series_mb']:>12.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
