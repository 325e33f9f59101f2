//! `fair-share` (version [`VERSION`]): the law of a blind client that needs no count of its
//! peers and still shares a key's quota equally, holding a small reserve of tokens instead of running into 429s. Every
//! constant is in the API's own units (the bucket `B`, the refill `R`, the window) or in the
//! client's own period, so one set of defaults serves a 5-per-second API and a 100,000-per-day
//! one. This crate is the law itself, with no I/O and no clock of its
//! own: the caller tells it the time and the answers. throttle-sim's `fair-share` algorithm is
//! this crate, and `ports/` holds the same law in Ruby, Python and JavaScript; the repository's
//! docs/fair-share.md is the porter's page; this comment has every formula. The code is a
//! small state machine: `src/law/modes.rs` names what the law believes about the server (no
//! count, a bucket, a fixed window, a sliding window) and its phase, with every transition and
//! the evidence for it, and each mode's rules have a file of their own in `src/law/`.
//!
//! **What it reads.** The status, `RateLimit-Remaining` (`r`), `RateLimit-Limit` (the bucket
//! `B`, else the quota, raised to `r + 1` by a count above it), `Retry-After`, its own
//! latency and clock, and its own thread count `n`. The quota `Q` per `period` gives the refill
//! `R = Q / period`.
//!
//! **Pacing.** A process paces its threads at one per-thread rate `x` on a common phase that
//! advances at `x` per second: thread `i` of `n` sends when the phase passes `k + (i + u)/n`
//! (`u` drawn once per process), give or take `jitter · clamp(B − 1, 0, 1) / n` (a bucket of one
//! token refuses any send sooner than `1/R` after the last, so there the jitter is nothing).
//! The process's sends are therefore
//! evenly spaced, `1/(n·x)` apart, and stay so when `x` changes: a small bucket sees one regular
//! stream per process instead of `n` random ones (measured on the API-shape matrix: 122 of 208
//! cells meet their targets with it, 81 with independent per-thread spacing).
//!
//! **The two signals.** `r` is the same number for every client of the key. Its change over
//! time measures the *total* send rate of everyone: `S = R − (Δr + lost)/Δt`, where `lost` is
//! the refill a full bucket threw away: a reading at the readable top `B − 1` (a count is read
//! after a request) found the bucket full, which it was for at most the spacing since the
//! reading before less the time it took to refill from that reading's level, `(B − r')/R`
//! (others' requests only shorten it; for a process alone it is exact). A process collects the
//! `(time counted, r)` of its threads' answers into windows; a window closes once it has lasted
//! `W = window_periods / (x·√n)` (a process of many threads sees its own effect sooner; its
//! first window `0.7 W`, `FIRST_WINDOW`), holds `min_samples` answers and has seen `min_flow`
//! tokens taken (`S·Δt`, so the integer `r` is a small error). Then, with `r̄` the window's mean
//! level and `r` its last:
//!
//! ```text
//! target  R_t = max(R/4, R + (r̄ − r0)/τ_r)     τ_r = max(drain_fill · B/R, drain_windows · W')
//!         (full start: the surplus term at most full_drain · R)     W' = max(W, min_flow / R)
//! D term  ln x += γ · clamp(ln(R_t / S))         clamp to [−ln 100, ln 2]
//!         (first window, S > 4·R_t, no full start or fixed window: ln x += max(ln(R_t/S), −ln 100))
//! P term  ln x += λ · max(ln min(g(r), R_t) − ln x, −ln 100)
//!                                                g(r) = (R/K) · e^((r − r0)/L)
//!         λ = min(pull_max, L / (P · N̂)) · w       s = n·x/S, the process's share
//!         w = 1 − s/2 where the bucket holds the crowd (2√K ≤ 0.8·(B−1−r0'), no fixed window),
//!             else s' · min(1, s'/0.1)  with s' = 1 − s
//!         N̂ = max(S / max(x, g(r)), n)           P = pull_periods (a fixed window: 4)
//! r0' = clamp(reserve · B, 1, B/4)               L = max(span · B, min(F, 0.8·(B−1−r0))) / ln K
//! r0 = min(max(r0', √K/2), B/4) where the        F = 2√K tokens where the bucket holds the crowd,
//!      bucket holds the crowd, else r0'              else 10 (a fixed window: 4)
//! ```
//!
//! The D term steers the *total* rate toward a target that drains the bucket's surplus above a
//! reserve `r0`; its gain has no population in it, because `S` is already the sum over
//! everyone, so it holds from one thread to thousands, and it multiplies every process's rate by
//! the same factor. A first window that reads a flood, a total more than four times its target
//! (a crowd started together, each process sure it is alone), cuts straight to the target:
//! capped per window, the D step left the flood to the 429s, which halve one process
//! at a time, and 200 one-thread processes on a 4,500-an-hour bucket drew 4 % 429s over five
//! hours, all in the first minutes (0.6 % with the cut). The P term pulls every process toward *one common function of the shared
//! level*, so the only rest point is equal per-thread rates (Kelly's price: the level is the
//! price, `g` the demand curve). One window of it moves the bucket by about `N·λ·Δln x` tokens
//! with one window of delay, so `λ` is sized per window by the process's own estimate `N̂` of the
//! crowd (`λ·N̂/L ≤ 1/P`). On a small bucket, a process that is nearly the whole total
//! (`n·x ≈ S`) has nobody to be fair to and does not pull: its pull would only hold the level
//! where a lone client's price sits, near the top, and waste the refill. A share within 0.1 of
//! the whole is such a process read through the total's noise, and its weight falls off as the
//! square of `1 − n·x/S` there. On a bucket that holds the crowd's swing a lone
//! client's price sits far below the top, and a process that reads itself as the whole keeps
//! half its pull: it may be beside one far below it, which the level it drains to the
//! reserve prices as one of a crowd of `K` (a process started at `R/(2K)` per thread beside
//! one of five threads on Heroku's bucket stayed there for five hours, Jain's index 0.503). The price spans `span · B` tokens, but at least
//! 10 on a bucket (a one-token step of the integer count must not move it by more than a small
//! factor, and a flatter price lets the pull be stronger: a level held on a bucket refills all
//! the same), and at least `2√K` (63) where the bucket has room for that (`K` senders at
//! random phases swing the level by about `√K` tokens, which a steeper price reads as a change
//! of the crowd; 200 one-thread processes on a 100-token bucket held it at 3 tokens, drew 6.9 %
//! 429s in the second half and kept shares 0.61 apart in Jain's index), and at least 4 on a
//! fixed window (what its level holds is lost at the reset), never more than most of the
//! bucket. On a fixed window the pull is also slower (`P` = 4
//! instead of `pull_periods`, 1.5): there it holds the level above the even-spend plan.
//! Where the bucket holds the crowd's swing, the reserve is at least a quarter of it, `√K/2`
//! tokens: a crowd of `K` rests at the reserve, and with one token there its swing
//! went to the 429s (1,000 threads on a 100-token bucket: 4.3 % refused in the second half,
//! 1.5 % with `√K/2`).
//!
//! **The held top.** Where no answer states a limit (Heroku's fields), `B` is the quota told,
//! and a server whose bucket is far smaller holds the level at its own small top: the law reads
//! a big bucket drained below its reserve and a total equal to the refill (the level does not
//! move), and steps down every window. While nothing has refused the process since its start
//! (a start's flood says nothing of the bucket's size), once `x` has fallen to a quarter of what
//! it was while every count read stayed within one of the highest (at least 1), the bucket is
//! that count plus one (`law/top.rs`): a crowd's level rises when it sends less, a full
//! bucket's cannot.
//!
//! **Stacked limits.** A short limit in front of a long one ("10 per second; 100 per minute"):
//! the successes state one limit and a refusal the refusing one's. A refusal that states a limit
//! `L` other than the last success's leaves `B` alone, and its wait `T` (the later of its reset
//! and its `Retry-After`, if over two resolutions) bounds the key's total by `L/(T − res)` for
//! the rest of the run; every mode's target is held under the lowest such bound
//! (`law/stacked.rs`).
//!
//! **A fixed window.** When `r` jumps up by a tenth of the bucket (at least 2 tokens) more than
//! the refill explains (over the readings' spacing widened by how far each one's count may lie
//! from its time, half its latency), the server has reset a window: the window restarts there, and from then
//! on the level is read as an allowance that nothing refills until the next reset one `period`
//! later: `S = −Δr/Δt` and
//! `R_t = max(R/20, (r̄ + 1 − ¾·r0 · left/period + B · (h − left)/period) / h)` with `left`
//! the time to the next reset and `h = max(left, W, min(2.5·res, period/2))`, `res` the
//! header's resolution (`reset_resolution`; the reset is known to its rounding only, and a window
//! its key's first request opens turns over a little later each period than the law places it;
//! the count was read after its own request
//! was taken, hence the `+ 1`; what is left at the reset is lost, so the reserve shrinks to
//! nothing by then, and three quarters of it are kept; a window of the law longer than what
//! is left spans the reset, and the allowances of the server's windows that follow are spent
//! in it too, whole, as a reserve kept in them is lost at their resets); a window of the
//! law closes after at most `0.3 B` tokens; the price is read against the allowance's plan,
//! `g(r − p(t))` with `p(t) = (B − r0) · left / period`. A window of the law carries on across a
//! turnover: it counts the level's fall up to the last reading before it and what the
//! new allowance lost before the first reading after it (`B − r`), and reads the level against
//! that reading from then on; the process's own 429s in it count too (an allowance spent reads
//! 0 however many more come). Restarting it at every turnover kept a process that reads fewer
//! answers per server window than a window of the law needs from ever closing one.
//! A rise of the level without a reset (a sliding window returning what a window ago took)
//! switches back. Where the resets fall is the span every turnover seen agrees on (each
//! between the two readings around its jump, or within a resolution below a stated end, see
//! below), cut down turnover by turnover modulo the period; the reset is its middle.
//! From one turnover alone, two processes' resets could differ by their readings' spacing, and
//! their plans `p(t)` by as many seconds of the allowance: they would price the same level
//! apart and keep unequal shares. A success's stated reset `T`, rounded up and counted from
//! no sooner than the request's send, says the window closes no sooner than `T − res` after
//! it: a reset placed sooner moves on to that (a window opened by
//! its key's first request turns over later each period than its turnovers say), and a
//! success that reads the allowance spent (`r = 0`) holds the whole process until then.
//!
//! **A limit and a reset, but no policy** (GitHub's `x-ratelimit-limit` and
//! `x-ratelimit-reset`). A fixed window's stated reset is its end, the same instant on every
//! answer until it turns over; a bucket's (whole again) or a sliding window's moves with the
//! clock while it is used. Two ends in a row, each stated alike (within a second) for more than
//! 2 s, with a turnover of the level at the first, are one period apart: the quota becomes the
//! limit per that period, as if the server had stated it; a period under 2 s is never read (two
//! ends so close are one end rounded twice). A stated or configured quota wins.
//! Any other such server is a bucket (whole again `(B − r)/R` after the answer) or a sliding
//! window (whole again a period `B/R` after its newest request), so each answer whose stated end
//! moved by more than a resolution since the process's last answer bounds the refill from
//! below, `R ≥ (B − r − 1)/reset`: the refill is the largest bound seen, the period
//! `B/R`, and the rate moves with it as with a stated quota. Such a learned quota also lets the
//! law tell a sliding window and a stated end that stays put (below). A bucket's reset grows by
//! `1/R` a token, so two answers in a row that state the same reset (within a resolution each
//! way, the reset over two) read levels at most `2·res·(B − r + 1)/(reset − res) + 1` apart;
//! levels further apart under one reset are a sliding window's, whose refill is then
//! `B/reset` at once, not hours later when the level nears empty. A bucket's reset is
//! also rounded up by less than a resolution, so each answer bounds its refill from above,
//! `R ≤ (B − r + 1)/(reset − res)`. A lower bound above the lowest such ceiling is an answer no
//! bucket gives: a window read from a rare vantage, such as a fixed window's last
//! seconds (12 of 100 left with 4.8 s to go, read as a refill of 18 a second, eleven times the
//! window's; the process that read it spent every window in its first seconds and held four
//! others at the floor, Jain's index 0.21). So is a lower bound that would have the bucket take
//! more than a week to fill from empty: a window's reset read as a bucket's (a sliding-window
//! counter stating its next drop 1,522 s off with 2 of 5,760 counted read as a bucket filling
//! in 101 days). From then on the refill is `B` over the longest
//! reset stated, the window's period from below, until a period is read. So it is once the
//! level's turnover shows a fixed window: a process that sent too rarely to read the period
//! had stayed on the default quota's hour, its target at the floor (Jain's index 0.80 for five
//! processes on a window of 100 a minute).
//!
//! **A stated end that stays put**. With the period known (a stated, given or learned quota),
//! two successes more than two resolutions (`reset_resolution`, 1 s) apart that state the same
//! end (`t` + reset, `t` the reading's counted time, within a resolution), the count lower at
//! the second and the end first stated at most a period (and a resolution) ahead, are a fixed
//! window before any turnover: a bucket's end moves on as it is used, a sliding window's is a
//! period after its newest request, and a sliding-window counter's (when its allowance is whole
//! again) stays put too but lies more than a period ahead while its previous window weighs. The
//! end is known to a resolution (a stated reset is rounded up): the reset is placed in the
//! resolution below both ends, and the law reads the level as a window's allowance from then on
//! (no full start, no sliding window, the window restarted). A refusal whose reset equals its
//! `Retry-After` (within a resolution), more than two resolutions off, is such a reading too (its
//! count 0), one resolution after the first instead of two. On a fixed window, an end that
//! moves on by more than a resolution and the larger latency of the two answers (each was
//! counted somewhere between its send and its answer), not by whole periods, without a turnover
//! of the level, is no fixed window's: the law reads a bucket again.
//!
//! **A sliding window.** A bucket states its reset (`t`, whole seconds) as the time until it is
//! whole, `(B − r)/R`; a sliding window as a whole period whatever the level (its newest
//! request leaves a period later). With a slack `σ = max(0.02 · period, 1 s)` for the rounding
//! (a live server at a time scale rounds whole seconds of its own), three answered readings in
//! a row over more than `2σ`, each stating at least `period − σ` and more than
//! `(B − r)/R + 1.5σ`, switch the law to reading the level as what the last period took:
//! `S = max((B − r̄)/period, −Δr/Δt)` (the fall, `S(t) − S(t − period)`, is a lower bound of the
//! rate now and is acted on within a window; the average is given `γ · Δt/period`). The target
//! is `B/period` (a token left unused is lost; the refusals at the floor are the signal), there
//! is no pull, and a 429 takes one request per period off the process
//! (`x · (1 − 1/(n·x·period))`) instead of half. A reading `1.5σ` short of a period (a window
//! counting down) or a fixed window's stated end switches back; a jump of the level does not:
//! on a sliding window it is requests sent together leaving it a period later. A
//! quota must be known (stated, given or learned) to tell `(B − r)/R`.
//!
//! **Where the resets cannot tell** (a window of `period ≤ 2.5σ`, where both say one second,
//! or a sliding log that states when its oldest admission leaves, a second off when busy). The
//! level tells, for a process alone: on a sliding window `r + own = B` on every
//! success, `own` being the process's successes counted in the last period (this one too);
//! others only lower it, and a bucket's refill raises it once a token came back since the
//! process's success before. Over 4 periods and at least 30 successes each at least `1/R` after
//! another of the same period, 95 % of them reading `r + own = B` exactly, with the level on
//! average above `0.1·B + 1` (an emptied bucket reads `B` too), switch to sliding mode (and
//! forget a fixed window's turnover: it was the echo of a burst), which a stated reset short of
//! a period then does not undo; half of them above `B` switch back.
//!
//! **A full start.** A process whose first reading finds the bucket at least `full_level` full
//! cannot tell a deep token bucket from a sliding window, which refills nothing for a window and
//! then returns whatever was spent, as it was spent. Until the level first comes down into the
//! price's range (or a fixed window resets) it spends the surplus at most at `full_drain · R` on
//! top of the refill, and its pull is capped at its own share of the target (`R_t · x / S`).
//!
//! **A 429** multiplies `x` by `decrease` once per round (answers to requests sent before the
//! last decrease do not decrease again) and restarts the window, unless a fixed window's
//! predicted reset explains it and the process sends at least 4 per window (`n·x·period ≥ 4`):
//! then the thread holds to the reset and the rate stays; the thread waits at least
//! `Retry-After + U[0, retry_jitter] × min(Retry-After, 1/x)`, and, unless the reset explained
//! it, the whole process's phase stops for the `Retry-After` less its rounding
//! (`reset_resolution`): the key is empty for every thread, not only the one refused. Where the
//! reset explained it and the `Retry-After` is over four resolutions, the phase stops until the
//! later of that and the predicted reset: the window is spent for every thread. The reset
//! explains a 429 when its `Retry-After`, around the period's circle, is from `u` before the
//! time to the predicted reset to `u` and a resolution after it (a `Retry-After` is rounded up),
//! `u = 0.1 · period` plus half the span where the resets fall. The process's first 429, before any window closed, on
//! a bucket that holds the crowd's swing, cuts `x` by `min(n/(2√K), decrease)` instead: a crowd
//! emptied the bucket before anyone could read it, every process of a crowd started together is
//! refused at least once and takes the same cut, and each of 200 one-thread processes on an empty
//! 5,000-an-hour bucket no longer halves its way down through about `log2 N` refusals (whole-run
//! 429s 7.3 % → 2.1 %). Any later 429 on such a bucket, once a count was read, cuts `x` by
//! `decrease^(1/n)`: a refusal marks one thread, so a process of `n` threads takes an `n`-th of the
//! cut, and `n` refusals cut it as one refusal each cuts `n` one-thread processes (500 threads
//! beside 500 singles: Jain's index 0.66 → 0.84, second-half 429s 1.3 % → 0.5 %). **A 503 or a
//! transport error** changes no rate but holds the thread back for `error_backoff`, doubling per
//! consecutive error up to `error_backoff_max`.
//!
//! **Without a remaining count** (blind to the count: nginx's `limit_req`, most gateways) there
//! is no level to read, only the quota `R` the process was told and its own refusals, which hit
//! every process in proportion to what it sends. A process never sends faster than `R`; a
//! success lets it climb by `probe · min(R/X, 10)²` per second (`X` its own rate: a process below its
//! share climbs faster, which makes shares equal); a refusal cuts it by `0.3^(1/n)`; and the
//! probe (first `increase · R²`) is multiplied by `e^0.005` on every success and divided by
//! `e^0.995` on every refusal, so that it settles where half a percent of the answers are
//! refused, whatever the number of processes. A second refusal in a row says the key is
//! blocked (a window spent, or a limiter such as HAProxy's that counts refused requests): the
//! process holds for `1/x` of its cut rate, and for `2/x` whenever a request sent after that
//! hold began is refused too (at most a period); refusals after the first hold leave the probe.
//!
//! **Start.** `x0 = R / n` (or `1 / initial_sleep` when that is slower): a process never starts
//! faster than the whole quota. Its threads' first sends are spread over one initial spacing
//! `1 / x0` (or `first_spread` if longer), in line order. Per-thread rates stay within
//! `[R / (100·K), max_rate · R]`.
//!
//! **Use.**
//!
//! ```
//! use std::time::{Duration, Instant, SystemTime};
//! use fair_share::{Answer, FairShare, Params};
//!
//! let law = FairShare::new(4, Params::default()); // 4 threads; the server states its quota
//! let start = Instant::now();
//! // Before each request of thread 0:
//! loop {
//!     let wait = law.wait(0, start.elapsed());
//!     if wait.is_zero() { break; }
//!     # break;
//!     std::thread::sleep(wait);
//! }
//! // ... send it; then, with the status and headers it came back with:
//! let headers = [("RateLimit-Policy", "\"default\";q=100;w=60"), ("RateLimit", "\"default\";r=99;t=1")];
//! let answer = Answer::read(200, headers, Duration::from_millis(20), SystemTime::now());
//! law.observe(0, start.elapsed(), &answer);
//! ```

