"""The requests adapter (fair_share.requests) against a real HTTP server on loopback."""

import threading, time, unittest

from support import QUICK, REFUSED, RecordingLaw, Server, SyncAdapterContract, refused_url

try:
    import requests
    from fair_share.requests import FairShareAdapter, session_for
except ImportError as e:
    requests, MISSING = None, f"needs requests ({e}): scripts/install_port_packages.sh, or pip install './ports/python[requests]'"
else:
    MISSING = ""


@unittest.skipUnless(requests, MISSING)
class RequestsAdapterTest(SyncAdapterContract, unittest.TestCase):
    def serve(self, **kw):
        server = Server(**kw)
        self.addCleanup(server.close)
        return server

    def session(self, law):
        session = session_for(law)
        self.addCleanup(session.close)
        return session

    client = session

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
