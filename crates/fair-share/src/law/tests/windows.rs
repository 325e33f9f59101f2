//! Fixed and sliding windows: spending an allowance, carrying a window across resets, and telling the shapes apart.

use super::*;

#[test]
fn a_short_fixed_window_is_spent_to_its_last_token_by_the_reset() {
    // 10 per second in fixed 1-second windows, reset seen between 0.95 s and 1.05 s.
    let t = turned_over_at_one_second(1);
    // A tenth of a second before the next reset with the count at 0: the request just
    // answered was the ninth, one is left, and no reserve is worth keeping past the reset
    // (0.1 of the reserve's 0.75 token at 0.1 of the period left). The reset is known to a
    // resolution (1 s) only, so what is left is spread over half the period, with the next
    // allowance's share of it: (1 − 0.075 + 10·0.4)/0.5 = 9.85 per second, where holding a
    // whole token gave the floor, 0.5 per second.
    assert!(
        (t.target(0.0, 1.9) - 9.85).abs() < 1e-9,
        "{}",
        t.target(0.0, 1.9)
    );
}

#[test]
fn a_short_fixed_window_still_closes_windows_of_the_law() {
    // Ten tokens per window can never show `min_flow` (30) between two resets; a window of
    // the law closes after a share of the allowance instead (here 3 tokens).
    let mut t = turned_over_at_one_second(1);
    assert!(t.observe(0, 1.15, 8.0).is_none());
    // The window opened at 0.95 s carries on across the reset: three answers in
    // 0.3 s, 3 tokens taken (1 before the first reading after the reset, 2 since), 6 by the
    // nominal refill's count (3 refilled).
    let u = t
        .observe(0, 1.25, 7.0)
        .expect("the window closes inside the server's window");
    assert!((u.total - 10.0).abs() < 1e-9, "{}", u.total);
}

#[test]
fn a_window_of_the_law_carries_across_a_fixed_windows_turnovers() {
    // 10 per second in fixed windows, read about once a window: a window of the law that
    // restarted at every turnover would never see the three answers it needs.
    let mut t = turned_over_at_one_second(1);
    assert!(t.observe(0, 1.95, 2.0).is_none());
    assert!(t.observe(0, 2.05, 8.0).is_none());
    let u = t
        .observe(0, 2.95, 1.0)
        .expect("the window closes across two resets");
    // Taken: 1 of the first allowance by 1.05 s and 7 more by 1.95 s, 2 of the second by
    // 2.05 s and 7 more by 2.95 s: 17 in the 2 s since the window opened.
    assert!((u.total - 8.5).abs() < 1e-9, "{}", u.total);
    // The level since the last turnover sets the target: 8 and 1 left, 0.55 s on average
    // before the next reset.
    assert!((u.target - t.target(4.5, 2.5)).abs() < 1e-9);
}

#[test]
fn on_a_fixed_window_a_window_of_the_law_longer_than_what_is_left_spends_what_follows() {
    // 10 per second in fixed windows, five threads started at 0.2 per second: a window of
    // the law lasts 1/(0.2·√5) ≈ 2.24 s, past the reset and the next two.
    let at =
        |x: f64| turned_over_at_one_second_from(Law::new(5, starting_at(x, quota_params(10.0, 1))));
    let t = at(0.2);
    let (w, r0) = (t.window_secs(), t.reserve());
    assert!((w - 1.0 / (0.2 * 5f64.sqrt())).abs() < 1e-9, "{w}");
    // At 1.75 s, 4 left: the allowance now, less the share of the reserve left at a
    // quarter of the window, and the whole allowances of the windows to come up to the
    // horizon (a reserve kept in them is lost at their resets), over it.
    let kept = 0.75 * r0 * 0.25;
    let expected = (4.0 + 1.0 - kept + 10.0 * (w - 0.25)) / w;
    assert!((t.target(4.0, 1.75) - expected).abs() < 1e-9);
    // With a horizon of many windows (started at 0.001) the target nears the whole
    // allowance per window; a window of the law that ends before the reset (at the start
    // rate, 10/5 = 2 per thread, 0.22 s) spreads what is left over the shortest horizon, half
    // the period here (the reset is known to its resolution, a second, only), with the next
    // allowance's share.
    let slow = at(0.001);
    assert!(
        (slow.target(4.0, 1.75) - 10.0).abs() < 0.01,
        "{}",
        slow.target(4.0, 1.75)
    );
    let fast = turned_over_at_one_second(5);
    assert!(fast.window_secs() < 0.25, "{}", fast.window_secs());
    let expected = (5.0 - kept + 10.0 * 0.25) / 0.5;
    assert!((fast.target(4.0, 1.75) - expected).abs() < 1e-9);
}

