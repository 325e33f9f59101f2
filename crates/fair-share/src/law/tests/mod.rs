use super::blind::*;
use super::window::LawWindow;
use super::*;
use crate::draw::SplitMix;

mod cuts;
mod modes;
mod shares;
mod small;
mod stacked;
mod start;
mod stated;
mod top;
mod windows;

use crate::time::from_secs;

/// Feeds `t` successes from `from` on, one a second, the level falling 2 tokens a second from
/// 2,000 of Heroku's 4,500 (no full start, no flood), until a window of the law closes, seen
/// as the rate it moves: the process is then past its start. Returns when that answer came.
fn close_a_window(t: &mut Law, from: Nanos) -> Nanos {
    let mut rng = test_rng();
    let before = t.thread_rate();
    for k in 0..100 {
        let now = from + k * S;
        t.respond_ns(now, 0, &answer(Status::Ok, 2000 - 2 * k), &mut rng);
        if t.thread_rate() != before {
            return now;
        }
    }
    panic!("no window of the law closed");
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

/// A process of `threads` for a server granting `quota` per `period_s` (its bucket as big,
/// until an answer's `RateLimit-Limit` says otherwise).
fn shaped(threads: usize, quota: f64, period_s: u64) -> Law {
    Law::new(threads, quota_params(quota, period_s))
}

fn quota_params(quota: f64, period_s: u64) -> Params {
    Params {
        quota: Some(quota),
        period: Some(Duration::from_secs(period_s)),
        ..Params::default()
    }
}

/// `params` with an initial sleep of `1/x`: a process starts at `x` per thread, if that is
/// slower than its share of the quota.
fn starting_at(x: f64, params: Params) -> Params {
    Params {
        initial_sleep: Some(Duration::from_secs_f64(1.0 / x)),
        ..params
    }
}

/// A process of `threads` on Heroku's default quota that starts at `x` per thread.
fn started_at(threads: usize, x: f64) -> Law {
    let t = Law::new(threads, starting_at(x, Params::default()));
    assert!(
        (t.thread_rate() / x - 1.0).abs() < 1e-9,
        "{}",
        t.thread_rate()
    );
    t
}

/// A process of `threads` on 10 per second in fixed 1-second windows that read a turnover
/// between 0.95 s (the allowance spent) and 1.05 s (9 left): the reset placed at 1 s.
fn turned_over_at_one_second(threads: usize) -> Law {
    turned_over_at_one_second_from(Law::new(threads, quota_params(10.0, 1)))
}

/// The same for a process `t` built on 10 per second.
fn turned_over_at_one_second_from(mut t: Law) -> Law {
    assert!(t.observe(0, 0.95, 0.0).is_none());
    assert!(t.observe(0, 1.05, 9.0).is_none());
    assert_eq!(t.reset_at(), Some(1.0));
    t
}

/// Whether `t` reads a sliding window, told by what a bare refusal at `now` (no count, so no
/// reading of the level) cuts a one-thread process by: one request per period on a sliding
/// window of `period_s`, at least a halving on any other shape. The refusal changes the law: a
/// test that goes on builds another.
fn refusal_says_sliding(t: &mut Law, now: Nanos, period_s: f64) -> bool {
    assert_eq!(t.threads(), 1);
    let before = t.thread_rate();
    let per_period = before * period_s;
    assert!(
        per_period > 2.0,
        "too slow for a refusal to tell: {per_period}"
    );
    t.respond_ns(now, 0, &Answer::bare(Status::Limited), &mut test_rng());
    let cut = t.thread_rate() / before;
    if (cut - (1.0 - 1.0 / per_period)).abs() < 1e-12 {
        return true;
    }
    assert!(cut <= 0.5 + 1e-12, "a cut of {cut} is no shape's");
    false
}

/// Whether `t` reads a fixed window of `period_s`, seen in its target at the level `r`: a
/// fixed window's spends what is left by the next reset, so it changes as the reset nears; a
/// bucket's and a sliding window's do not.
fn targets_a_reset(t: &Law, r: f64, period_s: f64) -> bool {
    t.target(r, 0.25 * period_s) != t.target(r, 0.75 * period_s)
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
    drive(t, until, |_, _| None)
}

/// Runs one process's threads until `until`: each asks for its next request when the law
/// says, and sends when it lets it. `serve` answers a send by thread `i` at `now` with the
/// answer and its latency, read when it arrives (at the send, for a latency of 0), or with
/// nothing (no answer is read, and the thread asks for its next request at once). Returns each
/// send's time and thread.
fn drive(
    t: &mut Law,
    until: Nanos,
    mut serve: impl FnMut(Nanos, usize) -> Option<(Answer, Nanos)>,
) -> Vec<(Nanos, usize)> {
    let mut rng = test_rng();
    let n = t.threads.len();
    // Each thread's next event: when it asks again, and the answer it is waiting for.
    let mut due: Vec<(Nanos, Option<Answer>)> =
        (0..n).map(|i| (t.delay_ns(0, i, &mut rng), None)).collect();
    let mut out = Vec::new();
    loop {
        let i = (0..n).min_by_key(|&i| (due[i].0, i)).unwrap();
        let now = due[i].0;
        if now >= until {
            return out;
        }
        if let Some(a) = due[i].1.take() {
            t.respond_ns(now, i, &a, &mut rng);
            due[i].0 = now + t.delay_ns(now, i, &mut rng);
            continue;
        }
        match acquire(t, now, i) {
            Acquire::Wait(w) => due[i].0 = now + w,
            Acquire::Send => {
                out.push((now, i));
                match serve(now, i) {
                    Some((a, latency)) if latency > 0 => due[i] = (now + latency, Some(a)),
                    Some((a, _)) => {
                        t.respond_ns(now, i, &a, &mut rng);
                        due[i].0 = now + t.delay_ns(now, i, &mut rng);
                    }
                    None => due[i].0 = now + t.delay_ns(now, i, &mut rng),
                }
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
