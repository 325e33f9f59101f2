//! `fair-share`: a blind client that needs no count of its peers and still shares a key's
//! quota equally, holding a small reserve of tokens instead of running into 429s.
//!
//! Every process paces each of its threads at one per-thread rate `x` (requests per second).
//! What it reads: the status, `RateLimit-Remaining` (`r`) and `RateLimit-Limit` (the bucket's
//! size, which caps the reserve), `Retry-After`, its own latency and clock, and its own thread
//! count `n`; the quota `Q` per `period` is a parameter, giving the refill rate `R = Q / period`.
//!
//! **The two signals.** `r` is the same number for every client of the key. Its change over
//! time measures the *total* send rate of everyone: `S = R − Δr/Δt`. A process collects the
//! `(time counted, r)` of its threads' answers into windows; a window closes once it has lasted
//! `W = max(min_window, window_periods / x)` (every thread of everyone has sent at the rate the
//! last window set; a process's first window `0.7 W`, see `FIRST_WINDOW`), holds
//! `min_samples` answers and has seen `min_flow` tokens taken
//! (`S·Δt`, so the integer `r` is a small error). Then, once per window, with `r̄` the window's
//! mean level and `r` its last:
//!
//! ```text
//! target  R_t = max(R/4, R + (r̄ − r0)/τ_r)       τ_r = max(drain_min, drain_periods / x)
//!         (full start: the surplus term at most full_drain · R)
//! D term  ln x += γ · clamp(ln(R_t / S))           clamp to [−ln 100, ln 2]
//! P term  ln x += λ · max(ln min(g(r), R_t) − ln x, −ln 100)
//!                                                  g(r) = (R/K) · e^((r − r0)/L)
//!         (full start: R_t · x / S in place of R_t; fixed window: g(r − p(t)), below)
//!         λ = min(pull_max, W / τ_p)               τ_p = pull_periods · N̂ / (L · x)
//!         N̂ = max(S / max(x, g(r)), n)
//! ```
//!
//! The D term steers the *total* rate toward a target that drains the bucket's surplus above a
//! reserve `r0` over `τ_r`; its gain has no population in it, because `S` is already the sum
//! over everyone, so it holds from one thread to thousands. It multiplies every process's rate
//! by the same factor: it cannot make shares unequal, nor equal. The P term pulls every process
//! toward *one common function of the shared level*: the difference `ln x_a − ln x_b` between
//! two processes shrinks by `(1 − λ)` every window, and the point it pulls to is the same for
//! everyone, so the only rest point is equal per-thread rates, hence equal shares (Kelly's
//! price: the level is the price, `g` the demand curve). The pull also moves the total, and one
//! window of it moves the bucket by about `N · λ · Δln x` tokens, a loop gain of `λ·N/L`; so
//! `λ` shrinks with the process's own estimate `N̂` of how many threads like it share the key
//! (`λ ≈ L / (pull_periods · N)`, stable for any `N`). Against the D term the pull shifts the
//! resting level from `r0` by at most `L · ln(K/N)` tokens (a few tens at the defaults): more
//! reserve for a lone client, none for a thousand threads.
//!
//! **A fixed window.** When `r` jumps up by a tenth of the bucket more than the refill explains,
//! the server has reset a window: the window restarts there, and from then on the level is read
//! as an allowance that nothing refills until the next reset one `period` later: `S = −Δr/Δt`
//! and `R_t = max(R/20, (r̄ − r0) / time to the next reset)`, so the allowance is spread over
//! the window instead of drained in `τ_r` by whoever is fastest after the reset. The price is
//! then read against the allowance's plan, `g(r − p(t))` with `p(t) = (limit − r0) · left /
//! period` the level an even spend would be at with `left` seconds to the reset, so that it
//! steers shares all window long as it does on a bucket at rest. A rise of the level without a
//! reset (a sliding window returning what an hour ago took) switches back.
//!
//! **A full start.** A process whose first reading finds the bucket at least `full_level` full
//! cannot tell a deep token bucket from a sliding window, which refills nothing for an hour and
//! then returns whatever was spent, as it was spent. Until the level first comes down to `r0`
//! (or a fixed window resets) it spends the surplus at most at `full_drain · R` on top of the
//! refill (`R_t ≤ (1 + full_drain)·R`), and its pull is capped at its own share of the target
//! (`R_t · x / S`) instead of `R_t`: the common cap lets a slow process catch up while a surplus
//! drains but makes the total overshoot the target about `N^0.56` times, which would spend a
//! sliding window's hour in minutes and get it back as a burst an hour later, every hour. On a
//! sliding window the level then falls at `R`, so a full window lasts its hour and comes back
//! as evenly as it went; on a bucket the same 4,500 tokens last an hour instead of minutes,
//! which costs nothing (the level is below the top, so no refill is lost).
//!
//! **A 429** multiplies `x` by `decrease` once per round (answers to requests sent before the
//! last decrease do not decrease again) and restarts the window; the thread waits at least
//! `Retry-After + U[0, retry_jitter] × min(Retry-After, 1/x)`, never less, so clients refused
//! together do not return together (and a fixed window's hour-long `Retry-After` does not
//! spread them over half an hour). **A 503 or a transport error** changes no rate (it says
//! nothing about the quota) but holds the thread back for `error_backoff`, doubling per
//! consecutive error up to `error_backoff_max`.
//!
//! **Without a remaining count** (a server that sends none) there is no level to read: the
//! rate grows additively, `x += increase · Δt` per success, and a 429 multiplies it by
//! `decrease` (AIMD; the additive increase is what makes shares equal, Chiu & Jain 1989).
//!
//! **Start.** Each thread's first send is spread uniformly over one initial spacing
//! `1 / x0`, `x0 = min(1 / initial_sleep, R / n)`, so a process never starts faster than the
//! whole quota, and its threads do not start together. Between sends a thread waits
//! `1 / x · (1 + U[−jitter, jitter])`; a rate decrease applies at once to threads already
//! waiting (the wait is checked again when it ends).

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_non_negative, check_positive};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, from_secs, secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FairShareConfig {
    /// Requests the server grants per `period`, which gives the refill rate `R`. Default 4500,
    /// Heroku's (seed 002's `max_limit`). A `RateLimit-Limit` header does not override it: for
    /// Heroku and GitHub it is the same number, but a token bucket sends its burst there.
    pub quota: f64,
    /// The quota's period. Default 1 h.
    pub period: HumanDuration,
    /// Per-thread spacing before the process knows better. Default 1.6 s (seed 002's).
    pub initial_sleep: HumanDuration,
    /// A thread's first send is spread uniformly over this long, or one initial spacing if
    /// that is longer. Default 0 s.
    pub first_spread: HumanDuration,
    /// The reserve `r0` the law holds in the bucket, as a fraction of the quota (at most a quarter
    /// of the bucket the `RateLimit-Limit` header reports). Default 0.005
    /// (22 of 4500): enough to absorb the phase noise of a thousand threads, little enough that
    /// the tokens left at the end cost 0.1 % of a 5-hour run.
    pub reserve: f64,
    /// `L`, tokens per e-fold of the common price function `g`. Default 10: the pull can only
    /// shift the level by `L · ln(K/N)`, so a small `L` keeps the reserve small; its loop gain
    /// `λ·N/L` is held down by `λ` instead.
    pub slope: f64,
    /// `K`, the threads `g(r0) = R / K` is sized for. Default 1000: at or above the largest
    /// crowd expected, so the pull never holds the level below `r0` (it would for `N > K`).
    pub crowd: f64,
    /// `γ`, the D term's gain per window. Default 0.4. Any `γ ≤ 1` is stable with one window
    /// of measurement delay (the roots of `z² − (1 − γa)z + γ(1 − a)` stay inside the unit
    /// circle for a delayed fraction `a`); below 1 the processes whose windows close first do
    /// not run far ahead of the others, so the shares stay close while the total moves
    /// (measured on the gauntlet: 1 gave a 50-thread process among 50 singles a fairness of 0.76
    /// and heroku_5x5 a convergence of 66 s; 0.4 gives 0.997 and 28 s).
    pub gain: f64,
    /// Windows last at least this many of the thread's own periods. Default 1: every thread has
    /// sent at the new rate before the effect is measured. (A process's first window lasts 0.7
    /// of this: see `FIRST_WINDOW`.)
    pub window_periods: f64,
    /// Windows last at least this long. Default 2 s.
    pub min_window: HumanDuration,
    /// Windows hold at least this many answers. Default 3.
    pub min_samples: u32,
    /// Windows last until at least this many tokens were taken by everyone (`S·Δt`), so the
    /// integer `remaining` is a small error on the estimate. Default 30.
    pub min_flow: f64,
    /// The surplus above the reserve is spent over at least this many own periods. Default 4:
    /// slower than the D loop it steers (one window), so the cascade is stable.
    pub drain_periods: f64,
    /// ... and at least this long. Default 300 s.
    pub drain_min: HumanDuration,
    /// A process whose first reading finds the bucket at least this full (a fraction of the
    /// `RateLimit-Limit` it reports) starts in full-start mode. Default 0.9: a bucket that
    /// deep may be a sliding window, which returns a burst an hour later.
    pub full_level: f64,
    /// In full-start mode the surplus is spent at most this many times `R` on top of the
    /// refill: `R_t ≤ (1 + full_drain)·R`. Default 1: on a sliding window, which refills nothing
    /// in its first hour, the level then falls at `R` and a full window lasts its hour.
    pub full_drain: f64,
    /// The pull's time constant in own periods per `L / N̂`. Default 4: the pull's loop gain
    /// per window is then about 1/4.
    pub pull_periods: f64,
    /// The pull's largest weight per window. Default 0.3.
    pub pull_max: f64,
    /// Factor on a 429. Default 0.5.
    pub decrease: f64,
    /// A 429's `Retry-After` is stretched by `U[0, retry_jitter]` of itself or of the thread's
    /// period, whichever is shorter. Default 0.5.
    pub retry_jitter: f64,
    /// Spacing jitter, `±jitter` of the spacing. Default 0.1.
    pub jitter: f64,
    /// Without a remaining count: requests per second gained per second. Default 5e-5.
    pub increase: f64,
    /// First wait after a 503 or transport error; doubles per consecutive error. Default 1 s.
    pub error_backoff: HumanDuration,
    /// The longest such wait. Default 60 s.
    pub error_backoff_max: HumanDuration,
    /// Per-thread rate bounds, requests per second. Defaults 1e-4 (one per 2.8 h) and 20.
    pub min_rate: f64,
    pub max_rate: f64,
}

