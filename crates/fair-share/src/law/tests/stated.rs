//! What the level and the stated resets say of the server: the learned refill, the raised bucket, a turnover and the period.

use super::*;

#[test]
fn after_a_reset_the_allowance_is_spread_to_the_next_reset_until_the_level_refills() {
    let mut t = build(1);
    assert!(t.observe(0, 3599.0, 50.0).is_none());
    assert!(t.observe(0, 3601.0, 4500.0).is_none());
    // The reset fell between the two readings: halfway is the best guess.
    assert_eq!(t.reset_at(), Some(3600.0));
    // The allowance read (one more than the count, which the answered request already
    // took) less a share of the reserve (0.75 of 22.5 tokens) that shrinks to
    // nothing at the next reset, over the time left.
    assert!((t.target(4500.0, 3600.0) - (4501.0 - 0.75 * 22.5) / 3600.0).abs() < 1e-12);
    assert!((t.target(1022.5, 6300.0) - (1023.5 - 0.75 * 22.5 / 4.0) / 900.0).abs() < 1e-9);
    // The plan: an even spend's level, all of it at the reset, half halfway.
    assert!((t.planned(5400.0) - 4477.5 / 2.0).abs() < 1e-9);
    assert!(t.observe(0, 3611.0, 4464.0).is_none());
    let u = t.observe(0, 3621.0, 4428.0).expect("the window closes");
    // Inside the window nothing refills. The window of the law opened at 3599 s carries on
    // across the reset: the level fell by nothing before it, the new allowance had
    // lost nothing by 3601 s (4500 left of 4500), and 72 were taken since: 72 in 22 s.
    assert!((u.total - 72.0 / 22.0).abs() < 1e-9, "{}", u.total);
    // A small window resets by two tokens or more.
    let mut small = shaped(1, 10.0, 1);
    small.observe(0, 0.9, 1.0);
    small.observe(0, 1.05, 8.0);
    assert!(small.reset_at().is_some());
    // The level rising a little without a reset: the server refills after all.
    t.observe(0, 3640.0, 4440.0);
    assert_eq!(t.reset_at(), None);
}

