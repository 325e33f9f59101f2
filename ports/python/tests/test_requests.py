"""The requests adapter (fair_share.requests) against a real HTTP server on loopback."""

import threading, time, unittest

from support import RecordingLaw, Serving, SyncAdapterContract

try:
    import requests
    from fair_share.requests import FairShareAdapter, session_for
except ImportError as e:
    requests, MISSING = None, f"needs requests ({e}): scripts/install_port_packages.sh, or pip install './ports/python[requests]'"
else:
    MISSING = ""


@unittest.skipUnless(requests, MISSING)
class RequestsAdapterTest(SyncAdapterContract, Serving):
    connect_error = requests.ConnectionError if requests else None

    def session(self, law):
        session = session_for(law)
        self.addCleanup(session.close)
        return session

    client = session

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
