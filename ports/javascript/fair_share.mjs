// fair-share in JavaScript (Node 18+, no packages). It follows the version of crates/fair-share
// named by FOLLOWS below (what changed from version to version: crates/fair-share/CHANGELOG.md).
// It is held to the crate by the event scripts of ports/scripts/ and the readings of
// ports/answers.json: the same answers at the same times give the same waits, to the nanosecond
// (time is whole nanoseconds inside, a Number holds them exactly for 104 days; the random draws
// come in the crate's order), and every answer is read as the crate reads it. docs/fair-share.md
// explains the law.
//
// What it reads in an answer (readAnswer, as the crate's Answer::read with fields.rs and when.rs):
// the IETF fields of every draft (RateLimit-Limit/-Remaining/-Reset, draft-7's RateLimit
// dictionary, draft-8's named RateLimit items, RateLimit-Policy in either form, policies after the
// count in a limit field as Envoy sends them); the separate fields under ratelimit-, x-ratelimit-,
// x-rate-limit- and anthropic-ratelimit-requests-, in that order, each also with the -requests
// suffix; Discord's reset-after (seconds), else a reset told apart by its size (under 1e9 seconds
// to it, from 1e9 an epoch second, from 1e12 an epoch millisecond), a Go-style duration (6m0s) or a
// date; Kong's per-window fields (second to year); without a limit field, used + remaining as the
// limit, else a refill's burst-capacity; Zendesk's bare x-rate-limit as the limit; a bucket's refill
// (replenish-rate a second, or fillrate every interval-seconds, default 1) as its policy's window,
// quota × cost × every / tokens, the quota and the count divided by requested-tokens; else
// tollbooth's duration (seconds or a Go duration) as the window; Shopify's call limit (used/limit)
// as one more limit; retry-after-ms (or x-ms-retry-after-ms), else Retry-After in seconds or as a date, else
// x-ratelimit-retry-after, x-rate-limit-retry-after-seconds or x-retry-in, each read as a reset.
// A date in the HTTP form, RFC 850's or asctime's, or RFC
// 3339's (with a fraction or an offset), each clock field two digits. Of several limits, the
// binding one: the nearest to empty (the smallest share of its quota when every counted limit has
// one, else the smallest count; the later reset on a tie), each count joined to the policy of its
// name, else of its quota, else the only one when the count states no quota; limits of one quota
// and one count are one (Kong's RateLimit-* beside its per-window fields, draft-8's beside the
// legacy ones), the first's values kept (a longer window's, where the two state different ones) and
// the other's filling in what it left out. Epoch resets and dates are read against the wall clock,
// or the answer's Date when the two are more than 2 s apart. A Retry-After on a 2xx is the reset,
// not a wait (one of 0 states nothing); a 429 whose binding limit is the separate fields' spent count waits for its reset
// when it names no wait (GitHub); a 403 with x-ratelimit-remaining: 0 or a Retry-After is a
// refusal; every wait, reset and window is capped at a day. ports/answers.json holds this reading
// to the crate's (ports/README.md).
//
//   const law = new FairShare(5);               // this process's "threads" (concurrent loops)
//   const d = law.wait(thread, now);            // now: seconds on the caller's monotonic clock
//   // d > 0: sleep d, ask again. d == 0: send now (the send is booked), then with the answer:
//   law.observe(thread, now, res.status, res.headers, latency);   // status null: no answer came
//
// waitNs / observeNs take and give whole nanoseconds (what ports/javascript/drive.mjs uses).
// One event loop runs the "threads", so no lock is needed.

// ln and exp rounded correctly, from 128-bit fixed point (BigInt): V8's Math.log and Math.exp are
// off by an ulp in 2 % and 9 % of calls, glibc's (Rust's, Ruby's, Python's) in 0.01 % and 0.07 %,
// and an ulp of the rate moves a wait by a nanosecond.
const FB = 128n;
const ONE = 1n << FB;
const BITS = new DataView(new ArrayBuffer(8));
function parts(x) { // |x| = m * 2^(e - 1075), m an integer of 53 bits (fewer when subnormal)
  BITS.setFloat64(0, Math.abs(x));
  const bits = BITS.getBigUint64(0);
  const e = Number(bits >> 52n);
  return [(bits & 0xfffffffffffffn) | (e ? 1n << 52n : 0n), Math.max(e, 1)];
}
function atanh2(s) { // 2·atanh(s), |s| <= 1/3, in fixed point
  if (s < 0n) return -atanh2(-s);
  const s2 = (s * s) >> FB;
  let [term, sum] = [s, 0n];
  for (let n = 1n; term !== 0n; n += 2n) [sum, term] = [sum + term / n, (term * s2) >> FB];
  return 2n * sum;
}
const LN2 = atanh2(ONE / 3n);
// f / 2^128 · 2^k, rounded once (Number(BigInt) rounds to nearest, a power of two is exact).
const fixedToDouble = (f, k) => (f < 0n ? -1 : 1) * Number(f < 0n ? -f : f) * 2 ** Math.max(k - 128, -1022)
  * 2 ** Math.min(k - 128 + 1022, 0);
function ln(x) {
  if (!(x > 0) || x === Infinity) return Math.log(x);
  let [m, e] = parts(x);
  let f = m << (FB - 52n);
  let k = e - 1075 + 52;
  while (f < ONE) { f <<= 1n; k -= 1; } // subnormal
  if (f > ONE * 181n / 128n) { f >>= 1n; k += 1; } // f in [0.707, 1.414]
  return fixedToDouble(BigInt(k) * LN2 + atanh2(((f - ONE) << FB) / (f + ONE)), 0);
}
function exp(y) {
  if (!Number.isFinite(y) || Math.abs(y) > 700) return Math.exp(y);
  const [m, e] = parts(y);
  const sh = BigInt(e - 1075) + FB;
  const Y = (y < 0 ? -1n : 1n) * (sh >= 0n ? m << sh : m >> -sh);
  const k = (Y + (Y < 0n ? -LN2 : LN2) / 2n) / LN2; // y = k·ln 2 + r, |r| <= ln 2 / 2
  const r = Y - k * LN2;
  let [term, sum] = [ONE, ONE];
  for (let n = 1n; term !== 0n; n++) { term = ((term * r) >> FB) / n; sum += term; }
  return fixedToDouble(sum, Number(k));
}

export const FOLLOWS = '0.30.0'; // the version of crates/fair-share (its Cargo.toml) this port follows
const NS = 1e9;
const U64 = 2 ** 64; // u64::MAX as a Number rounds to 2^64
// The stated resets pin a bucket's refill once their lowest ceiling is within this factor of their
// highest lower bound: a bound alone may be half the refill.
const PINNED_RATIO = 1.5;
// Blind to the count: the share of refusals the probe aims for, how hard an answer moves it, a
// refused thread's cut, and the probe's bounds in R² per second.
const BLIND_REFUSALS = 0.005;
const BLIND_ADAPT = 1;
const BLIND_CUT = 0.3;
const BLIND_BELOW_MAX = 10; // how far below the quota a rate counts in the climb (R/X)
const BLIND_PROBE_MIN = 1e-6;
const BLIND_PROBE_MAX = 1;
// A blocked key (a second refusal in a row, blind): the process holds this many spacings 1/x, and
// this many when a request sent after that hold began is refused too (at most a period).
const BLOCKED_HOLD = 1;
const BLOCKED_HOLD_AGAIN = 2;
const DAY = 86400 * NS;
export const DEFAULTS = Object.freeze({
  quota: null, period: null, first_spread: 0, initial_sleep: null, reserve: 0.005, span: 0.03,
  crowd: 1000, gain: 0.4, window_periods: 1, min_samples: 3, min_flow: 30, drain_windows: 4,
  drain_fill: 1 / 12, full_level: 0.9, full_drain: 1, pull_periods: 1.5, pull_max: 0.5,
  decrease: 0.5, retry_jitter: 0.5, jitter: 0.1, increase: 0.00005, error_backoff: 1,
  error_backoff_max: 60, max_rate: 4, reset_resolution: 1,
});
const DURATIONS = ['period', 'first_spread', 'initial_sleep', 'error_backoff', 'error_backoff_max',
  'reset_resolution'];
const POSITIVE = ['quota', 'period', 'crowd', 'gain', 'drain_windows', 'full_drain', 'pull_periods',
  'error_backoff', 'max_rate', 'reset_resolution'];
const NON_NEGATIVE = ['reserve', 'span', 'window_periods', 'drain_fill', 'pull_max', 'retry_jitter',
  'increase', 'min_flow', 'full_level'];