#[test]
fn without_a_policy_the_refill_is_learned_from_the_stated_resets_of_a_bucket_or_sliding_window() {
    // GitHub's dialect: the limit, the count and when the bucket is whole again, no policy.
    let mut rng = test_rng();
    let github = |limit: u64, remaining: u64, reset: Nanos| Answer {
        limit: Some(limit),
        reset: ns(reset),
        ..answer(Status::Ok, remaining)
    };
    // A GCRA of 5 per second from 5 tokens. The first answer has no end to compare with.
    let mut t = build(1);
    let x0 = t.thread_rate();
    t.respond_ns(S, 0, &github(5, 0, S), &mut rng);
    assert_eq!(t.rate, R);
    // Empty again and whole in a second, the end 1.5 s on: at least (5 − 0 − 1)/1 per
    // second, and the rate moves with it.
    t.respond_ns(5 * S / 2, 0, &github(5, 0, S), &mut rng);
    assert_eq!((t.rate, t.period), (4.0, 1.25));
    assert!((t.thread_rate() - x0 * 4.0 / R).abs() < 1e-12);
    // A lower bound leaves it; a higher one raises it.
    t.respond_ns(4 * S, 0, &github(5, 3, S), &mut rng);
    assert_eq!(t.rate, 4.0);
    t.respond_ns(15 * S / 2, 0, &github(5, 0, 4 * S / 5), &mut rng);
    assert!((t.rate - 5.0).abs() < 1e-12, "{}", t.rate);
    // An end that did not move while the count fell (a fixed window before its turnover)
    // bounds nothing, but says no bucket: the refill is the limit over the longest reset
    // stated, the window's period from below.
    let mut window = build(1);
    for at in [5, 10, 15, 20] {
        window.respond_ns(at * S, 0, &github(100, 90 - at, (60 - at) * S), &mut rng);
    }
    assert_eq!((window.rate, window.period), (100.0 / 55.0, 55.0));
    // A sliding window of 1,000 per hour says a whole window whatever the count.
    // one reset at levels 300 tokens apart is no bucket's (whose reset would differ by
    // 300/R): the refill is B/reset at once, and lower levels leave it.
    let mut sliding = build(1);
    sliding.respond_ns(20 * S, 0, &github(1000, 600, 3600 * S), &mut rng);
    sliding.respond_ns(40 * S, 0, &github(1000, 300, 3600 * S), &mut rng);
    assert_eq!((sliding.rate, sliding.period), (1000.0 / 3600.0, 3600.0));
    sliding.respond_ns(60 * S, 0, &github(1000, 5, 3600 * S), &mut rng);
    assert_eq!(sliding.rate, 1000.0 / 3600.0);
    // The same reset at levels a bucket's refill explains is a bucket's: a GCRA of 100 per
    // minute at 50 and 49 tokens says 30 s and 31 s (0.6 s a token, rounded up), and only
    // the bound (B − r − 1)/reset is taken.
    let mut bucket = build(1);
    bucket.respond_ns(10 * S, 0, &github(100, 50, 30 * S), &mut rng);
    bucket.respond_ns(12 * S, 0, &github(100, 49, 31 * S), &mut rng);
    assert_eq!(bucket.rate, 50.0 / 31.0);
    // Without the bucket's refill in the rule, 3 tokens apart under one reset would do.
    let mut near = build(1);
    near.respond_ns(10 * S, 0, &github(100, 50, 30 * S), &mut rng);
    near.respond_ns(12 * S, 0, &github(100, 47, 30 * S), &mut rng);
    assert_eq!(near.rate, 52.0 / 30.0);
    // A stated or configured quota wins.
    let mut stated = build(1);
    let policy = Answer {
        policy: Some(Policy {
            limit: 5,
            window: Duration::from_secs(1),
        }),
        ..github(5, 0, S)
    };
    stated.respond_ns(S, 0, &policy, &mut rng);
    stated.respond_ns(5 * S / 2, 0, &github(5, 0, S / 2), &mut rng);
    assert_eq!(stated.rate, 5.0);
    let mut given = shaped(1, 50.0, 600);
    given.respond_ns(S, 0, &github(5, 0, S), &mut rng);
    given.respond_ns(5 * S / 2, 0, &github(5, 0, S / 2), &mut rng);
    assert_eq!(given.rate, 50.0 / 600.0);
}

#[test]
fn resets_no_bucket_states_make_the_refill_the_limit_over_the_longest_reset() {
    // GitHub's dialect on a fixed window of 100 per minute, read by a process that
    // sends rarely, so its answers fall in different windows and the stated end moves.
    let mut rng = test_rng();
    let mut t = build(1);
    // Half-way through a window, 60 left: a bucket whole in 30 s (rounded up) refills at
    // least 39/30 and less than 41/29 a second, and the bound is taken.
    t.respond_ns(30 * S, 0, &github100(60, 30), &mut rng);
    t.respond_ns(90 * S, 0, &github100(60, 30), &mut rng);
    assert!((t.rate - 39.0 / 30.0).abs() < 1e-12, "{}", t.rate);
    // 4 s before a later window's end, 12 left: a bucket would refill at least 87/4 a
    // second, above every ceiling read: no bucket says this. The refill is the limit over
    // the longest reset stated, not 22 a second.
    t.respond_ns(176 * S, 0, &github100(12, 4), &mut rng);
    assert_eq!((t.rate, t.period), (100.0 / 30.0, 30.0));
    assert!(t.learned.no_bucket);
    // A longer reset brings it down toward the window's 100 per minute.
    t.respond_ns(200 * S, 0, &github100(10, 40), &mut rng);
    assert_eq!((t.rate, t.period), (100.0 / 40.0, 40.0));
    // A fixed window whose turnover the level showed is no bucket either: before its
    // period is read, the refill is the limit over the longest reset, not the default
    // quota's 4,500 an hour (a process that sent too rarely to read the period stayed on
    // the hour's rate and at the floor, Jain's index 0.80 for five processes).
    let mut turned = build(1);
    turned.place_reset(59.0, 60.0);
    turned.respond_ns(70 * S, 0, &github100(90, 50), &mut rng);
    assert_eq!((turned.rate, turned.period), (2.0, 50.0));
    // A real bucket's answers never break the ceiling: a GCRA of 100 per minute (0.6 s a
    // token), whole again (100 − r)·0.6 s later, rounded up, read at any level and time.
    let mut bucket = build(1);
    for (at, r) in [(10, 50), (40, 90), (70, 5), (130, 60), (200, 1)] {
        let reset = ((100 - r) as f64 * 0.6).ceil() as u64;
        bucket.respond_ns(at * S, 0, &github100(r, reset), &mut rng);
    }
    assert!(!bucket.learned.no_bucket);
    assert!(
        bucket.rate <= 100.0 / 60.0 && bucket.rate > 1.5,
        "{}",
        bucket.rate
    );
}