impl Default for FairShareConfig {
    fn default() -> Self {
        FairShareConfig {
            quota: 4500.0,
            period: HumanDuration::from_secs(3600),
            initial_sleep: HumanDuration::from_millis(1600),
            first_spread: HumanDuration::from_secs(0),
            reserve: 0.005,
            slope: 10.0,
            crowd: 1000.0,
            gain: 0.4,
            window_periods: 1.0,
            min_window: HumanDuration::from_secs(2),
            min_samples: 3,
            min_flow: 30.0,
            drain_periods: 4.0,
            drain_min: HumanDuration::from_secs(300),
            full_level: 0.9,
            full_drain: 1.0,
            pull_periods: 4.0,
            pull_max: 0.5,
            decrease: 0.5,
            retry_jitter: 0.5,
            jitter: 0.1,
            increase: 5e-5,
            error_backoff: HumanDuration::from_secs(1),
            error_backoff_max: HumanDuration::from_secs(60),
            min_rate: 1e-4,
            max_rate: 20.0,
        }
    }
}

impl Algorithm for FairShareConfig {
    const NAME: &'static str = "fair-share";
    const DESCRIPTION: &'static str = "blind: steer the total rate (read from remaining's slope) to the refill, pull every process to one price of the level";

    fn problems(&self) -> Vec<ParamProblem> {
        self.check()
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

impl FairShareConfig {
    fn check(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        for (field, v) in [
            ("quota", self.quota),
            ("period", self.period.secs()),
            ("initial_sleep", self.initial_sleep.secs()),
            ("slope", self.slope),
            ("crowd", self.crowd),
            ("gain", self.gain),
            ("drain_periods", self.drain_periods),
            ("drain_min", self.drain_min.secs()),
            ("full_drain", self.full_drain),
            ("pull_periods", self.pull_periods),
            ("error_backoff", self.error_backoff.secs()),
            ("min_rate", self.min_rate),
        ] {
            check_positive(&mut out, field, v);
        }
        for (field, v) in [
            ("reserve", self.reserve),
            ("window_periods", self.window_periods),
            ("min_window", self.min_window.secs()),
            ("pull_max", self.pull_max),
            ("retry_jitter", self.retry_jitter),
            ("increase", self.increase),
            ("min_flow", self.min_flow),
            ("full_level", self.full_level),
        ] {
            check_non_negative(&mut out, field, v);
        }
        if self.reserve >= 1.0 {
            out.push(("reserve", format!("must be below 1 (got {})", self.reserve)));
        }
        if self.pull_max > 1.0 {
            out.push((
                "pull_max",
                format!("must be at most 1 (got {})", self.pull_max),
            ));
        }
        if self.gain > 1.0 {
            out.push(("gain", format!("must be at most 1 (got {})", self.gain)));
        }
        if !(self.decrease > 0.0 && self.decrease < 1.0) {
            out.push((
                "decrease",
                format!("must be above 0 and below 1 (got {})", self.decrease),
            ));
        }
        if !(self.jitter >= 0.0 && self.jitter < 1.0) {
            out.push((
                "jitter",
                format!("must be from 0 to below 1 (got {})", self.jitter),
            ));
        }
        if self.min_samples < 2 {
            out.push((
                "min_samples",
                format!("must be at least 2 (got {})", self.min_samples),
            ));
        }
        if self.error_backoff_max < self.error_backoff {
            out.push((
                "error_backoff_max",
                format!(
                    "must be at least error_backoff ({}) (got {})",
                    self.error_backoff, self.error_backoff_max
                ),
            ));
        }
        if !(self.max_rate.is_finite() && self.max_rate >= self.min_rate) {
            out.push((
                "max_rate",
                format!(
                    "must be at least min_rate ({}) (got {})",
                    self.min_rate, self.max_rate
                ),
            ));
        }
        out
    }

    pub fn build(&self, ctx: BuildContext) -> FairShare {
        let n = ctx.threads.max(1);
        let rate = self.quota / self.period.secs();
        let x0 = (1.0 / self.initial_sleep.secs())
            .min(rate / n as f64)
            .clamp(self.min_rate, self.max_rate);
        FairShare {
            cfg: self.clone(),
            x: x0,
            x0,
            limit: self.quota,
            rate,
            headers: false,
            threads: vec![ThreadState::default(); n],
            window: None,
            newest: None,
            samples: 0,
            last_decrease: None,
            last_increase: None,
            decreases: 0,
            reset_at: None,
            full_start: false,
            updates: 0,
        }
    }
}

/// One answer's reading of the shared level: when the server counted it, and what was left.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Sample {
    t: f64,
    r: f64,
}

