//! Buckets of one to three tokens, run in a closed loop against a GCRA written here: the
//! jitter fits in what the bucket tolerates, and the refill a full bucket loses is read as
//! lost, not as taken.

use super::*;

/// A GCRA of `limit` tokens refilled at `rate` per second: when a request counted at `t`
/// (seconds) is let in, and the count left after it.
pub(super) struct Gcra {
    emission: f64,
    tolerance: f64,
    tat: f64,
}

impl Gcra {
    pub(super) fn new(limit: u64, rate: f64) -> Gcra {
        let emission = 1.0 / rate;
        Gcra {
            emission,
            tolerance: (limit - 1) as f64 * emission,
            tat: 0.0,
        }
    }

    /// `Ok(remaining)`, or `Err(seconds until a token)`.
    pub(super) fn take(&mut self, t: f64) -> Result<u64, f64> {
        let earliest = self.tat - self.tolerance;
        if t < earliest - 1e-12 {
            return Err(earliest - t);
        }
        self.tat = self.tat.max(t) + self.emission;
        let left = ((t + self.tolerance + self.emission - self.tat) / self.emission + 1e-9).floor();
        Ok(left.max(0.0) as u64)
    }
}

/// One process of `threads` alone on a GCRA of `limit` per second (its bucket `limit` tokens),
/// told the quota, answers 20 ms after each send and counted at 10 ms, for `secs` seconds:
/// the requests let in and refused.
fn alone_on_gcra(threads: usize, limit: u64, secs: u64) -> (u64, u64) {
    let mut law = shaped(threads, limit as f64, 1);
    let fields = Fields {
        bucket: limit,
        limit_stated: true,
        reset_rate: None,
        judged: None,
    };
    on_gcra(&mut law, Gcra::new(limit, limit as f64), secs, fields)
}

/// What `on_gcra`'s answers state beside the count, and which of their successes count.
#[derive(Clone, Copy)]
pub(super) struct Fields {
    /// The GCRA's bucket, in tokens.
    pub(super) bucket: u64,
    /// The answers state it as their limit (else they state none: Heroku's fields).
    pub(super) limit_stated: bool,
    /// The answers state the reset in whole seconds, rounded up, for a refill of this many
    /// tokens per second: `(B − r)/R` on a success, the wait on a refusal.
    pub(super) reset_rate: Option<f64>,
    /// Only the successes of the run's last this many seconds count (all, without it).
    pub(super) judged: Option<u64>,
}

