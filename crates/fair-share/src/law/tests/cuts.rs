//! The sliding window's steering, the start's flood and full bucket, refusals, errors and blind mode.

use super::*;

#[test]
fn a_first_window_that_reads_a_flood_cuts_straight_to_the_target() {
    // 200 one-thread processes start together, each sure it is alone: the level falls by
    // 250 tokens in 10 s, everyone together takes R + 25 = 26.25 per second.
    let flood = |past_start: bool| {
        let mut t = build(1);
        if past_start {
            close_a_window(&mut t, 0);
        }
        let x = t.thread_rate().ln();
        let first = Sample { t: 0.0, r: 400.0 };
        let last = Sample { t: 10.0, r: 150.0 };
        let u = t.apply_window(0, LawWindow::new(first), last);
        assert!((u.total - 26.25).abs() < 1e-12);
        // The target spends some of the 275 tokens over the reserve: still under a
        // fourth of the total.
        assert!(u.target > R && u.target * 4.0 < u.total, "{}", u.target);
        let g = t.price(last.r).min(u.target).ln();
        let pulled = move |d: f64| d + u.pull * (g - d).max(-(100f64.ln()));
        (t.thread_rate().ln(), x, (u.target / u.total).ln(), pulled)
    };
    // The first window cuts by the whole ratio, the pull on top as always...
    let (first, x, ratio, pulled) = flood(false);
    assert!((first - pulled(x + ratio)).abs() < 1e-9);
    // ... a later one by the gain's share of it, as a flood under four times the target
    // does.
    let (later, x, ratio, pulled) = flood(true);
    assert!((later - pulled(x + 0.4 * ratio)).abs() < 1e-9);
    assert!(first < later - 0.5, "{first} against {later}");
    // A full start's flood is its own surplus being spent: no straight cut.
    let mut full = build(1);
    full.observe(0, 0.0, 4500.0);
    let x = full.thread_rate();
    let u = full.apply_window(
        0,
        LawWindow::new(Sample { t: 0.0, r: 4500.0 }),
        Sample { t: 10.0, r: 4000.0 },
    );
    assert!(u.total > 4.0 * u.target);
    assert!(full.thread_rate() > x * (u.target / u.total) * 2.0);
}

#[test]
fn a_full_first_reading_spends_the_surplus_at_the_refill_rate_until_the_price_range() {
    let mut t = build(1);
    assert!(t.observe(0, 0.0, 4500.0).is_none());
    // The surplus's share of the target is capped at the refill.
    assert!((t.target(4500.0, 0.0) - 2.0 * R).abs() < 1e-12);
    // Down into the price's range ends it: the whole surplus over τ_r = 300 s again.
    let top = t.reserve() + t.slope() * 1000f64.ln();
    t.observe(0, 20.0, top - 1.0);
    assert!((t.target(4500.0, 20.0) - (R + 4477.5 / 300.0)).abs() < 1e-12);
    // A first reading below `full_level` starts no full start.
    let mut u = build(1);
    u.observe(0, 0.0, 4000.0);
    assert!((u.target(4500.0, 0.0) - (R + 4477.5 / 300.0)).abs() < 1e-12);
}

#[test]
fn a_429_cuts_once_per_round_and_retry_after_is_honoured_with_positive_jitter() {
    let mut t = build(2);
    let mut rng = test_rng();
    // A window has been read: no first cut.
    close_a_window(&mut t, 0);
    let x = t.thread_rate();
    let refused = Answer {
        retry_after: ns(10 * S),
        ..answer(Status::Limited, 0)
    };
    for th in 0..2 {
        t.delay_ns(100 * S, th, &mut rng);
        t.threads[th].last_send = Some(100 * S);
    }
    t.respond_ns(101 * S, 0, &refused, &mut rng);
    t.respond_ns(101 * S, 1, &refused, &mut rng);
    // Two threads on Heroku's bucket, which holds a crowd: half of a halving, 2^(−1/2)
    //, once for both refusals of the round.
    let cut = 0.5f64.sqrt();
    assert!((t.thread_rate() - x * cut).abs() < 1e-12);
    assert_eq!(t.backoffs(), 1);
    for th in 0..2 {
        let hold = t.threads[th].hold;
        assert!((111 * S..=116 * S).contains(&hold), "{hold}");
    }
    let mut now = 101 * S;
    while let Acquire::Wait(w) = acquire(&mut t, now, 0) {
        now += w;
    }
    assert!(now >= 111 * S);
    t.respond_ns(now + 5 * S, 0, &refused, &mut rng);
    assert!((t.thread_rate() - x * cut * cut).abs() < 1e-12);
}

