"""fair-share for `httpx`: transports that pace every request a Client or AsyncClient sends.

    law = FairShare(8)                                  # one per process: 8 requests at a time
    client = httpx.Client(transport=FairShareTransport(law))
    aclient = httpx.AsyncClient(transport=AsyncFairShareTransport(law))

Each wraps httpx's own transport (HTTPTransport, AsyncHTTPTransport; pass `transport=` for
another, or keyword arguments for the default one: `limits`, `verify`, `retries`…). Each
request borrows one of the law's thread slots for its turn (at most `threads` in flight; more
queue for a free slot), sleeps the law's wait, is sent, and its answer is reported to the law.
A network error (no answer came back) is reported as one and raised to the caller as httpx
raises it. The async transport waits with asyncio.sleep and awaits its slot, so the event loop
runs on (asyncio only, not trio). Every client given the same FairShare, sync or async, shares
its slots and its pace, with the requests adapter of fair_share.requests too.
"""

import httpx

from . import _gate

# No answer came back: httpx's TransportError (connect, read, write, timeout, protocol, proxy)
# and a bare OSError that gets through.
TRANSPORT_ERRORS = (httpx.TransportError, OSError)


def _answer(response):
    return response.status_code, response.headers.multi_items()


class FairShareTransport(httpx.BaseTransport):
    """A transport for httpx.Client that asks `law` (a fair_share.FairShare) before every send."""

    def __init__(self, law, transport=None, **kwargs):
        self.law = law
        self.transport = httpx.HTTPTransport(**kwargs) if transport is None else transport

    def handle_request(self, request):
        return _gate.send(self.law, lambda: self.transport.handle_request(request), TRANSPORT_ERRORS, _answer)

    def close(self):
        self.transport.close()


class AsyncFairShareTransport(httpx.AsyncBaseTransport):
    """A transport for httpx.AsyncClient that asks `law` before every send, never blocking the
    event loop."""

    def __init__(self, law, transport=None, **kwargs):
        self.law = law
        self.transport = httpx.AsyncHTTPTransport(**kwargs) if transport is None else transport

    async def handle_async_request(self, request):
        return await _gate.send_async(
            self.law, lambda: self.transport.handle_async_request(request), TRANSPORT_ERRORS, _answer)

    async def aclose(self):
        await self.transport.aclose()