#[derive(Clone, Copy, Debug, Default)]
struct ThreadState {
    last_send: Option<Nanos>,
    /// When the first send is due.
    first: Option<Nanos>,
    /// This spacing's jitter factor, drawn once per send.
    factor: f64,
    /// Not before this (Retry-After, error backoff).
    hold: Nanos,
    errors: u32,
}

/// One process's state.
pub struct FairShare {
    cfg: FairShareConfig,
    /// Per-thread rate, requests per second.
    x: f64,
    x0: f64,
    /// The bucket's size as `RateLimit-Limit` gives it (else the quota), tokens. Not taken as
    /// the quota: a token bucket sends its burst there, not what it grants per period.
    limit: f64,
    /// `R`, tokens per second.
    rate: f64,
    /// Whether the server has sent a remaining count.
    headers: bool,
    threads: Vec<ThreadState>,
    /// The window's first sample.
    window: Option<Sample>,
    /// The latest-counted sample seen, for reset detection.
    newest: Option<Sample>,
    /// Samples in the window.
    samples: u32,
    last_decrease: Option<Nanos>,
    last_increase: Option<Nanos>,
    decreases: u64,
    /// When a reset of the level was last seen (seconds): the server is a fixed window.
    reset_at: Option<f64>,
    /// Full-start mode: the first reading found the bucket nearly full, and the level has not
    /// yet come down to the reserve (nor has a fixed window reset).
    full_start: bool,
    /// Windows closed so far.
    updates: u64,
}

/// Why the window's rate estimate moved `x`; for tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Update {
    /// `S`, the total send rate measured over the window.
    pub total: f64,
    /// `R_t`.
    pub target: f64,
    /// `λ`.
    pub pull: f64,
}

impl FairShare {
    /// The per-thread rate.
    pub fn thread_rate(&self) -> f64 {
        self.x
    }

    /// `r0` in tokens: `reserve × quota`, but at most a quarter of the bucket the server says
    /// it has.
    pub fn reserve(&self) -> f64 {
        (self.cfg.reserve * self.cfg.quota)
            .min(self.limit / 4.0)
            .max(1.0)
    }

    /// `g(r) = (R/K)·e^((r − r0)/L)`: the per-thread rate every process is pulled toward.
    pub fn price(&self, r: f64) -> f64 {
        let exponent = ((r - self.reserve()) / self.cfg.slope).min(50.0);
        self.rate / self.cfg.crowd * exponent.exp()
    }