#[test]
fn a_count_above_the_bucket_the_quota_implies_raises_the_bucket_unless_a_limit_is_stated() {
    // A token bucket of 1 per second bursting to 20, told as `quota = 1`, `period = 1s`
    // (Heroku's dialect: the count alone). 19 left after a request: the bucket is 20.
    let mut rng = test_rng();
    let mut told = shaped(1, 1.0, 1);
    let heroku = |remaining| Answer {
        limit: None,
        ..answer(Status::Ok, remaining)
    };
    told.respond_ns(S, 0, &heroku(19), &mut rng);
    assert_eq!((told.limit, told.rate), (20.0, 1.0));
    // A count below it leaves it; a stated limit wins over the count.
    told.respond_ns(2 * S, 0, &heroku(3), &mut rng);
    assert_eq!(told.limit, 20.0);
    told.respond_ns(3 * S, 0, &answer(Status::Ok, 30), &mut rng);
    assert_eq!(told.limit, 4500.0);
    let mut stated = shaped(1, 1.0, 1);
    let contradicting = Answer {
        limit: Some(10),
        ..answer(Status::Ok, 19)
    };
    stated.respond_ns(S, 0, &contradicting, &mut rng);
    assert_eq!(stated.limit, 10.0);
}

#[test]
fn a_jump_the_readings_latencies_allow_is_no_fixed_windows_turnover() {
    // A GCRA of 5 per second, bucket 10, its quota given. Reading A: sent at 10 s with 0
    // left, its answer a second late, so the law dates it 10.5 s, though the server may
    // have counted it at 10 s. Reading B: 5 left at 10.91 s, 20 ms of latency.
    const MS: Nanos = 1_000_000;
    let read = |t: &mut Law, thread: usize, sent: Nanos, latency: Nanos, r: u64| {
        t.threads[thread].last_send = Some(sent);
        let a = Answer {
            limit: Some(10),
            latency: Duration::from_nanos(latency),
            ..answer(Status::Ok, r)
        };
        let mut rng = test_rng();
        t.respond_ns(sent + latency, thread, &a, &mut rng);
    };
    let mut slow = shaped(2, 5.0, 1);
    read(&mut slow, 0, 10 * S, S, 0);
    read(&mut slow, 1, 10_900 * MS, 20 * MS, 5);
    // 0.41 s apart, but as much as 0.92 s of refill between the counts: no turnover.
    assert!(!targets_a_reset(&slow, 5.0, 1.0));
    // The same levels read 0.41 s apart with 20 ms of latency each: 5 tokens where 2.15
    // can have come back, more than the 2 tokens of slack, is a window's reset.
    let mut fast = shaped(2, 5.0, 1);
    read(&mut fast, 0, 10_490 * MS, 20 * MS, 0);
    read(&mut fast, 1, 10_900 * MS, 20 * MS, 5);
    assert!(targets_a_reset(&fast, 5.0, 1.0));
}

