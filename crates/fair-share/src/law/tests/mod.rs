use super::blind::*;
use super::modes::{Phase, Shape};
use super::window::LawWindow;
use super::*;
use crate::draw::SplitMix;

mod cuts;
mod modes;
mod shares;
mod start;
mod stated;
mod windows;

use crate::time::from_secs;

/// As if `closed` windows of the law had closed.
fn set_windows_closed(t: &mut Law, closed: u64) {
    t.mode.phase = if closed == 0 {
        Phase::Start
    } else {
        Phase::Steady
    };
}

const S: Nanos = 1_000_000_000;

fn test_rng() -> SplitMix {
    SplitMix::new(7)
}
/// 4500 per hour.
const R: f64 = 1.25;

fn build(threads: usize) -> Law {
    Law::new(threads, Params::default())
}

/// A process of `threads` for a server granting `quota` per `period_s` from a bucket of
/// `limit` (as `RateLimit-Limit` says once an answer came).
fn shaped(threads: usize, quota: f64, period_s: u64, limit: f64) -> Law {
    let mut t = Law::new(
        threads,
        Params {
            quota: Some(quota),
            period: Some(Duration::from_secs(period_s)),
            ..Params::default()
        },
    );
    t.limit = limit;
    t
}

/// A process of `threads` on 10 per second in fixed 1-second windows that read a turnover
/// between 0.95 s (the allowance spent) and 1.05 s (9 left): the reset placed at 1 s.
fn turned_over_at_one_second(threads: usize) -> Law {
    let mut t = shaped(threads, 10.0, 1, 10.0);
    assert!(t.observe(0, 0.95, 0.0).is_none());
    assert!(t.observe(0, 1.05, 9.0).is_none());
    assert_eq!(t.reset_at(), Some(1.0));
    t
}

fn answer(status: Status, remaining: u64) -> Answer {
    Answer {
        remaining: Some(remaining),
        limit: Some(4500),
        ..Answer::bare(status)
    }
}

#[derive(Debug, PartialEq)]
enum Acquire {
    Send,
    Wait(Nanos),
}

fn acquire(t: &mut Law, now: Nanos, thread: usize) -> Acquire {
    match t.acquire_ns(now, thread) {
        0 => Acquire::Send,
        w => Acquire::Wait(w),
    }
}

fn ns(n: Nanos) -> Option<Duration> {
    Some(Duration::from_nanos(n))
}

/// Runs one process's threads against answers that come back at once, and returns each
/// send's time.
fn sends(t: &mut Law, until: Nanos) -> Vec<(Nanos, usize)> {
    let mut rng = test_rng();
    let n = t.threads.len();
    let mut due: Vec<Nanos> = (0..n).map(|i| t.delay_ns(0, i, &mut rng)).collect();
    let mut out = Vec::new();
    loop {
        let i = (0..n).min_by_key(|&i| (due[i], i)).unwrap();
        let now = due[i];
        if now >= until {
            return out;
        }
        match acquire(t, now, i) {
            Acquire::Wait(w) => due[i] = now + w,
            Acquire::Send => {
                out.push((now, i));
                due[i] = now + t.delay_ns(now, i, &mut rng);
            }
        }
    }
}

/// A success in GitHub's dialect with a limit of 100: the count and the stated reset.
fn github100(remaining: u64, reset_s: u64) -> Answer {
    Answer {
        limit: Some(100),
        reset: ns(reset_s * S),
        ..answer(Status::Ok, remaining)
    }
}

fn stated(status: Status, remaining: u64, reset_s: u64) -> Answer {
    Answer {
        limit: Some(30),
        reset: ns(reset_s * S),
        ..answer(status, remaining)
    }
}
