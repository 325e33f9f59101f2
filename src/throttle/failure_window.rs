//! `failure-window`: the system Keen's full-jitter retry replaces. Failures (the 400 series; in
//! this tool the only one is 429) are counted per *query* — the request's description, not the
//! project it is billed to — and once a query has failed `threshold` times within a `window` that
//! started at its first failure, the client drops that query's requests until the window has
//! passed; then its count starts again from zero. A success does not clear the count, and 503s
//! (like other 5xx) are not handled at all: they neither count nor block.
//!
//! Its two shortcomings, which `scenarios/failure_window.toml` shows against `backoff`:
//! - the server limits the *project*, but the count is per query, so a project running many
//!   queries pays `threshold` 429s for each of them before it slows down, and each new query
//!   starts over;
//! - a blocked query stays silent for the whole window (1 h by default) behind a limit that
//!   resets every minute.
//!
//! Queries: each process counts its own queries (a group is a set of queries of its own), and
//! its thread `i` runs query `i mod queries`, so `queries = threads` gives every thread a query
//! of its own and `queries = 1` makes the process one query. Each thread sends one request of
//! its query every `interval`; a dropped one is not sent, is counted as a give-up (`timed_out`
//! in `summary.json`, "dropped" in the run's table), and the thread's next request of the query
//! comes an `interval` later.

use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_positive};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FailureWindowConfig {
    /// Failures of one query within a window that block it. Default 10.
    pub threshold: u32,
    /// How long a query's window lasts from its first failure. Default 1 h.
    pub window: HumanDuration,
    /// Distinct queries among the process's threads: thread `i` runs query `i mod queries`.
    /// Default 1.
    pub queries: u32,
    /// Time between two requests of one thread, sent or dropped. Default 1 s.
    pub interval: HumanDuration,
}

impl Default for FailureWindowConfig {
    fn default() -> Self {
        FailureWindowConfig {
            threshold: 10,
            window: HumanDuration::from_secs(3600),
            queries: 1,
            interval: HumanDuration::from_secs(1),
        }
    }
}

impl Algorithm for FailureWindowConfig {
    const NAME: &'static str = "failure-window";
    const DESCRIPTION: &'static str = "the system Keen's full-jitter retry replaces: drop a query's requests for `window` once it failed `threshold` times (per query, 503s ignored)";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        if self.threshold == 0 {
            out.push(("threshold", "must be at least 1 (got 0)".to_string()));
        }
        check_positive(&mut out, "window", self.window.secs());
        if self.queries == 0 {
            out.push(("queries", "must be at least 1 (got 0)".to_string()));
        }
        // A dropped request takes no time of its own: without an interval the thread would
        // drop forever at one instant.
        check_positive(&mut out, "interval", self.interval.secs());
        out
    }

    fn throttle(&self, _ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(FailureWindow::new(self.clone()))
    }
}

/// One query's failures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Count {
    failures: u32,
    /// When its window started (its first failure since the last reset).
    since: Nanos,
}

pub struct FailureWindow {
    cfg: FailureWindowConfig,
    counts: Vec<Count>,
    /// Blocks started (the process's "backoffs").
    blocks: u64,
    /// The latest time the algorithm was told, for `sleep_value`.
    seen: Nanos,
}

impl FailureWindow {
    pub fn new(cfg: FailureWindowConfig) -> Self {
        FailureWindow {
            counts: vec![Count::default(); cfg.queries.max(1) as usize],
            cfg,
            blocks: 0,
            seen: 0,
        }
    }

    fn query(&self, thread: usize) -> usize {
        thread % self.counts.len()
    }

    /// The window is over at `now`: the count starts again.
    fn expire(&mut self, q: usize, now: Nanos) {
        let c = &mut self.counts[q];
        if c.failures > 0 && now >= c.since.saturating_add(self.cfg.window.nanos()) {
            *c = Count::default();
        }
    }

    fn blocked(&self, q: usize) -> bool {
        self.counts[q].failures >= self.cfg.threshold
    }
}

impl Throttle for FailureWindow {
    fn delay(&mut self, _now: Nanos, _thread: usize, _rng: &mut SimRng) -> Nanos {
        self.cfg.interval.nanos()
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _rng: &mut SimRng) -> Acquire {
        self.seen = self.seen.max(now);
        let q = self.query(thread);
        self.expire(q, now);
        if self.blocked(q) {
            Acquire::GiveUp
        } else {
            Acquire::Send
        }
    }

    fn on_response(&mut self, now: Nanos, thread: usize, response: &Response, _: &mut SimRng) {
        self.seen = self.seen.max(now);
        if response.status != Status::Limited {
            return;
        }
        let q = self.query(thread);
        self.expire(q, now);
        let threshold = self.cfg.threshold;
        let c = &mut self.counts[q];
        if c.failures == 0 {
            c.since = now;
        }
        c.failures = c.failures.saturating_add(1);
        if c.failures == threshold {
            self.blocks += 1;
        }
    }

