//! Reading the echo of the own successes. For a process alone the level tells a sliding window
//! from a bucket whatever the stated resets say: on a sliding window `r + own = B` on every
//! success, `own` being the process's successes counted in the last period (this one too);
//! others only lower it, and a bucket's refill raises it once a token came back since the
//! process's success before. The stated resets cannot tell them apart on a window too short
//! for them (`period ≤ 2.5σ`: both say one second), nor where a sliding log states when its
//! oldest admission leaves (a second, when busy): a lone process there took the level for a
//! bucket's and, draining what the log returned a period later, sent the period's whole
//! allowance in ten seconds and then idled (1,356 per 36 s, 5 threads: utilization 0.806).

use std::collections::VecDeque;

use super::Law;
use super::modes::Evidence;

/// Readings of `r + own − B` over a few periods, for `read_echo`.
#[derive(Clone, Copy, Debug)]
pub(super) struct EchoTally {
    pub(super) since: f64,
    pub(super) readings: u32,
    /// Readings with `r + own = B` exactly...
    pub(super) exact: u32,
    /// ... and above it (refilled since: no sliding window).
    pub(super) above: u32,
    pub(super) level: f64,
}

impl EchoTally {
    pub(super) fn new(since: f64) -> EchoTally {
        EchoTally {
            since,
            readings: 0,
            exact: 0,
            above: 0,
            level: 0.0,
        }
    }
}

/// When the server counted this process's successes (seconds, in order) over the last period,
/// and the tally of the readings since the last verdict.
#[derive(Clone, Debug, Default)]
pub(super) struct Echo {
    pub(super) own: VecDeque<f64>,
    pub(super) tally: Option<EchoTally>,
}

/// The echo is judged over this many periods (long enough that a bucket's refill shows)...
pub(super) const ECHO_PERIODS: f64 = 4.0;
/// ... of at least this many readings (so that 95 % of them is no chance), ...
pub(super) const ECHO_MIN_READINGS: u32 = 30;
/// ... this share of them (unitless) exactly `B` (a request at the period's edge may be counted on the
/// other side of it) ...
pub(super) const ECHO_EXACT: f64 = 0.95;
/// ... and the level on average above this share of the bucket (unitless) and a token: a bucket emptied
/// by a lone process reads `B` too (its level a period ago was nothing).
pub(super) const ECHO_LEVEL: f64 = 0.1;

impl Law {
    /// For a process alone the level tells a sliding window from a bucket. A sliding window's
    /// level is `B` less what the last period took, so alone there the process reads
    /// `r + own = B` on every success (`own`: its successes counted in the last period, this
    /// one included); others only lower it. A bucket refills in between: alone,
    /// it reads `r + own − B` above zero once a token came back since its success before (a
    /// reading at least `1/R` after another of the same period). Over [`ECHO_PERIODS`] periods,
    /// nearly every such reading exactly `B` with the level well up makes a sliding window;
    /// most of them above `B` undo it.
    pub(super) fn read_echo(&mut self, t: f64, r: f64) {
        if !self.knows_quota() {
            self.echo.own.clear();
            self.echo.tally = None;
            return;
        }
        let own = &mut self.echo.own;
        let from = t - self.period;
        while own.front().is_some_and(|&s| s <= from) || own.len() as f64 > 2.0 * self.limit {
            own.pop_front();
        }
        let at = own.partition_point(|&s| s <= t);
        let before = at.checked_sub(1).map(|i| own[i]);
        own.insert(at, t);
        // Only a success a refill's token after another in the same period tells: the bucket
        // has given a token back since (a first one, or one close behind, reads `B` on both).
        if before.is_none_or(|b| t - b < 1.0 / self.rate) {
            return;
        }
        let e = r + (at + 1) as f64 - self.limit;
        let tally = self.echo.tally.get_or_insert(EchoTally::new(t));
        tally.readings += 1;
        tally.level += r;
        if e.abs() < 0.5 {
            tally.exact += 1;
        } else if e > 0.0 {
            tally.above += 1;
        }
        let tally = *tally;
        if t - tally.since >= ECHO_PERIODS * self.period && tally.readings >= ECHO_MIN_READINGS {
            let n = tally.readings as f64;
            let level = tally.level / n;
            if tally.exact as f64 >= ECHO_EXACT * n && level >= ECHO_LEVEL * self.limit + 1.0 {
                // Alone on a fixed window the readings are above `B` too (`own` still counts
                // what was taken before its last reset): a turnover seen was a burst's echo.
                self.mode.on(Evidence::LevelEchoesOwnSuccesses);
            } else if 2 * tally.above >= tally.readings {
                self.mode.on(Evidence::LevelRefillsBetweenSuccesses);
            }
            self.echo.tally = Some(EchoTally::new(t));
        }
    }
}