    /// `R_t = max(R/4, R + (r − r0)/τ_r)`, the surplus term at most `full_drain · R` in
    /// full-start mode; on a fixed window what is left spread to the next reset.
    pub fn target(&self, r: f64, t: f64) -> f64 {
        if let Some(left) = self.to_reset(t) {
            // A windowed server: spend what is left above the reserve evenly until the next
            // reset.
            let left = left.max(self.window_secs());
            return ((r - self.reserve()) / left).max(self.rate / 20.0);
        }
        let tau = self
            .cfg
            .drain_min
            .secs()
            .max(self.cfg.drain_periods / self.x);
        let mut surplus = (r - self.reserve()) / tau;
        if self.full_start {
            surplus = surplus.min(self.cfg.full_drain * self.rate);
        }
        (self.rate + surplus).max(self.rate / 4.0)
    }

    /// What the server adds per second between resets: `R` for a bucket, none for a window.
    fn refill(&self) -> f64 {
        if self.reset_at.is_some() {
            0.0
        } else {
            self.rate
        }
    }

    /// On a fixed window, the level the allowance would be at by `t` if it were spent evenly
    /// until the next reset (above the reserve); none on a bucket. The price is read relative
    /// to it, so that it sits in its sensitive range all window long, as on a bucket at rest,
    /// rather than far above every rate until the window's end.
    fn planned(&self, t: f64) -> f64 {
        self.to_reset(t).map_or(0.0, |left| {
            (self.limit - self.reserve()).max(0.0) * left / self.cfg.period.secs()
        })
    }

    /// On a fixed window, seconds from `t` to its next reset, one period after the last seen;
    /// none on a bucket.
    fn to_reset(&self, t: f64) -> Option<f64> {
        let period = self.cfg.period.secs();
        self.reset_at
            .map(|reset| period - (t - reset).rem_euclid(period))
    }

    /// The window length `W` at the current rate, seconds.
    pub fn window_secs(&self) -> f64 {
        self.cfg
            .min_window
            .secs()
            .max(self.cfg.window_periods / self.x)
    }

    fn set_rate(&mut self, x: f64) {
        self.x = x.clamp(self.cfg.min_rate, self.cfg.max_rate);
    }

    /// Apply one window: from `first` to `last`. Returns what it measured.
    fn apply_window(&mut self, first: Sample, last: Sample) -> Update {
        let dt = last.t - first.t;
        let total = (self.refill() - (last.r - first.r) / dt).max(self.rate / 50.0);
        // Compare like with like: the average total against the target at the window's
        // average level (the end's level would make a long window's correction stale).
        let target = self.target((first.r + last.r) / 2.0, (first.t + last.t) / 2.0);
        let step = clamp_step((target / total).ln());
        let mut ln_x = self.x.ln() + self.cfg.gain * step;
        // Threads of this size sharing the key, sized by the larger of the own rate and the
        // common price so that a process that fell behind does not conclude it has many peers
        // and stop pulling itself back; at least the process's own threads.
        let price = self.price(last.r - self.planned(last.t));
        let crowd = (total / self.x.max(price)).max(self.threads.len() as f64);
        let tau_p = self.cfg.pull_periods * crowd / (self.cfg.slope * self.x);
        let pull = (dt / tau_p).min(self.cfg.pull_max);
        // The price is capped at the target total: no thread ever needs more than everyone
        // together. The cap is common to all and the step is not clamped upward, so while the
        // bucket drains a surplus (the price far above every rate) the pull still narrows
        // differences instead of pushing everyone up by the same clamped step.
        //
        // In full-start mode the cap is this process's own share of the target instead, so the
        // pull cannot push the total past it: the overshoot that lets the common cap even
        // shares out while a surplus drains (the total settles near `N^0.56 · R_t`) would
        // spend a sliding window's hour in minutes, and the window returns that burst an hour
        // later, every hour, to whoever is fastest then.
        let cap = if self.full_start {
            target * self.x / total
        } else {
            target
        };
        let pulled_to = price.min(cap).ln();
        ln_x += pull * (pulled_to - ln_x).max(-(100f64.ln()));
        self.set_rate(ln_x.exp());
        Update {
            total,
            target,
            pull,
        }
    }

    /// A reading of the level at `t` (seconds): open, extend or close the window.
    fn observe(&mut self, t: f64, r: f64) -> Option<Update> {
        let s = Sample { t, r };
        if self.newest.is_none() && r >= self.cfg.full_level * self.limit {
            self.full_start = true;
        } else if r <= self.reserve() {
            self.full_start = false;
        }
        if let Some(newest) = self.newest {
            if t >= newest.t {
                let refill = self.refill() * (t - newest.t);
                // A tenth of the bucket at once: no reordering of answers or rounding does that.
                if r > newest.r + refill + (self.limit / 10.0).max(2.0) {
                    // A reset (a fixed window turned over): what came before says nothing, and
                    // from now on the level is read as a window's allowance, not a bucket.
                    self.reset_at = Some(t);
                    // A fixed window is no deep bucket: the full start (if any) ends here.
                    self.full_start = false;
                    self.window = Some(s);
                    self.samples = 1;
                    self.newest = Some(s);
                    return None;
                }
                if self.reset_at.is_some() && r > newest.r + 2.0 {
                    // The level came back without a reset: the server refills after all (a
                    // sliding window returning what an hour ago took).
                    self.reset_at = None;
                }
                self.newest = Some(s);
            }
        } else {
            self.newest = Some(s);
        }
        let Some(first) = self.window else {
            self.window = Some(s);
            self.samples = 1;
            return None;
        };
        self.samples += 1;
        // Counted with the nominal refill even on a windowed server: a window then closes a
        // little sooner (measured: sliding_window keeps utilization 0.96 instead of 0.92).
        let flow = self.rate * (t - first.t) - (r - first.r);
        let periods = if self.updates == 0 { FIRST_WINDOW } else { 1.0 };
        if t - first.t >= self.window_secs() * periods
            && self.samples >= self.cfg.min_samples
            && flow >= self.cfg.min_flow
        {
            let update = self.apply_window(first, s);
            self.updates += 1;
            // The window's end opens the next, so no reading is wasted.
            self.window = Some(s);
            self.samples = 1;
            return Some(update);
        }
        None
    }