#[test]
fn on_a_fixed_window_the_process_counts_its_own_refusals_in_the_total() {
    // Two processes read the same levels of a spent fixed window; one of them is also
    // refused once, a request the level (0 however many come) cannot show.
    const MS: Nanos = 1_000_000;
    let mut rng = test_rng();
    let mut read = turned_over_at_one_second(1);
    let mut refused = turned_over_at_one_second(1);
    refused.threads[0].last_send = Some(1_500 * MS);
    let spent = Answer {
        retry_after: ns(500 * MS),
        limit: Some(10),
        ..answer(Status::Limited, 0)
    };
    refused.respond_ns(1_500 * MS, 0, &spent, &mut rng);
    read.observe(1_500 * MS, 1.5, 0.0);
    let a = read.observe(0, 1.7, 0.0).expect("the window closes");
    let b = refused.observe(0, 1.7, 0.0).expect("the window closes");
    // The spent window's refusal cut no rate, and counts one request in 0.75 s.
    assert!(
        (b.total - a.total - 1.0 / 0.75).abs() < 1e-9,
        "{} {}",
        a.total,
        b.total
    );
    // A bucket's level shows what it was asked for: a refusal adds nothing there (the
    // refill, 10 per second, and 3 fewer in 0.5 s).
    let mut bucket = shaped(1, 10.0, 1);
    let w = LawWindow {
        refused: 1.0,
        ..LawWindow::new(Sample { t: 0.5, r: 5.0 })
    };
    let u = bucket.apply_window(0, w, Sample { t: 1.0, r: 2.0 });
    assert!((u.total - 16.0).abs() < 1e-9, "{}", u.total);
}

#[test]
fn a_spent_fixed_window_holds_a_process_of_many_slow_threads_without_a_cut() {
    // 100 per minute in fixed windows, one process of 200 threads: each thread sends once
    // in two windows, but the process 100 times per window, in line.
    let mut t = shaped(200, 100.0, 60);
    let mut rng = test_rng();
    t.observe(0, 59.0, 0.0);
    t.observe(0, 61.0, 99.0);
    let x = t.thread_rate();
    t.threads[7].last_send = Some(110 * S);
    let spent = Answer {
        retry_after: ns(10 * S),
        limit: Some(100),
        ..answer(Status::Limited, 0)
    };
    t.respond_ns(110 * S, 7, &spent, &mut rng);
    assert_eq!(t.thread_rate(), x);
    assert!(t.threads[7].hold >= 120 * S);
}

#[test]
fn alone_on_a_one_second_window_the_level_and_own_successes_tell_a_sliding_window() {
    // 20 per second, every answer stating a reset of one second: a sliding window, a bucket
    // and a fixed window alike. One thread sends every 103 ms for 8 s, alone. A sliding
    // window reads 20 less the 10 it let in over the last second; a bucket refills between
    // sends (19 left each time); a fixed window counts down from 20 each second.
    let sends_since = |k: u64, from_ms: u64| (1..=k).filter(|j| 103 * j > from_ms).count();
    let sliding_level = |k: u64| 20 - sends_since(k, (103 * k).saturating_sub(1000)) as u64;
    let fixed_level = |k: u64| 20 - sends_since(k, (103 * k / 1000 * 1000).max(1) - 1) as u64;
    let readings = |ks: std::ops::Range<u64>, level: &dyn Fn(u64) -> u64, law: &mut Law| {
        let mut rng = test_rng();
        for k in ks {
            let a = Answer {
                limit: Some(20),
                reset: ns(S),
                ..answer(Status::Ok, level(k))
            };
            law.respond_ns(k * 103 * S / 1000, 0, &a, &mut rng);
        }
    };
    // After 80 readings, a law is asked by a refusal at 9 s whether it reads a sliding window.
    let read_as_sliding = |level: &dyn Fn(u64) -> u64| {
        let mut law = shaped(1, 20.0, 1);
        readings(1..81, level, &mut law);
        refusal_says_sliding(&mut law, 9 * S, 1.0)
    };
    // A burst's echo read as a fixed window's turnover: a refusal at 50 ms reads the level
    // at 0, the first success 53 ms later at 19, and the law's target counts down to a reset.
    let turned_over = |upto: u64| {
        let mut law = shaped(1, 20.0, 1);
        let empty = Answer {
            limit: Some(20),
            ..answer(Status::Limited, 0)
        };
        law.respond_ns(50 * S / 1000, 0, &empty, &mut test_rng());
        readings(1..upto + 1, &sliding_level, &mut law);
        law
    };
    assert!(targets_a_reset(&turned_over(1), 10.0, 1.0));
    // The level's echo of the own successes forgets it, and makes a sliding window.
    let mut sliding = turned_over(80);
    assert!(!targets_a_reset(&sliding, 10.0, 1.0));
    assert!(refusal_says_sliding(&mut sliding, 9 * S, 1.0));
    assert!(!read_as_sliding(&|_| 19));
    assert!(!read_as_sliding(&fixed_level));
    // A bucket that a process alone keeps empty reads `r + own = B` too: no verdict.
    assert!(!read_as_sliding(&|_| 0));
    // Half the readings above `B` switch back.
    let mut back = turned_over(80);
    readings(81..161, &|_| 19, &mut back);
    assert!(!refusal_says_sliding(&mut back, 17 * S, 1.0));
}