#[test]
fn without_a_policy_a_fixed_windows_period_is_read_from_its_stated_reset() {
    // GitHub's dialect on 100 per minute: the limit and the window's end, no policy. The
    // law starts on the default quota (1.25 per second) with the stated bucket of 100.
    let mut rng = test_rng();
    // Answers every 5 s; each window's end is stated alike until it turns over.
    let windows = |t: &mut Law, rng: &mut SplitMix, from: u64, upto: u64| {
        for at in (from..=upto).step_by(5) {
            let end = (at / 60 + 1) * 60;
            // 99 left at a window's start, 4 fewer every 5 s.
            let left = 99 - (at % 60) / 5 * 4;
            t.respond_ns(at * S, 0, &github100(left, end - at), rng);
        }
    };
    let mut t = build(1);
    windows(&mut t, &mut rng, 5, 55);
    // The first window's end stays put while its count falls: no bucket, and its period is
    // at least the longest reset stated.
    assert_eq!(t.period, 55.0);
    // The second window's end, said alike for more than 2 s: a period of 60 s.
    windows(&mut t, &mut rng, 60, 70);
    assert_eq!(t.period, 60.0);
    assert!((t.rate - 100.0 / 60.0).abs() < 1e-12);
    // A bucket's reset (whole again) moves with the clock: no period is read from it.
    // (It tells the refill instead: at least (100 − 98 − 1)/2 s, see `learn_refill`.)
    let mut bucket = build(1);
    for at in (2..200).step_by(2) {
        bucket.respond_ns(at * S, 0, &github100(98, 2), &mut rng);
    }
    assert_eq!((bucket.rate, bucket.period), (0.5, 200.0));
    assert!(bucket.reset_at().is_none());
    // Nor from a bucket left alone, whose end stays put while it fills (a token every 5 s),
    // then spent on and left alone again: two steady ends, but the count fell between
    // them, never jumped.
    let mut idle = build(1);
    for at in (5..=50).step_by(5) {
        idle.respond_ns(at * S, 0, &github100(50 + at / 5, 250 - at), &mut rng);
    }
    for at in (55..=120).step_by(5) {
        idle.respond_ns(at * S, 0, &github100(20 + at / 5, 400 - at), &mut rng);
    }
    assert!(idle.reset_at().is_none());
    assert!((idle.rate - 68.0 / 345.0).abs() < 1e-12, "{}", idle.rate);
    // A stated or configured quota wins.
    let mut stated = build(1);
    let policy = Answer {
        policy: Some(Policy {
            limit: 100,
            window: Duration::from_secs(3600),
        }),
        ..github100(40, 10)
    };
    stated.respond_ns(S, 0, &policy, &mut rng);
    windows(&mut stated, &mut rng, 5, 130);
    assert_eq!(stated.period, 3600.0);
    let mut given = shaped(1, 50.0, 600);
    windows(&mut given, &mut rng, 5, 130);
    assert_eq!(given.period, 600.0);
}

#[test]
fn a_period_read_a_resolution_long_changes_nothing_but_a_shorter_one_is_taken() {
    // GitHub's fields on 100 per minute from a window opened by its key's first request: each
    // window starts 0.4 s after the last one closed, and its end is stated rounded up to the
    // second, so ends read 61 s and 60 s apart by turns.
    let mut rng = test_rng();
    let ends: Vec<u64> = (1..=8).map(|k| (60.4 * k as f64).ceil() as u64).collect();
    assert_eq!(ends[..4], [61, 121, 182, 242]);
    let mut t = build(1);
    let mut periods = Vec::new();
    let mut from = 1;
    for &end in &ends {
        // Answers every 5 s up to 3 s before the end, 99 left after the turnover, 4 fewer
        // every 5 s.
        for (i, at) in (from..end - 2).step_by(5).enumerate() {
            t.respond_ns(at * S, 0, &github100(99 - 4 * i as u64, end - at), &mut rng);
        }
        periods.push(t.period);
        from = end + 1;
    }
    // The longest reset of the first window (60 s: no bucket's end stays put while its count
    // falls) until two steady ends were read; then 60 s (121 − 61), and never the 61 s read
    // at the third end (182 − 121) and every other one after it.
    assert_eq!(periods[0], 60.0, "{periods:?}");
    assert!(periods[1..].iter().all(|&p| p == 60.0), "{periods:?}");
    assert!((t.rate - 100.0 / 60.0).abs() < 1e-12);
}

