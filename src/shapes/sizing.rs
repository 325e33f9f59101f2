//! How long a drawn shape runs, over which windows its churn is judged, and so which limits a
//! shape may have.
//!
//! The run is as long as the matrix's cells (`scenarios/gauntlet/api_shapes.toml`): at least 20
//! of a thread's fair-share periods `20 N / R` (`N` every thread of the fleet, `R` the sustained
//! rate), and at least five of the rule's periods, between 30 minutes and 48 hours (the matrix's
//! 30 minutes for short periods, 5 hours for hourly quotas, 48 for daily ones). A churning fleet
//! also runs at least eight fairness windows, so each group can come and go at least two
//! windows apart. A rule that counts in windows runs a whole number of its periods: every
//! window started counts a whole `limit` in the capacity, so a run that ends a few seconds into
//! a window would charge every client, the oracle too, a window it had no time to spend.
//!
//! Three things bound the rate `R` a shape may draw, given its fleet and latency:
//! - **48 hours at most** (the matrix's longest cell, and what keeps 300 shapes affordable):
//!   `20 N / R` (`80 N / R` with churn) fits in 48 hours (in the whole periods of a window rule
//!   that fit in 48 hours), so `R ≥ 20 N / 48 h`. A fleet of 2,000 threads on 100 per day would
//!   need 4 years to settle.
//! - **the server is the bottleneck**: a thread's fair-share period `N / R` is at least
//!   [`ROUND_TRIPS`] times the 99th-percentile latency, for the fewest threads that ever share
//!   the key. Else the fleet could not spend the limit however it throttled (the oracle, which
//!   sends in its own slots, misses utilization on a window rule as soon as an answer comes
//!   after its next slot), and the shape would say nothing of the law.
//! - **the sim's budget**: a run admits at most about [`BUDGET`] requests (`R × duration`), a
//!   second or two of the sim per run. Only per-second limits above about 550 and per-minute ones
//!   above 33,000 pass it; the matrix's largest cell admits 200,000.

use super::fleet::Fleet;

/// The longest run, in seconds.
pub const MAX_DURATION_S: u64 = 48 * 3600;
/// The shortest run, in seconds.
pub const MIN_DURATION_S: u64 = 30 * 60;
/// A run covers at least this many of the rule's periods (within the two bounds above).
pub const PERIODS: u64 = 5;
/// A run covers at least this many of a thread's fair-share periods `N / R`.
pub const SHARE_PERIODS: f64 = 20.0;
/// A churning fleet's run covers at least this many fairness windows.
pub const CHURN_WINDOWS: u64 = 8;
/// Windowed fairness is judged over windows of at least 10 minutes (the matrix's) and at least
/// this many of a thread's fair-share periods, so a window's 2xx counts are not all 0 or 1.
pub const WINDOW_SHARE_PERIODS: f64 = 10.0;
pub const MIN_WINDOW_S: u64 = 600;
/// A thread's fair-share period is at least this many 99th-percentile latencies.
pub const ROUND_TRIPS: f64 = 2.0;
/// The most requests a run may expect to be admitted, `R × duration`.
pub const BUDGET: f64 = 1_000_000.0;
/// The largest limit drawn.
pub const MAX_LIMIT: u64 = 100_000;

/// What the sizing needs of a drawn rule (`server.rs`'s `Server::pace`): its sustained rate
/// `R` per second (a stack's slower limit), the period that sizes the run (a stack's long one,
/// nginx's second or minute), and whether it counts in windows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pace {
    pub rate: f64,
    pub period_s: u64,
    pub windowed: bool,
}

/// The rates a shape's fleet and latency allow, in requests per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateBounds {
    /// Of a thread's fair-share periods `N / R`, how many the run needs (times `N`): the run's
    /// 48 hours hold them when `R ≥ needed / 48 h`.
    pub needed: f64,
    /// The fewest threads keep pace with their answers.
    pub fleet_hi: f64,
    pub churn: bool,
}

impl RateBounds {
    pub fn new(fleet: &Fleet, p99_latency_s: f64) -> Self {
        let n = fleet.total_threads() as f64;
        let per_run = if fleet.churn {
            SHARE_PERIODS.max(WINDOW_SHARE_PERIODS * CHURN_WINDOWS as f64)
        } else {
            SHARE_PERIODS
        };
        let fewest = fleet.staying_threads().max(1) as f64;
        RateBounds {
            needed: per_run * n,
            fleet_hi: fewest / (ROUND_TRIPS * p99_latency_s.max(1e-6)),
            churn: fleet.churn,
        }
    }

    /// The whole limits per `period_s` this shape may have (`windowed`: a rule that counts in
    /// windows, which runs whole periods): `[lo, hi]` within 1 to [`MAX_LIMIT`], or `None` when
    /// no limit fits that period.
    pub fn limits(&self, period_s: u64, windowed: bool) -> Option<(u64, u64)> {
        let p = period_s as f64;
        let floor = self.floor_s(period_s, windowed) as f64;
        let hi_rate = self.fleet_hi.min(BUDGET / floor);
        let longest = longest_s(period_s, windowed) as f64;
        // In this order the product is exact for round periods: 20 x 2,000 x 86,400 / 172,800.
        let lo = ((self.needed * p / longest).ceil() as u64).max(1);
        let hi = ((hi_rate * p).floor() as u64).min(MAX_LIMIT);
        (lo <= hi).then_some((lo, hi))
    }

    /// The shortest run any rate gets for this period: the budget is spent over at least it.
    fn floor_s(&self, period_s: u64, windowed: bool) -> u64 {
        let churn = if self.churn {
            CHURN_WINDOWS * MIN_WINDOW_S
        } else {
            0
        };
        whole(
            periods_floor_s(period_s).max(churn) as f64,
            period_s,
            windowed,
        )
    }
}