#[test]
fn alone_on_a_sliding_log_stating_its_oldest_admission_the_level_tells_a_sliding_window() {
    // 200 per 20 s, told; a sliding log that states when its oldest admission leaves: a second,
    // short of a period, so its resets say no sliding window. One thread sends every 300 ms
    // for 102 s, alone: the log reads 200 less what it let in over the last 20 s, and the
    // level's echo of the own successes makes a sliding window that the short resets after it
    // do not undo. A bucket refilled between the sends (199 left each time) makes none.
    let log_level = |k: u64| 200 - (1..=k).filter(|j| 300 * j + 20_000 > 300 * k).count() as u64;
    let read_as_sliding = |level: &dyn Fn(u64) -> u64| {
        let mut law = shaped(1, 200.0, 20);
        let mut rng = test_rng();
        for k in 1..=340 {
            let a = Answer {
                limit: Some(200),
                reset: ns(S),
                ..answer(Status::Ok, level(k))
            };
            law.respond_ns(k * 300 * S / 1000, 0, &a, &mut rng);
        }
        refusal_says_sliding(&mut law, 103 * S, 20.0)
    };
    assert!(read_as_sliding(&log_level));
    assert!(!read_as_sliding(&|_| 199));
}

#[test]
fn a_reset_of_a_whole_period_at_any_level_is_a_sliding_window() {
    // 30 per minute. A bucket at 5 of 30 is whole in 50 s; a sliding window says 60 s (its
    // newest request leaves a minute later) whatever the level.
    let answers = [
        (10, stated(Status::Ok, 5, 50)),
        (11, stated(Status::Ok, 5, 50)),
        (12, stated(Status::Ok, 5, 50)),
        (10, stated(Status::Ok, 5, 60)),
        (11, stated(Status::Ok, 5, 60)),
        (13, stated(Status::Ok, 5, 60)),
        (14, stated(Status::Limited, 0, 20)),
        (15, stated(Status::Ok, 5, 40)),
    ];
    // The law after the first `heard` answers, asked by a refusal at 20 s whether it reads a
    // sliding window.
    let sliding_after = |heard: usize| {
        let mut rng = test_rng();
        let mut t = shaped(1, 30.0, 60);
        for (now, a) in &answers[..heard] {
            t.respond_ns(now * S, 0, a, &mut rng);
        }
        refusal_says_sliding(&mut t, 20 * S, 60.0)
    };
    assert!(!sliding_after(3));
    // Two readings, and a second apart: a fixed window that has just turned over says a
    // whole period too.
    assert!(!sliding_after(5));
    assert!(sliding_after(6));
    // A refusal's reset counts from the last request let in: it does not undo it.
    assert!(sliding_after(7));
    // A reset well short of a period (a window counting down) does.
    assert!(!sliding_after(8));
    // Without a quota, stated or given, the bucket's reset is unknown: no verdict.
    let mut rng = test_rng();
    let mut blind = build(1);
    for now in [10, 12, 14, 16] {
        blind.respond_ns(now * S, 0, &stated(Status::Ok, 5, 3600), &mut rng);
    }
    assert!(!refusal_says_sliding(&mut blind, 20 * S, 3600.0));
}

#[test]
fn every_turnover_seen_narrows_down_where_the_resets_fall() {
    // A window of a minute. Each turnover is seen between two readings; the resets are a
    // period apart, so the spans meet (shifted by whole periods) and shrink.
    let mut t = shaped(1, 100.0, 60);
    t.place_reset(59.0, 60.8);
    assert_eq!(t.reset_at(), Some(59.9));
    // Cut to 119.5..120.8, the reset its middle (not 120.25, this span's alone).
    t.place_reset(119.5, 121.0);
    assert!((t.reset_at().unwrap() - 120.15).abs() < 1e-9);
    t.place_reset(179.9, 180.3);
    assert!((t.reset_at().unwrap() - 180.1).abs() < 1e-9);
    assert!((t.to_reset(200.0).unwrap() - 40.1).abs() < 1e-9);
    // A span that meets none of them: the period was not what the law believed.
    t.place_reset(200.0, 201.0);
    assert_eq!(t.reset_at(), Some(200.5));
}

