// The fetch wrapper (fetch.mjs) against a real HTTP server on loopback: node --test ports/javascript/test/
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { after, test } from 'node:test';
import { FairShare, FOLLOWS } from '../fair_share.mjs';
import { fairShareFetch } from '../fetch.mjs';

// Node before 18 has no fetch to wrap: those tests are skipped, saying so.
const needsFetch = { skip: typeof fetch === 'function' ? false : 'needs a global fetch (Node 18 or later)' };
// Fast enough that the law's own pacing is a few milliseconds: what a test sees is the wrapper.
const FAST = { quota: 1000, period: 1 };
const now = () => performance.now() / 1000;
const servers = [];
after(() => servers.forEach((s) => { s.closeAllConnections(); s.close(); }));

// A server that answers request `i` with `answer(i)`: [status, headers, hold seconds]; it notes
// when each request arrived and the most in flight at once.
async function serve(answer) {
  const seen = { arrivals: [], inFlight: 0, mostInFlight: 0 };
  const server = http.createServer((req, res) => {
    const i = seen.arrivals.push(now()) - 1;
    seen.inFlight += 1;
    seen.mostInFlight = Math.max(seen.mostInFlight, seen.inFlight);
    const [status, headers, hold] = answer(i);
    setTimeout(() => {
      seen.inFlight -= 1; // before the answer leaves, so the next one is not counted with it
      res.writeHead(status, headers).end(`${status}\n`);
    }, hold * 1000);
  });
  servers.push(server);
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  seen.url = `http://127.0.0.1:${server.address().port}/`;
  return seen;
}

// A port nothing listens on: connecting to it is refused.
async function refusedUrl() {
  const probe = net.createServer();
  await new Promise((done) => probe.listen(0, '127.0.0.1', done));
  const { port } = probe.address();
  await new Promise((done) => probe.close(done));
  return `http://127.0.0.1:${port}/`;
}

// A real law that also notes what it was told, to check that the wrapper tells it.
class RecordingLaw extends FairShare {
  observed = [];

  observe(thread, at, status, headers, latency, unix) {
    const named = headers instanceof Headers ? Object.fromEntries(headers) : {};
    this.observed.push({ thread, status, headers: named, latency });
    return super.observe(thread, at, status, headers, latency, unix);
  }
}

test('the package is the version of the crate the port follows', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url)));
  assert.equal(pkg.version, FOLLOWS);
});

test('a Retry-After delays the next request by its seconds, and the loop runs meanwhile', needsFetch, async () => {
  const server = await serve((i) => (i === 0 ? [429, { 'Retry-After': '1' }, 0] : [200, {}, 0]));
  const get = fairShareFetch(new FairShare(1, FAST));
  assert.equal((await get(server.url)).status, 429);
  let ticks = 0;
  const ticker = setInterval(() => { ticks += 1; }, 50);
  const res = await get(server.url);
  clearInterval(ticker);
  assert.equal(res.status, 200);
  const gap = server.arrivals[1] - server.arrivals[0];
  assert.ok(gap >= 1.0, `the second request went ${gap} s after the first, before the Retry-After was over`);
  assert.ok(gap < 2.5, `${gap}`);
  assert.ok(ticks >= 10, `a 50 ms timer fired ${ticks} times in a wait of a second: the wait blocked the loop`);
});

test('requests beyond the law\'s threads wait for a free slot', needsFetch, async () => {
  const server = await serve(() => [200, {}, 0.2]);
  const law = new FairShare(2, FAST);
  const started = now();
  // Each request through its own wrapper: the slots belong to the law, not to a wrapper.
  const statuses = await Promise.all(Array.from({ length: 6 }, () => fairShareFetch(law)(server.url)
    .then(async (res) => { await res.arrayBuffer(); return res.status; })));
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200]);
  assert.equal(server.mostInFlight, 2);
  assert.ok(now() - started >= 0.6, 'six requests of 0.2 s, two at a time, take three rounds');
});

test('every answer reaches the law with its headers and latency, on the headers\' arrival', needsFetch, async () => {
  const server = await serve(() => [200, { 'RateLimit-Remaining': '7', 'RateLimit-Limit': '10' }, 0.1]);
  const law = new RecordingLaw(1, FAST);
  const res = await fairShareFetch(law)(server.url);
  assert.equal(law.observed.length, 1, 'observed before the body was read');
  const [seen] = law.observed;
  assert.equal(seen.thread, 0);
  assert.equal(seen.status, 200);
  assert.equal(seen.headers['ratelimit-remaining'], '7');
  assert.ok(seen.latency >= 0.1 && seen.latency < 2, `latency ${seen.latency}: from the send to the answer`);
  assert.equal(await res.text(), '200\n');
});

test('a refused connection reaches the law as no answer and is thrown again', needsFetch, async () => {
  const law = new RecordingLaw(1, FAST);
  const get = fairShareFetch(law);
  await assert.rejects(get(await refusedUrl()), TypeError);
  assert.deepEqual(law.observed.map((o) => o.status), [null]);
  // The slot came back, and the law backs its thread off a second (error_backoff) for it.
  const server = await serve(() => [200, {}, 0]);
  const before = now();
  assert.equal((await get(server.url)).status, 200);
  assert.ok(server.arrivals[0] - before >= 0.9, 'the error did not back the thread off');
});

test('an abort ends the wait for a slot, and the slot queue goes on', needsFetch, async () => {
  const server = await serve(() => [200, {}, 0.3]);
  const get = fairShareFetch(new FairShare(1, FAST));
  const first = get(server.url);
  const stop = new AbortController();
  const second = get(server.url, { signal: stop.signal });
  const third = get(server.url);
  stop.abort();
  await assert.rejects(second, { name: 'AbortError' });
  assert.equal((await first).status, 200);
  assert.equal((await third).status, 200);
  assert.equal(server.arrivals.length, 2, 'the aborted request was sent');
});

test('a concurrency other than the law\'s threads is refused', () => {
  assert.throws(() => fairShareFetch(new FairShare(4, FAST), { concurrency: 8 }), /concurrency 8 is not the law's 4 threads/);
});
