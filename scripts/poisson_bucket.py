#!/usr/bin/env python3
"""What a token bucket refuses when its requests come at random: the floor under any law whose
senders do not line up with each other.

Many independent one-thread processes (the matrix's 200x1 and 500+500x1 fleets) send at random
phases, so together they arrive close to a Poisson stream. This script sends such a stream at a
fraction `load` of the refill into a bucket of `B` tokens (full at the start) and prints the
utilization (successes over the refill's capacity) and the share of requests refused. No law
that keeps its senders independent does better on both at once; see docs/fair-share-notes.md.

    python3 scripts/poisson_bucket.py                 # buckets 5, 20, 100; loads 0.9-1.05
    python3 scripts/poisson_bucket.py --bucket 10 --load 0.97 --requests 1000000

Standard library only; the same seed gives the same numbers.
"""

import argparse
import random


def run(bucket, load, requests, seed):
    """Utilization and refused share of `requests` Poisson arrivals at `load` times the refill
    (refill 1 per unit of time) into a bucket of `bucket` tokens."""
    draw = random.Random(seed)
    level, now, ok = float(bucket), 0.0, 0
    for _ in range(requests):
        gap = draw.expovariate(load)
        now += gap
        level = min(float(bucket), level + gap)
        if level >= 1.0:
            level -= 1.0
            ok += 1
    return ok / now, (requests - ok) / requests


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bucket", type=int, action="append", help="tokens (repeatable)")
    ap.add_argument("--load", type=float, action="append", help="arrivals per refill (repeatable)")
    ap.add_argument("--requests", type=int, default=400_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.requests < 1:
        ap.error("--requests must be at least 1")
    for name, values in (("--bucket", a.bucket or []), ("--load", a.load or [])):
        if any(v <= 0 for v in values):
            ap.error(f"{name} must be above 0")
    print("| bucket | load | utilization | refused |")
    print("|---|---|---|---|")
    for bucket in a.bucket or [5, 20, 100]:
        for load in a.load or [0.9, 0.95, 0.97, 1.0, 1.05]:
            utilization, refused = run(bucket, load, a.requests, a.seed)
            print(f"| {bucket} | {load:.2f} | {utilization:.3f} | {100 * refused:.2f} % |")


if __name__ == "__main__":
    main()