mod answer;
mod dialect;
mod draw;
mod fields;
mod law;
mod params;
mod time;
#[cfg(feature = "tower")]
pub mod tower;
mod when;

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

pub use answer::{Answer, MAX_SERVER_WAIT, Policy, Status};
pub use dialect::{Form, Forms};
pub use draw::{Cycle, Draw, Fixed, SplitMix};
pub use law::Law;
pub use params::{Params, Problem, UNITS};

/// The version of the law this crate is (its `Cargo.toml`'s): what each port names as the one
/// it follows. What changed from one version to the next is in `CHANGELOG.md`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The law for one process, shared by its threads: a [`Law`], its generator, and which threads
/// have a request waiting to go, behind one lock.
pub struct FairShare {
    inner: Mutex<Inner>,
}

struct Inner {
    law: Law,
    draw: Box<dyn Draw + Send>,
    /// Threads whose next request has had its place and jitter drawn.
    pending: Vec<bool>,
}

impl FairShare {
    /// The law for a process of `threads` threads, with its own generator.
    pub fn new(threads: usize, params: Params) -> FairShare {
        FairShare::with_draw(threads, params, SplitMix::from_entropy())
    }

    /// The same with a generator of the caller's (a fixed one makes a test repeatable).
    pub fn with_draw(
        threads: usize,
        params: Params,
        draw: impl Draw + Send + 'static,
    ) -> FairShare {
        let law = Law::new(threads, params);
        let pending = vec![false; law.threads()];
        FairShare {
            inner: Mutex::new(Inner {
                law,
                draw: Box::new(draw),
                pending,
            }),
        }
    }

    /// Before a request of `thread` (0-based, below the thread count), at `now` (any epoch of
    /// the caller's, the same for every call): zero means send now, and the send is booked;
    /// else sleep that long and ask again. A thread out of range is told to wait a second.
    pub fn wait(&self, thread: usize, now: Duration) -> Duration {
        let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Inner { law, draw, pending } = &mut *guard;
        let Some(waiting) = pending.get_mut(thread) else {
            return Duration::from_secs(1);
        };
        if !*waiting {
            *waiting = true;
            law.delay(now, thread, &mut **draw);
        }
        let more = law.acquire(now, thread);
        if more.is_zero() {
            *waiting = false;
        }
        more
    }

    /// After the answer to `thread`'s request, read at `now`.
    pub fn observe(&self, thread: usize, now: Duration, answer: &Answer) {
        let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Inner { law, draw, pending } = &mut *guard;
        if thread < pending.len() {
            law.on_response(now, thread, answer, &mut **draw);
        }
    }

    /// How many threads the law paces (the `threads` it was made with, at least 1).
    pub fn threads(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .law
            .threads()
    }

    /// One thread's spacing now, in seconds (`1/x`).
    pub fn spacing(&self) -> f64 {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .law
            .spacing()
    }
}