    fn spacing(&self) -> f64 {
        1.0 / self.x
    }

    /// How long `thread` still waits under the current rate: until one jittered spacing after
    /// its last send (and its hold), but never more than a poll interval at a time, so a rate
    /// change reaches threads that are already waiting within a small part of a period.
    fn wait(&self, now: Nanos, thread: usize) -> Nanos {
        let th = &self.threads[thread];
        let due = match (th.last_send, th.first) {
            (Some(sent), _) => sent.saturating_add(from_secs(self.spacing() * th.factor)),
            (None, Some(first)) => first,
            (None, None) => now,
        };
        let left = due.max(th.hold).saturating_sub(now);
        let poll = from_secs((self.spacing() / POLLS_PER_PERIOD).max(MIN_POLL_SECS));
        left.min(poll)
    }
}

/// A process's first window lasts this fraction of `W`. Before it closes, the process runs at
/// its start rate, which may be far from its share (fast_slow starts one process at 4 s and one
/// at 20 s); closing it a little early brings the first correction forward. Measured on the
/// gauntlet, 10 seeds: fast_slow's convergence 63 s at 1.0, 57 s at 0.7 and at 0.5; threads_100's
/// fairness 0.997 at 1.0 and 0.7, 0.961 at 0.5 (a half-period window misreads a hundred
/// threads' first round). Later windows last the whole `W`.
const FIRST_WINDOW: f64 = 0.7;

/// A waiting thread looks at the rate again this many times per period...
const POLLS_PER_PERIOD: f64 = 8.0;
/// ... but not more often than this, in seconds.
const MIN_POLL_SECS: f64 = 0.5;

/// One window moves `ln x` by at most a factor 100 down (a crowd that started together
/// finds out at once how far over the refill it is) and 2 up (an increase is never trusted
/// as much as a decrease).
fn clamp_step(v: f64) -> f64 {
    v.clamp(-(100f64.ln()), 2f64.ln())
}

impl Throttle for FairShare {
    fn delay(&mut self, now: Nanos, thread: usize, rng: &mut SimRng) -> Nanos {
        let j = self.cfg.jitter;
        let th = &mut self.threads[thread];
        if th.last_send.is_none() && th.first.is_none() {
            let spread = self.cfg.first_spread.secs().max(1.0 / self.x0);
            th.first = Some(now.saturating_add(from_secs(rng.random_range(0.0..=spread))));
        }
        th.factor = if j > 0.0 {
            rng.random_range(1.0 - j..=1.0 + j)
        } else {
            1.0
        };
        self.wait(now, thread)
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        // The rate may have changed since the wait was chosen, either way: it applies now.
        match self.wait(now, thread) {
            0 => {
                self.threads[thread].last_send = Some(now);
                Acquire::Send
            }
            more => Acquire::Wait(more),
        }
    }

    fn on_response(&mut self, now: Nanos, thread: usize, response: &Response, rng: &mut SimRng) {
        if let Some(limit) = response.limit.filter(|l| *l > 0) {
            self.limit = limit as f64;
        }
        let sent = self.threads[thread].last_send.unwrap_or(now);
        if let (Some(r), Status::Ok | Status::Limited) = (response.remaining, response.status) {
            self.headers = true;
            // The server counted the request between send and answer; the send is exact for
            // a nearby server and off by half the latency for any.
            let counted = now.saturating_sub(response.latency / 2).max(sent);
            self.observe(secs(counted), r as f64);
        }
        match response.status {
            Status::Ok => {
                self.threads[thread].errors = 0;
                if !self.headers {
                    let since = self.last_increase.map_or(0.0, |t| secs(now - t.min(now)));
                    self.set_rate(self.x + self.cfg.increase * since);
                    self.last_increase = Some(now);
                }
            }
            Status::Limited => {
                self.threads[thread].errors = 0;
                let period = from_secs(self.spacing());
                if self
                    .last_decrease
                    .is_none_or(|d| sent >= d && now >= d.saturating_add(period))
                {
                    self.set_rate(self.x * self.cfg.decrease);
                    self.last_decrease = Some(now);
                    self.decreases += 1;
                    self.window = None;
                    self.samples = 0;
                }
                let wait = match response.retry_after {
                    Some(ra) => {
                        let stretch = if self.cfg.retry_jitter > 0.0 {
                            rng.random_range(0.0..=self.cfg.retry_jitter)
                        } else {
                            0.0
                        };
                        // Stretched by a fraction of itself, but never by more than a fraction of
                        // the thread's own period: a fixed window's Retry-After can be most of
                        // an hour, and a 25-minute spread would hand the next window to
                        // whoever happens to come back first.
                        from_secs(secs(ra) + stretch * secs(ra).min(self.spacing()))
                    }
                    None => 0,
                };
                self.threads[thread].hold = now.saturating_add(wait);
            }
            Status::Unavailable | Status::Error => {
                let th = &mut self.threads[thread];
                let base = self.cfg.error_backoff.secs() * 2f64.powi(th.errors.min(30) as i32);
                let wait = base.min(self.cfg.error_backoff_max.secs());
                th.errors = th.errors.saturating_add(1);
                th.hold = now.saturating_add(from_secs(wait));
            }
        }
    }

    /// Seconds between one thread's sends, `1 / x`.
    fn sleep_value(&self) -> f64 {
        self.spacing()
    }