#[test]
fn a_first_refusal_on_a_bucket_that_holds_a_crowd_cuts_to_a_crowds_share() {
    let mut rng = test_rng();
    let refused = |t: &mut Law, at: Nanos, rng: &mut SplitMix| {
        t.threads[0].last_send = Some(at);
        let limited = answer(Status::Limited, 0);
        t.respond_ns(at, 0, &limited, rng);
        t.thread_rate()
    };
    let swing = 2.0 * 1000f64.sqrt();
    // Heroku's 4,500 refused before any window: a crowd emptied it. The process of
    // 4 threads is cut to 4/(2√K) of its rate, and the next refusal by a quarter of a
    // halving: 2^(−1/4).
    let quarter = 0.5f64.powf(0.25);
    let mut t = build(4);
    let x = t.thread_rate();
    let first = refused(&mut t, 10 * S, &mut rng);
    assert!((first - x * 4.0 / swing).abs() < 1e-12, "{first}");
    let second = refused(&mut t, 100_000 * S, &mut rng);
    assert!((second - first * quarter).abs() < 1e-12, "{second}");
    // A process of 100 threads is already slower per thread than such a crowd: it halves.
    let mut many = build(100);
    let x = many.thread_rate();
    assert_eq!(refused(&mut many, 10 * S, &mut rng), x / 2.0);
    // After a window has read the level, a refusal cuts a process of four threads by a
    // quarter of a halving, 2^(−1/4): four refusals in four rounds halve it, as
    // one refusal each would halve four one-thread processes.
    let mut read = build(4);
    close_a_window(&mut read, 0);
    let x = read.thread_rate();
    let once = refused(&mut read, 100 * S, &mut rng);
    assert!((once - x * quarter).abs() < 1e-12, "{once}");
    for round in 1..4 {
        refused(&mut read, (100 + 100_000 * round) * S, &mut rng);
    }
    assert!((read.thread_rate() - x / 2.0).abs() < 1e-12);
    // A one-thread process halves.
    let mut single = build(1);
    close_a_window(&mut single, 0);
    let x = single.thread_rate();
    assert_eq!(refused(&mut single, 100 * S, &mut rng), x / 2.0);
    // Without a count there is no level, and no crowd to be one thread of, at the start or
    // later: the refused thread is one of four, each cut to BLIND_CUT.
    let mut blind = build(4);
    let x = blind.thread_rate();
    blind.threads[0].last_send = Some(10 * S);
    blind.respond_ns(10 * S, 0, &Answer::bare(Status::Limited), &mut rng);
    assert!((blind.thread_rate() - x * BLIND_CUT.powf(0.25)).abs() < 1e-12);
    // A bucket of 20 cannot hold a crowd's swing: its refusals are its own noise.
    let mut small = shaped(4, 20.0, 20);
    let x = small.thread_rate();
    let limited = Answer {
        limit: Some(20),
        ..answer(Status::Limited, 0)
    };
    small.threads[0].last_send = Some(10 * S);
    small.respond_ns(10 * S, 0, &limited, &mut rng);
    assert_eq!(small.thread_rate(), x / 2.0);
}

/// A law of `threads` threads on 4,500 an hour whose fixed window turned over at 3600 s.
fn turned_over_at_an_hour(threads: usize) -> Law {
    let mut t = build(threads);
    t.observe(0, 3500.0, 50.0);
    t.observe(0, 3600.0, 4500.0);
    t
}

/// Thread 0's request refused at `at_s`, told to come back in `retry_s`: with the count
/// (`remaining: 0`, a spent allowance) or without one.
fn refuse(t: &mut Law, at_s: u64, retry_s: u64, with_count: bool) {
    t.threads[0].last_send = Some(at_s * S);
    let base = if with_count {
        answer(Status::Limited, 0)
    } else {
        Answer::bare(Status::Limited)
    };
    let refused = Answer {
        retry_after: ns(retry_s * S),
        ..base
    };
    t.respond_ns(at_s * S, 0, &refused, &mut test_rng());
}

