#!/usr/bin/env python3
"""A small rate-limited API client in Python (standard library only), to be measured by
`throttle-sim serve --record`.

Each thread sends GET requests in a loop, says who it is in `X-Client-Id: GROUP/proc-P/thread-T`,
reads `RateLimit-Remaining` and `Retry-After` from every answer and sleeps between requests:
it halves its sleep while the server says plenty is left, doubles it (or waits out Retry-After)
on a 429. That rule is only an example; put your own client's here.

    python3 examples/python_client.py --url http://127.0.0.1:9292/ --threads 4 --seconds 10

When it is done it prints, as one JSON line, what it sent and what came back, so a test can
check that the server recorded the same.
"""

import argparse
import json
import os
import threading
import time
import urllib.error
import urllib.request


def header_number(headers, name):
    """A numeric header (`RateLimit-Remaining`, `Retry-After`), or None."""
    value = headers.get(name) if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.ok = 0
        self.limited = 0
        self.errors = 0
        self.transport_errors = 0

    def add(self, status):
        with self.lock:
            if status is None:
                self.transport_errors += 1
                return
            self.requests += 1
            if 200 <= status < 300:
                self.ok += 1
            elif status == 429:
                self.limited += 1
            else:
                self.errors += 1


def send(url, client_id, key, timeout):
    """One request: (status, headers), or (None, None) when no answer came."""
    request = urllib.request.Request(url, headers={"X-Client-Id": client_id})
    if key:
        request.add_header("Authorization", key)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            answer.read()
            return answer.status, answer.headers
    except urllib.error.HTTPError as refused:
        refused.read()
        return refused.code, refused.headers
    except (urllib.error.URLError, OSError):
        return None, None


def worker(args, client_id, deadline, counts):
    sleep = args.initial_sleep
    while time.monotonic() < deadline:
        status, headers = send(args.url, client_id, args.key, args.timeout)
        counts.add(status)
        remaining = header_number(headers, "RateLimit-Remaining")
        if status == 429:
            retry_after = header_number(headers, "Retry-After")
            sleep = max(sleep * 2, 0.01)
            if retry_after is not None:
                sleep = max(sleep, retry_after)
        elif status is not None and 200 <= status < 300:
            if remaining is not None and remaining > args.plenty:
                sleep /= 2
        else:
            sleep = max(sleep, 0.1)
        sleep = min(sleep, args.max_sleep)
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(sleep, left))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:9292/")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--seconds", type=float, default=10.0, help="real time to run")
    p.add_argument("--group", default="py", help="the X-Client-Id group")
    p.add_argument("--key", default=None, help="sent as the Authorization header")
    p.add_argument("--initial-sleep", type=float, default=0.05, help="seconds")
    p.add_argument("--max-sleep", type=float, default=2.0, help="seconds")
    p.add_argument("--plenty", type=float, default=10, help="remaining above which to speed up")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request")
    args = p.parse_args()

    counts = Counts()
    deadline = time.monotonic() + args.seconds
    ids = [f"{args.group}/proc-{os.getpid()}/thread-{t}" for t in range(args.threads)]
    threads = [
        threading.Thread(target=worker, args=(args, i, deadline, counts)) for i in ids
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(
        json.dumps(
            {
                "requests": counts.requests,
                "ok": counts.ok,
                "limited": counts.limited,
                "errors": counts.errors,
                "transport_errors": counts.transport_errors,
                "clients": ids,
            }
        )
    )


if __name__ == "__main__":
    main()
