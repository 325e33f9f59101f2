"""What the adapters' tests share: a real HTTP server on 127.0.0.1 that answers as told, and a
FairShare that remembers what it was told.

The package under test is the checkout's (ports/python/fair_share), put first on sys.path, so
the tests run with or without an installed copy.
"""

import http.server, os, socket, sys, threading, time, unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fair_share  # noqa: E402


class Server:
    """A threading HTTP/1.1 server on a free loopback port. The n-th request gets `plan[n]`, a
    (status, headers) pair, and every request after the plan a 200 with `headers`; each answer
    comes `delay` seconds after its request arrived. It records when each request arrived (on
    time.monotonic) and the most requests it ever held at once."""

    def __init__(self, plan=(), headers=(), delay=0.0):
        self.plan, self.headers, self.delay = list(plan), list(headers), delay
        self.arrivals, self.in_flight, self.most_in_flight = [], 0, 0
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                with server.lock:
                    n = len(server.arrivals)
                    server.arrivals.append(time.monotonic())
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                status, headers = server.plan[n] if n < len(server.plan) else (200, server.headers)
                time.sleep(server.delay)
                with server.lock:
                    server.in_flight -= 1
                body = b"ok"
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def refused_url():
    """A loopback URL nothing listens on: a port the OS just handed out, closed again."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/"


class RecordingLaw(fair_share.FairShare):
    """The real law, which also keeps every answer it is given: (thread, status, headers as a
    dict with lower-case names, latency in seconds)."""

    def __init__(self, threads, **params):
        super().__init__(threads, **params)
        self.answers = []

    def observe_ns(self, thread, now, status, headers=(), latency=0, unix_ns=None):
        named = {str(k).lower(): v for k, v in headers}
        self.answers.append((thread, status, named, latency / 1e9))
        return super().observe_ns(thread, now, status, headers, latency, unix_ns)


# A law whose own pace is quick (20 a second for its one thread: 50 ms apart) and whose waits
# after a refusal are exactly the Retry-After (no jitter), so a delay the tests see is the
# refusal's, not the pace's.
QUICK = dict(quota=20, period=1, retry_jitter=0)

# A refusal that names a one-second wait.
REFUSED = (429, [("Retry-After", "1")])


class Serving(unittest.TestCase):
    """A test case with `serve(**kw)`: a Server, closed after the test."""

    def serve(self, **kw):
        server = Server(**kw)
        self.addCleanup(server.close)
        return server


class SyncAdapterContract:
    """The tests every blocking adapter passes, mixed into a unittest.TestCase that gives
    `serve(**kw)` (a Server, closed after the test), `client(law)` (a client with the
    adapter, whose `get(url)` returns a response with `status_code`) and `connect_error` (what
    its library raises when a connection is refused)."""

    def test_a_refusal_with_retry_after_delays_the_next_request(self):
        server = self.serve(plan=[REFUSED])
        client = self.client(RecordingLaw(1, **QUICK))
        self.assertEqual([client.get(server.url).status_code for _ in range(3)], [429, 200, 200])
        first, second, third = server.arrivals
        self.assertGreaterEqual(second - first, 0.99, "the second request waits the refusal's second")
        self.assertLess(third - second, 0.5, "after a success the law's own pace (50 ms) is back")

    def test_every_answer_reaches_the_law_with_its_headers_and_latency(self):
        server = self.serve(plan=[(200, [("RateLimit-Remaining", "7")]), (503, []), (429, [])], delay=0.05)
        law = RecordingLaw(1, quota=1000, period=1, error_backoff=0.01)
        client = self.client(law)
        statuses = [client.get(server.url).status_code for _ in range(4)]
        self.assertEqual(statuses, [200, 503, 429, 200])
        self.assertEqual([a[1] for a in law.answers], statuses)
        self.assertEqual(law.answers[0][2].get("ratelimit-remaining"), "7")
        for _, _, _, latency in law.answers:
            self.assertGreaterEqual(latency, 0.05)
            self.assertLess(latency, 2.0)

    def test_requests_in_flight_are_bounded_by_the_laws_threads(self):
        server = self.serve(delay=0.2)
        law = RecordingLaw(2, quota=1000, period=1)
        client = self.client(law)
        answers = []
        workers = [threading.Thread(target=lambda: answers.append(client.get(server.url).status_code))
                   for _ in range(6)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.assertEqual(answers, [200] * 6)
        self.assertEqual(server.most_in_flight, 2)
        self.assertEqual(sorted({a[0] for a in law.answers}), [0, 1], "slots 0 and 1, no other")

    def test_a_refused_connection_is_a_transport_error_raised_to_the_caller(self):
        law = RecordingLaw(1, quota=1000, period=1)
        with self.assertRaises(self.connect_error):
            self.client(law).get(refused_url(), timeout=5)
        self.assertEqual([a[1] for a in law.answers], [None])
        # The law backs the thread off (error_backoff, 1 s): the next turn is not now.
        self.assertGreater(law.wait_ns(0, time.monotonic_ns()), 0)