    /// 429 decreases.
    fn backoffs(&self) -> u64 {
        self.decreases
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;
    /// 4500 per hour.
    const R: f64 = 1.25;

    fn build(threads: usize) -> FairShare {
        FairShareConfig::default().build(BuildContext::solo(threads))
    }

    fn answer(status: Status, remaining: u64) -> Response {
        Response {
            status,
            remaining: Some(remaining),
            limit: Some(4500),
            retry_after: None,
            latency: 0,
        }
    }

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        assert!(FairShareConfig::default().problems().is_empty());
        let bad = FairShareConfig {
            decrease: 1.0,
            reserve: 1.5,
            min_samples: 1,
            ..FairShareConfig::default()
        };
        let fields: Vec<&str> = bad.problems().iter().map(|p| p.0).collect();
        assert_eq!(fields, ["reserve", "decrease", "min_samples"]);
    }

    #[test]
    fn the_first_pace_never_exceeds_the_whole_quota_for_the_process() {
        // 1.6 s each would be 625 per second for 1000 threads: the quota's 1.25 caps it.
        assert!((build(1000).thread_rate() - R / 1000.0).abs() < 1e-12);
        assert!((build(1).thread_rate() - 1.0 / 1.6).abs() < 1e-12);
    }

    #[test]
    fn price_and_target_follow_their_formulas() {
        let t = build(1);
        let r0 = t.reserve();
        assert!((r0 - 22.5).abs() < 1e-12);
        // g(r0) = R/K, and one slope L above it e times that.
        assert!((t.price(r0) - R / 1000.0).abs() < 1e-12);
        assert!((t.price(r0 + 10.0) - std::f64::consts::E * R / 1000.0).abs() < 1e-12);
        // R_t = R + (r − r0)/τ_r with τ_r = max(300 s, 4 × 1.6 s) = 300 s; floored at R/4.
        assert!((t.target(r0, 0.0) - R).abs() < 1e-12);
        assert!((t.target(r0 + 300.0, 0.0) - (R + 1.0)).abs() < 1e-12);
        assert!((t.target(0.0, 0.0) - (R - 22.5 / 300.0)).abs() < 1e-12);
        assert!((t.target(-1e6, 0.0) - R / 4.0).abs() < 1e-12);
    }

    #[test]
    fn a_window_measures_the_total_from_the_slope_and_corrects_toward_the_target() {
        let mut t = build(1);
        let x = t.thread_rate();
        // The bucket sits at the reserve and drops 25 tokens in 10 s: everyone together takes
        // R + 2.5 = 3.75 per second, three times the target R.
        let r0 = t.reserve();
        let first = Sample {
            t: 0.0,
            r: r0 + 12.5,
        };
        let last = Sample {
            t: 10.0,
            r: r0 - 12.5,
        };
        let u = t.apply_window(first, last);
        assert!((u.total - 3.75).abs() < 1e-12);
        assert!((u.target - R).abs() < 1e-12);
        // D: × (R_t/S)^γ = (1/3)^0.4. P: λ = min(0.5, W/τ_p) of the way toward the price.
        let d = x.ln() - 0.4 * 3f64.ln();
        // The price is capped at the target total, R here.
        let g = t.price(last.r).min(u.target).ln();
        let want = d + u.pull * (g - d).max(-(100f64.ln()));
        assert!(
            (t.thread_rate().ln() - want).abs() < 1e-9,
            "{} vs {}",
            t.thread_rate(),
            want.exp()
        );
        assert!(u.pull > 0.0 && u.pull <= 0.5);
    }

    #[test]
    fn the_pull_weakens_as_the_crowd_grows() {
        // Two processes measuring the same total see the same S; the one whose rate says it is
        // one of many pulls less, so the pull's loop gain λ·N/L stays bounded.
        let pull_at = |x: f64, total: f64| {
            let mut t = build(1);
            t.x = x;
            let r = t.reserve();
            let dt = 1000.0;
            let first = Sample { t: 0.0, r };
            let last = Sample {
                t: dt,
                r: r - (total - R) * dt,
            };
            t.apply_window(first, last).pull
        };
        let few = pull_at(R / 10.0, R);
        let many = pull_at(R / 1000.0, R);
        assert_eq!(few, 0.5);
        assert!(many < 0.01, "{many}");
    }

    #[test]
    fn windows_close_after_a_period_enough_answers_and_enough_flow_and_restart_on_a_reset() {
        let mut t = build(1);
        // 1.6 s spacing: the window needs 2 s, 3 answers and 30 tokens taken.
        assert!(t.observe(0.0, 100.0).is_none());
        assert!(t.observe(1.0, 99.0).is_none());
        // 3 answers and 3 s, but only ~4 tokens taken: still open.
        assert!(t.observe(3.0, 98.0).is_none());
        let u = t.observe(20.0, 80.0).expect("the window closes");
        // 20 tokens fewer in 20 s with 25 refilled: 45 taken, 2.25 per second.
        assert!((u.total - 2.25).abs() < 1e-12);
        // A fixed window turns over: remaining jumps from 80 to 4500. The jump is not read as
        // a negative send rate; the next window starts at it.
        assert!(t.observe(21.0, 4500.0).is_none());
        assert_eq!(t.window, Some(Sample { t: 21.0, r: 4500.0 }));
    }

    #[test]
    fn the_first_window_closes_after_most_of_a_period_later_ones_after_a_whole_one() {
        // 100 s spacing, plenty of answers and flow: only the length decides.
        let mut t = build(1);
        t.x = 0.01;
        let mut r = 4000.0;
        let mut at = |t: &mut FairShare, s: f64| {
            r -= 10.0;
            t.observe(s, r)
        };
        assert!(at(&mut t, 0.0).is_none());
        assert!(at(&mut t, 30.0).is_none());
        assert!(at(&mut t, 69.0).is_none());
        // 70 s = FIRST_WINDOW × 100 s: the first window closes.
        assert!(at(&mut t, 70.0).is_some());
        t.x = 0.01;
        assert!(at(&mut t, 100.0).is_none());
        assert!(at(&mut t, 140.0).is_none());
        // The second one needs the whole 100 s.
        assert!(at(&mut t, 169.0).is_none());
        assert!(at(&mut t, 170.0).is_some());
    }