#[test]
fn a_spent_fixed_window_holds_until_its_reset_without_cutting_the_rate() {
    // The thread sends 1.25 per second, 4500 per window.
    let mut t = turned_over_at_an_hour(1);
    let x = t.thread_rate();
    // Refused at 5000 s with the wait to the reset at 7200 s: the allowance is spent, the
    // rate is not too high for the next window.
    refuse(&mut t, 5000, 2200, true);
    assert_eq!(t.thread_rate(), x);
    assert!(t.threads[0].hold >= 7200 * S);
    // A refusal that the reset does not explain still halves.
    refuse(&mut t, 5100, 10, false);
    assert_eq!(t.thread_rate(), x / 2.0);
}

#[test]
fn a_fixed_window_spent_in_its_last_half_holds_the_whole_process_too() {
    // As above, with two threads, refused 1,700 s before the reset at 7200 s (under half the
    // hour): the other thread would only meet the empty window too, so it waits for the reset
    // as well (the later of the `Retry-After` less its rounding and the reset placed at
    // 7150 s), the rate uncut.
    let mut t = turned_over_at_an_hour(2);
    let x = t.thread_rate();
    refuse(&mut t, 5500, 1700, true);
    assert_eq!(t.thread_rate(), x);
    assert!(t.threads[0].hold >= 7200 * S);
    assert_eq!(t.wait(5500 * S, 1), 1699 * S);
}

#[test]
fn a_fixed_window_spent_in_its_first_half_holds_the_whole_process_to_its_reset() {
    // Refused at 5000 s, 2,200 s before the reset (more than half the hour to go): the
    // allowance went faster than planned, and the other thread would only meet the empty
    // window too. Both wait for the reset, the rate uncut.
    let mut t = turned_over_at_an_hour(2);
    let x = t.thread_rate();
    refuse(&mut t, 5000, 2200, true);
    assert_eq!(t.thread_rate(), x);
    // The turnover was read between 3500 s and 3600 s, so the reset is placed at 7150 s: the
    // later bound is the `Retry-After` less its rounding.
    assert_eq!(t.wait(5000 * S, 1), 2199 * S);
    // A wait of a few resolutions places the reset too loosely: the other thread is not held.
    // 50 per 5 s, turned over at 10 s, refused at 12 s with 3 s to go.
    let mut t = shaped(2, 50.0, 5);
    t.observe(0, 9.5, 5.0);
    t.observe(0, 10.5, 50.0);
    let x = t.thread_rate();
    refuse(&mut t, 12, 3, true);
    assert_eq!(t.thread_rate(), x, "the reset explains the refusal");
    assert!(t.threads[0].hold >= 15 * S);
    assert!(t.wait(12 * S, 1) < S, "{}", t.wait(12 * S, 1));
}

#[test]
fn errors_back_off_per_thread_without_touching_the_rate() {
    let mut t = build(1);
    let mut rng = test_rng();
    let x = t.thread_rate();
    t.respond_ns(10 * S, 0, &Answer::bare(Status::Unavailable), &mut rng);
    assert_eq!(t.threads[0].hold, 11 * S);
    t.respond_ns(11 * S, 0, &Answer::bare(Status::Error), &mut rng);
    assert_eq!(t.threads[0].hold, 13 * S);
    assert_eq!(t.thread_rate(), x);
    t.respond_ns(13 * S, 0, &Answer::bare(Status::Ok), &mut rng);
    assert_eq!(t.threads[0].errors, 0);
}

