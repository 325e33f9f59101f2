"""fair-share for `requests`: a transport adapter that paces every request a Session sends.

    law = FairShare(8)                                  # one per process: 8 requests at a time
    session = requests.Session()
    session.mount("https://", FairShareAdapter(law))    # or: session = session_for(law)

Each request borrows one of the law's thread slots for its turn (at most `threads` in flight;
more queue for a free slot), sleeps the law's wait, is sent, and its answer is reported to the
law. A network error (no answer came back) is reported as one and raised to the caller as
requests raises it. Every Session and adapter given the same FairShare shares its slots and
its pace, with the httpx transports of fair_share.httpx too.
"""

import requests
import requests.adapters

from . import _gate

# No answer came back: what requests raises for a connection refused or reset, a timeout, TLS,
# a proxy (all ConnectionError or Timeout), and a bare OSError that gets through.
TRANSPORT_ERRORS = (requests.exceptions.ConnectionError, requests.exceptions.Timeout, OSError)


def _answer(response):
    return response.status_code, response.headers.items()


class FairShareAdapter(requests.adapters.HTTPAdapter):
    """An HTTPAdapter that asks `law` (a fair_share.FairShare) before every send. Other keyword
    arguments go to HTTPAdapter; its connection pool holds at least one connection per slot."""

    def __init__(self, law, **kwargs):
        kwargs.setdefault("pool_maxsize", max(len(law.threads), requests.adapters.DEFAULT_POOLSIZE))
        super().__init__(**kwargs)
        self.law = law

    def send(self, request, *args, **kwargs):
        base_send = super().send
        return _gate.send(self.law, lambda: base_send(request, *args, **kwargs), TRANSPORT_ERRORS, _answer)


def session_for(law, session=None, **adapter_kwargs):
    """`session` (a new Session by default) with a FairShareAdapter of `law` on http:// and
    https://."""
    session = requests.Session() if session is None else session
    adapter = FairShareAdapter(law, **adapter_kwargs)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
