//! The start, the price and the bucket's steering, and the pacing of threads.

use super::*;

#[test]
fn defaults_are_valid_and_bad_values_are_named() {
    assert!(Params::default().problems().is_empty());
    let bad = Params {
        decrease: 1.0,
        reserve: 1.5,
        min_samples: 1,
        ..Params::default()
    };
    let fields: Vec<&str> = bad.problems().iter().map(|p| p.0).collect();
    assert_eq!(fields, ["reserve", "decrease", "min_samples"]);
}

#[test]
fn quota_and_period_go_together() {
    let half = Params {
        quota: Some(100.0),
        ..Params::default()
    };
    let fields: Vec<&str> = half.problems().iter().map(|p| p.0).collect();
    assert_eq!(fields, ["period"]);
}

#[test]
fn the_servers_policy_sets_the_refill_the_bucket_and_moves_the_rate_with_it() {
    let mut t = build(4);
    let mut rng = test_rng();
    assert!((t.thread_rate() - R / 4.0).abs() < 1e-12);
    // `RateLimit-Policy: q=5;w=1` and no `RateLimit-Limit`: 5 per second from 5 tokens.
    let stated = Answer {
        policy: Some(Policy {
            limit: 5,
            window: Duration::from_secs(1),
        }),
        limit: None,
        ..answer(Status::Ok, 4)
    };
    t.delay_ns(0, 0, &mut rng);
    t.respond_ns(S / 10, 0, &stated, &mut rng);
    assert!((t.rate - 5.0).abs() < 1e-12);
    assert_eq!((t.limit, t.period), (5.0, 1.0));
    assert!((t.thread_rate() - 5.0 / 4.0).abs() < 1e-12);
    // A configured quota wins over the header.
    let mut pinned = shaped(4, 100.0, 60);
    pinned.respond_ns(S, 0, &stated, &mut rng);
    assert!((pinned.rate - 100.0 / 60.0).abs() < 1e-12);
}

#[test]
fn the_first_pace_is_the_quota_shared_by_the_process_or_the_initial_sleep_if_slower() {
    assert!((build(1000).thread_rate() - R / 1000.0).abs() < 1e-12);
    assert!((build(1).thread_rate() - R).abs() < 1e-12);
    let slow = Law::new(
        1,
        Params {
            initial_sleep: Some(Duration::from_secs(20)),
            ..Params::default()
        },
    );
    assert!((slow.thread_rate() - 0.05).abs() < 1e-12);
}

#[test]
fn the_reserve_and_the_price_come_from_the_bucket() {
    let k = 1000f64.ln();
    // Heroku's 4,500: 0.5 % reserved, the price spans 3 % of the bucket.
    let heroku = build(1);
    assert!((heroku.reserve() - 22.5).abs() < 1e-9);
    assert!((heroku.slope() - 135.0 / k).abs() < 1e-9);
    // 5 per second from 5 tokens: one token reserved (never less), and the price spans
    // at most 0.8 of the room above the reserve up to the readable top, 4 tokens (a count
    // read after a request), so 3 tokens' worth.
    let tiny = shaped(1, 5.0, 1);
    assert!((tiny.reserve() - 1.0).abs() < 1e-9);
    assert!((tiny.slope() - 2.4 / k).abs() < 1e-9);
    // 100 per minute: the crowd's swing, 2√K = 63 tokens, fits in 0.8 of the room above
    // the reserve up to the readable top (78): the floor of the span on a bucket; 4 tokens on a fixed window.
    // There the reserve is a quarter of that swing, √K/2 = 15.8 tokens, not 0.5 % of 100
    //; on a fixed window the configured share, one token.
    let minute = shaped(1, 100.0, 60);
    assert!((minute.slope() - 2.0 * 1000f64.sqrt() / k).abs() < 1e-9);
    assert!((minute.reserve() - 1000f64.sqrt() / 2.0).abs() < 1e-9);
    let mut window = shaped(1, 100.0, 60);
    window.place_reset(59.0, 60.0);
    assert!((window.slope() - 4.0 / k).abs() < 1e-9);
    assert!((window.reserve() - 1.0).abs() < 1e-9);
    // 1 per second, burst 20: no room for the swing (0.8 · 18 = 14.4 tokens), so 10 tokens,
    // the same whatever bucket between 15 and 81 tokens a process has learned, and
    // the configured reserve.
    for limit in [20.0, 50.0, 80.0] {
        let t = shaped(1, limit, limit as u64);
        assert!((t.slope() - 10.0 / k).abs() < 1e-9);
        assert!((t.reserve() - 1.0).abs() < 1e-9);
    }
    // The price runs from R/K at the reserve to R at the top of its span, for any bucket.
    for t in [&heroku, &tiny, &minute, &window] {
        let rate = t.rate;
        assert!((t.price(t.reserve()) - rate / 1000.0).abs() < 1e-12);
        let top = t.reserve() + t.slope() * k;
        assert!((t.price(top) - rate).abs() < 1e-9 * rate);
    }
}

