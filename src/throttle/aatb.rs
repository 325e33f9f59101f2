//! `aatb`: AATB, the Assisted Adaptive Token Bucket of Farkiani, Liu & Crowley, "Rethinking HTTP
//! API Rate Limiting: A Client-Side Approach" (2025, arXiv 2510.04516), as the authors' code has
//! it (github.com/Bfarkiani/ratelimiter: `AATB_TB.py`'s `AdaptiveTokenBucket`, `AATB.py`, the
//! aggregator `telemetry.py`, and the configuration of the paper's runs,
//! `configs/AATB/config1.json`).
//!
//! Each process sends through its own token bucket (as `atb`), but its rate follows what a
//! telemetry aggregator shared by every client of the quota reports (see
//! [`super::aatb_telemetry`]): requests and 429s over the last 30 s, clients active over the
//! last 60 s. The aggregator lives in the run's shared store, so `aatb` is a coordinated
//! algorithm, not a blind one. With `S` the aggregator's requests, `A` its active clients (at
//! least 1), `F` its 429 reports, `L = S / A` the average load, and `sent` this process's
//! answered requests since its last report:
//!
//! ```text
//! on a 429/5xx (congestion report of sent):
//!     r ← max(min_rate, round₂(r / 2))   if sent < 0.5 × L,  else  r / 3
//!     tokens ← 1.1;  hold every send for (F + 1) × 60 / token_rate_per_min + U(0, 1) s
//! every report_window, unless a congestion report came within it (routine report of sent):
//!     F > 0                                     → hold every send for report_window + U(−2, 2) s
//!     else, report_window since the last rate change:
//!         sent < 0.75 × L, or A = 1, or L = 0   → r ← round₂(max(r + min_increase, r × first_step))
//!         otherwise                             → r ← round₂(max(r + min_increase, r × second_step))
//! ```
//!
//! No success or failure changes the rate otherwise. The factors 0.5, 0.75, 2, 3, 1.1 and the
//! jitters are fixed in the source and here. Defaults are those of `config1.json` and of
//! `telemetry.py`'s command line; where `AATB.py` falls back to other values when the file lacks
//! a field, they are named in brackets on each parameter. `token_rate_per_min` is the
//! aggregator's `--token-rate`, the quota's refill it tells every client (its default, 80 per
//! minute, is near Heroku's 75).
//!
//! Where this is an interpretation of the source:
//! - A process's threads share its bucket (as in `atb`: a thread short of a token reserves the
//!   next and waits until it is due, so threads are served in the order they asked), and every
//!   answer of any thread counts; a failure is a congestion report, so failures of several
//!   threads in a row each divide the rate, as the source's client does for each of its
//!   failures one after another.
//! - A hold stops every thread of the process until it ends (the source's client has one
//!   request at a time, which the hold delays); no tokens accrue during it, as in the source,
//!   whose bucket counts time from the end of the sleep.
//! - The routine report runs on the thread that calls the throttle at or after its time; waits
//!   are cut to end then, so it is late only by a request in flight.
//! - A store that cannot answer is the source's reply that never came: no update.
//! - The aggregator is keyed by the server key the group sends with (the source runs one per
//!   shared quota); `aggregator` names another.

use serde::{Deserialize, Serialize};

