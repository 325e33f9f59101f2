//! The held top (`top.rs`): where no answer states a limit, a level the law cannot raise by
//! cutting its rate is the bucket's top.

use super::small::Gcra;
use super::*;

/// One process of `threads`, told 600 a minute (so it takes a bucket of 600), alone on a
/// GCRA of 10 tokens refilled at 10 a second, answered 20 ms after each send with the count
/// alone (Heroku's fields), `limit` stated or not, for `secs` seconds; a refusal first where
/// `refused_first`. The requests let in over the last half, and refused over the whole.
fn told_600_on_10_tokens(threads: usize, limit: Option<u64>, refused_first: bool) -> (u64, u64) {
    let mut law = shaped(threads, 600.0, 60);
    let mut rng = test_rng();
    if refused_first {
        let no = Answer {
            remaining: Some(0),
            limit,
            ..Answer::bare(Status::Limited)
        };
        law.respond_ns(0, 0, &no, &mut rng);
    }
    let mut gcra = Gcra::new(10, 10.0);
    let (secs, latency) = (600, S / 50);
    let (mut ok, mut refused) = (0, 0);
    drive(&mut law, secs * S, |now, _| {
        let counted = (now + latency / 2) as f64 / 1e9;
        let a = match gcra.take(counted) {
            Ok(left) => {
                ok += u64::from(now >= secs / 2 * S);
                Answer {
                    remaining: Some(left),
                    limit,
                    ..Answer::bare(Status::Ok)
                }
            }
            Err(_) => {
                refused += 1;
                Answer {
                    remaining: Some(0),
                    limit,
                    ..Answer::bare(Status::Limited)
                }
            }
        };
        Some((a, latency))
    });
    (ok, refused)
}

#[test]
fn a_level_held_at_its_top_while_the_rate_falls_is_a_small_bucket() {
    // Told 600 a minute without a limit, the law reads a level of 9 or 10 as a bucket of 600
    // drained far below its reserve and steps down every window; once its rate has fallen to a
    // quarter with the level still at its top, it takes the bucket for 10 tokens and uses the
    // refill, as it does when the limit is stated.
    for threads in [1, 4] {
        for limit in [None, Some(10)] {
            let (ok, refused) = told_600_on_10_tokens(threads, limit, false);
            let used = ok as f64 / (10.0 * 300.0);
            assert!(
                used >= 0.9 && refused <= 30,
                "{threads} thread(s), limit {limit:?}: used {used:.3} of the last 5 minutes' \
                 refill, {refused} refused"
            );
        }
    }
}

#[test]
fn a_process_once_refused_leaves_its_bucket_as_told() {
    // Refused before any count: its level is a crowd's, whose processes would change their
    // buckets at different times. It keeps the 600 it was told and stays far below the refill.
    let (ok, _) = told_600_on_10_tokens(1, None, true);
    let used = ok as f64 / (10.0 * 300.0);
    assert!(used < 0.5, "used {used:.3}");
}