#[test]
fn a_period_read_from_resets_in_seconds_to_go_takes_each_windows_earliest_stated_end() {
    // @fastify/rate-limit's fields on 50 per 5 s: the limit, the count, and the seconds to the
    // reset rounded up at the instant of each answer, no policy. Each window opens 0.05 s after
    // the last one closed. The process reads every window from some phase into it: 0.9 s into
    // the odd ones (its first reading names an end 0.9 s late: 4.1 s to go, stated 5) and
    // 0.02 s into the even ones. Two first readings alone are 4.17 s apart, a period of 4
    // (a quarter over the quota); the earliest end each window stated reads 5.
    let mut rng = test_rng();
    let mut t = build(1);
    let mut periods = Vec::new();
    let mut start: f64 = 0.5;
    for k in 0..8 {
        let end = start + 5.0;
        let phase = if k % 2 == 0 { 0.9 } else { 0.02 };
        let mut at = start + phase;
        let mut left = 49;
        while at < end - 0.05 {
            let answer = Answer {
                limit: Some(50),
                reset: ns(((end - at).ceil() as u64) * S),
                ..answer(Status::Ok, left)
            };
            t.respond_ns(from_secs(at), 0, &answer, &mut rng);
            left -= 2;
            at += 0.25;
        }
        periods.push(t.period);
        start = end + 0.05;
    }
    // (The first window's longest stated reset, 5 s, before any end was read.)
    assert_eq!(periods[0], 5.0, "{periods:?}");
    assert!(periods[2..].iter().all(|&p| p == 5.0), "{periods:?}");
    assert!((t.rate - 10.0).abs() < 1e-12, "{}", t.rate);
}

#[test]
fn a_refusal_whose_reset_is_its_retry_after_reads_a_fixed_windows_end() {
    // 50 per 5 s. A success at 0.4 s states 5 s to the reset (an end at 5.4 s); 1.2 s later a
    // refusal states 4 s to the reset and says to retry then: the same end, the count down to
    // 0. The whole allowance comes back at one instant: a fixed window, read a resolution after
    // the success (two successes must lie two resolutions apart).
    let read = |at: Nanos, second: Answer| {
        let mut t = Law::new(4, quota_params(50.0, 5));
        let mut rng = test_rng();
        let first = Answer {
            limit: Some(50),
            reset: ns(5 * S),
            ..answer(Status::Ok, 49)
        };
        t.respond_ns(2 * S / 5, 0, &first, &mut rng);
        t.threads[1].last_send = Some(at);
        t.respond_ns(at, 1, &second, &mut rng);
        targets_a_reset(&t, 20.0, 5.0)
    };
    let refusal = Answer {
        limit: Some(50),
        reset: ns(4 * S),
        retry_after: ns(4 * S),
        ..answer(Status::Limited, 0)
    };
    assert!(read(8 * S / 5, refusal));
    // A success as far apart, stating the same end, does not tell yet...
    let success = Answer {
        limit: Some(50),
        reset: ns(4 * S),
        ..answer(Status::Ok, 30)
    };
    assert!(!read(8 * S / 5, success));
    // ... nor a refusal told to retry sooner than its reset (a bucket's token comes back
    // first), nor one whose reset is within two resolutions (at 3.5 s, 2 s to the same end).
    let sooner = Answer {
        retry_after: ns(S),
        ..refusal
    };
    assert!(!read(8 * S / 5, sooner));
    let near = Answer {
        reset: ns(2 * S),
        retry_after: ns(2 * S),
        ..refusal
    };
    assert!(!read(7 * S / 2, near));
}

