//! Stacked limits (`stacked.rs`): a refusal by another limit than the successes' bounds the
//! key's rate, and leaves the bucket the successes state.

use super::*;

/// A fixed window on the clock of `limit` per `period` seconds: its count in the current window.
struct Window {
    limit: u64,
    period: u64,
    start: u64,
    used: u64,
}

impl Window {
    fn new(limit: u64, period: u64) -> Window {
        Window {
            limit,
            period,
            start: 0,
            used: 0,
        }
    }

    /// Turns the window over at `t` (seconds), and says whether it has a request left.
    fn open(&mut self, t: f64) -> bool {
        let start = (t as u64) / self.period * self.period;
        if start != self.start {
            (self.start, self.used) = (start, 0);
        }
        self.used < self.limit
    }

    /// Whole seconds to the window's end, rounded up.
    fn reset(&self, t: f64) -> Duration {
        Duration::from_secs(self.start + self.period - t as u64)
    }

    fn answer(&self, t: f64, status: Status) -> Answer {
        let reset = self.reset(t);
        Answer {
            remaining: Some(self.limit - self.used),
            limit: Some(self.limit),
            reset: Some(reset),
            retry_after: (status == Status::Limited).then_some(reset),
            ..Answer::bare(status)
        }
    }
}

/// One process of `threads` with `params` on "10 per second; 100 per minute", as Flask-Limiter
/// keeps it: each limit a fixed window, the short one asked and charged first, a success
/// stating the short one's fields and a refusal the refusing one's; answers 20 ms after the
/// send, counted at 10 ms, for ten minutes. The requests let in over the last five minutes, and
/// refused and sent over the whole.
fn on_two_limits(threads: usize, params: Params) -> (u64, u64, u64) {
    let mut law = Law::new(threads, params);
    let (mut short, mut long) = (Window::new(10, 1), Window::new(100, 60));
    let (mut ok, mut refused) = (0, 0);
    let latency = S / 50;
    let sent = drive(&mut law, 600 * S, |now, _| {
        let t = (now + latency / 2) as f64 / 1e9;
        let a = if !short.open(t) {
            refused += 1;
            short.answer(t, Status::Limited)
        } else {
            short.used += 1;
            if !long.open(t) {
                refused += 1;
                long.answer(t, Status::Limited)
            } else {
                long.used += 1;
                ok += u64::from(t >= 300.0);
                short.answer(t, Status::Ok)
            }
        };
        Some((a, latency))
    })
    .len() as u64;
    (ok, refused, sent)
}

#[test]
fn a_refusal_by_the_long_limit_bounds_the_rate_under_it() {
    // The successes state the short limit (10 a second); the long one (100 a minute) refuses
    // with its own limit and the seconds to its window's end. Told nothing, and told the long
    // limit: at most 1.5 % refused, and at least 85 % of the long limit used. (Read as the
    // bucket, the long limit's refusals let a process told nothing take it all, with 3.5 % of
    // one thread's requests refused and 7.3 % of four threads'.)
    for (told, params) in [
        ("nothing", Params::default()),
        ("100 per minute", quota_params(100.0, 60)),
    ] {
        for threads in [1, 4] {
            let (ok, refused, sent) = on_two_limits(threads, params.clone());
            let used = ok as f64 / 500.0;
            let share = refused as f64 / sent as f64;
            assert!(
                used >= 0.85 && share <= 0.015,
                "{threads} thread(s) told {told}: used {used:.3} of the long limit, {:.2} % \
                 refused",
                100.0 * share
            );
        }
    }
}