    #[test]
    fn after_a_reset_the_allowance_is_spread_to_the_next_reset_until_the_level_refills() {
        let mut t = build(1);
        assert!(t.observe(3500.0, 50.0).is_none());
        // 4500 back at 3600 s, far more than 100 s of refill: a fixed window turned over. The
        // 4477.5 above the reserve are spread over the hour to the next reset, not drained over
        // 300 s.
        assert!(t.observe(3600.0, 4500.0).is_none());
        assert_eq!(t.reset_at, Some(3600.0));
        assert!((t.target(4500.0, 3600.0) - 4477.5 / 3600.0).abs() < 1e-12);
        assert!((t.target(1022.5, 6300.0) - 1000.0 / 900.0).abs() < 1e-9);
        // Inside the window nothing refills: 36 fewer in 10 s is 3.6 per second.
        assert!(t.observe(3610.0, 4464.0).is_none());
        let u = t.observe(3620.0, 4428.0).expect("the window closes");
        assert!((u.total - 3.6).abs() < 1e-9);
        // The level rising a little without a reset: the server refills after all.
        t.observe(3640.0, 4440.0);
        assert_eq!(t.reset_at, None);
    }

    #[test]
    fn a_full_first_reading_spends_the_surplus_at_the_refill_rate_and_pulls_to_its_own_share() {
        let mut t = build(1);
        let r0 = t.reserve();
        // A first reading at 4050 of 4500 or more: full start. The surplus term,
        // 4477.5 / 300 s ≈ 14.9 per second, is held to R: R_t = 2R.
        assert!(t.observe(0.0, 4500.0).is_none());
        assert!(t.full_start);
        assert!((t.target(4500.0, 0.0) - 2.0 * R).abs() < 1e-12);
        // Below R on top of the refill the surplus term is as on any bucket.
        assert!((t.target(r0 + 150.0, 0.0) - (R + 0.5)).abs() < 1e-12);
        // A window far above the reserve: the price is far above every rate, so the pull aims
        // at the cap, which is the process's own share of the target, R_t · x / S, not R_t.
        let x = t.thread_rate();
        let first = Sample { t: 0.0, r: 4500.0 };
        let last = Sample { t: 10.0, r: 4450.0 };
        let u = t.apply_window(first, last);
        // Read as a bucket: 50 tokens down in 10 s with R refilled is S = R + 5.
        assert!((u.total - (R + 5.0)).abs() < 1e-12);
        let d = x.ln() + 0.4 * (u.target / u.total).ln();
        let cap = (u.target * x / u.total).ln();
        let want = d + u.pull * (cap - d);
        assert!((t.thread_rate().ln() - want).abs() < 1e-9);
        // The level down to the reserve ends it: the surplus term is no longer held.
        t.observe(20.0, r0);
        assert!(!t.full_start);
        assert!((t.target(4500.0, 20.0) - (R + 4477.5 / 300.0)).abs() < 1e-12);
        // A first reading below 0.9 of the bucket never starts it.
        let mut u = build(1);
        u.observe(0.0, 4000.0);
        assert!(!u.full_start);
        assert!((u.target(4500.0, 0.0) - (R + 4477.5 / 300.0)).abs() < 1e-12);
    }

    #[test]
    fn on_a_fixed_window_the_price_is_read_against_an_even_spend_to_the_reset() {
        let mut t = build(1);
        // A bucket: no plan.
        t.observe(3500.0, 50.0);
        assert_eq!(t.planned(3550.0), 0.0);
        // A window turns over at 3600 s: 4477.5 above the reserve, spent evenly, would be all
        // there at the reset, half at 5400 s, a quarter at 6300 s, and all again at 7200 s.
        t.observe(3600.0, 4500.0);
        assert_eq!(t.reset_at, Some(3600.0));
        assert!((t.planned(3600.0) - 4477.5).abs() < 1e-9);
        assert!((t.planned(5400.0) - 4477.5 / 2.0).abs() < 1e-9);
        assert!((t.planned(6300.0) - 4477.5 / 4.0).abs() < 1e-9);
        assert!((t.planned(7200.0) - 4477.5).abs() < 1e-9);
        // A window that ends 10·ln 40 ≈ 37 tokens above the plan (and the reserve), where
        // g = 40·R/K = R/25, the share of 25 threads: the pull aims there, where without the
        // plan the level's price would be far above the target and the pull would aim at the
        // target itself.
        let x = t.thread_rate();
        let above = t.reserve() + 10.0 * 40f64.ln();
        let first = Sample {
            t: 5390.0,
            r: t.planned(5390.0) + above + 12.0,
        };
        let last = Sample {
            t: 5400.0,
            r: t.planned(5400.0) + above,
        };
        let u = t.apply_window(first, last);
        let d = x.ln() + 0.4 * (u.target / u.total).ln();
        let want = d + u.pull * ((R / 25.0).min(u.target).ln() - d).max(-(100f64.ln()));
        assert!(R / 25.0 < u.target && t.price(last.r) > u.target);
        assert!(
            (t.thread_rate().ln() - want).abs() < 1e-9,
            "{} vs {} ({u:?})",
            t.thread_rate(),
            want.exp()
        );
    }

