//! The law's state for one process and its threads, told the time and the answers: a small
//! state machine. The crate's documentation (lib.rs) has every formula; docs/fair-share.md is
//! the porter's page.
//!
//! **Modes** (`modes.rs`, where every transition is, each with the evidence that triggers it).
//! The law believes the server is one of four shapes, and its rules are that shape's:
//!
//! | shape | what the level is | total `S` | target | pull | a 429 |
//! |---|---|---|---|---|---|
//! | no count (`blind.rs`) | none | none | the quota told | none | `0.3^(1/n)` |
//! | bucket (`bucket.rs`) | tokens refilled at `R` | `R − Δr/Δt` | drain the surplus | to the price | `decrease` (a crowd's bucket: see `refusal.rs`) |
//! | fixed window (`fixed.rs`) | the allowance to the reset | `−Δr/Δt` + own 429s | spend evenly to the reset | slower, against the plan | none if the reset explains it |
//! | sliding window (`sliding.rs`) | what the last period left | `(B − r̄)/period` or the fall | `B/period` | none | one request per period |
//!
//! Its phase (start, start after a cut, steady) only matters for two rules of a bucket's start:
//! the flood cut and the crowd's first cut. A full start is a flag beside it.
//!
//! **Reading the shape** is apart from **steering the rate**. The readers (`level.rs`,
//! `stated.rs`, `refill.rs`, `echo.rs`, `top.rs`, `stacked.rs`) look at an answer and name what it shows; the steering
//! (`window.rs` with the mode's file, `refusal.rs`, `blind.rs`) moves the per-thread rate `x`,
//! and `pacing.rs` turns `x` into sends.

mod blind;
mod bucket;
mod echo;
mod fixed;
mod level;
mod modes;
mod pacing;
mod refill;
mod refusal;
mod sliding;
mod stacked;
mod stated;
mod top;
mod window;

#[cfg(test)]
mod tests;

use std::time::Duration;

use self::echo::Echo;
use self::modes::{Evidence, Mode};
use self::pacing::{Clock, ThreadState};
use self::refill::{LearnedRefill, policy_rate};
use self::stacked::OtherLimit;
use self::stated::StatedResets;
use self::top::HeldTop;
use self::window::LawWindow;
use crate::answer::{Answer, Policy, Status};
use crate::draw::Draw;
use crate::params::Params;
use crate::time::{Nanos, nanos, secs};

/// One answer's reading of the shared level: when the server counted it, and what was left.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Sample {
    t: f64,
    r: f64,
}

/// The readings of the level: the newest, and the window of the law they fill.
#[derive(Clone, Copy, Debug, Default)]
struct Level {
    window: Option<LawWindow>,
    newest: Option<Sample>,
    /// How far the server's count of the newest reading may lie from its `t`: from the answer's
    /// arrival back to `t` (half its latency). A jump read as a fixed window's turnover must
    /// exceed the refill over the readings' spacing widened by both.
    newest_slack: f64,
}

/// The rate's cuts and climbs.
#[derive(Clone, Copy, Debug, Default)]
struct Cuts {
    last_decrease: Option<Nanos>,
    last_increase: Option<Nanos>,
    /// Blind mode: how fast the process climbs, in requests per second per second at its fair
    /// share (see `blind.rs`).
    probe: f64,
    decreases: u64,
    /// Blind mode: the refusals since the last success (see `blind.rs`, a blocked key).
    refused_in_a_row: u32,
    /// Blind mode: when the process last held for a blocked key, in this run of refusals.
    blocked_hold_at: Option<Nanos>,
}

/// One process's state.
pub struct Law {
    cfg: Params,
    /// The per-thread rate, requests per second: what every mode steers.
    x: f64,
    /// The bucket `B`: `RateLimit-Limit`, else the quota (raised to a count above it).
    limit: f64,
    /// `R`, tokens per second.
    rate: f64,
    /// The quota's period, seconds.
    period: f64,
    /// The policy last taken from a `RateLimit-Policy`.
    policy: Option<Policy>,
    /// Whether the server has stated a policy (`RateLimit-Policy`) on any answer.
    stated_policy: bool,
    threads: Vec<ThreadState>,
    clock: Clock,
    offset: Option<f64>,
    mode: Mode,
    level: Level,
    cuts: Cuts,
    stated: StatedResets,
    learned: LearnedRefill,
    echo: Echo,
    held_top: HeldTop,
    other_limit: OtherLimit,
}