/// `law` alone on `gcra` for `secs` seconds, answers 20 ms after each send and counted at
/// 10 ms, with the count, a refusal's `Retry-After`, and `fields`: the requests let in (over
/// `fields.judged`) and refused (over the whole run).
pub(super) fn on_gcra(law: &mut Law, mut gcra: Gcra, secs: u64, fields: Fields) -> (u64, u64) {
    let latency = S / 50;
    let from = fields.judged.map_or(0, |judged| (secs - judged) * S);
    let limit = fields.limit_stated.then_some(fields.bucket);
    let (mut ok, mut refused) = (0, 0);
    drive(law, secs * S, |now, _| {
        let counted = (now + latency / 2) as f64 / 1e9;
        let a = match gcra.take(counted) {
            Ok(left) => {
                if now >= from {
                    ok += 1;
                }
                Answer {
                    remaining: Some(left),
                    limit,
                    // Whole again `(B − r)/R` from now.
                    reset: fields.reset_rate.and_then(|rate| {
                        ns(((fields.bucket - left) as f64 / rate).ceil() as u64 * S)
                    }),
                    ..Answer::bare(Status::Ok)
                }
            }
            Err(wait) => {
                refused += 1;
                Answer {
                    remaining: Some(0),
                    limit,
                    reset: fields.reset_rate.and_then(|_| ns(wait.ceil() as u64 * S)),
                    retry_after: Some(Duration::from_secs_f64(wait)),
                    ..Answer::bare(Status::Limited)
                }
            }
        };
        Some((a, latency))
    });
    (ok, refused)
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

/// One process of `threads` alone on a GCRA of `limit` tokens refilled at `rate` per second,
/// told nothing: the answers state the limit, the count and the reset in whole seconds
/// (fastify's headers), never a policy. The requests let in over the last `judged` seconds of
/// `secs`, and those refused over the whole run.
fn alone_untold(threads: usize, limit: u64, rate: f64, secs: u64, judged: u64) -> (u64, u64) {
    let gcra = Gcra::new(limit, rate);
    let fields = Fields {
        bucket: limit,
        limit_stated: true,
        reset_rate: Some(rate),
        judged: Some(judged),
    };
    on_gcra(&mut build(threads), gcra, secs, fields)
}

#[test]
fn alone_on_a_bucket_faster_than_its_resets_tell_a_process_learns_the_refill_from_its_successes() {
    // A bucket kept full states a reset of one second whatever its refill, and a count of
    // `B − 1`: nothing but the process's own successes bounds the refill, and without them
    // it stays at the default quota's 1.25 a second (45 per second: 3 % of it used). Four
    // minutes, judged on the last.
    for (threads, limit, rate) in [(1, 5, 20.0), (4, 45, 45.0), (19, 45, 45.0)] {
        let (ok, refused) = alone_untold(threads, limit, rate, 240, 60);
        let used = ok as f64 / (rate * 60.0);
        // Refused: a share of what the refill allowed over the four minutes.
        let share = refused as f64 / (rate * 240.0);
        assert!(
            used >= 0.9 && share <= 0.005,
            "{threads} thread(s) on {limit} tokens at {rate} a second: used {used:.3} of the \
             last minute, {refused} refused"
        );
    }
}

#[test]
fn alone_on_a_bucket_kept_near_full_a_lower_bound_from_its_resets_does_not_hold_a_process_at_it() {
    // A bucket of 17 refilled at 263 per 15 minutes, its resets in whole seconds: a reading
    // one or two tokens below the top bounds the refill by a token over the reset, half the
    // refill or less, while a ceiling from the same resets stays far above. Until the ceiling
    // comes within `PINNED_RATIO` of the bound, the process probes as on an unproven refill,
    // and does not sit at the bound for half an hour (0.15 of 0.29 per second, the bucket
    // full all the while). Judged on the last ten of thirty minutes.
    let rate = 263.0 / 900.0;
    for threads in [1, 4] {
        let (ok, refused) = alone_untold(threads, 17, rate, 1800, 600);
        let used = ok as f64 / (rate * 600.0);
        let share = refused as f64 / (rate * 1800.0);
        assert!(
            used >= 0.9 && share <= 0.005,
            "{threads} thread(s): used {used:.3} of the last ten minutes, {refused} refused"
        );
    }
}

#[test]
fn alone_on_a_bucket_whose_resets_are_all_one_second_a_bound_from_them_does_not_hold_a_process() {
    // fastify's fields on a bucket of 6 refilled at 3.9 a second: every reset stated is one
    // second, which caps no refill. The second answer reads 4 left and bounds the refill by
    // `(6 − 4 − 1)/1`, one token a second; every answer after it finds the bucket full (5
    // left). Without a ceiling the bound pins nothing: the process probes on, doubling while
    // the bucket stays full, and sends well above the bound within ten minutes (held at it,
    // the bucket full, otherwise).
    let mut law = build(3);
    let mut k = 0;
    let sent = drive(&mut law, 600 * S, |_, _| {
        k += 1;
        let left = match k {
            1 => 2,
            2 => 4,
            _ => 5,
        };
        let a = Answer {
            remaining: Some(left),
            limit: Some(6),
            reset: Some(Duration::from_secs(1)),
            ..Answer::bare(Status::Ok)
        };
        Some((a, S / 50))
    });
    let last_minute = sent.iter().filter(|(t, _)| *t >= 540 * S).count();
    assert!(
        last_minute as f64 > 2.0 * 60.0,
        "{last_minute} sent in the last minute (the bound: a token a second)"
    );
}