use super::aatb_telemetry::{Aggregate, Telemetry};
use super::atb::{AdaptiveBucket, check_bucket, check_step, divided, grown};
use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_positive};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{HumanDuration, NANOS_PER_MS, Nanos, from_secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AatbConfig {
    /// Tokens the bucket holds at most. Default 40 [4].
    pub bucket_size: f64,
    /// Tokens in the bucket at start. Default 1 [1].
    pub initial_tokens: f64,
    /// The bucket's rate at start, in tokens per minute. Default 40 [1].
    pub initial_rate_per_min: f64,
    /// Growth factor of a routine update when this process sends less than the average or is
    /// alone. Default 1.4 [1.5].
    pub first_step: f64,
    /// Growth factor of a routine update otherwise. Default 1.2 [1.2].
    pub second_step: f64,
    /// Time between routine reports, and the hold after one that sees 429s. Default 30 s [10 s].
    pub report_window: HumanDuration,
    /// The quota's refill the aggregator tells its clients, per minute. Default 80.
    pub token_rate_per_min: f64,
    /// The aggregator's window for requests and 429s (clients: twice it). Default 30 s.
    pub window: HumanDuration,
    /// The aggregator's slot for requests and 429s. Default 2 s.
    pub period_total: HumanDuration,
    /// The aggregator's slot for active clients. Default 10 s.
    pub period_active: HumanDuration,
    /// The least a routine increase adds, tokens per second. Default 0.01 (fixed in the source).
    pub min_increase_per_sec: f64,
    /// The lowest rate, tokens per second. Default 0.01 (fixed in the source).
    pub min_rate_per_sec: f64,
    /// The store key of the aggregator. Default: the server key the group sends with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregator: Option<String>,
}

impl Default for AatbConfig {
    fn default() -> Self {
        AatbConfig {
            bucket_size: 40.0,
            initial_tokens: 1.0,
            initial_rate_per_min: 40.0,
            first_step: 1.4,
            second_step: 1.2,
            report_window: HumanDuration::from_secs(30),
            token_rate_per_min: 80.0,
            window: HumanDuration::from_secs(30),
            period_total: HumanDuration::from_secs(2),
            period_active: HumanDuration::from_secs(10),
            min_increase_per_sec: 0.01,
            min_rate_per_sec: 0.01,
            aggregator: None,
        }
    }
}

/// Below this share of the average load a congestion report halves the rate, else divides it
/// by 3 (the source's 0.5).
const HALVE_BELOW: f64 = 0.5;
/// Below this share of the average load a routine report grows by `first_step` (0.75).
const FIRST_STEP_BELOW: f64 = 0.75;
/// Tokens after a congestion report (1.1).
const TOKENS_AFTER_CONGESTION: f64 = 1.1;

impl Algorithm for AatbConfig {
    const NAME: &'static str = "aatb";
    const DESCRIPTION: &'static str = "AATB (Farkiani et al. 2025): own token bucket steered by an aggregator of 429s, load and clients in the shared store";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_bucket(
            &mut out,
            self.bucket_size,
            self.initial_tokens,
            self.initial_rate_per_min,
            self.min_rate_per_sec,
        );
        check_step(&mut out, "first_step", self.first_step);
        check_step(&mut out, "second_step", self.second_step);
        for (field, d) in [
            ("report_window", self.report_window),
            ("window", self.window),
            ("period_total", self.period_total),
            ("period_active", self.period_active),
        ] {
            if d.nanos() < NANOS_PER_MS {
                out.push((field, format!("must be at least 1ms (got {d})")));
            }
        }
        check_positive(&mut out, "token_rate_per_min", self.token_rate_per_min);
        check_positive(&mut out, "min_increase_per_sec", self.min_increase_per_sec);
        if self
            .aggregator
            .as_deref()
            .is_some_and(|a| a.trim().is_empty())
        {
            out.push(("aggregator", "must not be empty".to_string()));
        }
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }

    fn store_scope(&self, _group: &str, key: &str) -> Option<String> {
        Some(self.aggregator_key(key))
    }
}

impl AatbConfig {
    /// The store prefix of the aggregator the processes of a group sending with `key` report to.
    pub fn aggregator_key(&self, key: &str) -> String {
        format!("aatb:{}", self.aggregator.as_deref().unwrap_or(key))
    }

