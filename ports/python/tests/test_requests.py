"""The requests adapter (fair_share.requests) against a real HTTP server on loopback."""

import threading, time, unittest

from support import QUICK, REFUSED, RecordingLaw, Server, refused_url

try:
    import requests
    from fair_share.requests import FairShareAdapter, session_for
except ImportError as e:
    requests, MISSING = None, f"needs requests ({e}): apt-get install python3-requests, or pip install './ports/python[requests]'"
else:
    MISSING = ""


@unittest.skipUnless(requests, MISSING)
class RequestsAdapterTest(unittest.TestCase):
    def serve(self, **kw):
        server = Server(**kw)
        self.addCleanup(server.close)
        return server

    def session(self, law):
        session = session_for(law)
        self.addCleanup(session.close)
        return session

    def test_a_refusal_with_retry_after_delays_the_next_request(self):
        server = self.serve(plan=[REFUSED])
        law = RecordingLaw(1, **QUICK)
        session = self.session(law)
        self.assertEqual(session.get(server.url).status_code, 429)
        self.assertEqual(session.get(server.url).status_code, 200)
        self.assertEqual(session.get(server.url).status_code, 200)
        first, second, third = server.arrivals
        self.assertGreaterEqual(second - first, 0.99, "the second request waits the refusal's second")
        self.assertLess(third - second, 0.5, "after a success the law's own pace (50 ms) is back")

    def test_every_answer_reaches_the_law_with_its_headers_and_latency(self):
        server = self.serve(plan=[(200, [("RateLimit-Remaining", "7")]), (503, []), (429, [])], delay=0.05)
        law = RecordingLaw(1, quota=1000, period=1, error_backoff=0.01)
        session = self.session(law)
        statuses = [session.get(server.url).status_code for _ in range(4)]
        self.assertEqual(statuses, [200, 503, 429, 200])
        self.assertEqual([a[1] for a in law.answers], statuses)
        self.assertEqual(law.answers[0][2].get("ratelimit-remaining"), "7")
        for _, _, _, latency in law.answers:
            self.assertGreaterEqual(latency, 0.05)
            self.assertLess(latency, 2.0)

    def test_requests_in_flight_are_bounded_by_the_laws_threads(self):
        server = self.serve(delay=0.2)
        law = RecordingLaw(2, quota=1000, period=1)
        session = self.session(law)
        answers = []
        workers = [threading.Thread(target=lambda: answers.append(session.get(server.url).status_code))
                   for _ in range(6)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.assertEqual(answers, [200] * 6)
        self.assertEqual(server.most_in_flight, 2)
        self.assertEqual(sorted({a[0] for a in law.answers}), [0, 1], "slots 0 and 1, no other")

    def test_a_worker_that_sends_in_a_loop_keeps_its_slot(self):
        server = self.serve()
        law = RecordingLaw(4, quota=1000, period=1)
        session = self.session(law)
        for _ in range(3):
            session.get(server.url)
        self.assertEqual([a[0] for a in law.answers], [0, 0, 0], "the law's thread 0 is this worker")

    def test_sessions_given_one_law_share_its_slots(self):
        server = self.serve(delay=0.2)
        law = RecordingLaw(2, quota=1000, period=1)
        sessions = [self.session(law) for _ in range(3)]
        workers = [threading.Thread(target=s.get, args=(server.url,)) for s in sessions for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.assertEqual(len(server.arrivals), 6)
        self.assertEqual(server.most_in_flight, 2)

    def test_a_refused_connection_is_a_transport_error_raised_to_the_caller(self):
        law = RecordingLaw(1, quota=1000, period=1)
        session = self.session(law)
        with self.assertRaises(requests.ConnectionError):
            session.get(refused_url(), timeout=5)
        self.assertEqual([a[1] for a in law.answers], [None])
        # The law backs the thread off (error_backoff, 1 s): the next turn is not now.
        self.assertGreater(law.wait_ns(0, time.monotonic_ns()), 0)

    def test_the_adapter_mounts_on_a_session_of_ones_own(self):
        server = self.serve()
        law = RecordingLaw(1, quota=1000, period=1)
        session = requests.Session()
        self.addCleanup(session.close)
        session.mount("http://", FairShareAdapter(law, max_retries=0))
        session.get(server.url)
        self.assertEqual([a[1] for a in law.answers], [200])


if __name__ == "__main__":
    unittest.main()
