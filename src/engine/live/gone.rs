//! Whether the target has gone away mid-run: a run against a server that stopped taking
//! connections would otherwise count refusals until its end and exit as if it ran.

use std::time::{Duration, Instant};

use crate::record::Failure;

/// How long, in real time, every request must have failed to connect before the run stops:
/// longer than a server's restart usually takes, short enough not to run on for nothing.
pub const GONE_AFTER: Duration = Duration::from_secs(10);

/// The fewest failed connections that say so: a client that sleeps long between requests
/// may send only one in that time.
const GONE_FAILURES: u64 = 3;

/// What the requests tell of the target: when one last reached it, and how many failed to
/// connect since.
#[derive(Debug)]
pub struct TargetWatch {
    last_reached: Instant,
    failed_since: u64,
}

impl TargetWatch {
    /// Watching from `start`, as if the target had been reached then.
    pub fn new(start: Instant) -> TargetWatch {
        TargetWatch {
            last_reached: start,
            failed_since: 0,
        }
    }

    /// A request ended at `now` with `failure` (none: answered 2xx or 429).
    pub fn saw(&mut self, failure: Option<Failure>, now: Instant) {
        match failure {
            // Nothing took the connection, or it never opened.
            Some(Failure::Refused | Failure::Transport) => self.failed_since += 1,
            // Anything else reached a server: an answer, even a 5xx, or a reset or timeout
            // of a connection it took.
            _ => {
                self.last_reached = now;
                self.failed_since = 0;
            }
        }
    }

    /// Why the run should stop at `now`, if every request of the last [`GONE_AFTER`] (at
    /// least [`GONE_FAILURES`] of them) failed to connect.
    pub fn gone(&self, now: Instant) -> Option<String> {
        let for_how_long = now.saturating_duration_since(self.last_reached);
        (for_how_long >= GONE_AFTER && self.failed_since >= GONE_FAILURES).then(|| {
            format!(
                "the target stopped taking connections: the last {} requests, over {:.0} s, \
                 failed to connect",
                self.failed_since,
                for_how_long.as_secs_f64()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gone_only_after_a_while_of_nothing_but_failed_connections() {
        let t0 = Instant::now();
        let mut w = TargetWatch::new(t0);
        let at = |s: u64| t0 + Duration::from_secs(s);
        w.saw(None, at(1));
        for s in 2..5 {
            w.saw(Some(Failure::Refused), at(s));
        }
        // Three failures, but not yet 10 s since the last request reached it.
        assert_eq!(w.gone(at(10)), None);
        assert!(w.gone(at(11)).unwrap().contains("the last 3 requests"));
        // A 5xx is a server answering: the count starts again.
        w.saw(Some(Failure::Http(503)), at(12));
        w.saw(Some(Failure::Refused), at(13));
        assert_eq!(w.gone(at(30)), None, "one failure alone says little");
        // Sleeping clients send nothing: silence is not a failure.
        let quiet = TargetWatch::new(t0);
        assert_eq!(quiet.gone(at(600)), None);
    }
}