    pub fn build(&self, ctx: BuildContext) -> Aatb {
        Aatb {
            telemetry: Telemetry::new(
                ctx.store.clone(),
                self.aggregator_key(&ctx.key),
                self.window.nanos(),
                self.period_total.nanos(),
                self.period_active.nanos(),
            ),
            client: format!("{}/{}", ctx.group, ctx.process),
            bucket: AdaptiveBucket::new(
                self.bucket_size,
                self.initial_tokens,
                self.initial_rate_per_min,
                self.min_rate_per_sec,
                ctx.threads,
            ),
            cfg: self.clone(),
            hold_until: 0,
            sent: 0,
            last_rate_change: None,
            last_congestion: None,
            next_routine: None,
            latest: Aggregate {
                active_clients: 1,
                ..Aggregate::default()
            },
            decreases: 0,
        }
    }
}

pub struct Aatb {
    cfg: AatbConfig,
    telemetry: Telemetry,
    /// This process's name at the aggregator.
    client: String,
    bucket: AdaptiveBucket,
    /// No thread sends before this.
    hold_until: Nanos,
    /// Answers since the last report.
    sent: u64,
    last_rate_change: Option<Nanos>,
    /// When the last congestion report went.
    last_congestion: Option<Nanos>,
    /// When the next routine report is due (set by the first call).
    next_routine: Option<Nanos>,
    /// The aggregator's last reply.
    latest: Aggregate,
    decreases: u64,
}

impl Aatb {
    /// The bucket's rate, tokens per second.
    pub fn rate(&self) -> f64 {
        self.bucket.rate()
    }

    /// When the process may send again after a hold.
    pub fn hold_until(&self) -> Nanos {
        self.hold_until
    }

    fn hold(&mut self, now: Nanos, until: Nanos) {
        self.hold_until = until;
        self.bucket.pause_until(now, until);
    }

    /// The average load `L`, the source's `total_requests / active_clients`.
    fn average_load(&self) -> f64 {
        self.latest.total_requests as f64 / self.latest.active_clients.max(1) as f64
    }

    /// Run the routine report if it is due; returns when the next one is.
    fn tick(&mut self, now: Nanos, rng: &mut SimRng) -> Nanos {
        let every = self.cfg.report_window.nanos().max(1);
        let due = *self.next_routine.get_or_insert(now + every);
        if now < due {
            return due;
        }
        let mut next = due;
        while next <= now {
            next += every;
        }
        self.next_routine = Some(next);
        if self
            .last_congestion
            .is_some_and(|t| now.saturating_sub(t) < every)
        {
            return next;
        }
        let sent = std::mem::take(&mut self.sent);
        let Ok(reply) = self.telemetry.report(now, &self.client, sent, false) else {
            return next;
        };
        self.latest = reply;
        if reply.reported_429 > 0 {
            use rand::RngExt;
            let jitter: f64 = rng.random_range(-2.0..=2.0);
            let hold = from_secs((crate::time::secs(every) + jitter).max(0.0));
            self.hold(now, now + hold);
        } else if self
            .last_rate_change
            .is_none_or(|t| now.saturating_sub(t) >= every)
        {
            let load = self.average_load();
            let behind =
                (sent as f64) < FIRST_STEP_BELOW * load || reply.active_clients == 1 || load == 0.0;
            let step = if behind {
                self.cfg.first_step
            } else {
                self.cfg.second_step
            };
            let rate = grown(self.bucket.rate(), step, self.cfg.min_increase_per_sec);
            self.bucket.set_rate(now, rate);
            self.last_rate_change = Some(now);
        }
        next
    }

    fn congestion(&mut self, now: Nanos, rng: &mut SimRng) {
        use rand::RngExt;
        self.last_congestion = Some(now);
        let sent = std::mem::take(&mut self.sent);
        if let Ok(reply) = self.telemetry.report(now, &self.client, sent, true) {
            self.latest = reply;
        }
        let wait = (self.latest.reported_429 + 1) as f64 * 60.0 / self.cfg.token_rate_per_min
            + rng.random_range(0.0..=1.0);
        let divisor = if (sent as f64) < HALVE_BELOW * self.average_load() {
            2.0
        } else {
            3.0
        };
        let rate = divided(self.bucket.rate(), divisor, self.cfg.min_rate_per_sec);
        self.bucket.set_rate(now, rate);
        self.bucket.set_tokens(now, TOKENS_AFTER_CONGESTION);
        self.last_rate_change = Some(now);
        self.hold(now, now + from_secs(wait));
        self.decreases += 1;
    }
}