/// A success of a server of 100 per minute with `remaining` left, stating its reset `reset_s`
/// seconds on.
fn said(remaining: u64, reset_s: f64) -> Answer {
    Answer {
        limit: Some(100),
        reset: Some(Duration::from_secs_f64(reset_s)),
        ..answer(Status::Ok, remaining)
    }
}

/// `threads` on 100 per minute, every thread in line, read as a fixed window from the end
/// three successes state alike: its reset placed at 59.5 s (see below).
fn read_as_fixed(threads: usize, rng: &mut SplitMix) -> Law {
    let mut t = shaped(threads, 100.0, 60);
    for i in 0..threads {
        t.delay_ns(0, i, rng);
    }
    t.respond_ns(10 * S, 0, &said(80, 50.0), rng);
    t.respond_ns(11 * S, 0, &said(78, 49.0), rng);
    t.respond_ns(13 * S, 0, &said(75, 47.0), rng);
    assert_eq!(t.reset_at(), Some(59.5));
    t
}

#[test]
fn a_stated_end_that_stays_put_while_the_count_falls_is_a_fixed_window() {
    // 100 per minute. A fixed window ending at 60 s states the same end on every answer;
    // a bucket's end moves on as it is used, and stays put only while nobody uses it.
    let mut rng = test_rng();
    let mut window = shaped(1, 100.0, 60);
    window.respond_ns(10 * S, 0, &said(80, 50.0), &mut rng);
    window.respond_ns(11 * S, 0, &said(78, 49.0), &mut rng);
    // The same end twice, but within two of the header's seconds: not yet.
    assert_eq!(window.reset_at(), None);
    window.respond_ns(13 * S, 0, &said(75, 47.0), &mut rng);
    // Each stated end is rounded up to a whole second: the end is in the second below it.
    assert_eq!(window.reset_at(), Some(59.5));
    assert_eq!(window.to_reset(13.0), Some(46.5));
    assert_eq!(window.refill(), 0.0);

    // A bucket of 100 refilling 5/3 per second: at 80 it is whole in 12 s, at 70 in 18 s.
    let mut used = shaped(1, 100.0, 60);
    used.respond_ns(10 * S, 0, &said(80, 12.0), &mut rng);
    used.respond_ns(13 * S, 0, &said(70, 18.0), &mut rng);
    assert_eq!(used.reset_at(), None);
    // Left alone, it fills toward one instant: the same end, but the count rose.
    let mut alone = shaped(1, 100.0, 60);
    alone.respond_ns(10 * S, 0, &said(80, 12.0), &mut rng);
    alone.respond_ns(16 * S, 0, &said(90, 6.0), &mut rng);
    assert_eq!(alone.reset_at(), None);
    // A sliding-window counter states when its allowance is whole again: while the previous
    // window still weighs, the end of the window after this one, which stays put too, but
    // was first stated more than a period away, where no fixed window's end can be.
    let mut counter = shaped(1, 100.0, 60);
    counter.respond_ns(10 * S, 0, &said(80, 110.0), &mut rng);
    counter.respond_ns(13 * S, 0, &said(75, 107.0), &mut rng);
    counter.respond_ns(60 * S, 0, &said(20, 60.0), &mut rng);
    assert_eq!(counter.reset_at(), None);
    // Without a quota, stated or given, the period is unknown: no verdict.
    let mut blind = build(1);
    blind.respond_ns(10 * S, 0, &said(80, 50.0), &mut rng);
    blind.respond_ns(13 * S, 0, &said(75, 47.0), &mut rng);
    assert_eq!(blind.reset_at(), None);
}

