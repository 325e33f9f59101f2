// fetch through the fair-share law (ports/javascript/README.md): a function with fetch's
// signature that sends each request when the law lets it and tells the law every answer.
//
//   const law = new FairShare(8);                  // one per process: up to 8 requests at once
//   const get = fairShareFetch(law);
//   const res = await get('https://api.example.com/items');
//
// Node 18 or later, and browsers: only fetch, setTimeout and performance.now.

// The thread numbers of each law, lent to requests one at a time (the law paces each thread on
// its own, so two requests in flight must never share one). One set per law, however many
// wrappers are made of it.
const slotsOfLaw = new WeakMap();

class Slots {
  constructor(count) {
    this.free = Array.from({ length: count }, (_, slot) => count - 1 - slot); // 0 is taken first
    this.waiting = []; // { resolve, reject, signal, onAbort } in the order they asked
  }

  // A free thread number, or a promise of the next one given back; rejected if `signal` aborts
  // first.
  take(signal) {
    signal?.throwIfAborted();
    if (this.free.length > 0) return Promise.resolve(this.free.pop());
    return new Promise((resolve, reject) => {
      const waiter = { resolve, reject, signal, onAbort: null };
      if (signal) {
        waiter.onAbort = () => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiting.push(waiter);
    });
  }

  give(slot) {
    const next = this.waiting.shift();
    if (!next) {
      this.free.push(slot);
      return;
    }
    next.signal?.removeEventListener('abort', next.onAbort);
    next.resolve(slot);
  }
}

// Resolves after `seconds`, on a timer: the event loop runs on meanwhile. Rejected if `signal`
// aborts first.
function sleep(seconds, signal) {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, seconds * 1000);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const monotonic = () => performance.now() / 1000;

// The caller's signal, from the options or from a Request given as the input.
function signalOf(input, init) {
  if (init?.signal) return init.signal;
  return typeof Request !== 'undefined' && input instanceof Request ? input.signal : undefined;
}

/**
 * A fetch that waits for the fair-share law before each request. Each request takes one of the
 * law's threads while it runs (a request beyond them waits for one), waits on a timer until the
 * law lets that thread send, and when the answer's headers arrive gives the law its status,
 * headers and latency (the body is the caller's to read). A rejected fetch reaches the law as
 * no answer (status null: the thread backs off) and is rethrown. The caller's abort signal also
 * ends the waits.
 *
 * `concurrency`, when given, must be the law's threads: a slot is one of them.
 */
export function fairShareFetch(law, { concurrency, fetch: send = globalThis.fetch } = {}) {
  const threads = law.threads.length;
  if (concurrency !== undefined && concurrency !== threads) {
    throw new Error(`fair-share: concurrency ${concurrency} is not the law's ${threads} threads; `
      + 'make the FairShare with as many threads as requests may run at once');
  }
  if (typeof send !== 'function') throw new Error('fair-share: no fetch to wrap (Node 18 or later has one)');
  if (!slotsOfLaw.has(law)) slotsOfLaw.set(law, new Slots(threads));
  const slots = slotsOfLaw.get(law);

  return async function fetchFairly(input, init) {
    const signal = signalOf(input, init);
    const slot = await slots.take(signal);
    try {
      for (let wait; (wait = law.wait(slot, monotonic())) > 0;) await sleep(wait, signal);
      const sent = monotonic();
      let res;
      try {
        res = await send(input, init);
      } catch (error) {
        const answered = monotonic();
        law.observe(slot, answered, null, [], answered - sent);
        throw error;
      }
      const answered = monotonic();
      law.observe(slot, answered, res.status, res.headers, answered - sent);
      return res;
    } finally {
      slots.give(slot);
    }
  };
}