/// What a window of the law measured and did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Update {
    pub total: f64,
    pub target: f64,
    pub pull: f64,
}

/// The total is never read below this fraction of `R` (unitless): a level that stopped falling
/// says the rate is low, not nothing.
pub(super) const MIN_TOTAL_OF_RATE: f64 = 0.02;
/// One window moves `ln x` down by at most this factor (unitless): a misread window cannot
/// stop a process, and the next corrects it.
pub(super) const MAX_STEP_DOWN: f64 = 100.0;

/// A D step's log-ratio, clamped to `[−ln 100, ln 2]`.
pub(super) fn clamp_step(v: f64) -> f64 {
    v.clamp(-MAX_STEP_DOWN.ln(), 2f64.ln())
}

impl Law {
    /// The law for one process of `threads` threads (at least one). Threads are numbered from
    /// 0; the methods below panic on a thread past the last, a caller's bug ([`crate::FairShare`]
    /// answers such a thread with a wait of a second instead).
    pub fn new(threads: usize, params: Params) -> Law {
        let n = threads.max(1);
        let (quota, period) = params.quota_and_period();
        let rate = quota / period;
        let initial_sleep = params.initial_sleep.map(|s| secs(nanos(s)));
        let mut law = Law {
            cfg: params,
            x: 0.0,
            limit: quota,
            rate,
            period,
            policy: None,
            threads: vec![ThreadState::default(); n],
            clock: Clock::default(),
            offset: None,
            stated_policy: false,
            mode: Mode::new(),
            level: Level::default(),
            cuts: Cuts::default(),
            stated: StatedResets::default(),
            learned: LearnedRefill::default(),
            echo: Echo::default(),
            held_top: HeldTop::default(),
            other_limit: OtherLimit::default(),
        };
        let x0 = match initial_sleep {
            Some(s) => (1.0 / s).min(rate / n as f64),
            None => rate / n as f64,
        };
        law.x = law.clamp_rate(x0);
        law.cuts.probe = law.cfg.increase * rate * rate;
        law
    }

    /// The process's threads.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// `thread` wants to send at `now`: how long until its turn (its place in line is set on
    /// its first request, and each request draws its own jitter). Ask [`Law::acquire`] when
    /// the wait is over.
    pub fn delay(
        &mut self,
        now: Duration,
        thread: usize,
        draw: &mut (impl Draw + ?Sized),
    ) -> Duration {
        Duration::from_nanos(self.delay_ns(nanos(now), thread, draw))
    }

    /// `thread` asks again at `now`: zero means send now (the send is booked), else how much
    /// longer to wait (a rate that changed meanwhile is taken into account).
    pub fn acquire(&mut self, now: Duration, thread: usize) -> Duration {
        Duration::from_nanos(self.acquire_ns(nanos(now), thread))
    }

    /// The answer to `thread`'s last request arrived at `now`.
    pub fn on_response(
        &mut self,
        now: Duration,
        thread: usize,
        answer: &Answer,
        draw: &mut (impl Draw + ?Sized),
    ) {
        self.respond_ns(nanos(now), thread, answer, draw);
    }

    /// The spacing `1/x` of one thread's sends, in seconds: what a chart of the law shows.
    pub fn spacing(&self) -> f64 {
        1.0 / self.x
    }

    /// How many times the process cut its rate on a 429.
    pub fn backoffs(&self) -> u64 {
        self.cuts.decreases
    }

    pub fn thread_rate(&self) -> f64 {
        self.x
    }

