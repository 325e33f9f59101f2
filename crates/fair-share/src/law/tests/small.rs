//! Buckets of one to three tokens, run in a closed loop against a GCRA written here: the
//! jitter fits in what the bucket tolerates, and the refill a full bucket loses is read as
//! lost, not as taken.

use super::*;

/// A GCRA of `limit` tokens refilled at `rate` per second: when a request counted at `t`
/// (seconds) is let in, and the count left after it.
struct Gcra {
    emission: f64,
    tolerance: f64,
    tat: f64,
}

impl Gcra {
    fn new(limit: u64, rate: f64) -> Gcra {
        let emission = 1.0 / rate;
        Gcra {
            emission,
            tolerance: (limit - 1) as f64 * emission,
            tat: 0.0,
        }
    }

    /// `Ok(remaining)`, or `Err(seconds until a token)`.
    fn take(&mut self, t: f64) -> Result<u64, f64> {
        let earliest = self.tat - self.tolerance;
        if t < earliest - 1e-12 {
            return Err(earliest - t);
        }
        self.tat = self.tat.max(t) + self.emission;
        let left = ((t + self.tolerance + self.emission - self.tat) / self.emission + 1e-9).floor();
        Ok(left.max(0.0) as u64)
    }
}

/// `law` alone on `gcra`, answers 20 ms after each send and counted at 10 ms, for `secs`
/// seconds: each answer is the GCRA's count after the request let in (`Ok`) or its wait to the
/// next token (`Err`), dressed by `dress` with what the server states beside them (a limit
/// always; a reset, a policy). Returns when each request was sent and whether it was let in.
fn alone_on(
    law: &mut Law,
    gcra: &mut Gcra,
    secs: u64,
    dress: impl Fn(Answer) -> Answer,
) -> Vec<(Nanos, bool)> {
    let latency = S / 50;
    let mut sent = Vec::new();
    drive(law, secs * S, |now, _| {
        let counted = (now + latency / 2) as f64 / 1e9;
        let taken = gcra.take(counted);
        sent.push((now, taken.is_ok()));
        let a = match taken {
            Ok(left) => Answer {
                remaining: Some(left),
                ..Answer::bare(Status::Ok)
            },
            Err(wait) => Answer {
                remaining: Some(0),
                retry_after: Some(Duration::from_secs_f64(wait)),
                ..Answer::bare(Status::Limited)
            },
        };
        Some((dress(a), latency))
    });
    sent
}

/// The requests of `sent` let in and refused.
fn tally(sent: &[(Nanos, bool)]) -> (u64, u64) {
    let ok = sent.iter().filter(|(_, ok)| *ok).count() as u64;
    (ok, sent.len() as u64 - ok)
}

/// One process of `threads` alone on a GCRA of `limit` per second (its bucket `limit` tokens),
/// told the quota, for `secs` seconds: the requests let in and refused.
fn alone_on_gcra(threads: usize, limit: u64, secs: u64) -> (u64, u64) {
    let mut law = shaped(threads, limit as f64, 1);
    let mut gcra = Gcra::new(limit, limit as f64);
    let sent = alone_on(&mut law, &mut gcra, secs, |a| Answer {
        limit: Some(limit),
        ..a
    });
    tally(&sent)
}

#[test]
fn alone_on_a_bucket_of_one_to_three_tokens_a_process_uses_it_without_refusals() {
    // Half an hour each: one thread, and one process of four, on 1, 2 and 3 per second.
    for limit in 1..=3 {
        for threads in [1, 4] {
            let secs = 1800;
            let (ok, refused) = alone_on_gcra(threads, limit, secs);
            let used = ok as f64 / (limit * secs) as f64;
            let share = refused as f64 / (ok + refused) as f64;
            assert!(
                used >= 0.95 && share <= 0.005,
                "{threads} thread(s) on {limit} per second: used {used:.3}, refused {:.2} %",
                100.0 * share
            );
        }
    }
}