#[test]
fn without_a_remaining_count_a_process_climbs_by_its_probe_and_is_cut_per_refusal() {
    let mut t = build(4);
    let mut rng = test_rng();
    // Never above the whole quota it was told.
    assert_eq!(t.thread_rate() * 4.0, R);
    t.respond_ns(0, 0, &Answer::bare(Status::Ok), &mut rng);
    t.respond_ns(100 * S, 0, &Answer::bare(Status::Ok), &mut rng);
    assert_eq!(t.thread_rate() * 4.0, R);
    // A refusal cuts the refused thread's share, a fourth of a cut to BLIND_CUT, and
    // divides the probe by about e.
    let probe = t.cuts.probe;
    t.threads[0].last_send = Some(101 * S);
    t.respond_ns(102 * S, 0, &Answer::bare(Status::Limited), &mut rng);
    let cut = R / 4.0 * BLIND_CUT.powf(0.25);
    assert!((t.thread_rate() - cut).abs() < 1e-12);
    assert!((t.cuts.probe - probe * (-(1.0 - BLIND_REFUSALS)).exp()).abs() < 1e-15);
    // Then it climbs by the probe times (R/X)² per second of success: faster the further
    // below the quota its own rate is.
    let probe = t.cuts.probe;
    t.respond_ns(112 * S, 0, &Answer::bare(Status::Ok), &mut rng);
    let own = 4.0 * cut;
    let expected = (own + probe * (R / own).powi(2) * 10.0) / 4.0;
    assert!(
        (t.thread_rate() - expected).abs() < 1e-12,
        "{}",
        t.thread_rate()
    );
    assert!(t.cuts.probe > probe);
}

#[test]
fn a_hold_is_waited_out_whole_however_fast_the_rate() {
    // 100,000 per second: a thread's spacing is microseconds, an eighth of it less still.
    let mut t = shaped(1, 100_000.0, 1);
    let mut rng = test_rng();
    let mut now = S;
    while let Acquire::Wait(w) = acquire(&mut t, now, 0) {
        now += w;
    }
    let refused = Answer {
        retry_after: ns(600 * S),
        ..answer(Status::Limited, 0)
    };
    t.respond_ns(now + S / 100, 0, &refused, &mut rng);
    let held_from = now + S / 100;
    t.delay_ns(held_from, 0, &mut rng);
    // One answer for the whole hold, not millions of looks at a phase the hold outlasts.
    let mut asked = 0;
    let mut at = held_from;
    while let Acquire::Wait(w) = acquire(&mut t, at, 0) {
        at += w;
        asked += 1;
    }
    assert!(
        at >= held_from + 600 * S,
        "sent {} s into a 600 s hold",
        (at - held_from) / S
    );
    assert!(asked <= 2, "asked {asked} times through the hold");
}

#[test]
fn a_refusal_holds_every_thread_of_the_process_for_its_retry_after_less_its_rounding() {
    // Four threads on 30 per minute, sending; one is refused after 30 s, told to come back in
    // 20 s: none of the four sends for 19 s (20 s less the header's whole second), and then
    // they resume in their order, not all at once.
    let mut t = shaped(4, 30.0, 60);
    let of_30 = |status, remaining| Answer {
        limit: Some(30),
        ..answer(status, remaining)
    };
    let refused = Answer {
        retry_after: ns(20 * S),
        ..of_30(Status::Limited, 0)
    };
    let mut held = false;
    let sent: Vec<Nanos> = drive(&mut t, 90 * S, |now, _| {
        let a = if now >= 30 * S && !held {
            held = true;
            refused
        } else {
            of_30(Status::Ok, 10)
        };
        Some((a, 0))
    })
    .into_iter()
    .map(|(now, _)| now)
    .collect();
    let at = *sent.iter().find(|&&s| s >= 30 * S).unwrap();
    let after: Vec<Nanos> = sent.iter().copied().filter(|&s| s > at).collect();
    assert!(
        after[0] >= at + 19 * S,
        "sent {} ns after the refusal",
        after[0] - at
    );
    assert!(after.windows(2).all(|p| p[1] > p[0]), "{after:?}");
    assert!(
        after.len() >= 8,
        "{} sends after the hold: {after:?}",
        after.len()
    );
}