#[test]
fn a_bucket_filling_while_it_states_one_end_teaches_its_refill() {
    // GCRA of 3,101 per 49 s, empty at the start, read through @fastify/rate-limit's fields:
    // the limit, the count and the seconds until it is whole, no policy. A process of 84
    // threads sends 1.3 a second, the bucket fills at 63: every answer states the same end
    // (when it will be whole) while the count rises. A fixed window's end stays put too, but
    // its count never rises between resets, so `(B − r − 1)/reset` bounds the refill here. On
    // the default quota (1.25 a second) the process never found out: its window of the law
    // read a level rising 50 times faster than its refill, and never closed.
    let rate = 3101.0 / 49.0;
    let mut rng = test_rng();
    let mut t = build(84);
    let mut at: f64 = 0.1;
    let mut level: f64 = 0.0;
    while at < 10.0 {
        level += rate * 0.75 - 1.0;
        let left = level.floor() as u64;
        let answer = Answer {
            limit: Some(3101),
            reset: ns((((3101.0 - level) / rate).ceil() as u64) * S),
            ..answer(Status::Ok, left)
        };
        t.respond_ns(from_secs(at), 0, &answer, &mut rng);
        at += 0.75;
    }
    assert!(t.rate > 0.9 * rate && t.rate <= rate, "{}", t.rate);
}

#[test]
fn an_end_that_stays_put_while_the_count_falls_says_no_bucket_before_a_period_is_known() {
    // Flask-Limiter's fixed window of 30 a minute, opened by the first request, GitHub's
    // fields (an epoch-second reset, no policy), the default quota 1.25 a second. The first
    // window's answers name one end while the count falls: no bucket's end stays put as it is
    // used, so the refill is the limit over the longest reset stated (a minute), before any
    // period is read. Taken as a bucket, the next window's first answer (28 left, a minute to
    // go) set the refill to its lower bound, a token a minute, and the process to a request
    // every quarter of an hour.
    let mut rng = test_rng();
    let mut t = build(4);
    for k in 0..8u64 {
        let at = 0.1 + 0.8 * k as f64;
        let reset = (61.0 - at).ceil() as u64;
        t.respond_ns(
            from_secs(at),
            0,
            &stated(Status::Ok, 29 - 2 * k, reset),
            &mut rng,
        );
    }
    assert!((t.rate - 30.0 / 61.0).abs() < 0.02, "{}", t.rate);
    for (at, left) in [(62.5f64, 28), (63.3, 27), (64.1, 25)] {
        let reset = (122.0 - at).ceil() as u64;
        t.respond_ns(from_secs(at), 0, &stated(Status::Ok, left, reset), &mut rng);
    }
    assert!(t.rate > 0.45 && t.rate < 0.55, "{}", t.rate);
}

#[test]
fn a_fixed_window_whose_stated_end_drifts_within_a_window_is_none() {
    // 50 per 5 s, the quota told. A sliding-window counter states when its count next drops:
    // through its first window (nothing weighs yet) that is the window's end, and two answers
    // read it as a fixed window's. From then on the end moves a second every second, with no
    // turnover of the level: no fixed window's end does that.
    let mut rng = test_rng();
    let mut t = shaped(4, 50.0, 5);
    let mut left = 49;
    for k in 0..4u64 {
        let at = 0.2 + 0.9 * k as f64;
        let reset = (5.0 - at).ceil() as u64;
        let answer = Answer {
            limit: Some(50),
            reset: ns(reset * S),
            ..answer(Status::Ok, left)
        };
        t.respond_ns(from_secs(at), 0, &answer, &mut rng);
        left -= 3;
    }
    assert!(t.mode.is_fixed(), "{:?}", t.mode);
    for k in 0..4u64 {
        let at = 5.3 + 0.9 * k as f64;
        let answer = Answer {
            limit: Some(50),
            reset: ns(S),
            ..answer(Status::Ok, 2)
        };
        t.respond_ns(from_secs(at), 0, &answer, &mut rng);
    }
    assert!(!t.mode.is_fixed(), "{:?}", t.mode);
    // Its end stays put now and then (here for 2.2 s while the count falls): after one drift,
    // stated ends place no fixed window again.
    for (at, left) in [(10.1f64, 6), (12.3, 3)] {
        let answer = Answer {
            limit: Some(50),
            reset: ns(((15.0 - at).ceil() as u64) * S),
            ..answer(Status::Ok, left)
        };
        t.respond_ns(from_secs(at), 0, &answer, &mut rng);
    }
    assert!(!t.mode.is_fixed(), "{:?}", t.mode);
}