    /// Seconds until the longest block ends (0 when no query is blocked), as of the last time
    /// the algorithm was told.
    fn sleep_value(&self) -> f64 {
        let window = self.cfg.window.nanos();
        (0..self.counts.len())
            .filter(|&q| self.blocked(q))
            .map(|q| {
                secs(
                    self.counts[q]
                        .since
                        .saturating_add(window)
                        .saturating_sub(self.seen),
                )
            })
            .fold(0.0, f64::max)
    }

    fn backoffs(&self) -> u64 {
        self.blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    fn fw(threshold: u32, window_s: u64, queries: u32) -> FailureWindow {
        FailureWindow::new(FailureWindowConfig {
            threshold,
            window: HumanDuration::from_secs(window_s),
            queries,
            interval: HumanDuration::from_secs(1),
        })
    }

    fn answer(f: &mut FailureWindow, at: Nanos, thread: usize, status: Status) {
        f.on_response(at, thread, &Response::bare(status), &mut test_rng());
    }

    fn gate(f: &mut FailureWindow, at: Nanos, thread: usize) -> Acquire {
        f.acquire(at, thread, &mut test_rng())
    }

    #[test]
    fn a_query_is_dropped_after_threshold_failures_until_its_window_ends() {
        let mut f = fw(3, 100, 1);
        assert_eq!(f.delay(0, 0, &mut test_rng()), S);
        // Failures at 10, 20 and 30 s: the window started at 10 s, so it ends at 110 s.
        answer(&mut f, 10 * S, 0, Status::Limited);
        answer(&mut f, 20 * S, 0, Status::Limited);
        assert_eq!(gate(&mut f, 25 * S, 0), Acquire::Send);
        answer(&mut f, 30 * S, 0, Status::Limited);
        assert_eq!(gate(&mut f, 31 * S, 0), Acquire::GiveUp);
        assert_eq!(f.backoffs(), 1);
        assert!((f.sleep_value() - 79.0).abs() < 1e-9, "{}", f.sleep_value());
        assert_eq!(gate(&mut f, 109 * S, 0), Acquire::GiveUp);
        // At 110 s the window has passed: the count starts again from zero.
        assert_eq!(gate(&mut f, 110 * S, 0), Acquire::Send);
        assert_eq!(f.sleep_value(), 0.0);
        answer(&mut f, 111 * S, 0, Status::Limited);
        answer(&mut f, 112 * S, 0, Status::Limited);
        assert_eq!(gate(&mut f, 113 * S, 0), Acquire::Send, "2 failures of 3");
    }

    #[test]
    fn failures_spread_over_more_than_a_window_never_block() {
        let mut f = fw(3, 100, 1);
        answer(&mut f, 0, 0, Status::Limited);
        answer(&mut f, 60 * S, 0, Status::Limited);
        // The window that started at 0 is over at 100 s: this failure starts a new one.
        answer(&mut f, 100 * S, 0, Status::Limited);
        assert_eq!(gate(&mut f, 101 * S, 0), Acquire::Send);
        answer(&mut f, 150 * S, 0, Status::Limited);
        answer(&mut f, 199 * S, 0, Status::Limited);
        assert_eq!(gate(&mut f, 199 * S, 0), Acquire::GiveUp, "3 in [100, 200)");
    }

    #[test]
    fn successes_and_503s_do_not_touch_the_count() {
        let mut f = fw(2, 100, 1);
        answer(&mut f, 0, 0, Status::Limited);
        answer(&mut f, S, 0, Status::Ok);
        for t in 2..50 {
            answer(&mut f, t * S, 0, Status::Unavailable);
            answer(&mut f, t * S, 0, Status::Error);
        }
        assert_eq!(gate(&mut f, 50 * S, 0), Acquire::Send);
        answer(&mut f, 51 * S, 0, Status::Limited);
        assert_eq!(
            gate(&mut f, 52 * S, 0),
            Acquire::GiveUp,
            "the success cleared nothing"
        );
    }

    #[test]
    fn each_query_counts_its_own_failures() {
        // 4 threads, 2 queries: threads 0 and 2 run query 0, threads 1 and 3 query 1.
        let mut f = fw(2, 100, 2);
        answer(&mut f, 0, 0, Status::Limited);
        answer(&mut f, 0, 2, Status::Limited);
        assert_eq!(gate(&mut f, S, 0), Acquire::GiveUp);
        assert_eq!(gate(&mut f, S, 2), Acquire::GiveUp);
        assert_eq!(gate(&mut f, S, 1), Acquire::Send);
        answer(&mut f, S, 1, Status::Limited);
        assert_eq!(gate(&mut f, 2 * S, 3), Acquire::Send, "query 1 failed once");
    }

    #[test]
    fn parameters_are_checked() {
        let cfg = FailureWindowConfig {
            threshold: 0,
            window: HumanDuration(0),
            queries: 0,
            interval: HumanDuration(0),
        };
        let fields: Vec<_> = cfg.problems().into_iter().map(|p| p.0).collect();
        assert_eq!(fields, ["threshold", "window", "queries", "interval"]);
        assert!(FailureWindowConfig::default().problems().is_empty());
    }
}