#[test]
fn on_a_bucket_of_one_token_the_sends_are_not_jittered() {
    // Every send due a whole spacing after the last: told 1 per second, with a bucket of one
    // token stated, a thread's sends are `1/x` apart to the nanosecond; with a bucket of two
    // they are jittered.
    for (limit, jittered) in [(1, false), (2, true)] {
        let mut t = shaped(1, 1.0, 1);
        let stated = Answer {
            remaining: Some(0),
            limit: Some(limit),
            ..Answer::bare(Status::Ok)
        };
        // Six sends, a second or so apart.
        let sent: Vec<Nanos> = drive(&mut t, 10 * S, |_, _| Some((stated, 0)))
            .into_iter()
            .take(6)
            .map(|(now, _)| now)
            .collect();
        assert_eq!(sent.len(), 6);
        let spacing: Vec<Nanos> = sent[1..].windows(2).map(|p| p[1] - p[0]).collect();
        let even = spacing.iter().all(|&d| d.abs_diff(spacing[0]) <= 1);
        assert_eq!(!even, jittered, "bucket of {limit}: spacings {spacing:?}");
    }
}

/// One thread alone on a GCRA of `burst` tokens refilled at `rate` per second, answering in
/// GitHub's manner (a limit, the count and, on a success, the seconds until the bucket is full,
/// rounded up; no policy unless `policy` is given): over `secs` seconds, the requests let in
/// over the last minute, as a share of the refill, and the share refused.
fn alone_untold(
    params: Params,
    burst: u64,
    rate: f64,
    policy: Option<Policy>,
    secs: u64,
) -> (f64, f64) {
    let mut law = Law::new(1, params);
    let mut gcra = Gcra::new(burst, rate);
    let sent = alone_on(&mut law, &mut gcra, secs, |a| {
        let full_in = |left: u64| Duration::from_secs(((burst - left) as f64 / rate).ceil() as u64);
        Answer {
            limit: Some(burst),
            reset: (a.status == Status::Ok).then(|| full_in(a.remaining.unwrap_or(0))),
            policy,
            ..a
        }
    });
    let late = sent
        .iter()
        .filter(|&&(now, ok)| ok && now >= (secs - 60) * S)
        .count();
    let (ok, refused) = tally(&sent);
    (
        late as f64 / (60.0 * rate),
        refused as f64 / (ok + refused) as f64,
    )
}

#[test]
fn a_bucket_held_at_its_top_has_more_refill_than_the_law_was_told() {
    // 400 a minute from a bucket of 3, GitHub's headers: near the top the resets bound the
    // refill by next to nothing, and the law starts on the default quota, a fifth of the
    // refill. Every window finds the bucket at its top, so the process doubles its rate until
    // the bucket drains, and reads the refill from the window it drained.
    let rate = 400.0 / 60.0;
    let (used, refused) = alone_untold(Params::default(), 3, rate, None, 300);
    assert!(
        used >= 0.9 && refused <= 0.01,
        "used {used:.3}, refused {:.2} %",
        100.0 * refused
    );
    // A policy stated over a whole minute is the server's word: the top held says nothing more.
    let minute = Policy {
        limit: 75,
        window: Duration::from_secs(60),
    };
    let (used, _) = alone_untold(Params::default(), 3, rate, Some(minute), 300);
    assert!(
        used <= 0.25,
        "used {used:.3} of the refill, told a fifth of it"
    );
    // A policy stated over one second, the reset's resolution, may be a shorter window rounded
    // up: its rate is a floor, and the top held raises it.
    let second = Policy {
        limit: 3,
        window: Duration::from_secs(1),
    };
    let (used, refused) = alone_untold(Params::default(), 3, rate, Some(second), 300);
    assert!(
        used >= 0.9 && refused <= 0.01,
        "used {used:.3}, refused {:.2} %",
        100.0 * refused
    );
}