    #[test]
    fn a_429_halves_once_per_round_and_retry_after_is_honoured_with_positive_jitter() {
        let mut t = build(2);
        let mut rng = test_rng();
        t.x = 0.5;
        let refused = Response {
            retry_after: Some(10 * S),
            ..answer(Status::Limited, 0)
        };
        // Both threads sent at 100 s; both are refused at 101 s: one decrease.
        for th in 0..2 {
            t.delay(100 * S, th, &mut rng);
            t.threads[th].last_send = Some(100 * S);
        }
        t.on_response(101 * S, 0, &refused, &mut rng);
        t.on_response(101 * S, 1, &refused, &mut rng);
        assert_eq!(t.thread_rate(), 0.25);
        assert_eq!(t.backoffs(), 1);
        for th in 0..2 {
            let hold = t.threads[th].hold;
            assert!((111 * S..=116 * S).contains(&hold), "{hold}");
        }
        // Every poll before the hold waits; the thread never sends before it.
        let mut now = 101 * S;
        loop {
            match t.acquire(now, 0, &mut rng) {
                Acquire::Wait(w) => now += w,
                Acquire::Send => break,
                Acquire::GiveUp => unreachable!(),
            }
        }
        assert!(now >= t.threads[1].hold.min(111 * S));
        assert!(now >= 111 * S);
        // A request sent after the decrease, refused a period later, decreases again.
        t.on_response(now + 5 * S, 0, &refused, &mut rng);
        assert_eq!(t.thread_rate(), 0.125);
    }

    #[test]
    fn errors_back_off_per_thread_without_touching_the_rate() {
        let mut t = build(1);
        let mut rng = test_rng();
        let x = t.thread_rate();
        t.on_response(10 * S, 0, &Response::bare(Status::Unavailable), &mut rng);
        assert_eq!(t.threads[0].hold, 11 * S);
        t.on_response(11 * S, 0, &Response::bare(Status::Error), &mut rng);
        assert_eq!(t.threads[0].hold, 13 * S);
        assert_eq!(t.thread_rate(), x);
        t.on_response(13 * S, 0, &Response::bare(Status::Ok), &mut rng);
        assert_eq!(t.threads[0].errors, 0);
    }

    #[test]
    fn without_a_remaining_count_it_falls_back_to_aimd() {
        let mut t = build(1);
        let mut rng = test_rng();
        let x = t.thread_rate();
        t.on_response(0, 0, &Response::bare(Status::Ok), &mut rng);
        t.on_response(100 * S, 0, &Response::bare(Status::Ok), &mut rng);
        // +5e-5 per second for 100 s.
        assert!((t.thread_rate() - (x + 0.005)).abs() < 1e-12);
        t.threads[0].last_send = Some(101 * S);
        t.on_response(102 * S, 0, &Response::bare(Status::Limited), &mut rng);
        assert!((t.thread_rate() - (x + 0.005) / 2.0).abs() < 1e-12);
    }

    #[test]
    fn a_rate_change_reaches_a_thread_that_is_already_waiting() {
        let mut t = build(1);
        let mut rng = test_rng();
        t.x = 0.01;
        t.threads[0].last_send = Some(0);
        let first = t.delay(0, 0, &mut rng);
        // A 100 s spacing is looked at again every 12.5 s.
        assert_eq!(first, from_secs(100.0 / 8.0));
        t.x = 1.0;
        // Ten times the rate: at 12.5 s the thread is long due.
        assert_eq!(t.acquire(first, 0, &mut rng), Acquire::Send);
    }

    /// Processes that start at very different paces, sharing a 4500/h bucket that starts with
    /// 500 tokens, end with equal shares near R/N, without a 429, on virtual time: each
    /// process's answers per thread over the last hour within 10 % of the fair share. (The
    /// rate at one instant wanders by up to ±18 % around it, as the D term corrects the total.)
    #[test]
    fn processes_starting_far_apart_end_at_equal_shares() {
        let threads = [5usize, 5, 1, 3];
        let sleeps = [0.5, 20.0, 3.0, 60.0];
        let n: usize = threads.iter().sum();
        let mut procs: Vec<FairShare> = threads
            .iter()
            .zip(sleeps)
            .map(|(&th, s)| {
                FairShareConfig {
                    initial_sleep: HumanDuration(from_secs(s)),
                    ..FairShareConfig::default()
                }
                .build(BuildContext::solo(th))
            })
            .collect();
        let mut rng = test_rng();
        // (due, process, thread); a fluid bucket of 4500 tokens refilled at R.
        let mut due: Vec<(Nanos, usize, usize)> = Vec::new();
        for (p, th) in threads.iter().enumerate() {
            for i in 0..*th {
                due.push((procs[p].delay(0, i, &mut rng), p, i));
            }
        }
        let (mut level, mut updated, mut refused) = (500.0f64, 0 as Nanos, 0);
        let end = 5 * 3600 * S;
        let last_hour = end - 3600 * S;
        let mut answered_late = vec![0u32; threads.len()];
        loop {
            let k = (0..due.len()).min_by_key(|&k| due[k].0).unwrap();
            let (now, p, i) = due[k];
            if now >= end {
                break;
            }
            match procs[p].acquire(now, i, &mut rng) {
                Acquire::Wait(w) => due[k].0 = now + w,
                Acquire::GiveUp => unreachable!(),
                Acquire::Send => {
                    level = (level + R * secs(now - updated)).min(4500.0);
                    updated = now;
                    let status = if level >= 1.0 {
                        level -= 1.0;
                        Status::Ok
                    } else {
                        refused += 1;
                        Status::Limited
                    };
                    if now >= last_hour {
                        answered_late[p] += 1;
                    }
                    let answered = now + 20_000_000;
                    procs[p].on_response(answered, i, &answer(status, level as u64), &mut rng);
                    due[k].0 = answered + procs[p].delay(answered, i, &mut rng);
                }
            }
        }
        assert_eq!(refused, 0);
        let fair = R / n as f64;
        for (p, &count) in answered_late.iter().enumerate() {
            let rel = f64::from(count) / threads[p] as f64 / 3600.0 / fair;
            assert!(
                (0.9..1.1).contains(&rel),
                "process {p}: {rel:.3} of the fair share"
            );
        }
    }
}
