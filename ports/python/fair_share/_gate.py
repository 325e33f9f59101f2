"""What the HTTP adapters share: a request's turn through one FairShare.

The law knows threads by index, from 0 to threads - 1. An adapter has no threads of its own,
so each request in flight borrows an index (a slot) for its whole turn: waiting, sending and
reporting the answer. The slots belong to the law, not to the adapter, so every client built
on the same FairShare (sync or async, requests or httpx) draws from one pool and never uses an
index another request holds. A request beyond the pool's size queues, first come first served.

Every wait is slept with no lock held that another request needs: the law's own lock is taken
only inside wait_ns and observe_ns, and the pool's only to hand a slot over.
"""

import asyncio, collections, threading, time, weakref

_pools = weakref.WeakKeyDictionary()  # FairShare -> its Slots; dies with the law
_pools_lock = threading.Lock()


def slots_of(law):
    """The one pool of slots of `law`, made on first use (as many as the law has threads)."""
    with _pools_lock:
        pool = _pools.get(law)
        if pool is None:
            pool = _pools[law] = Slots(len(law.threads))
        return pool


class _ThreadWaiter:
    def __init__(self):
        self.slot, self.event = None, threading.Event()

    def wake(self):
        self.event.set()
        return True


class _TaskWaiter:
    def __init__(self, loop):
        self.slot, self.loop, self.future = None, loop, loop.create_future()

    def wake(self):
        try:
            self.loop.call_soon_threadsafe(_resolve, self.future)
        except RuntimeError:  # its loop is closed: nobody is left to take the slot
            return False
        return True


def _resolve(future):
    if not future.done():
        future.set_result(None)


class Slots:
    """Slot indexes of one law, lent to threads and to asyncio tasks alike.

    The lock guards only the free list and the queue; it is never held while anyone waits.
    A waiting thread blocks on its own Event, a waiting task awaits its own Future, which is
    resolved on its loop's thread (call_soon_threadsafe), so a slot given back by a thread wakes
    a task and the reverse.
    """

    def __init__(self, size):
        self._lock = threading.Lock()
        # A stack, lowest index on top: the slot given back last is lent first, so a worker that
        # sends in a loop keeps its slot, and the law's threads are its workers, as it assumes.
        self._free = list(range(size - 1, -1, -1))
        self._queue = collections.deque()

    def _take_or_queue(self, make_waiter):
        with self._lock:
            if self._free and not self._queue:
                return self._free.pop(), None
            waiter = make_waiter()
            self._queue.append(waiter)
            return None, waiter

    def take(self):
        """A free slot, blocking the calling thread until one is."""
        slot, waiter = self._take_or_queue(_ThreadWaiter)
        if waiter is None:
            return slot
        try:
            waiter.event.wait()
        except BaseException:  # interrupted (Ctrl-C): a slot it was handed goes back
            self._abandon(waiter)
            raise
        return waiter.slot

    async def take_async(self):
        """A free slot, awaited without blocking the event loop."""
        loop = asyncio.get_running_loop()
        slot, waiter = self._take_or_queue(lambda: _TaskWaiter(loop))
        if waiter is None:
            return slot
        try:
            await waiter.future
        except BaseException:  # cancelled, maybe after a slot was handed to it
            self._abandon(waiter)
            raise
        return waiter.slot

    def _abandon(self, waiter):
        with self._lock:
            slot = waiter.slot
            if slot is None:
                self._queue.remove(waiter)
        if slot is not None:
            self.give(slot)

    def give(self, slot):
        """Give `slot` back: to the longest waiting request, else to the free list."""
        with self._lock:
            while self._queue:
                waiter = self._queue.popleft()
                waiter.slot = slot
                if waiter.wake():
                    return
                waiter.slot = None
            self._free.append(slot)


def _observe(law, slot, sent, status, headers):
    got = time.monotonic_ns()
    law.observe_ns(slot, got, status, headers, got - sent)


def send(law, send_request, transport_errors, answer_of):
    """One request's turn, in a thread: a slot, the law's wait slept (then asked again), the
    request sent, its answer (or its network error, re-raised) reported. Times are
    time.monotonic_ns(), the clock every adapter gives the law."""
    slots = slots_of(law)
    slot = slots.take()
    try:
        while True:
            wait = law.wait_ns(slot, time.monotonic_ns())
            if not wait:
                break
            time.sleep(wait / 1e9)
        sent = time.monotonic_ns()
        try:
            response = send_request()
        except transport_errors:
            _observe(law, slot, sent, None, ())
            raise
        _observe(law, slot, sent, *answer_of(response))
        return response
    finally:
        slots.give(slot)


async def send_async(law, send_request, transport_errors, answer_of):
    """`send` for an asyncio task: the waits are asyncio.sleep, the slot awaited."""
    slots = slots_of(law)
    slot = await slots.take_async()
    try:
        while True:
            wait = law.wait_ns(slot, time.monotonic_ns())
            if not wait:
                break
            await asyncio.sleep(wait / 1e9)
        sent = time.monotonic_ns()
        try:
            response = await send_request()
        except transport_errors:
            _observe(law, slot, sent, None, ())
            raise
        _observe(law, slot, sent, *answer_of(response))
        return response
    finally:
        slots.give(slot)
