//! The held top (`top.rs`): where no answer states a limit, a level the law cannot raise by
//! cutting its rate is the bucket's top.

use super::small::{Fields, Gcra, on_gcra};
use super::*;

/// One process of `threads`, told 600 a minute (so it takes a bucket of 600), alone on a
/// GCRA of 10 tokens refilled at 10 a second for 10 minutes, its answers stating the count, the
/// limit where `limit_stated` (else none: Heroku's fields), and no reset; a refusal first where
/// `refused_first`. The requests let in over the last 5 minutes, and refused over the whole.
fn told_600_on_10_tokens(threads: usize, limit_stated: bool, refused_first: bool) -> (u64, u64) {
    let mut law = shaped(threads, 600.0, 60);
    if refused_first {
        let no = Answer {
            remaining: Some(0),
            limit: limit_stated.then_some(10),
            ..Answer::bare(Status::Limited)
        };
        law.respond_ns(0, 0, &no, &mut test_rng());
    }
    let fields = Fields {
        bucket: 10,
        limit_stated,
        reset_rate: None,
        judged: Some(300),
    };
    on_gcra(&mut law, Gcra::new(10, 10.0), 600, fields)
}

#[test]
fn a_level_held_at_its_top_while_the_rate_falls_is_a_small_bucket() {
    // Told 600 a minute without a limit, the law reads a level of 9 or 10 as a bucket of 600
    // drained far below its reserve and steps down every window; once its rate has fallen to a
    // quarter with the level still at its top, it takes the bucket for 10 tokens and uses the
    // refill, as it does when the limit is stated.
    for threads in [1, 4] {
        for limit_stated in [false, true] {
            let (ok, refused) = told_600_on_10_tokens(threads, limit_stated, false);
            let used = ok as f64 / (10.0 * 300.0);
            assert!(
                used >= 0.9 && refused <= 30,
                "{threads} thread(s), limit stated {limit_stated}: used {used:.3} of the last 5 minutes' \
                 refill, {refused} refused"
            );
        }
    }
}

#[test]
fn a_process_once_refused_leaves_its_bucket_as_told() {
    // Refused before any count: its level is a crowd's, whose processes would change their
    // buckets at different times. It keeps the 600 it was told and stays far below the refill.
    let (ok, _) = told_600_on_10_tokens(1, false, true);
    let used = ok as f64 / (10.0 * 300.0);
    assert!(used < 0.5, "used {used:.3}");
}
