#!/usr/bin/env python3
"""Drive the Python port of fair-share against a URL, or replay an event script through it.

    python3 ports/python/drive.py --url http://127.0.0.1:9292/ --processes 2 --threads 4 --seconds 20
    python3 ports/python/drive.py --replay ports/scripts/SCRIPT.json
    python3 ports/python/drive.py --answers ports/answers.json

The driver starts P OS processes of T threads; each process shares one FairShare among its
threads, each thread keeps one connection alive and sends GETs with `X-Client-Id:
GROUP/pP/tT` for S seconds of wall time (a request in flight is finished), then the parent
prints one JSON line of the counts: `requests` the answered ones (as `serve --record` counts
them), `ok` 2xx, `limited` 429s, `errors` any other status, `transport_errors` no answer. It
exits 0 if at least one request was answered. `--quota/--period` are in real time.

The replay prints `{"waits": [...]}`: the wait (integer nanoseconds, 0 = send) of every `wait`
event of the script (ports/README.md describes the format), for the cross-check with the Rust
library. `--answers` prints `{"readings": [...]}`: every answer of the fixture as the port reads
it (its class, remaining count, limit, Retry-After, policy and reset, times in nanoseconds), for
the cross-check with the library's Answer::read.
"""

import argparse, http.client, json, multiprocessing, os, queue, sys, threading, time, urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fair_share  # noqa: E402

COUNTS = ("requests", "ok", "limited", "errors", "transport_errors")


def thread_loop(law, thread, args, process, start, end, counts, lock):
    url = urllib.parse.urlsplit(args.url)
    kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    path = (url.path or "/") + ("?" + url.query if url.query else "")
    who = {"X-Client-Id": f"{args.group}/p{process}/t{thread}"}
    conn, mine = None, dict.fromkeys(COUNTS, 0)
    while True:
        now = time.monotonic_ns()
        if now >= end:
            break
        wait = law.wait_ns(thread, now - start)
        if wait:
            time.sleep(min(wait, end - now) / 1e9)
            continue
        sent = time.monotonic_ns()
        try:
            conn = conn or kind(url.hostname, url.port, timeout=args.timeout)
            conn.request("GET", path, headers=who)
            answer = conn.getresponse()
            answer.read()
            status, headers = answer.status, answer.getheaders()
            if answer.will_close:
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            if conn is not None:
                conn.close()
            conn, status, headers = None, None, ()
        got = time.monotonic_ns()
        kind_of = law.observe_ns(thread, got - start, status, headers, got - sent)
        if status is None:
            mine["transport_errors"] += 1
        else:
            mine["requests"] += 1
            mine[{fair_share.OK: "ok", fair_share.LIMITED: "limited"}.get(kind_of, "errors")] += 1
    if conn is not None:
        conn.close()
    with lock:
        for k in COUNTS:
            counts[k] += mine[k]


def process_main(args, process, end, results):
    law = fair_share.FairShare(args.threads, **args.params)
    counts, lock, start = dict.fromkeys(COUNTS, 0), threading.Lock(), time.monotonic_ns()
    threads = [threading.Thread(target=thread_loop, args=(law, t, args, process, start, end, counts, lock))
               for t in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.put(counts)


def param(text):
    name, eq, value = text.partition("=")
    if not eq or name not in fair_share.DEFAULTS:
        raise argparse.ArgumentTypeError(f"{text!r}: give name=value with a fair-share parameter's name")
    try:
        return name, int(value) if name == "min_samples" else float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: {value!r} is not a number")


def script_draws(random):
    """A script's `random` as the law's random(): one number every draw returns, or a list the
    draws go round in order."""
    import itertools

    units = [float(u) for u in random] if isinstance(random, list) else [float(random)]
    if not units:
        raise ValueError("random is an empty list")
    return itertools.cycle(units).__next__


def replay(path):
    try:
        with open(path) as f:
            script = json.load(f)
        law = fair_share.FairShare(int(script["threads"]), random=script_draws(script.get("random", 0.5)),
                                   **script.get("params", {}))
        waits = []
        for i, e in enumerate(script["events"]):
            if e["do"] == "wait":
                waits.append(law.wait_ns(e["thread"], e["at"]))
            elif e["do"] == "answer":
                unix = e.get("unix")
                law.observe_ns(e["thread"], e["at"], e.get("status"), [tuple(h) for h in e.get("headers", [])],
                               e.get("latency", 0), None if unix is None else unix * fair_share.NS)
            else:
                raise ValueError(f"event {i}: `do` must be wait or answer (got {e['do']!r})")
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        sys.exit(f"drive.py --replay {path}: {type(e).__name__}: {e}")
    print(json.dumps({"waits": waits}, separators=(",", ":")))


def answers(path):
    """Each answer of a fixture (ports/answers.json) as read_answer reads it, one JSON line."""
    try:
        with open(path) as f:
            cases = json.load(f)["answers"]
        readings = []
        for case in cases:
            cls, remaining, limit, retry_after, policy, reset, _ = fair_share.read_answer(
                case["status"], [tuple(h) for h in case["headers"]], 0, case["wall"])
            readings.append(dict(status=cls, remaining=remaining, limit=limit, retry_after=retry_after,
                                 policy=None if policy is None else dict(limit=policy[0], window=policy[1]),
                                 reset=reset))
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        sys.exit(f"drive.py --answers {path}: {type(e).__name__}: {e}")
    print(json.dumps({"readings": readings}, separators=(",", ":")))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--replay", metavar="SCRIPT", help="replay an event script and print the waits")
    p.add_argument("--answers", metavar="FIXTURE", help="read every answer of a fixture and print the readings")
    p.add_argument("--url")
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--quota", type=float, help="requests per --period (real time); default: the server's")
    p.add_argument("--period", type=float, help="seconds")
    p.add_argument("--group", default="python")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for an answer")
    p.add_argument("--param", type=param, action="append", default=[], metavar="NAME=VALUE")
    args = p.parse_args()
    if args.replay:
        return replay(args.replay)
    if args.answers:
        return answers(args.answers)
    if not args.url or args.processes < 1 or args.threads < 1 or not args.seconds > 0:
        p.error("give --url, and --processes, --threads and --seconds above 0")
    url = urllib.parse.urlsplit(args.url)
    try:
        url.port
    except ValueError as e:
        p.error(f"--url {args.url}: {e}")
    if url.scheme not in ("http", "https") or not url.hostname:
        p.error(f"--url {args.url}: give an http:// or https:// URL with a host")
    args.params = dict(args.param)
    if args.quota is not None or args.period is not None:
        args.params.update(quota=args.quota, period=args.period)
    try:
        fair_share.FairShare(args.threads, **args.params)
    except ValueError as e:
        p.error(str(e))
    end = time.monotonic_ns() + int(args.seconds * 1e9)
    results = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=process_main, args=(args, i, end, results))
             for i in range(args.processes)]
    for proc in procs:
        proc.start()
    total = dict.fromkeys(COUNTS, 0)
    for _ in procs:
        try:
            counts = results.get(timeout=args.seconds + args.timeout + 30)
        except queue.Empty:
            sys.exit("drive.py: a process ended without its counts (see above)")
        for k, v in counts.items():
            total[k] += v
    for proc in procs:
        proc.join()
    print(json.dumps(dict(port="python", follows=fair_share.FOLLOWS, processes=args.processes, threads=args.threads, **total)))
    sys.exit(0 if total["requests"] > 0 else 1)


if __name__ == "__main__":
    main()