/// The longest run: 48 hours, or the whole periods of a window rule that fit in them.
fn longest_s(period_s: u64, windowed: bool) -> u64 {
    if windowed {
        MAX_DURATION_S / period_s * period_s
    } else {
        MAX_DURATION_S
    }
}

/// [`PERIODS`] of the rule's period, between [`MIN_DURATION_S`] and [`MAX_DURATION_S`].
fn periods_floor_s(period_s: u64) -> u64 {
    (PERIODS * period_s).clamp(MIN_DURATION_S, MAX_DURATION_S)
}

/// The fairness window of a fleet of `threads` at `rate` per second, in whole minutes.
pub fn window_s(rate: f64, threads: u64) -> u64 {
    let s = (WINDOW_SHARE_PERIODS * threads as f64 / rate).max(MIN_WINDOW_S as f64);
    whole_minutes(s)
}

/// The run's length: in whole minutes, or for a rule that counts in windows in whole periods;
/// never past [`longest_s`] (the rate's bounds keep `20 N / R` and the churn's windows within
/// it).
pub fn duration_s(pace: Pace, fleet: &Fleet) -> u64 {
    let (rate, period) = (pace.rate, pace.period_s);
    let threads = fleet.total_threads();
    let mut s = (SHARE_PERIODS * threads as f64 / rate).max(periods_floor_s(period) as f64);
    if fleet.churn {
        s = s.max((CHURN_WINDOWS * window_s(rate, threads)) as f64);
    }
    whole(s, period, pace.windowed)
}

/// `s` rounded up to whole periods (`windowed`) or minutes, never past [`longest_s`].
fn whole(s: f64, period_s: u64, windowed: bool) -> u64 {
    let up = if windowed {
        (s / period_s as f64).ceil() as u64 * period_s
    } else {
        whole_minutes(s)
    };
    up.min(longest_s(period_s, windowed))
}

fn whole_minutes(s: f64) -> u64 {
    ((s / 60.0).ceil() as u64).saturating_mul(60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shapes::fleet::Group;

    fn fleet(processes: u64, threads: u64, churn: bool) -> Fleet {
        Fleet {
            groups: vec![Group {
                name: "stay".into(),
                processes,
                threads,
                start_s: 0,
                stop_s: None,
            }],
            churn,
        }
    }

    fn rule(limit: u64, period_s: u64, windowed: bool) -> Pace {
        Pace {
            rate: limit as f64 / period_s as f64,
            period_s,
            windowed,
        }
    }

    #[test]
    fn runs_are_as_long_as_the_matrix_cells() {
        // 5 x 5 on 4,500 per hour: 5 hours. 1,000 threads on 10,000 per day: 48 hours.
        assert_eq!(
            duration_s(rule(4500, 3600, false), &fleet(5, 5, false)),
            5 * 3600
        );
        assert_eq!(
            duration_s(rule(10_000, 86_400, false), &fleet(500, 2, false)),
            48 * 3600
        );
        // 1 x 1 on 5 per second: 30 minutes; 200 x 1 on 100 per minute: 40 minutes.
        assert_eq!(duration_s(rule(5, 1, false), &fleet(1, 1, false)), 1800);
        assert_eq!(duration_s(rule(100, 60, true), &fleet(200, 1, false)), 2400);
        // A churning fleet runs eight windows.
        assert_eq!(duration_s(rule(5, 1, false), &fleet(4, 4, true)), 8 * 600);
    }

    #[test]
    fn a_window_rule_runs_whole_windows_within_48_hours() {
        // 5 windows of 11m7s, not 56 minutes (a sixth window barely begun).
        assert_eq!(
            duration_s(rule(3102, 667, true), &fleet(3, 39, false)),
            5 * 667
        );
        assert_eq!(
            duration_s(rule(3102, 667, false), &fleet(3, 39, false)),
            56 * 60
        );
        // Five windows of 23 hours would pass 48 hours: two.
        assert_eq!(
            duration_s(rule(50_000, 23 * 3600, true), &fleet(1, 1, false)),
            46 * 3600
        );
        let b = RateBounds::new(&fleet(500, 4, false), 0.02);
        let (lo, _) = b.limits(23 * 3600, true).unwrap();
        assert!(20.0 * 2000.0 / (lo as f64 / (23.0 * 3600.0)) <= 46.0 * 3600.0);
    }

    #[test]
    fn limits_keep_the_run_within_48_hours_the_fleet_in_pace_and_the_budget() {
        let b = RateBounds::new(&fleet(500, 4, false), 0.02);
        // 2,000 threads need 20 x 2,000 / R <= 48 h: at least 23,149 per day.
        assert_eq!(b.limits(86_400, false), Some((20_000, MAX_LIMIT)));
        // Per second: the budget over 30 minutes allows 555.
        assert_eq!(b.limits(1, true), Some((1, 555)));
        // One thread answered after 250 ms cannot spend more than 2 per second.
        let slow = RateBounds::new(&fleet(1, 1, false), 0.25);
        assert_eq!(slow.limits(1, false), Some((1, 2)));
        assert_eq!(slow.limits(60, false), Some((1, 120)));
        let slower = RateBounds::new(&fleet(1, 1, false), 0.9);
        assert_eq!(slower.limits(1, false), None);
        for period in [1, 10, 60, 900, 3600, 86_400] {
            let Some((_, hi)) = b.limits(period, false) else {
                continue;
            };
            let run = duration_s(rule(hi, period, false), &fleet(500, 4, false));
            let rate = hi as f64 / period as f64;
            assert!(run <= MAX_DURATION_S);
            assert!(
                rate * run as f64 <= BUDGET * 1.001,
                "{period}: {rate} x {run}"
            );
        }
    }
}
