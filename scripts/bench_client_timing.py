#!/usr/bin/env python3
"""Client timing: 1,000 threads in one worker process, each asking for a fixed 1 s wait before
every request, against a local `throttle-sim serve` with a limit too high to refuse. How much
later than chosen did each request actually leave?

For each thread, from requests.csv: the actual wait before request i is
    sent_i - (sent_{i-1} + latency_{i-1})
(the answer to the previous request arrived, then the thread waited), and the overshoot is that
minus the wait it chose (`waited`). Prints the overshoot's p50, p99 and max in milliseconds.

Usage: python3 scripts/bench_client_timing.py [--threads 1000] [--duration 30s] [--sleep 1s]
                                              [--jitter 0.0]
THROTTLE_SIM=path/to/throttle-sim runs that binary instead of building target/release's.
"""
import argparse
import csv
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("THROTTLE_SIM") or os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "throttle-sim"
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def quantile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1000)
    p.add_argument("--duration", default="30s")
    p.add_argument("--sleep", default="1s")
    p.add_argument("--jitter", default="0.0",
                   help="fixed's jitter: spread the waits so the threads do not wake in bursts")
    args = p.parse_args()
    if not os.environ.get("THROTTLE_SIM"):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    port = free_port()
    server = subprocess.Popen(
        [BIN, "serve", "--addr", f"127.0.0.1:{port}", "--limit", "1000000000", "--period", "1s"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    tmp = tempfile.TemporaryDirectory(prefix="bench-timing-")
    try:
        time.sleep(0.5)
        out = os.path.join(tmp.name, "run")
        subprocess.run(
            [BIN, "client", "--target", f"http://127.0.0.1:{port}/", "--algorithm", "fixed",
             "--set", f"clients.*.sleep={args.sleep}", "--set", f"clients.*.jitter={args.jitter}",
             "--processes", "1",
             "--threads", str(args.threads), "--duration", args.duration,
             "--log-requests", "--quiet", "--out", out],
            check=True, timeout=600,
        )
    finally:
        server.terminate()
        server.wait(timeout=15)
    by_thread = defaultdict(list)
    with tmp, open(os.path.join(out, "requests.csv")) as f:
        for row in csv.DictReader(f):
            by_thread[row["thread"]].append(
                (float(row["t"]), float(row["latency"]), float(row["waited"]), row["status"]))
    overshoot = []
    statuses = defaultdict(int)
    for rows in by_thread.values():
        rows.sort()
        for prev, cur in zip(rows, rows[1:]):
            actual = cur[0] - (prev[0] + prev[1])
            overshoot.append((actual - cur[2]) * 1e3)
        for r in rows:
            statuses[r[3]] += 1
    if not overshoot:
        sys.exit("no consecutive requests recorded")
    overshoot.sort()
    latencies = sorted(r[1] * 1e3 for rows in by_thread.values() for r in rows)
    print(f"{len(by_thread)} threads, {sum(statuses.values())} requests {dict(statuses)}")
    print(f"overshoot of chosen waits: p50 {quantile(overshoot, 0.5):.3f} ms, "
          f"p99 {quantile(overshoot, 0.99):.3f} ms, max {overshoot[-1]:.3f} ms "
          f"(min {overshoot[0]:.3f} ms, n={len(overshoot)})")
    print(f"request latency: p50 {quantile(latencies, 0.5):.3f} ms, p99 {quantile(latencies, 0.99):.3f} ms")


if __name__ == "__main__":
    main()