// src/time.rs's conversions, and Rust's f64 max, min and clamp (NaN is ignored, not spread).
export function fromSecs(s) {
  if (Number.isNaN(s) || s <= 0) return 0;
  const n = s * 1e9;
  if (n >= U64) return U64;
  const whole = Math.trunc(n);
  return n - whole >= 0.5 ? whole + 1 : whole;
}
const secs = (n) => n / 1e9;
const fmax = (a, b) => (Number.isNaN(a) ? b : Number.isNaN(b) || a >= b ? a : b);
const fmin = (a, b) => (Number.isNaN(a) ? b : Number.isNaN(b) || a <= b ? a : b);
const clamp = (v, lo, hi) => (v < lo ? lo : v > hi ? hi : v);
const [LN_100, LN_2] = [ln(100), ln(2)];
const clampStep = (v) => clamp(v, -LN_100, LN_2);
// Rust's f64::round: halves away from zero (Math.round takes -2.5 to -2).
const roundHalfAway = (v) => Math.sign(v) * Math.round(Math.abs(v));
const remEuclid = (a, b) => { const r = a % b; return r < 0 ? r + Math.abs(b) : r; };

export class FairShare {
  constructor(threads, params = {}, { random = Math.random } = {}) {
    const c = { ...DEFAULTS };
    for (const [k, v] of Object.entries(params)) {
      const key = k.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`); // camelCase or snake_case
      if (!(key in DEFAULTS)) throw new Error(`unknown fair-share parameter: ${k}`);
      c[key] = v === null || v === undefined ? null : Number(v);
    }
    this.c = c;
    this.lnCrowd = ln(c.crowd);
    this.ns = Object.fromEntries(DURATIONS.map((k) => { // as Rust's Duration::try_from_secs_f64
      if (c[k] !== null && !(Number.isFinite(c[k]) && c[k] >= 0)) {
        throw new Error(`fair-share: ${k} must be a number of seconds of 0 or more (got ${c[k]})`);
      }
      return [k, c[k] === null ? null : durationNanos(c[k])];
    }));
    const bad = this.problems();
    if (bad.length) throw new Error(`fair-share: ${bad.join('; ')}`);
    this.random = random;
    const n = Math.max(Math.trunc(threads) || 0, 1);
    this.threads = Array.from({ length: n }, () => (
      { target: null, lastSend: null, jit: 0, hold: 0, errors: 0, pending: false }));
    this.limit = c.quota ?? 4500;
    this.period = this.ns.period !== null ? secs(this.ns.period) : 3600;
    this.rate = this.limit / this.period;
    this.policy = this.offset = this.window = this.newest = null;
    this.newestSlack = 0; // how far the newest reading's count may lie from its t
    // the window's reading the level is read against, what was taken before it, own 429s,
    // its latest reading, and the tokens the refill may have lost to a full bucket
    this.winSince = this.winLast = null;
    this.winTaken = this.winRefused = this.winOverflow = this.winSuccesses = 0;
    this.fromResets = false; // a stated reset bounded the refill: own successes no longer do
    this.lastDecrease = this.lastIncrease = this.slidingSince = null;
    this.clockAt = this.samples = this.decreases = this.updates = this.slidingVotes = 0;
    this.clockPhase = 0;
    this.headers = this.fullStart = this.sliding = this.statedPolicy = false;
    this.windowEnd = this.lastEnd = null;
    this.periodRead = this.periodBefore = null; // { end, period } read there; the one before
    this.statedEnd = null; // the first success that stated the current end, { end, first }
    this.fixedEnd = null; // on a fixed window, the end stated since the mode or the last turnover
    this.endDrifted = false; // a fixed window's end drifted once: stated ends place none again
    this.resetSpan = null; // where the resets fall, modulo the period, [lo, hi]
    this.movingEnd = this.refillBound = null; // { end, t, reset, r } of the last answer; the learned refill
    // the lowest ceiling the stated resets put on a bucket's refill, the longest reset, no bucket
    this.refillCeiling = null;
    this.longestReset = 0;
    this.noBucket = false;
    this.own = []; // when the server counted own successes over the last period, from ownHead on
    this.ownHead = 0;
    this.echo = null; // { since, readings, exact, above, level }
    this.echoed = false; // the level echoed own successes: a sliding window, whatever the resets say
    // where no limit is stated: whether one was, the highest count read, the rate the test began at
    this.limitStated = false;
    this.top = null;
    this.xAtTop = 0;
    this.steadyCuts = null; // the cuts at the first reading after the start: none since, the test runs
    // stacked limits: the limit the last success stated; the total's bound from another limit's refusals
    this.successLimit = null;
    this.otherCap = Infinity;
    let x0 = this.rate / n;
    if (this.ns.initial_sleep !== null) x0 = fmin(1 / secs(this.ns.initial_sleep), x0);
    this.x = this.clampRate(x0);
    this.probe = this.c.increase * this.rate * this.rate; // blind to the count: how fast it climbs
    this.inARow = 0; // blind: refusals since the last success
    this.blockedAt = null; // blind: the last hold for a blocked key, in this run of refusals
  }

  // Every parameter out of its range, as the simulator's check names it.
  problems() {
    const c = this.c;
    const v = { ...c, quota: c.quota ?? 4500, period: this.ns.period !== null ? secs(this.ns.period) : 3600,
      error_backoff: secs(this.ns.error_backoff) };
    const out = POSITIVE.filter((k) => !(Number.isFinite(v[k]) && v[k] > 0))
      .map((k) => `${k} must be above 0 (got ${v[k]})`);
    out.push(...NON_NEGATIVE.filter((k) => !(Number.isFinite(v[k]) && v[k] >= 0))
      .map((k) => `${k} must be 0 or more (got ${v[k]})`));
    if ((c.quota === null) !== (c.period === null)) out.push('quota and period must be set together');
    for (const [k, ok, what] of [['reserve', v.reserve < 1, 'below 1'], ['pull_max', v.pull_max <= 1, 'at most 1'],
      ['gain', v.gain <= 1, 'at most 1'], ['decrease', v.decrease > 0 && v.decrease < 1, 'above 0 and below 1'],
      ['jitter', v.jitter >= 0 && v.jitter < 1, 'from 0 to below 1'], ['min_samples', v.min_samples >= 2, 'at least 2'],
      ['error_backoff_max', this.ns.error_backoff_max >= this.ns.error_backoff, 'at least error_backoff']]) {
      if (!ok) out.push(`${k} must be ${what} (got ${v[k]})`);
    }
    return out;
  }

  // Seconds to wait before `thread` sends (0: send now, the send is booked); `now` in seconds.
  wait(thread, now) { return secs(this.waitNs(thread, fromSecs(now))); }

  // After an answer; `now` and `latency` in seconds, `unix` the wall clock in seconds (GitHub's
  // epoch reset, a Retry-After date; default now). Returns the answer's class.
  observe(thread, now, status, headers, latency, unix) {
    return this.observeNs(thread, fromSecs(now), status, headers, fromSecs(latency), unix);
  }

  waitNs(thread, now) {
    if (!(thread >= 0 && thread < this.threads.length)) return NS; // out of range: wait a second
    if (!this.threads[thread].pending) this.delay(now, thread);
    return this.acquire(now, thread);
  }

  observeNs(thread, now, status, headers, latency, unix) {
    const answer = readAnswer(status, headers ?? [], latency, unix);
    if (thread >= 0 && thread < this.threads.length) this.onResponse(now, thread, answer);
    return answer.status;
  }

  clampRate(x) { return clamp(x, this.rate / this.c.crowd * 0.01, this.c.max_rate * this.rate); }
  ownReserve() { return fmin(fmax(this.c.reserve * this.limit, 1), this.limit * 0.25); }
  // At least a quarter of the crowd's swing where the bucket holds it.
  reserve() {
    const own = this.ownReserve();
    return this.holdsCrowd() ? fmin(fmax(own, 0.25 * this.swing()), this.limit * 0.25) : own;
  }
  // The middle of the span the turnovers agree on.
  get resetAt() { return this.resetSpan === null ? null : (this.resetSpan[0] + this.resetSpan[1]) / 2; }
  refill() { return this.resetAt !== null ? 0 : this.rate; }
  spacing() { return 1 / this.x; }
  windowSecs() { return this.c.window_periods / this.x / Math.sqrt(this.threads.length); }
  loopSecs() { return fmax(this.windowSecs(), this.c.min_flow / this.rate); }
  minFlow() { return this.resetAt !== null ? fmin(this.c.min_flow, this.limit * 0.3) : this.c.min_flow; }
  draw(lo, hi) { return lo + this.random() * (hi - lo); }
  price(r) { return this.rate / this.c.crowd * exp(fmin((r - this.reserve()) / this.slope(), 50)); }
  toReset(t) { return this.resetAt === null ? null : this.period - remEuclid(t - this.resetAt, this.period); }
  planned(t) {
    const left = this.toReset(t);
    return left === null ? 0 : fmax(this.limit - this.reserve(), 0) * left / this.period;
  }
  phase(now) { return this.clockPhase + secs(Math.max(now - this.clockAt, 0)) * this.x; }

  room() { return this.roomAbove(this.reserve()); }
  roomAbove(reserve) { return fmax(this.limit - 1 - reserve, 0) * 0.8; } // up to B − 1
  swing() { return 2 * Math.sqrt(this.c.crowd); } // the level's swing from K senders
  // The room above the configured reserve holds the swing.
  holdsCrowd() { return this.resetSpan === null && this.swing() <= this.roomAbove(this.ownReserve()); }

  slope() {
    const floor = this.resetSpan !== null ? 4 : this.holdsCrowd() ? this.swing() : 10; // 10 on a bucket
    const span = fmax(this.c.span * this.limit, fmin(floor, this.room()));
    return fmax(span / this.lnCrowd, Number.MIN_VALUE * 2 ** 52); // f64::MIN_POSITIVE
  }

  target(r, t) {
    let left = this.toReset(t);
    if (left !== null) {
      const res = 0.75 * this.reserve() * fmin(left / this.period, 1); // 3/4 of the reserve
      // past the reset, the allowances that follow; over at least the reset's uncertainty
      const h = fmax(fmax(left, this.windowSecs()), fmin(2.5 * secs(this.ns.reset_resolution), 0.5 * this.period));
      const later = this.limit * (h - left) / this.period; // whole
      return fmin(fmax((r + 1 - res + later) / h, this.rate * 0.05), this.otherCap);
    }
    const tau = fmax(this.c.drain_fill * this.limit / this.rate, this.c.drain_windows * this.loopSecs());
    let surplus = (r - this.reserve()) / tau;
    if (this.fullStart) surplus = fmin(surplus, this.c.full_drain * this.rate);
    return fmin(fmax(this.rate + surplus, this.rate * 0.25), this.otherCap); // under another limit's bound
  }

  setRate(now, x) {
    now = Math.max(now, this.clockAt);
    this.clockPhase = this.phase(now);
    this.clockAt = now;
    this.x = this.clampRate(x);
  }

  applyWindow(now, first, last) {
    const dt = last.t - first.t;
    if (this.sliding) return this.applySlidingWindow(now, first, last, dt);
    const since = this.winSince;
    const refused = this.resetSpan !== null ? this.winRefused : 0; // a spent window hides them
    // what the bucket lost to overflowing counts as refilled and taken by nobody
    const overflow = this.resetSpan === null ? this.winOverflow : 0;
    const total = fmax(this.refill() - (last.r - since.r - this.winTaken - refused + overflow) / dt, this.rate * 0.02);
    const target = this.target((since.r + last.r) / 2, (since.t + last.t) / 2);
    // a first window that reads a flood cuts straight to the target
    const flood = this.updates === 0 && !this.fullStart && this.resetSpan === null && total > 4 * target;
    let lnX = ln(this.x) + (flood ? 1 : this.c.gain) * clampStep(ln(target / total));
    const n = this.threads.length;
    // the whole total: a full bucket of unproven refill doubles it, then own successes bound R
    const alone = n * this.x >= (1 - 0.1) * total;
    if (alone && this.overflowing(first, last)) lnX = fmax(lnX, ln(this.x) + ln(2));
    const price = this.price(last.r - this.planned(last.t));
    const crowd = fmax(total / fmax(this.x, price), n);
    const periods = this.resetSpan !== null ? 4 : this.c.pull_periods; // slower on a fixed window
    let pull = fmin(this.slope() / (periods * crowd), this.c.pull_max);
    const share = clamp(n * this.x / total, 0, 1);
    pull = this.holdsCrowd()
      ? pull * (1 - 0.5 * share) // room for a crowd's swing, a lone process keeps half its pull
      : pull * (1 - share) * fmin((1 - share) / 0.1, 1); // a lone process's pull fades
    const cap = this.fullStart ? target * this.x / total : target;
    lnX += pull * fmax(ln(fmin(price, cap)) - lnX, -LN_100);
    this.setRate(now, exp(lnX));
    if (alone) this.learnRefillFromSuccesses(now, first, last);
  }

  // A stated reset bounded the refill, and the ceiling they put on it lies within PINNED_RATIO
  // of that bound.
  refillPinned() {
    return this.fromResets && this.refillCeiling !== null && this.refillBound !== null
      && this.refillCeiling <= PINNED_RATIO * this.refillBound;
  }
  // A bucket's refill that nothing states, tells or bounds from its resets, past the first window.
  refillUnproven() {
    return this.c.quota === null && this.policy === null && !this.refillPinned() && !this.noBucket
      && this.resetSpan === null && this.updates > 0;
  }

  // R*dt >= own successes + the level's rise over the window (others only take more), the count
  // rounded down; from windows whose level rose by at most 1, so never above the own rate.
  learnRefillFromSuccesses(now, first, last) {
    const dt = last.t - first.t, rise = last.r - first.r;
    if (!this.refillUnproven() || dt <= 0 || rise > 1) return;
    const bound = (this.winSuccesses + rise - 1) / dt;
    if (!(bound > this.rate) || (this.refillCeiling !== null && bound > this.refillCeiling)) return;
    this.refillBound = bound;
    this.moveRefill(now, bound, this.limit / bound);
  }

  // Full at both ends of the window, own successes and no refusal: the refill is more than taken.
  overflowing(first, last) {
    const top = this.limit - 1;
    return this.refillUnproven() && this.limit > 2 && this.winSuccesses > 0 && this.winRefused === 0
      && first.r >= top && last.r >= top;
  }

  applySlidingWindow(now, first, last, dt) {
    const average = (this.limit - (first.r + last.r) / 2) / this.period;
    const fall = (first.r - last.r) / dt;
    const total = fmax(fmax(average, fall), this.rate * 0.02);
    const gain = fall > average ? this.c.gain : this.c.gain * fmin(1 * dt / this.period, 1);
    this.setRate(now, exp(ln(this.x) + gain * clampStep(ln(fmin(this.limit / this.period, this.otherCap) / total))));
  }

  // A stated reset's rounding: the header's second, or 0.02 of the period if more.
  resetSlack() { return fmax(this.period * 0.02, secs(this.ns.reset_resolution)); }

  readReset(t, stated, r) {
    if (this.resetAt !== null || !this.knowsQuota()) return this.forgetSliding();
    const slack = this.resetSlack();
    if (stated >= this.period - slack && stated > fmax(this.limit - r, 0) / this.rate + 1.5 * slack) {
      this.slidingSince ??= t;
      this.slidingVotes += 1;
      if (this.slidingVotes >= 3 && t - this.slidingSince > 2 * slack) this.sliding = true;
    } else if (stated < this.period - 1.5 * slack) this.forgetSliding();
  }

  // No limit stated: a level that cutting the rate to a quarter cannot raise is the bucket's top.
  readTop(r, refused) {
    if (this.limitStated) return;
    const top = this.top;
    if (top !== null && r <= top && r + 1 >= top && !refused) {
      if (this.steadyCuts === null && this.updates > 0) {
        // The first reading after the start: a process cut in the start's flood tests from now.
        this.steadyCuts = this.decreases;
        if (this.decreases > 0) {
          this.xAtTop = this.x;
          return;
        }
      }
      const uncut = this.decreases === 0 || this.steadyCuts === this.decreases;
      if (uncut && top >= 1 && top + 1 < this.limit && this.x < this.xAtTop / 4) {
        this.limit = top + 1;
        this.xAtTop = this.x;
      }
    } else {
      this.top = top === null ? r : Math.max(top, r);
      this.xAtTop = this.x;
    }
  }

  // Alone on a window too short for its stated resets to tell, r + own = B on every success
  // says a sliding window (own: the process's successes counted in the last period); a bucket
  // refills between them, and reads above B once a token came back since the success before.
  readEcho(t, r) {
    if (!this.knowsQuota()) {
      this.own = [];
      this.ownHead = 0;
      this.echo = null;
      return;
    }
    const own = this.own, start = t - this.period;
    // Dropped from the front by moving the head, not by shifting the whole list per answer.
    let head = this.ownHead;
    while (head < own.length && (own[head] <= start || own.length - head > 2 * this.limit)) head += 1;
    if (head > 64 && 2 * head > own.length) {
      own.splice(0, head);
      head = 0;
    }
    this.ownHead = head;
    let at = own.length;
    while (at > head && own[at - 1] > t) at -= 1;
    const before = at > head ? own[at - 1] : null;
    own.splice(at, 0, t);
    if (before === null || t - before < 1 / this.rate) return;
    const e = r + (at - head + 1) - this.limit;
    this.echo ??= { since: t, readings: 0, exact: 0, above: 0, level: 0 };
    const tally = this.echo;
    tally.readings += 1;
    tally.level += r;
    if (Math.abs(e) < 0.5) tally.exact += 1;
    else if (e > 0) tally.above += 1;
    if (t - tally.since >= 4 * this.period && tally.readings >= 30) {
      if (tally.exact >= 0.95 * tally.readings && tally.level / tally.readings >= 0.1 * this.limit + 1) {
        this.resetSpan = null; // a turnover seen was a burst's echo
        this.sliding = this.echoed = true; // whatever the stated resets say from now on
      } else if (2 * tally.above >= tally.readings) this.sliding = this.echoed = false;
      this.echo = { since: t, readings: 0, exact: 0, above: 0, level: 0 };
    }
  }

  // A fixed window states its end, the same instant on every answer until it turns over,
  // while its count falls (a bucket's end moves on as it is used, a sliding window's is a period
  // after its newest request). Two successes more than two resolutions apart that state the same
  // end (within a resolution), the count lower at the second, place its reset at once.
  // On a fixed window every success of one window states its end within a resolution and the
  // answer's latency, and the next window's a period later: an end that drifts further (than a
  // resolution and the larger latency of the two answers), not by whole periods, without a
  // turnover of the level, is a sliding-window counter's or a sliding log's.
  readEndDrift(t, stated, latency) {
    if (this.resetAt === null) {
      this.fixedEnd = null;
      return;
    }
    const end = t + stated;
    if (this.fixedEnd === null) {
      this.fixedEnd = { end, latency };
      return;
    }
    const drift = Math.abs(end - this.fixedEnd.end);
    const res = secs(this.ns.reset_resolution);
    const slack = res + fmax(latency, this.fixedEnd.latency) + 1e-6;
    if (drift <= slack) return;
    if (this.period > 4 * res && Math.abs(drift - Math.round(drift / this.period) * this.period) <= slack) {
      this.fixedEnd = { end, latency };
    } else {
      this.resetSpan = null;
      this.fixedEnd = null;
      this.endDrifted = true;
    }
  }
  readFixedEnd(t, stated, r, apart) {
    if (this.resetAt !== null || this.endDrifted) {
      this.statedEnd = null;
      return;
    }
    const end = t + stated;
    const same = secs(this.ns.reset_resolution);
    const cur = this.statedEnd;
    if (cur === null || !(Math.abs(end - cur.end) <= same)) {
      this.statedEnd = { end, first: { t, r } };
      return;
    }
    const first = cur.first;
    if (!(r < first.r && t - first.t > apart)) return;
    if (!this.knowsQuota()) { // no period to place it by, but no bucket's end stays put while r falls
      this.noBucket = true;
      this.statedEnd = null;
      return;
    }
    // A fixed window's end is never more than a period away (a sliding-window counter's can be).
    if (cur.end - first.t <= this.period + same) {
      this.placeReset(cur.end - same, cur.end); // a stated end is rounded up to the resolution
      this.placeReset(end - same, end);
      this.statedEnd = null;
      this.fullStart = false;
      this.sliding = false;
      this.window = null;
      this.samples = 0;
    }
  }

  // A success sent at t stated its window's end `stated` seconds on (counted no sooner),
  // rounded up: the window closes no sooner than stated - resolution. A reset predicted sooner
  // moves on to that (a window opened by its key's first request turns over later each period
  // than predicted).
  readStatedEnd(t, stated) {
    const left = this.toReset(t);
    if (left === null) return;
    const res = secs(this.ns.reset_resolution);
    const least = stated - res;
    if (stated <= this.period + res && left < least) {
      const later = least - left;
      this.resetSpan = [this.resetSpan[0] + later, this.resetSpan[1] + later];
    }
  }

  // A fixed window's allowance read spent (a count of 0): every thread waits for its stated
  // end, less the end's rounding.
  holdSpentWindow(now, sent, stated) {
    const sure = stated - secs(this.ns.reset_resolution);
    if (this.resetSpan !== null && sure > 0) this.holdProcess(now, sent + fromSecs(sure));
  }

  // A fixed window turned over between lo and hi. Its resets are a period apart: the span
  // kept so far, shifted by whole periods, is cut to this one (or replaced, if they do not meet),
  // and the reset is its middle.
  placeReset(lo, hi) {
    let span = [lo, hi];
    if (this.resetSpan !== null) {
      const [a, b] = this.resetSpan;
      const shift = roundHalfAway((lo + hi - (a + b)) / 2 / this.period) * this.period;
      const [from, to] = [fmax(lo, a + shift), fmin(hi, b + shift)];
      if (from <= to) span = [from, to];
    }
    this.resetSpan = span;
  }

  // A stated reset says no sliding window, unless the level's echo said one.
  forgetSliding() { this.sliding &&= this.echoed; this.slidingVotes = 0; this.slidingSince = null; }
  openWindow(s) {
    this.window = s; this.samples = 1; this.winSince = s; this.winTaken = 0; this.winRefused = 0;
    this.winLast = s; this.winOverflow = 0; this.winSuccesses = 0;
  }

  // A window of the law carries on across a fixed window's turnover.
  carryWindow(newest, s) {
    if (this.window === null) return this.openWindow(s);
    const left = this.toReset(newest.t);
    const turnover = left !== null && newest.t + left <= s.t + 1e-9; // the reset placed between
    this.winTaken += fmax(this.winSince.r - newest.r, 0); // the level's fall up to the turnover
    if (turnover) this.winTaken += fmax(this.limit - s.r, 0); // what the new allowance lost before s
    this.winSince = s;
  }

  observeLevel(now, t, r) {
    const s = { t, r };
    if (this.newest === null && r >= this.c.full_level * this.limit) this.fullStart = true;
    else if (r <= this.reserve() + this.slope() * this.lnCrowd) this.fullStart = false;
    const slack = fmax(secs(now) - t, 0); // counted at t give or take this (half the latency)
    if (this.newest !== null && t >= this.newest.t) {
      const refill = this.refill() * (t - this.newest.t + slack + this.newestSlack);
      // on a sliding window a jump is requests leaving it a period after they were sent
      if (!this.sliding && r > this.newest.r + refill + fmax(this.limit * 0.1, 2)) {
        const newest = this.newest;
        this.placeReset(newest.t, t); // a fixed window turned over between the two readings
        this.fixedEnd = null;
        this.fullStart = false;
        this.newest = s;
        this.newestSlack = slack;
        return this.carryWindow(newest, s);
      }
      if (this.resetAt !== null && r > this.newest.r + 2) this.resetSpan = null;
    }
    if (this.newest === null || t >= this.newest.t) {
      this.newest = s;
      this.newestSlack = slack;
    }
    const first = this.window;
    if (first === null) return this.openWindow(s);
    this.samples += 1;
    const [limit, refill] = [this.limit, this.refill()];
    if (t > this.winLast.t) {
      // A reading at the top (B − 1, the request just counted) found the bucket full: since the
      // reading before it refilled from that level, then overflowed for at most the time left
      // over (others' requests only shorten it; for a process alone it is exact).
      if (r >= limit - 1 && refill > 0) {
        const fill = fmax(limit - this.winLast.r, 0) / refill;
        this.winOverflow += fmax((t - this.winLast.t) - fill, 0) * refill;
      }
      this.winLast = s;
    }
    const flow = this.rate * (t - first.t) - (r - this.winSince.r) + this.winTaken;
    if (t - first.t >= this.windowSecs() * (this.updates === 0 ? 0.7 : 1) && this.samples >= this.c.min_samples
      && flow >= this.minFlow()) {
      this.applyWindow(now, first, s);
      this.updates += 1;
      this.openWindow(s);
    }
  }

  takePolicy(now, q, limitFromQuota) {
    if (this.policy !== null && this.policy[0] === q[0] && this.policy[1] === q[1]) return;
    this.policy = q;
    if (limitFromQuota) this.limit = q[0];
    this.moveRefill(now, q[0] * 1e9 / q[1], secs(q[1]));
  }

  // R and the period are now rate and period: the per-thread rate moves with R.
  moveRefill(now, rate, period) {
    const scale = rate / this.rate;
    this.rate = rate;
    this.period = period;
    this.setRate(now, this.x * scale);
  }

  // Without a stated or given quota, a fixed window's period from its stated reset (its
  // end, the same on every answer until it turns over): two ends in a row, each stated alike
  // (within the header's resolution, reset_resolution) for more than two resolutions, with the
  // level's turnover at the first, are a period apart.
  // Stated, given, or learned from the stated resets.
  knowsQuota() { return this.policy !== null || this.c.quota !== null || this.refillBound !== null; }

  // Without a policy, a bucket is whole again (B - r)/R after the answer and a sliding
  // window a period B/R after its newest request, so an answer whose stated end moved since the
  // last one bounds the refill from below: R >= (B - r - 1)/reset. The refill is the largest.
  learnRefill(now, stated, r) {
    if (this.c.quota !== null || this.policy !== null) return;
    this.longestReset = fmax(this.longestReset, stated);
    this.noBucket ||= this.resetSpan !== null; // a fixed window's turnover says no bucket too
    if (this.noBucket) return this.refillFromLongestReset(now);
    const t = secs(now);
    const end = t + stated;
    const last = this.movingEnd;
    const res = secs(this.ns.reset_resolution);
    if (stated > res) {
      // A bucket's reset is rounded up by less than a resolution.
      const ceiling = (this.limit - r + 1) / (stated - res);
      this.refillCeiling = this.refillCeiling === null ? ceiling : fmin(this.refillCeiling, ceiling);
    }
    // An end that moved, or a count that rose (a bucket filling), is no fixed window's.
    const moved = last !== null && t > last.t && (Math.abs(end - last.end) > res || r > last.r + 1);
    this.movingEnd = { end, t, reset: stated, r };
    if (!moved || stated <= 0) return;
    let bound = (this.limit - r - 1) / stated;
    // One reset at levels further apart than a bucket's refill explains is a sliding
    // window's (a period at any level): its refill is B/reset.
    if (stated > 2 * res && Math.abs(stated - last.reset) <= res) {
      const bucketRateAtMost = (this.limit - Math.min(r, last.r) + 1) / (stated - res);
      if (Math.abs(r - last.r) > 2 * res * bucketRateAtMost + 1) bound = Math.max(bound, this.limit / stated);
    }
    const tooSlow = bound > 0 && this.limit / bound > 7 * 86400; // no bucket takes a week to fill
    if (tooSlow || (this.refillCeiling !== null && bound > this.refillCeiling)) {
      this.noBucket = true; // no bucket says this
      return this.refillFromLongestReset(now);
    }
    if (!(bound > (this.refillBound ?? 0))) return;
    this.refillBound = bound;
    this.fromResets = true;
    this.moveRefill(now, bound, this.limit / bound);
  }

  // B over the longest reset stated, the window's period from below.
  refillFromLongestReset(now) {
    if (this.longestReset <= 0) return;
    const rate = this.limit / this.longestReset;
    if (this.refillBound === rate) return;
    this.refillBound = rate;
    this.moveRefill(now, rate, this.longestReset);
  }

  readPeriod(now, stated) {
    if (this.c.quota !== null || this.statedPolicy) return;
    const t = secs(now);
    const same = secs(this.ns.reset_resolution);
    const end = t + stated;
    const cur = this.windowEnd;
    if (cur === null || Math.abs(end - cur.end) > same) {
      if (cur !== null) this.lastEnd = cur.seen - cur.since > 2 * same ? cur.earliest : null;
      this.windowEnd = { end, earliest: end, since: t, seen: t };
      return;
    }
    cur.earliest = Math.min(cur.earliest, end); // seconds to go are rounded at each answer's phase
    cur.seen = t;
    if (this.lastEnd === null || !(cur.seen - cur.since > 2 * same)) return;
    const gap = cur.earliest - this.lastEnd; // read again as the end narrows
    const read = Math.sign(gap) * Math.round(Math.abs(gap)); // f64::round: halves away from zero
    if (this.periodRead !== null && this.periodRead.end === cur.end) {
      this.periodRead = { end: cur.end, period: read };
    } else {
      this.periodBefore = this.periodRead === null ? null : this.periodRead.period;
      this.periodRead = { end: cur.end, period: read };
    }
    // Ends read further apart than a period now and then (a window opened late, an epoch
    // second rounded up): the shorter of the last two.
    const period = this.periodBefore === null ? read : Math.min(read, this.periodBefore);
    const turnedOver = this.resetAt !== null && Math.abs(this.resetAt - this.lastEnd) <= 0.1 * period + same;
    // Never shorter than an end stated alike takes: two ends closer are one end, rounded.
    if (turnedOver && period >= Math.max(2 * same, 1) && period <= 86400) {
      this.takePolicy(now, [Math.trunc(clamp(this.limit, 0, U64)), period * NS], false);
    }
  }

  delay(now, thread) {
    const th = this.threads[thread];
    const n = this.threads.length;
    if (th.target === null) {
      if (this.offset === null) { // once per process, the first wait of any thread
        this.offset = this.draw(0, 1);
        this.clockAt = now;
        this.clockPhase = 0;
      }
      th.target = (thread + this.offset) / n * fmax(secs(this.ns.first_spread) * this.x, 1);
    }
    const j = this.c.jitter;
    // Scaled to what the bucket tolerates: a bucket of one token lets no send come early (the
    // draw is made all the same, so the order of the draws does not depend on the bucket).
    const fits = clamp(this.limit - 1, 0, 1);
    th.jit = j <= 0 ? 0 : this.draw(-j, j) * fits / n;
    th.pending = true;
  }

  // The key is empty until `until` for every thread, not only the one refused: the phase stops
  // until then, so the threads resume in their order, one spacing apart.
  holdProcess(now, until) {
    if (until > Math.max(this.clockAt, now)) {
      this.clockPhase = this.phase(now);
      this.clockAt = until;
    }
  }

  // d later than the reset predicted, on the period's circle (a reset predicted a moment ago is
  // the next one's), within the prediction's uncertainty, or a resolution more (rounded up).
  nearReset(d) {
    const [lo, hi] = this.resetSpan;
    const within = 0.1 * this.period + (hi - lo) / 2;
    return remEuclid(d + within, this.period) - within <= secs(this.ns.reset_resolution) + within;
  }

  acquire(now, thread) {
    const th = this.threads[thread];
    let left = th.target !== null ? fromSecs(fmax(th.target + th.jit - this.phase(now), 0) / this.x) : 0;
    left = Math.min(left, Math.max(fromSecs(this.spacing() / 8), 1)); // looked at 8 times a period
    // and a hold waited out whole: the thread's, or the process's phase stopped by a refusal
    left = Math.max(left, Math.max(th.hold, this.clockAt) - now);
    if (left !== 0) return left;
    const phase = this.phase(now);
    let next = (th.target ?? phase) + 1;
    if (next < phase + 0.5) next += Math.ceil(phase + 0.5 - next);
    th.target = next;
    th.lastSend = now;
    th.pending = false;
    return 0;
  }

  // A refusal stating another limit than the last success's bounds the key's total rate by
  // L / (T - resolution), T the later of its reset and Retry-After, where T exceeds two
  // resolutions, and leaves the bucket; any other stated limit is the bucket.
  takeStatedLimit(a) {
    this.limitStated = true;
    if (a.status === 'limited' && this.successLimit !== null && this.successLimit !== a.limit) {
      const res = secs(this.ns.reset_resolution);
      const wait = fmax(a.reset === null ? 0 : secs(a.reset), a.retryAfter === null ? 0 : secs(a.retryAfter));
      if (wait > 2 * res) this.otherCap = fmin(this.otherCap, a.limit / (wait - res));
      return;
    }
    this.limit = a.limit;
    if (a.status === 'ok') this.successLimit = a.limit;
  }

  onResponse(now, thread, a) {
    const q = a.quota !== null && a.quota[0] * 1e9 / a.quota[1] > 0 ? a.quota : null;
    this.statedPolicy ||= q !== null;
    if (this.c.quota === null && q !== null) this.takePolicy(now, q, a.limit === null);
    if (a.limit !== null && a.limit > 0) this.takeStatedLimit(a);
    else if (a.remaining !== null && a.remaining >= this.limit) this.limit = a.remaining + 1; // what is left and this
    const th = this.threads[thread];
    const sent = th.lastSend ?? now;
    const counted = Math.max(now - Math.floor(a.latency / 2), 0, sent); // a refusal's reset: from the last let in
    if (a.remaining !== null && (a.status === 'ok' || a.status === 'limited')) {
      this.headers = true;
      if (a.reset !== null && a.status === 'ok') {
        this.readReset(secs(now), secs(a.reset), a.remaining);
        this.readFixedEnd(secs(counted), secs(a.reset), a.remaining, 2 * secs(this.ns.reset_resolution));
      } else if (a.reset !== null && a.retryAfter !== null && a.status === 'limited') { // a window's end, far off
        const res = secs(this.ns.reset_resolution);
        if (secs(a.reset) > 2 * res && Math.abs(secs(a.reset) - secs(a.retryAfter)) <= res) {
          this.readFixedEnd(secs(counted), secs(a.reset), a.remaining, res);
        }
      }
      if (a.status === 'ok') this.readEcho(secs(counted), a.remaining);
      this.readTop(a.remaining, a.status === 'limited');
      this.observeLevel(now, secs(counted), a.remaining);
      if (a.reset !== null && a.status === 'ok') {
        this.readEndDrift(secs(now), secs(a.reset), secs(a.latency));
        this.readPeriod(now, secs(a.reset));
        this.learnRefill(now, secs(a.reset), a.remaining);
        this.readStatedEnd(secs(sent), secs(a.reset)); // from the send: counted no sooner
        // a fixed window's allowance read spent: the key is empty to its stated end
        if (a.remaining === 0) this.holdSpentWindow(now, sent, secs(a.reset));
      }
    }
    if (a.status === 'ok') {
      th.errors = 0;
      // a token the refill gave, read after the window's first reading
      if (a.remaining !== null && this.window !== null && secs(counted) > this.window.t) this.winSuccesses += 1;
      if (!this.headers) { // blind to the count: climb by the probe, faster below the quota
        const since = this.lastIncrease !== null ? secs(now - Math.min(this.lastIncrease, now)) : 0;
        this.lastIncrease = now;
        const n = this.threads.length;
        const own = n * this.x;
        const below = fmin(this.rate / own, BLIND_BELOW_MAX);
        this.setRate(now, fmin((own + this.probe * below * below * since) / n, this.rate / n));
        this.probe = fmin(this.probe * Math.exp(BLIND_ADAPT * BLIND_REFUSALS), this.rate * this.rate * BLIND_PROBE_MAX);
        this.inARow = 0;
        this.blockedAt = null;
      }
    } else if (a.status === 'limited') {
      if (this.window !== null) this.winRefused += 1; // a request a spent window's level cannot show
      th.errors = 0;
      const period = fromSecs(this.spacing());
      const left = this.toReset(secs(now));
      const n = this.threads.length;
      const spent = this.period * this.x * n >= 4 && a.retryAfter !== null && left !== null
        && this.nearReset(secs(a.retryAfter) - left);
      const d = this.lastDecrease;
      if (!this.headers) { // blind to the count: the refused thread is one of n, cut to BLIND_CUT
        this.inARow += 1;
        this.setRate(now, this.x * Math.exp(Math.log(BLIND_CUT) / n));
        if (this.blockedAt === null) { // once held for a blocked key, a refusal leaves the probe
          this.probe = fmax(this.probe * Math.exp(-BLIND_ADAPT * (1 - BLIND_REFUSALS)), this.rate * this.rate * BLIND_PROBE_MIN);
        }
        this.lastIncrease = this.lastDecrease = now;
        this.decreases += 1;
        if (this.inARow >= 2) { // a blocked key: the whole process holds
          // a refusal of a request sent before the last hold says nothing new
          const k = this.blockedAt === null ? BLOCKED_HOLD : sent >= this.blockedAt ? BLOCKED_HOLD_AGAIN : null;
          if (k !== null) {
            this.blockedAt = now;
            this.holdProcess(now, Math.min(now + fromSecs(fmin(k / this.x, this.period)), U64));
          }
        }
      } else if (!spent && (d === null || (sent >= d && now >= Math.min(d + period, U64)))) {
        const perPeriod = n * this.x * this.period;
        const factor = this.sliding ? fmax(1 - 1 / fmax(perPeriod, 1), this.c.decrease)
          : !(this.headers && this.holdsCrowd()) ? this.c.decrease
            : this.updates === 0 && this.decreases === 0
              ? fmin(n / this.swing(), this.c.decrease) // refused before any window, a crowd
              : exp(ln(this.c.decrease) / n); // an n-th of a halving per refusal
        this.setRate(now, this.x * factor);
        this.lastDecrease = now;
        this.decreases += 1;
        this.window = null;
        this.samples = 0;
      }
      let wait = 0;
      if (a.retryAfter !== null) {
        const ra = secs(a.retryAfter);
        const stretch = this.c.retry_jitter > 0 ? this.draw(0, this.c.retry_jitter) : 0;
        wait = fromSecs(ra + stretch * fmin(ra, this.spacing()));
      }
      th.hold = Math.min(now + wait, U64);
      // the key is surely empty for the Retry-After less its rounding, for every thread (where
      // the predicted reset explains the refusal, to that reset instead)
      if (a.retryAfter !== null && !spent) {
        this.holdProcess(now, Math.min(now + Math.max(a.retryAfter - this.ns.reset_resolution, 0), U64));
      } else if (a.retryAfter !== null && left !== null) {
        // spent before the reset: every thread holds to it, where the wait places it closely
        const ra = secs(a.retryAfter), res = secs(this.ns.reset_resolution);
        if (ra > 4 * res) {
          this.holdProcess(now, Math.min(now + fromSecs(fmax(ra - res, fmin(left, ra))), U64));
        }
      }
    } else { // 503, any other status, no answer: back this thread off, doubling
      const base = secs(this.ns.error_backoff) * 2 ** Math.min(th.errors, 30);
      th.hold = Math.min(now + fromSecs(fmin(base, secs(this.ns.error_backoff_max))), U64);
      th.errors += 1;
    }
  }
}

// Rust's Duration::from_secs_f64(s) in nanoseconds, s >= 0: the exact value, ties to even.
function durationNanos(s) {
  const [m, e] = parts(s);
  const [shift, p] = [BigInt(1075 - e), m * 1000000000n];
  if (shift <= 0n) return Number(p << -shift);
  const q = p >> shift;
  const [r, half] = [p - (q << shift), 1n << (shift - 1n)];
  return Number(r > half || (r === half && (q & 1n)) ? q + 1n : q);
}

// --- Reading an answer: Answer::read of crates/fair-share/src/answer.rs, with fields.rs (the list
// grammar) and when.rs (the times). Inside, a count is a BigInt u64 and a duration BigInt
// nanoseconds up to Rust's Duration::MAX (DMAX); readAnswer gives the law Numbers.
const [NSN, U64N] = [1000000000n, 18446744073709551615n];
const DMAX = U64N * NSN + NSN - 1n;
const DAYN = 86400n * NSN;
const CLOCK_SKEW = 2n * NSN; // how far the answer's Date may be from the wall clock before it is the clock
// The separate fields' prefixes, in the order a value is taken (the last Anthropic's request limit).
const SEPARATE = ['ratelimit-', 'x-ratelimit-', 'x-rate-limit-', 'anthropic-ratelimit-requests-'];
// The wait under other names, where Retry-After is absent or unreadable.
const RETRY_AFTER_ALIASES = ['x-ratelimit-retry-after', 'x-rate-limit-retry-after-seconds', 'x-retry-in'];
// Kong's X-RateLimit-Remaining-Minute and its kin: the window of each suffix, in seconds.
const WINDOW_SUFFIXES = [['second', 1n], ['minute', 60n], ['hour', 3600n], ['day', 86400n],
  ['month', 30n * 86400n], ['year', 365n * 86400n]];
const SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]'; // char::is_whitespace
const TRIM = new RegExp(`^${SPACE}+|${SPACE}+$`, 'g');
const UINT = /^\+?[0-9]+$/;
const INT = /^[+-]?[0-9]+$/;
const FLOAT = /^([+-]?)(?:(inf|infinity)|(nan)|([0-9]*)(?:\.([0-9]*))?(?:e([+-]?[0-9]+))?)$/i;
const DURATION = /([0-9.]+)([^0-9.]+)/y; // a number and its unit, `6m` of `6m0s`
const DECIMAL = /^(?:[0-9]+\.?[0-9]*|\.[0-9]+)$/;
const [TWO_DIGITS, DIGITS] = [/^[0-9]{2}$/, /^[0-9]+$/];
const UNITS = new Map([['h', 3600], ['m', 60], ['s', 1], ['ms', 1e-3], ['us', 1e-6], ['\u00b5s', 1e-6], ['ns', 1e-9]]);
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const trim = (v) => v.replace(TRIM, '');
const lower = (v) => v.replace(/[A-Z]+/g, (c) => c.toLowerCase()); // eq_ignore_ascii_case
const bigMax = (a, b) => (a > b ? a : b);
const bigMin = (a, b) => (a < b ? a : b);

// str::parse::<i64> (or ::<u64> with UINT, 0, U64N), as a BigInt.
function int(v, re = INT, lo = -(2n ** 63n), hi = 2n ** 63n - 1n) {
  if (!re.test(v)) return null;
  const n = BigInt(v);
  return n >= lo && n <= hi ? n : null;
}

// fields.rs number: a non-negative f64 as Rust parses it (inf too); NaN says nothing.
function number(text) {
  const m = FLOAT.exec(trim(text));
  if (!m) return null;
  const [, sign, inf, nan, whole, frac, exp] = m;
  if (nan || (!inf && !whole && !frac)) return null;
  const f = (sign === '-' ? -1 : 1) * (inf ? Infinity : Number(`${whole || '0'}.${frac || '0'}e${exp ?? '0'}`));
  return f >= 0 ? f : null;
}

const asU64 = (f) => (f >= 2 ** 64 ? U64N : BigInt(Math.trunc(f))); // `f as u64`, f >= 0

// fields.rs count: a whole number, or a non-negative decimal cut to its whole part.
function count(text) {
  const v = trim(text);
  const n = int(v, UINT, 0n, U64N);
  if (n !== null) return n;
  const f = number(v);
  return f === null ? null : asU64(f);
}

// split_outside_quotes: `text` cut at every `sep` not inside double quotes.
function split(text, sep) {
  const out = [];
  let [start, quoted, escaped] = [0, false, false];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (escaped) escaped = false;
    else if (c === '\\' && quoted) escaped = true;
    else if (c === '"') quoted = !quoted;
    else if (c === sep && !quoted) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  out.push(text.slice(start));
  return out;
}

const unquote = (v) => (v.length >= 2 && v[0] === '"' && v[v.length - 1] === '"' ? v.slice(1, -1) : v);

// `key=value`: the key in lower case, the value unquoted.
function pair(piece) {
  const at = piece.indexOf('=');
  const k = at < 0 ? '' : lower(trim(piece.slice(0, at)));
  return k ? [k, unquote(trim(piece.slice(at + 1)))] : null;
}

// fields.rs members: each a head (name or number) and its parameters; a field whose members are
// `key=value` (draft-7's dictionary, `r=42;t=7`) is one member of every pair.
function members(field) {
  const parts = split(field, ',');
  if (parts.some((p) => split(p, ';')[0].includes('='))) {
    const params = parts.flatMap((p) => split(p, ';').map(pair).filter((x) => x !== null));
    return [{ name: null, number: null, params }];
  }
  return parts.filter((p) => trim(p) !== '').map((part) => {
    const [first, ...pieces] = split(part, ';');
    const head = trim(first);
    const m = { name: null, number: null, params: pieces.map(pair).filter((x) => x !== null) };
    if (head.startsWith('"')) m.name = unquote(head);
    else if (number(head) !== null) m.number = number(head);
    else if (head) m.name = head;
    return m;
  });
}

// The first parameter named any of `keys`, in the order of `keys`.
function param(m, ...keys) {
  for (const k of keys) for (const [name, v] of m.params) if (name === k) return v;
  return null;
}

// when.rs seconds: Duration::try_from_secs_f64 (the nearest nanosecond, ties to even), else MAX.
function seconds(s) {
  if (!(s < 2 ** 64)) return DMAX;
  const [m, e] = parts(s);
  const [shift, p] = [BigInt(1075 - e), m * NSN];
  if (shift <= 0n) return p << -shift;
  const q = p >> shift;
  const [r, half] = [p - (q << shift), 1n << (shift - 1n)];
  return r > half || (r === half && (q & 1n)) ? q + 1n : q;
}

// From `now` to the epoch second `at`, 0 once passed (past SystemTime's range: MAX).
function untilEpoch(at, now) {
  const d = seconds(at);
  return d >= 2n ** 63n * NSN ? DMAX : bigMax(d - now, 0n);
}

// `6m0s`, `1.5s`, `20ms`: numbers each followed by h, m, s, ms, us, µs or ns.
function goDuration(v) {
  if (!v) return null;
  let total = 0;
  for (DURATION.lastIndex = 0; DURATION.lastIndex < v.length;) {
    const m = DURATION.exec(v);
    if (!m || !DECIMAL.test(m[1]) || !UNITS.has(m[2])) return null;
    total += Number(m[1]) * UNITS.get(m[2]);
  }
  return Number.isFinite(total) ? seconds(total) : null;
}

// when.rs span: seconds, or a Go duration (tollbooth's X-Rate-Limit-Duration).
function span(v) {
  const t = trim(v);
  const x = number(t);
  return x !== null ? seconds(x) : goDuration(t);
}

const month = (m) => (MONTHS.includes(m) ? BigInt(MONTHS.indexOf(m) + 1) : null);

// when.rs civil: a civil date and an `hh:mm:ss` clock (UTC, each part exactly two digits), plus
// `fraction` nanoseconds, as BigInt Unix nanoseconds, or null. The date's numbers are BigInts.
function civil(year, mon, day, clock, fraction = 0n) {
  const hms = clock.split(':');
  if (year === null || mon === null || day === null || hms.length !== 3 || !hms.every((x) => TWO_DIGITS.test(x))) {
    return null;
  }
  const [h, m, s] = hms.map(BigInt);
  const within = (x, lo, hi) => x >= lo && x <= hi;
  if (!(within(mon, 1n, 12n) && within(day, 1n, 31n) && h <= 23n && m <= 59n && s <= 60n
    && within(year, 1970n, 9999n))) return null;
  const [y, mo] = mon <= 2n ? [year - 1n, mon + 9n] : [year, mon - 3n]; // days from a civil date
  const era = y / 400n; // y >= 1969: no rounding toward zero to undo
  const yoe = y - era * 400n;
  const doe = yoe * 365n + yoe / 4n - yoe / 100n + (153n * mo + 2n) / 5n + day - 1n;
  return ((era * 146097n + doe - 719468n) * 86400n + h * 3600n + m * 60n + s) * NSN + fraction;
}

// `Sun, 06 Nov 1994 08:49:37 GMT`, its parts split at ASCII white space.
const imfDate = (p) => (p.length === 6 && p[5] === 'GMT' ? civil(int(p[3]), month(p[2]), int(p[1]), p[4]) : null);

// `Sunday, 06-Nov-94 08:49:37 GMT`: a two-digit year is the one within 50 years of 2000.
function rfc850Date(p) {
  const dmy = p.length === 4 && p[3] === 'GMT' ? p[1].split('-') : [];
  let year = dmy.length >= 3 ? int(dmy[2]) : null;
  if (year === null) return null;
  year = year < 50n ? 2000n + year : year < 100n ? 1900n + year : year;
  return civil(year, month(dmy[1]), int(dmy[0]), p[2]);
}

// `Sun Nov  6 08:49:37 1994`.
const asctimeDate = (p) => (p.length === 5 ? civil(int(p[4]), month(p[1]), int(p[2]), p[3]) : null);

// `1994-11-06T08:49:37Z`, `1994-11-06T08:49:37.25+01:00`.
function rfc3339(v) {
  const at = v.search(/[Tt ]/);
  if (at < 0) return null;
  const [date, rest] = [v.slice(0, at), v.slice(at + 1)];
  const ymd = date.split('-');
  if (ymd.length !== 3) return null;
  let [clock, offset] = [rest.slice(0, -1), 0n];
  if (!rest.endsWith('Z') && !rest.endsWith('z')) {
    const z = Math.max(rest.lastIndexOf('+'), rest.lastIndexOf('-'));
    if (z < 0) return null;
    const colon = rest.indexOf(':', z);
    const [oh, om] = colon < 0 ? [null, null] : [int(rest.slice(z + 1, colon)), int(rest.slice(colon + 1))];
    if (oh === null || om === null || oh > 23n || om > 59n) return null;
    [clock, offset] = [rest.slice(0, z), (rest[z] === '-' ? -1n : 1n) * (oh * 3600n + om * 60n)];
  }
  const dot = clock.indexOf('.');
  const f = dot < 0 ? null : clock.slice(dot + 1);
  if (f !== null && !DIGITS.test(f)) return null;
  const local = civil(int(ymd[0]), int(ymd[1]), int(ymd[2]), dot < 0 ? clock : clock.slice(0, dot),
    f === null ? 0n : seconds(Number(`0.${f}`)));
  return local === null ? null : local - offset * NSN;
}

// when.rs http_date: a date in any form a server writes one, as BigInt Unix nanoseconds, or null:
// the HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850's and asctime's (`Sunday, 06-Nov-94
// 08:49:37 GMT`, `Sun Nov  6 08:49:37 1994`), or RFC 3339 (`1994-11-06T08:49:37Z`, with a fraction
// or an offset).
function httpDate(text) {
  const v = trim(text);
  const p = v.split(/[ \t\n\f\r]+/).filter((x) => x !== ''); // split_ascii_whitespace
  return imfDate(p) ?? rfc850Date(p) ?? asctimeDate(p) ?? rfc3339(v);
}

// when.rs reset: seconds to it, an epoch second or millisecond, a duration, a date.
function readReset(value, now) {
  const v = trim(value);
  const x = number(v);
  if (x !== null) return x >= 1e12 ? untilEpoch(x / 1e3, now) : x >= 1e9 ? untilEpoch(x, now) : seconds(x);
  const d = goDuration(v);
  if (d !== null) return d;
  const at = httpDate(v);
  return at === null ? null : bigMax(at - now, 0n);
}

// Retry-After: seconds, whole or not, or an HTTP date (passed: 0).
function readRetryAfter(value, now) {
  const s = number(value);
  if (s !== null) return seconds(s);
  const at = httpDate(value);
  return at === null ? null : bigMax(at - now, 0n);
}

const stated = (o) => ({ name: null, quota: null, window: null, remaining: null, reset: null, separate: false, ...o });
const then = (v, f) => (v === null || v === undefined ? null : f(v)); // Option::and_then

// A member of `RateLimit`: draft-8's `"name";r=…;t=…`, draft-7's `limit=…, remaining=…`.
const item = (m, now) => stated({
  name: m.name,
  quota: then(param(m, 'limit', 'q', 'l'), count),
  window: then(then(param(m, 'w'), number), seconds),
  remaining: then(param(m, 'r', 'remaining'), count),
  reset: then(param(m, 't', 'reset'), (v) => readReset(v, now)),
});

// draft-6/7's `100;w=60` or draft-8's `"name";q=100;w=60`; null without a quota.
function policy(m) {
  const quota = m.number !== null ? asU64(m.number) : then(param(m, 'q', 'l', 'limit'), count);
  return quota === null ? null : stated({ name: m.name, quota, window: then(then(param(m, 'w'), number), seconds) });
}

// The separate fields, also with `-requests`; policies in the limit field join `policies`.
function separate(h, now, policies) {
  const get = (what) => {
    for (const p of SEPARATE) for (const n of [p + what, `${p}${what}-requests`]) if (h.has(n)) return h.get(n);
    return null;
  };
  let quota = null;
  // Zendesk's bare X-Rate-Limit is the limit.
  const limitField = get('limit') ?? (h.has('x-rate-limit') ? h.get('x-rate-limit') : null);
  for (const m of then(limitField, members) ?? []) {
    if (param(m, 'w') !== null) {
      const p = policy(m);
      if (p !== null) policies.push(p);
    } else if (quota === null) quota = then(m.number, asU64);
  }
  // Discord's exact reset-after before its epoch reset.
  const reset = then(then(get('reset-after'), number), seconds) ?? then(get('reset'), (v) => readReset(v, now));
  let remaining = then(get('remaining'), count);
  // Without a limit field, what was used and what remains make it (Reddit's x-ratelimit-used).
  if (quota === null && remaining !== null) {
    const used = then(get('used'), count);
    if (used !== null && used + remaining <= U64N) quota = used + remaining;
  }
  quota ??= then(get('burst-capacity'), count); // else the bucket a refill names
  // A request's cost in tokens (Spring Cloud Gateway's requested-tokens): quota and count in requests.
  const asked = then(get('requested-tokens'), count);
  const cost = asked !== null && asked > 1n ? asked : 1n;
  quota = then(quota, (q) => q / cost);
  remaining = then(remaining, (r) => r / cost);
  // A bucket refilled at `tokens` every `every` seconds: its window is the time the refill fills it
  // in (Spring Cloud Gateway's replenish-rate a second, Atlassian's fillrate every interval-seconds).
  let refill = then(then(get('replenish-rate'), number), (t) => [t, 1]);
  if (refill === null) {
    const fill = then(get('fillrate'), number);
    refill = fill === null ? null : [fill, then(get('interval-seconds'), number) ?? 1];
  }
  if (refill !== null && !(refill[0] > 0 && refill[1] > 0)) refill = null;
  const window = refill !== null && quota !== null
    ? seconds(Number(quota) * Number(cost) * refill[1] / refill[0])
    : then(get('duration'), span); // tollbooth's duration, the limit's window
  const s = stated({ quota, window, remaining, reset, separate: true });
  return s.quota !== null || s.remaining !== null ? s : null;
}

// Shopify's `X-Shopify-Shop-Api-Call-Limit: 32/40`: 32 used of a bucket of 40.
function callLimit(h) {
  const v = h.get('x-shopify-shop-api-call-limit');
  const at = v === undefined ? -1 : v.indexOf('/');
  if (at < 0) return null;
  const [used, limit] = [count(v.slice(0, at)), count(v.slice(at + 1))];
  if (used === null || limit === null) return null;
  return stated({ quota: limit, remaining: limit > used ? limit - used : 0n });
}

// Kong's per-window fields: one limit per window named.
function perWindow(h) {
  const out = [];
  for (const [suffix, secs] of WINDOW_SUFFIXES) {
    const get = (what) => then(SEPARATE.map((p) => `${p}${what}-${suffix}`).find((n) => h.has(n)), (n) => count(h.get(n)));
    const [quota, remaining] = [get('limit'), get('remaining')];
    if (quota !== null || remaining !== null) out.push(stated({ quota, window: secs * NSN, remaining }));
  }
  return out;
}

// Every limit the answer states, each count given its policy: the one of the same name, else of
// the same quota, else the only one where the count states no quota. A policy no count names
// still states the quota. Then limits of one quota and one count are one (Kong's RateLimit-* beside
// its per-window fields, draft-8's beside the legacy ones), each filling in what the other left out,
// the values of a longer window first where they state two.
function limits(h, now) {
  let all = h.has('ratelimit') ? members(h.get('ratelimit')).map((m) => item(m, now)) : [];
  const policies = h.has('ratelimit-policy') ? members(h.get('ratelimit-policy')).map(policy).filter((p) => p !== null) : [];
  const s = separate(h, now, policies);
  if (s !== null) all.push(s);
  all.push(...perWindow(h));
  const shop = callLimit(h);
  if (shop !== null) all.push(shop);
  all = all.filter((l) => !(l.name === null && l.quota === null && l.window === null && l.remaining === null
    && l.reset === null));
  const used = policies.map(() => false);
  for (const l of all) {
    let i = l.name === null ? -1 : policies.findIndex((p) => p.name === l.name);
    if (i < 0 && l.quota !== null) i = policies.findIndex((p) => p.quota === l.quota);
    if (i < 0 && policies.length === 1 && l.quota === null) i = 0;
    if (i < 0) continue;
    l.quota ??= policies[i].quota;
    l.window ??= policies[i].window;
    used[i] = true;
  }
  if (all.length === 0) all.push(...policies.filter((_, i) => !used[i]).map((p) => ({ ...p })));
  for (let i = 0; i < all.length;) {
    let a = all[i];
    const j = all.findIndex((b, k) => k > i && a.quota !== null && b.quota === a.quota && a.remaining !== null
      && b.remaining === a.remaining);
    if (j < 0) {
      i += 1;
      continue;
    }
    let [b] = all.splice(j, 1);
    if (a.window !== null && b.window !== null && b.window > a.window) { // the longer window's values first
      [a, b] = [b, a];
      all[i] = a;
    }
    if (a.reset === null) a.separate = b.separate; // GitHub's rule follows the reset kept
    a.window ??= b.window;
    a.reset ??= b.reset;
    a.name ??= b.name;
  }
  return all;
}

// Of the limits that state a count, the one nearest to empty (the smallest share of its quota
// left, or the smallest count where a quota is missing), the later reset on a tie, else the
// first; with no count, the first that states a quota.
function binding(all) {
  const counted = all.filter((l) => l.remaining !== null);
  if (counted.length === 0) return all.find((l) => l.quota !== null) ?? null;
  const quotas = counted.every((l) => l.quota !== null && l.quota > 0n);
  const full = (l) => (quotas ? Number(l.remaining) / Number(l.quota) : Number(l.remaining));
  return counted.reduce((best, l) => {
    const [a, b] = [full(l), full(best)];
    return a < b || (a === b && l.reset !== null && (best.reset === null || l.reset > best.reset)) ? l : best;
  });
}

// Status::read: a 403 with x-ratelimit-remaining: 0 or a Retry-After is a refusal.
function readStatus(status, h) {
  if (status == null) return 'error';
  const spent = h.has('x-ratelimit-remaining') && count(h.get('x-ratelimit-remaining')) === 0n;
  return status === 403 && (spent || h.has('retry-after')) ? 'limited' : classify(status);
}

// Answer::read exactly: counts as BigInt, times as BigInt nanoseconds, `quota` [limit, window];
// `wall` the wall clock in BigInt Unix nanoseconds, the answer's Date instead when the two are
// more than 2 s apart. `headers` as readAnswer's.
export function readAnswerExact(status, headers, wall) {
  const h = new Map();
  for (const [k, v] of Array.isArray(headers) || headers[Symbol.iterator] ? headers : Object.entries(headers)) {
    const name = lower(trim(String(k)));
    if (!h.has(name)) h.set(name, trim(String(Array.isArray(v) ? v[0] : v)));
  }
  const date = then(h.get('date'), httpDate);
  const now = date === null || bigMax(date - wall, wall - date) <= CLOCK_SKEW ? wall : date;
  const st = readStatus(status, h);
  const b = binding(limits(h, now));
  const ms = then(h.has('retry-after-ms') ? h.get('retry-after-ms') : h.get('x-ms-retry-after-ms'), number);
  let retryAfter = ms !== null ? seconds(ms / 1e3) : then(h.get('retry-after'), (v) => readRetryAfter(v, now));
  // The wait under other names (Symfony's, bucket4j's, Traefik's), read as a reset is.
  for (const n of RETRY_AFTER_ALIASES) {
    if (retryAfter !== null) break;
    if (h.has(n)) retryAfter = readReset(h.get(n), now);
  }
  let [reset, wait] = [b?.reset ?? null, null];
  // On a 2xx a Retry-After can only be the reset (Flask-Limiter's), unless 0 (Atlassian's).
  if (st === 'ok') reset ??= retryAfter === 0n ? null : retryAfter;
  else { // GitHub's primary limit names no wait but the time its count resets
    wait = retryAfter ?? (b !== null && b.separate && b.remaining === 0n && st === 'limited' ? b.reset : null);
  }
  const cap = (d) => (d === null ? null : bigMin(d, DAYN));
  return {
    status: st,
    remaining: b?.remaining ?? null,
    limit: b?.quota ?? null,
    retryAfter: cap(wait),
    quota: b !== null && b.quota !== null && b.window !== null && b.window > 0n ? [b.quota, cap(b.window)] : null,
    reset: cap(reset),
  };
}

// `status` an HTTP status (null: no answer came), `headers` [name, value] pairs, a Map, a fetch
// Headers or a plain object, `latency` in nanoseconds, `unix` the wall clock in seconds (default
// now). As the law takes it: counts and nanoseconds as Numbers.
export function readAnswer(status, headers, latency, unix) {
  const wall = unix == null ? BigInt(Date.now()) * 1000000n
    : Number.isInteger(unix) ? BigInt(unix) * NSN : BigInt(Math.round(unix * 1e9));
  const a = readAnswerExact(status, headers, wall);
  const num = (v) => (v === null ? null : Number(v));
  return {
    status: a.status,
    remaining: num(a.remaining),
    limit: num(a.limit),
    retryAfter: num(a.retryAfter),
    quota: a.quota === null ? null : a.quota.map(Number),
    reset: num(a.reset),
    latency,
  };
}

export function classify(status) {
  if (status >= 200 && status <= 299) return 'ok';
  return status === 429 ? 'limited' : status === 503 ? 'unavailable' : 'error';
}
