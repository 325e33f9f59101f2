"""The httpx transports (fair_share.httpx), sync and async, against a real HTTP server on
loopback."""

import asyncio, threading, time, unittest

from support import QUICK, REFUSED, RecordingLaw, Serving, SyncAdapterContract, refused_url

try:
    import httpx
    from fair_share.httpx import AsyncFairShareTransport, FairShareTransport
except ImportError as e:
    httpx, MISSING = None, f"needs httpx ({e}): scripts/install_port_packages.sh, or pip install './ports/python[httpx]'"
else:
    MISSING = ""


@unittest.skipUnless(httpx, MISSING)
class HttpxTransportTest(SyncAdapterContract, Serving):
    connect_error = httpx.ConnectError if httpx else None

    def client(self, law):
        client = httpx.Client(transport=FairShareTransport(law))
        self.addCleanup(client.close)
        return client


@unittest.skipUnless(httpx, MISSING)
class AsyncHttpxTransportTest(Serving):
    def run_async(self, law, body):
        """`body(client)` on a new event loop, with an AsyncClient on the async transport."""
        async def main():
            async with httpx.AsyncClient(transport=AsyncFairShareTransport(law)) as client:
                return await body(client)
        return asyncio.run(main())

    def test_a_wait_leaves_the_event_loop_running(self):
        server = self.serve(plan=[REFUSED])
        ticks = []

        async def body(client):
            await client.get(server.url)
            done = False

            async def ticker():
                while not done:
                    ticks.append(time.monotonic())
                    await asyncio.sleep(0.01)
            running = asyncio.ensure_future(ticker())
            await asyncio.sleep(0)
            answer = await client.get(server.url)  # waits the refusal's second
            done = True
            await running
            return answer.status_code

        self.assertEqual(self.run_async(RecordingLaw(1, **QUICK), body), 200)
        first, second = server.arrivals
        self.assertGreaterEqual(second - first, 0.99, "the second request waits the refusal's second")
        during = [t for t in ticks if first < t < second]
        self.assertGreater(len(during), 30, "another coroutine ran every 10 ms during the wait")

    def test_tasks_in_flight_are_bounded_by_the_laws_threads(self):
        server = self.serve(delay=0.2)
        law = RecordingLaw(2, quota=1000, period=1)

        async def body(client):
            answers = await asyncio.gather(*(client.get(server.url) for _ in range(6)))
            return [a.status_code for a in answers]

        self.assertEqual(self.run_async(law, body), [200] * 6)
        self.assertEqual(server.most_in_flight, 2)
        self.assertEqual(sorted({a[0] for a in law.answers}), [0, 1])

    def test_every_answer_and_a_refused_connection_reach_the_law(self):
        server = self.serve(plan=[(503, []), (429, [])])
        law = RecordingLaw(1, quota=1000, period=1, error_backoff=0.01)
        gone = refused_url()

        async def body(client):
            statuses = [(await client.get(server.url)).status_code for _ in range(3)]
            with self.assertRaises(httpx.ConnectError):
                await client.get(gone)
            return statuses

        self.assertEqual(self.run_async(law, body), [503, 429, 200])
        self.assertEqual([a[1] for a in law.answers], [503, 429, 200, None])

    def test_a_cancelled_request_gives_its_slot_back(self):
        server = self.serve(delay=0.3)
        law = RecordingLaw(1, quota=1000, period=1)

        async def body(client):
            holding = asyncio.ensure_future(client.get(server.url))
            queued = asyncio.ensure_future(client.get(server.url))  # waits for the one slot
            await asyncio.sleep(0.1)
            queued.cancel()
            await (holding)
            with self.assertRaises(asyncio.CancelledError):
                await queued
            return (await asyncio.wait_for(client.get(server.url), 5)).status_code

        self.assertEqual(self.run_async(law, body), 200)
        self.assertEqual(len(server.arrivals), 2, "the cancelled request was never sent")


@unittest.skipUnless(httpx, MISSING)
class SharedLawTest(Serving):
    def test_a_thread_and_a_task_on_one_law_share_its_slot(self):
        server = self.serve(delay=0.2)
        law = RecordingLaw(1, quota=1000, period=1)
        client = httpx.Client(transport=FairShareTransport(law))
        self.addCleanup(client.close)
        threads = [threading.Thread(target=client.get, args=(server.url,)) for _ in range(2)]
        for t in threads:
            t.start()

        async def tasks():
            async with httpx.AsyncClient(transport=AsyncFairShareTransport(law)) as aclient:
                await asyncio.gather(*(aclient.get(server.url) for _ in range(2)))

        asyncio.run(tasks())
        for t in threads:
            t.join()
        self.assertEqual(len(server.arrivals), 4)
        self.assertEqual(server.most_in_flight, 1, "one slot: one request at a time, sync or async")


if __name__ == "__main__":
    unittest.main()