impl Throttle for Aatb {
    fn delay(&mut self, _: Nanos, _: usize, _: &mut SimRng) -> Nanos {
        0
    }

    fn acquire(&mut self, now: Nanos, thread: usize, rng: &mut SimRng) -> Acquire {
        let routine = self.tick(now, rng);
        let until_routine = routine - now;
        if now < self.hold_until {
            return Acquire::Wait((self.hold_until - now).min(until_routine));
        }
        match self.bucket.take(now, thread) {
            Acquire::Wait(w) => Acquire::Wait(w.min(until_routine).max(1)),
            other => other,
        }
    }

    fn on_response(&mut self, now: Nanos, _: usize, response: &Response, rng: &mut SimRng) {
        self.tick(now, rng);
        self.sent += 1;
        if response.status != Status::Ok {
            self.congestion(now, rng);
        }
    }

    /// The bucket's spacing, `1 / rate`, in seconds.
    fn sleep_value(&self) -> f64 {
        self.bucket.spacing()
    }

    /// Congestion reports (each divided the rate and held the sends).
    fn backoffs(&self) -> u64 {
        self.decreases
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::store::SharedStore;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    fn ctx(process: usize, store: &SharedStore) -> BuildContext {
        BuildContext {
            process,
            store: store.clone(),
            ..BuildContext::solo(1)
        }
    }

    fn ok() -> Response {
        Response::bare(Status::Ok)
    }

    #[test]
    fn a_failure_divides_the_rate_and_holds_for_the_429s_the_aggregator_saw() {
        let store = crate::store::shared();
        let mut a = AatbConfig::default().build(ctx(0, &store));
        let mut b = AatbConfig::default().build(ctx(1, &store));
        let mut rng = test_rng();
        assert_eq!(a.acquire(0, 0, &mut rng), Acquire::Send);
        // b failed twice in the slot [0, 2); a's first failure comes at 2 s.
        b.on_response(S, 0, &Response::bare(Status::Limited), &mut rng);
        b.on_response(S, 0, &Response::bare(Status::Limited), &mut rng);
        a.on_response(2 * S, 0, &Response::bare(Status::Limited), &mut rng);
        // Two 429s known: hold (2 + 1) × 60 / 80 = 2.25 s plus up to 1 s.
        let hold = a.hold_until() - 2 * S;
        assert!(
            (from_secs(2.25)..=from_secs(3.25)).contains(&hold),
            "{hold}"
        );
        // a sent 1 of the 2 per client on average: not below half, so the rate is divided by
        // 3 (0.67 / 3 = 0.2233 → 0.22).
        assert_eq!(a.rate(), 0.22);
        // Nothing goes before the hold ends; then the 1.1 tokens let one request through.
        assert_eq!(
            a.acquire(2 * S, 0, &mut rng),
            Acquire::Wait(a.hold_until() - 2 * S)
        );
        let end = a.hold_until();
        assert_eq!(a.acquire(end, 0, &mut rng), Acquire::Send);
        assert!(matches!(a.acquire(end, 0, &mut rng), Acquire::Wait(_)));
        assert_eq!(a.backoffs(), 1);
    }

    #[test]
    fn a_process_below_half_the_average_load_halves() {
        let store = crate::store::shared();
        let mut a = AatbConfig::default().build(ctx(0, &store));
        let mut b = AatbConfig::default().build(ctx(1, &store));
        let mut rng = test_rng();
        // b reports 10 answers in the slot [0, 2) (a routine report at 30 s would do the same;
        // a failure reports at once).
        for _ in 0..9 {
            b.on_response(S, 0, &ok(), &mut rng);
        }
        b.on_response(S, 0, &Response::bare(Status::Limited), &mut rng);
        // a: one answer, a failure, at 12 s (after the first 10 s slot of clients: b only).
        a.on_response(12 * S, 0, &Response::bare(Status::Limited), &mut rng);
        // L = 10 / 1 and a sent 1 < 5: 0.67 / 2 = 0.335 → 0.34.
        assert_eq!(a.rate(), 0.34);
    }

    #[test]
    fn routine_reports_grow_the_rate_every_window_and_hold_when_429s_were_seen() {
        let store = crate::store::shared();
        let mut a = AatbConfig::default().build(ctx(0, &store));
        let mut b = AatbConfig::default().build(ctx(1, &store));
        let mut rng = test_rng();
        // The first call sets the schedule: routine reports at 30 s, 60 s, …
        assert_eq!(a.acquire(0, 0, &mut rng), Acquire::Send);
        // At 30 s: no 429 known, a is alone: × 1.4 (0.938 → 0.94).
        a.on_response(30 * S, 0, &ok(), &mut rng);
        assert_eq!(a.rate(), 0.94);
        // b fails at 40 s; a's report at 60 s sees it and holds a for 30 ± 2 s, rate unchanged.
        b.on_response(40 * S, 0, &Response::bare(Status::Limited), &mut rng);
        a.on_response(60 * S, 0, &ok(), &mut rng);
        assert_eq!(a.rate(), 0.94);
        let hold = a.hold_until() - 60 * S;
        assert!((28 * S..=32 * S).contains(&hold), "{hold}");
        // At 90 s b's 429 has left the 30 s window: a grows again. The aggregator knows one
        // request (a's) and two clients, L = 0.5, and a's one answer is not below 0.75 × L:
        // × 1.2 (1.128 → 1.13).
        b.on_response(85 * S, 0, &ok(), &mut rng);
        a.on_response(90 * S, 0, &ok(), &mut rng);
        assert_eq!(a.rate(), 1.13);
    }

    #[test]
    fn waits_end_at_the_next_routine_report() {
        let cfg = AatbConfig {
            initial_rate_per_min: 0.6,
            ..AatbConfig::default()
        };
        let store = crate::store::shared();
        let mut a = cfg.build(ctx(0, &store));
        let mut rng = test_rng();
        assert_eq!(a.rate(), 0.01);
        assert_eq!(a.acquire(0, 0, &mut rng), Acquire::Send);
        // The next token is due at 100 s; the thread wakes at 30 s for the report.
        assert_eq!(a.acquire(0, 0, &mut rng), Acquire::Wait(30 * S));
        assert_eq!(a.acquire(30 * S, 0, &mut rng), Acquire::Wait(30 * S));
        assert_eq!(a.rate(), 0.02);
    }

    #[test]
    fn no_routine_report_within_a_window_of_a_congestion_report() {
        let store = crate::store::shared();
        let mut a = AatbConfig::default().build(ctx(0, &store));
        let mut rng = test_rng();
        assert_eq!(a.acquire(0, 0, &mut rng), Acquire::Send);
        a.on_response(10 * S, 0, &Response::bare(Status::Limited), &mut rng);
        let after = a.rate();
        // The routine at 30 s comes 20 s after the congestion report: skipped.
        a.on_response(30 * S, 0, &ok(), &mut rng);
        assert_eq!(a.rate(), after);
        // At 60 s it runs; the 429 at 10 s is out of the window, a is alone: × 1.4.
        a.on_response(60 * S, 0, &ok(), &mut rng);
        assert_eq!((after, a.rate()), (0.22, 0.31));
    }

    #[test]
    fn bad_parameters_are_named() {
        let cfg = AatbConfig {
            second_step: 0.5,
            period_total: HumanDuration::from_millis(0),
            token_rate_per_min: -1.0,
            aggregator: Some(String::new()),
            ..AatbConfig::default()
        };
        let fields: Vec<&str> = cfg.problems().iter().map(|p| p.0).collect();
        assert_eq!(
            fields,
            [
                "second_step",
                "period_total",
                "token_rate_per_min",
                "aggregator"
            ]
        );
        assert!(AatbConfig::default().problems().is_empty());
    }
}