#[test]
fn a_shape_scaled_in_tokens_and_rate_gives_the_same_law_in_its_own_units() {
    // A bucket k times deeper refilled k times faster: the reserve, the span and the drain
    // time in bucket fill times are the same (no absolute token or second enters where no
    // floor binds; `min_flow` is a count of tokens, so scaling down would meet it).
    let base = shaped(5, 4500.0, 3600);
    for k in [2.0, 10.0, 100.0] {
        let t = shaped(5, 4500.0 * k, 3600);
        assert!((t.reserve() / t.limit - base.reserve() / base.limit).abs() < 1e-12);
        assert!((t.slope() / t.limit - base.slope() / base.limit).abs() < 1e-12);
        let (r, rb) = (t.limit / 2.0, base.limit / 2.0);
        assert!((t.target(r, 0.0) / t.rate - base.target(rb, 0.0) / base.rate).abs() < 1e-9);
        assert!((t.price(r) / t.rate - base.price(rb) / base.rate).abs() < 1e-9);
    }
}

#[test]
fn the_target_drains_the_surplus_over_a_twelfth_of_the_fill_time_or_four_windows() {
    let t = build(1);
    let r0 = t.reserve();
    // τ_r = max(3600 / 12, 4 × max(1/R, 30/R)) = 300 s.
    assert!((t.target(r0, 0.0) - R).abs() < 1e-12);
    assert!((t.target(r0 + 300.0, 0.0) - (R + 1.0)).abs() < 1e-12);
    assert!((t.target(-1e6, 0.0) - R / 4.0).abs() < 1e-12);
    // A 5-per-second bucket of 5: B/R is a second; four windows of 30 tokens at R are 24 s.
    let tiny = shaped(1, 5.0, 1);
    assert!((tiny.target(3.0, 0.0) - (5.0 + 2.0 / 24.0)).abs() < 1e-12);
}

#[test]
fn a_window_measures_the_total_from_the_slope_and_corrects_toward_the_target() {
    let mut t = started_at(25, R / 100.0);
    let x = t.thread_rate();
    // The bucket sits at the reserve and drops 25 tokens in 10 s: everyone together takes
    // R + 2.5 = 3.75 per second, three times the target R.
    let r0 = t.reserve();
    let first = Sample {
        t: 0.0,
        r: r0 + 12.5,
    };
    let last = Sample {
        t: 10.0,
        r: r0 - 12.5,
    };
    let u = t.apply_window(0, LawWindow::new(first), last);
    assert!((u.total - 3.75).abs() < 1e-12);
    assert!((u.target - R).abs() < 1e-12);
    let d = x.ln() - 0.4 * 3f64.ln();
    let g = t.price(last.r).min(u.target).ln();
    let want = d + u.pull * (g - d).max(-(100f64.ln()));
    assert!((t.thread_rate().ln() - want).abs() < 1e-9);
}

#[test]
fn the_pull_is_bounded_per_window_by_the_crowd_and_a_lone_process_pulls_only_with_room() {
    fn pulled(t: &mut Law, total: f64) -> f64 {
        let r = t.reserve();
        let dt = 1000.0;
        let first = Sample { t: 0.0, r };
        let last = Sample {
            t: dt,
            r: r - (total - t.refill()) * dt,
        };
        t.apply_window(0, LawWindow::new(first), last).pull
    }
    let pull_at = |threads: usize, x: f64, total: f64| pulled(&mut started_at(threads, x), total);
    // Heroku's 4,500 holds a crowd's swing: the weight is 1 − share/2.
    let l = build(1).slope();
    // A tenth of the total: λ = L/(1.5·N̂) (N̂ = 10), times 1 − 0.05.
    let few = pull_at(1, R / 10.0, R);
    assert!((few - (l / 15.0).min(0.5) * 0.95).abs() < 1e-9, "{few}");
    // A thousandth: a thousand times less per window, however long the window.
    let many = pull_at(1, R / 1000.0, R);
    assert!((many - l / 1500.0 * (1.0 - 0.0005)).abs() < 1e-9, "{many}");
    // The whole total still pulls, at half: it may be beside a process far below it.
    let whole = pull_at(5, R / 5.0, R);
    assert!((whole - (l / 7.5).min(0.5) * 0.5).abs() < 1e-9, "{whole}");
    // On a fixed window: L/(4·N̂), and the lone process's weight, 1 − share.
    let mut window = started_at(1, R / 10.0);
    window.place_reset(3599.0, 3600.0);
    let l_window = window.slope();
    let on_window = pulled(&mut window, R);
    assert!(
        (on_window - (l_window / 40.0).min(0.5) * 0.9).abs() < 1e-9,
        "{on_window}"
    );
    // A bucket of 20 cannot hold a crowd's swing (63 tokens): a lone client's price sits
    // near its top. There 0.97 of the total is a lone process seen through the total's
    // noise, its weight 0.03 · 0.03/0.1, and the whole total does not pull.
    let small = |x: f64| {
        let mut t = Law::new(1, starting_at(x, quota_params(20.0, 20)));
        assert!((t.thread_rate() / x - 1.0).abs() < 1e-9);
        (t.slope(), pulled(&mut t, 1.0))
    };
    let (l_small, lone) = small(0.97);
    let lambda = (l_small / (1.5 * 1.0f64.max(1.0 / 0.97))).min(0.5);
    assert!((lone - lambda * 0.03 * 0.3).abs() < 1e-9, "{lone}");
    assert_eq!(small(1.0).1, 0.0);
}