#[test]
fn a_stated_end_later_than_the_reset_predicted_moves_the_resets_on() {
    // 100 per minute, its fixed window read from the end it states, placed at 59.5 s (as
    // above). The key's window is opened by its first request after the last one closed, so
    // it turns over later each period than that.
    let mut rng = test_rng();
    let mut t = read_as_fixed(1, &mut rng);
    // The next window opens with the first request after that, at 61 s, and states its end
    // 60 s on, rounded up: the turnover read agrees with the resets placed, but the end is no
    // sooner than 120 s. The resets move on to that.
    t.respond_ns(61 * S, 0, &said(99, 60.0), &mut rng);
    assert_eq!(t.reset_at(), Some(60.0));
    assert_eq!(t.to_reset(61.0), Some(59.0));
    // An end stated within its rounding of the prediction moves nothing: the end is known no
    // better than that.
    t.respond_ns(70 * S, 0, &said(90, 51.0), &mut rng);
    t.respond_ns(90 * S, 0, &said(80, 30.0), &mut rng);
    assert_eq!(t.reset_at(), Some(60.0));
    // Each answer of a window opened later than that says so, to a resolution.
    t.respond_ns(100 * S, 0, &said(75, 21.5), &mut rng);
    assert!((t.to_reset(100.0).unwrap() - 20.5).abs() < 1e-9);
}

#[test]
fn a_success_that_reads_a_fixed_window_spent_holds_the_process_to_its_stated_end() {
    // 100 per minute, read as a fixed window (as above), two threads. A success at 40 s
    // reads a count of 0 and an end 20 s on, rounded up: the key is empty for 19 s at least,
    // and the other thread waits that out instead of taking a 429 of its own.
    let mut rng = test_rng();
    let read = |remaining: u64| {
        let mut rng = test_rng();
        let mut t = read_as_fixed(2, &mut rng);
        t.respond_ns(40 * S, 0, &said(remaining, 20.0), &mut rng);
        t
    };
    let mut spent = read(0);
    assert!(spent.delay_ns(40 * S, 1, &mut rng) >= 19 * S);
    // One left is an allowance still to spend: no hold.
    let mut left = read(1);
    assert!(left.delay_ns(40 * S, 1, &mut rng) < 19 * S);
    // On a bucket a count of 0 is no spent window: it refills.
    let mut bucket = shaped(2, 100.0, 60);
    bucket.delay_ns(0, 1, &mut rng);
    bucket.respond_ns(10 * S, 0, &said(1, 60.0), &mut rng);
    bucket.respond_ns(11 * S, 0, &said(0, 60.0), &mut rng);
    assert!(bucket.delay_ns(11 * S, 1, &mut rng) < 19 * S);
}

#[test]
fn a_buckets_reset_rounded_by_a_time_scaled_server_is_no_sliding_window() {
    // Heroku's 4,500 per hour served live at 60x: the server rounds its reset up to whole
    // real seconds, 60 s of the client's time. At 2 tokens the bucket is whole in 3598.4 s
    // and says 3600, a whole period: within the slack (72 s, 0.02 of the hour), no vote.
    let mut rng = test_rng();
    let mut t = shaped(1, 4500.0, 3600);
    let gcra = Answer {
        limit: Some(4500),
        reset: ns(3600 * S),
        ..answer(Status::Ok, 2)
    };
    for now in [100, 200, 300, 400] {
        t.respond_ns(now * S, 0, &gcra, &mut rng);
    }
    assert!(!refusal_says_sliding(&mut t, 500 * S, 3600.0));
    // A sliding window of the same quota, at 600 left, says a whole hour: 2,880 s beyond
    // the bucket's.
    let mut w = shaped(1, 4500.0, 3600);
    let sliding = Answer {
        reset: ns(3600 * S),
        ..answer(Status::Ok, 600)
    };
    for now in [500, 600, 700] {
        w.respond_ns(now * S, 0, &sliding, &mut rng);
    }
    assert!(refusal_says_sliding(&mut w, 800 * S, 3600.0));
}

#[test]
fn a_time_scaled_servers_whole_seconds_are_read_at_their_own_resolution() {
    // 100 per minute served at 60x: the stated reset, under a real second, says one real
    // second, 60 s of the client's time, a whole period at any level. Read to the second it
    // votes for a sliding window; read at the server's resolution (60 s) it does not.
    let mut rng = test_rng();
    let gcra = Answer {
        limit: Some(100),
        reset: ns(60 * S),
        ..answer(Status::Ok, 4)
    };
    let mut fine = shaped(1, 100.0, 60);
    let mut scaled = Law::new(
        1,
        Params {
            quota: Some(100.0),
            period: Some(Duration::from_secs(60)),
            reset_resolution: Duration::from_secs(60),
            ..Params::default()
        },
    );
    for now in [100, 200, 300, 400] {
        fine.respond_ns(now * S, 0, &gcra, &mut rng);
        scaled.respond_ns(now * S, 0, &gcra, &mut rng);
    }
    assert!(refusal_says_sliding(&mut fine, 500 * S, 60.0));
    assert!(!refusal_says_sliding(&mut scaled, 500 * S, 60.0));
}
