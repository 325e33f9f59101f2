#!/usr/bin/env python3
"""Drive the Python port of fair-share against a URL, or replay an event script through it.

    python3 ports/python/drive.py --url http://127.0.0.1:9292/ --processes 2 --threads 4 --seconds 20
    python3 ports/python/drive.py --replay ports/scripts/SCRIPT.json
    python3 ports/python/drive.py --answers ports/answers.json
    python3 ports/python/drive.py --via requests --url http://127.0.0.1:9292/ --threads 4

The driver starts P OS processes of T threads; each process shares one FairShare among its
threads, each thread keeps one connection alive and sends GETs with `X-Client-Id:
GROUP/pP/tT` for S seconds of wall time (a request in flight is finished), then the parent
prints one JSON line of the counts: `requests` the answered ones (as `serve --record` counts
them), `ok` 2xx, `limited` 429s, `errors` any other status, `transport_errors` no answer. It
exits 0 if at least one request was answered. `--quota/--period` are in real time.

`--via` sends through one of the package's HTTP adapters instead of calling the law itself:
`requests` (each thread its own Session, every one mounting a FairShareAdapter of the process's
law), `httpx` (one httpx.Client with a FairShareTransport, shared by the threads) or
`httpx-async` (one httpx.AsyncClient with an AsyncFairShareTransport, T tasks on one event loop).
The adapter then picks the law's thread slots and sleeps its waits; the line's `port` is
`python-requests`, `python-httpx` or `python-httpx-async`. A wait the adapter is sleeping when the
S seconds end is slept out and its request sent.

The replay prints `{"waits": [...]}`: the wait (integer nanoseconds, 0 = send) of every `wait`
event of the script (ports/README.md describes the format), for the cross-check with the Rust
library. `--answers` prints `{"readings": [...]}`: every answer of the fixture as the port reads
it (its class, remaining count, limit, Retry-After, policy and reset, times in nanoseconds), for
the cross-check with the library's Answer::read.
"""

import argparse, asyncio, http.client, json, multiprocessing, os, queue, sys, threading, time, urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fair_share  # noqa: E402

COUNTS = ("requests", "ok", "limited", "errors", "transport_errors")
VIAS = ("requests", "httpx", "httpx-async")  # the adapters --via takes


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


def count_answer(mine, status, headers):
    """A request's answer in the counts, classed as the law classes it (or no answer: None)."""
    if status is None:
        mine["transport_errors"] += 1
        return
    mine["requests"] += 1
    kind_of = fair_share.read_answer(status, headers)[0]
    mine[{fair_share.OK: "ok", fair_share.LIMITED: "limited"}.get(kind_of, "errors")] += 1


def requests_loop(law, thread, args, process, start, end, counts, lock):
    """One thread through the requests adapter: its own Session, sharing the process's law."""
    import requests
    from fair_share.requests import session_for
    who = {"X-Client-Id": f"{args.group}/p{process}/t{thread}"}
    mine = dict.fromkeys(COUNTS, 0)
    with session_for(law) as session:
        while time.monotonic_ns() < end:
            try:
                answer = session.get(args.url, headers=who, timeout=args.timeout)
                count_answer(mine, answer.status_code, answer.headers.items())
            except requests.RequestException:
                count_answer(mine, None, ())
    with lock:
        for k in COUNTS:
            counts[k] += mine[k]


def httpx_loop(client, thread, args, process, end, counts, lock):
    """One thread through the sync httpx transport, on the client the process's threads share."""
    import httpx
    who = {"X-Client-Id": f"{args.group}/p{process}/t{thread}"}
    mine = dict.fromkeys(COUNTS, 0)
    while time.monotonic_ns() < end:
        try:
            answer = client.get(args.url, headers=who)
            count_answer(mine, answer.status_code, answer.headers.multi_items())
        except httpx.TransportError:
            count_answer(mine, None, ())
    with lock:
        for k in COUNTS:
            counts[k] += mine[k]


def certificates(url):
    """httpx loads the CA bundle whenever it makes a transport (tens of ms per process, more on a
    busy machine, before the first request): an http:// URL, which never verifies one, skips it."""
    return {} if urllib.parse.urlsplit(url).scheme == "https" else {"verify": False}


async def httpx_async_main(law, args, process, end):
    """T tasks on one event loop through the async httpx transport, one AsyncClient."""
    import httpx
    from fair_share.httpx import AsyncFairShareTransport
    counts = dict.fromkeys(COUNTS, 0)

    async def task_loop(client, task):
        who = {"X-Client-Id": f"{args.group}/p{process}/t{task}"}
        while time.monotonic_ns() < end:
            try:
                answer = await client.get(args.url, headers=who)
                count_answer(counts, answer.status_code, answer.headers.multi_items())
            except httpx.TransportError:
                count_answer(counts, None, ())

    transport = AsyncFairShareTransport(law, **certificates(args.url))
    async with httpx.AsyncClient(transport=transport, timeout=args.timeout) as client:
        await asyncio.gather(*(task_loop(client, t) for t in range(args.threads)))
    return counts


def process_main(args, process, end, results):
    law = fair_share.FairShare(args.threads, **args.params)
    counts, lock, start = dict.fromkeys(COUNTS, 0), threading.Lock(), time.monotonic_ns()
    if args.via == "httpx-async":
        results.put(asyncio.run(httpx_async_main(law, args, process, end)))
        return
    if args.via == "httpx":
        import httpx
        from fair_share.httpx import FairShareTransport
        client = httpx.Client(transport=FairShareTransport(law, **certificates(args.url)), timeout=args.timeout)
        threads = [threading.Thread(target=httpx_loop, args=(client, t, args, process, end, counts, lock))
                   for t in range(args.threads)]
    else:
        loop = requests_loop if args.via == "requests" else thread_loop
        threads = [threading.Thread(target=loop, args=(law, t, args, process, start, end, counts, lock))
                   for t in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if args.via == "httpx":
        client.close()
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
    p.add_argument("--via", choices=VIAS, help="send through this HTTP adapter of the package")
    p.add_argument("--group", help="the client id's first part; default: the port's name")
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
    port = "python" if args.via is None else f"python-{args.via}"
    args.group = args.group or port
    if args.via is not None:
        library = args.via.partition("-")[0]
        try:  # loaded once here, before the processes fork
            __import__(f"fair_share.{library}")
        except ImportError as e:
            p.error(f"--via {args.via}: {e} (pip install './ports/python[{library}]')")
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
    print(json.dumps(dict(port=port, follows=fair_share.FOLLOWS, processes=args.processes, threads=args.threads, **total)))
    sys.exit(0 if total["requests"] > 0 else 1)


if __name__ == "__main__":
    main()