#[test]
fn windows_close_after_a_period_over_root_n_enough_answers_and_enough_flow() {
    let mut t = started_at(4, 0.01);
    // W = 1 / (0.01 · √4) = 50 s; the first window 0.7 of it.
    let mut r = 4000.0;
    let mut at = |t: &mut Law, s: f64| {
        r -= 20.0;
        t.observe(0, s, r)
    };
    assert!(at(&mut t, 0.0).is_none());
    assert!(at(&mut t, 20.0).is_none());
    assert!(at(&mut t, 34.0).is_none());
    assert!(at(&mut t, 35.0).is_some());
    // The next one a whole W at the rate that window set, from where it closed.
    let w = 1.0 / (t.thread_rate() * 2.0);
    assert!(at(&mut t, 35.0 + w / 2.0).is_none());
    assert!(at(&mut t, 35.0 + w * 0.999).is_none());
    assert!(at(&mut t, 35.0 + w * 1.001).is_some());
    // Long enough (W = 0.8 s), but 3 answers and 30 tokens are still needed.
    let mut u = build(1);
    assert!(u.observe(0, 0.0, 100.0).is_none());
    assert!(u.observe(0, 5.0, 100.0).is_none());
    // 10 s at R = 1.25 refilled 12.5 and 4 were taken: 16.5 < 30.
    assert!(u.observe(0, 10.0, 96.0).is_none());
    assert!(u.observe(0, 40.0, 80.0).is_some());
}

#[test]
fn a_process_sends_its_threads_in_line_evenly_spaced() {
    let no_jitter = Params {
        jitter: 0.0,
        ..Params::default()
    };
    let mut t = Law::new(4, starting_at(0.1, no_jitter));
    let out = sends(&mut t, 200 * S);
    // 4 threads at 0.1 per second each: one send every 2.5 s, the threads in turn.
    let gaps: Vec<f64> = out.windows(2).map(|w| secs(w[1].0 - w[0].0)).collect();
    assert!(out.len() >= 70, "{}", out.len());
    for g in &gaps {
        assert!((g - 2.5).abs() < 1e-6, "{gaps:?}");
    }
    let order: Vec<usize> = out.iter().map(|s| s.1).take(8).collect();
    assert_eq!(order, [0, 1, 2, 3, 0, 1, 2, 3]);
    // With jitter each send moves by at most jitter / n of a period: the line holds.
    let mut j = started_at(4, 0.1);
    let out = sends(&mut j, 400 * S);
    for w in out.windows(2) {
        let gap = secs(w[1].0 - w[0].0);
        assert!((gap - 2.5).abs() <= 2.0 * 0.1 / 4.0 * 10.0 + 1e-6, "{gap}");
    }
}

#[test]
fn a_rate_change_reaches_a_thread_that_is_already_waiting() {
    let mut t = started_at(1, 0.01);
    let mut rng = test_rng();
    let first = t.delay_ns(0, 0, &mut rng);
    assert!(first <= from_secs(100.0 / 8.0));
    assert_eq!(
        acquire(&mut t, first.max(1), 0),
        Acquire::Wait(t.wait(first.max(1), 0))
    );
    // At 12 s an answer states a quota a hundred times the default one, 450,000 an hour:
    // the rate moves with it, to 1 per second, and the phase runs a hundred times faster.
    let policy = Answer {
        policy: Some(Policy {
            limit: 450_000,
            window: Duration::from_secs(3600),
        }),
        ..Answer::bare(Status::Ok)
    };
    t.respond_ns(12 * S, 0, &policy, &mut rng);
    assert!(t.thread_rate() >= 1.0, "{}", t.thread_rate());
    let mut now = 12 * S;
    while let Acquire::Wait(w) = acquire(&mut t, now, 0) {
        now += w;
    }
    // The first slot (at most one period at 0.01) is reached within a period at 1.0 (at 0.01
    // the thread would still be waiting for it).
    assert!(now <= 14 * S, "{now}");
}