    /// One answer, in the order every port must follow: the quota and the bucket it states,
    /// then (for a success or a refusal with a count) the stated reset's shape and the stated
    /// end (a refusal's too, where its reset is its `Retry-After`),
    /// the echo, the held top (where no limit is stated), the level and the window of the law,
    /// the stated end's drift, the period, the learned refill, a fixed window's stated end
    /// later than predicted, and its allowance read spent (a count of 0); then
    /// the answer's own rule (a success in blind mode climbs, a refusal cuts, an error backs off).
    pub(crate) fn respond_ns(
        &mut self,
        now: Nanos,
        thread: usize,
        answer: &Answer,
        draw: &mut (impl Draw + ?Sized),
    ) {
        let policy = answer
            .policy
            .filter(|q| policy_rate(q.limit, nanos(q.window)) > 0.0);
        self.stated_policy |= policy.is_some();
        if self.cfg.quota.is_none()
            && let Some(q) = policy
        {
            self.take_policy(now, q, answer.limit.is_none());
        }
        if !self.take_stated_limit(answer)
            && let Some(r) = answer.remaining.filter(|r| *r as f64 >= self.limit)
        {
            // No limit stated, and more left than the bucket the quota implies (a token
            // bucket of 1 per second told as `quota = 1`, `period = 1s`, bursting to 20): the
            // bucket held at least what is left and the request just counted.
            self.limit = r as f64 + 1.0;
        }
        let sent = self.threads[thread].last_send.unwrap_or(now);
        // When the server counted the request: half the latency back, and not before the
        // thread's last send (a refusal's reset counts from the last request let in).
        let counted = now.saturating_sub(nanos(answer.latency) / 2).max(sent);
        if let (Some(r), Status::Ok | Status::Limited) = (answer.remaining, answer.status) {
            self.mode.on(Evidence::CountRead);
            match (answer.reset, answer.retry_after, answer.status) {
                (Some(reset), _, Status::Ok) => {
                    self.read_reset(secs(now), secs(nanos(reset)), r as f64);
                    let apart = 2.0 * self.resolution();
                    self.read_fixed_end(secs(counted), secs(nanos(reset)), r as f64, apart);
                }
                (Some(reset), Some(ra), Status::Limited) => {
                    // A refusal whose reset is its `Retry-After`, far off: a window's end.
                    let (reset, ra, res) = (secs(nanos(reset)), secs(nanos(ra)), self.resolution());
                    if reset > 2.0 * res && (reset - ra).abs() <= res {
                        self.read_fixed_end(secs(counted), reset, r as f64, res);
                    }
                }
                _ => {}
            }
            if answer.status == Status::Ok {
                self.read_echo(secs(counted), r as f64);
            }
            self.read_top(r as f64, answer.status == Status::Limited);
            self.observe(now, secs(counted), r as f64);
            if let (Some(reset), Status::Ok) = (answer.reset, answer.status) {
                self.read_end_drift(secs(now), secs(nanos(reset)), secs(nanos(answer.latency)));
                self.read_period(now, secs(nanos(reset)));
                self.learn_refill(now, secs(nanos(reset)), r as f64);
                // From the send: the server counted the request no sooner, and an answer slow
                // on its way back would put the end too late.
                self.read_stated_end(secs(sent), secs(nanos(reset)));
                if r == 0 {
                    self.hold_spent_window(now, sent, secs(nanos(reset)));
                }
            }
        }
        match answer.status {
            Status::Ok => {
                self.threads[thread].errors = 0;
                // A success read after the window's first reading (a late answer may have been
                // counted before it): a token the refill gave (`learn_refill_from_successes`).
                if answer.remaining.is_some()
                    && let Some(w) = self
                        .level
                        .window
                        .as_mut()
                        .filter(|w| secs(counted) > w.first.t)
                {
                    w.successes += 1.0;
                }
                if !self.mode.reads_count() {
                    self.blind_success(now);
                }
            }
            Status::Limited => {
                if let Some(w) = self.level.window.as_mut() {
                    w.refused += 1.0;
                }
                self.refused(now, thread, sent, answer, draw)
            }
            Status::Unavailable | Status::Error => self.back_off(now, thread),
        }
    }
}