#[test]
fn a_refusal_just_after_the_reset_the_law_placed_is_the_window_spent() {
    // Ten per second in 1-second windows, the reset placed at 1 s. Refused 20 ms past a
    // whole second, told to come back in 30 ms: the real reset is 50 ms past it, just after
    // the one the law placed, and 0.98 s before the next one it predicts. Around the period's circle the two are 0.05 s
    // apart: the allowance was spent, and the rate is kept.
    let mut t = turned_over_at_one_second(1);
    let mut rng = test_rng();
    let x = t.thread_rate();
    let mut now = 2 * S;
    t.delay_ns(now, 0, &mut rng);
    while let Acquire::Wait(w) = acquire(&mut t, now, 0) {
        now += w;
    }
    // Answered 20 ms past the next whole second, where the law placed a reset.
    let answered = now.div_ceil(S) * S + S / 50;
    let spent = Answer {
        retry_after: ns(S / 1000 * 30),
        ..Answer::bare(Status::Limited)
    };
    t.respond_ns(answered, 0, &spent, &mut rng);
    assert_eq!(t.thread_rate(), x);
    assert_eq!(t.backoffs(), 0);
}

/// A process of 4 threads on 50 per 5 s in fixed windows that read a turnover between 4.95 s
/// (the allowance spent) and 5.05 s (49 left): the reset placed at 5 s, and every 5 s on.
fn turned_over_at_five_seconds() -> Law {
    let mut t = Law::new(4, quota_params(50.0, 5));
    assert!(t.observe(0, 4.95, 0.0).is_none());
    assert!(t.observe(0, 5.05, 49.0).is_none());
    assert_eq!(t.reset_at(), Some(5.0));
    t
}

#[test]
fn a_refusal_told_to_wait_a_rounded_up_second_past_the_reset_placed_is_the_window_spent() {
    // Refused at 9.3 s, 0.7 s before the reset the law predicts at 10 s. A window opened by its
    // key's first request turns over a little later each period: the real reset at 10.4 s,
    // told as 2 whole seconds. 1.3 s later than the prediction is within the header's second
    // and a tenth of a period: the window is spent, and the rate is kept.
    let mut t = turned_over_at_five_seconds();
    let x = t.thread_rate();
    let at = 9 * S + 3 * S / 10;
    t.threads[0].last_send = Some(at);
    let spent = Answer {
        retry_after: ns(2 * S),
        ..answer(Status::Limited, 0)
    };
    t.respond_ns(at, 0, &spent, &mut test_rng());
    assert_eq!(t.thread_rate(), x);
    assert_eq!(t.backoffs(), 0);
    // Told 3 s, 2.3 s past the prediction: not this reset, and the rate is halved.
    let mut t = turned_over_at_five_seconds();
    t.threads[0].last_send = Some(at);
    let later = Answer {
        retry_after: ns(3 * S),
        ..answer(Status::Limited, 0)
    };
    t.respond_ns(at, 0, &later, &mut test_rng());
    assert_eq!(t.thread_rate(), x / 2.0);
}

#[test]
fn refusals_in_a_row_without_a_count_hold_the_process_while_the_key_is_blocked() {
    // 4 threads told 50 per 5 s (2.5 a second each), on a key that refuses every request from
    // 2 s to 8 s (HAProxy's request rate while refused requests keep it above the limit),
    // answers at once.
    let blocked = |now: Nanos| (2 * S..8 * S).contains(&now);
    let mut t = shaped(4, 50.0, 5);
    let sent = drive(&mut t, 12 * S, |now, _| {
        Some((
            Answer::bare(if blocked(now) {
                Status::Limited
            } else {
                Status::Ok
            }),
            0,
        ))
    });
    let refused: Vec<Nanos> = sent.iter().map(|s| s.0).filter(|&s| blocked(s)).collect();
    let after = sent.iter().filter(|s| s.0 >= 8 * S).count();
    // From the second refusal in a row the whole process holds, one spacing of its cut rate
    // (each refusal cut a thread's 2.5 a second by `BLIND_CUT^(1/4)`), then two for each
    // request sent after a hold and refused: 4 refusals in the 6 s. Every thread knocking at
    // its own pace drew 10.
    let x = 2.5 * BLIND_CUT.powf(2.0 / 4.0);
    assert!(
        refused[2] - refused[1] >= from_secs(BLOCKED_HOLD / x),
        "{refused:?}"
    );
    assert!(refused.len() <= 4, "{refused:?}");
    // The refusals after the first hold left the probe: 12 sends in the 4 s after the key
    // unblocked (2 when every refusal shrank it).
    assert!(after >= 10, "{after}");
}
