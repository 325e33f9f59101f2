//! The modes' transitions seen from outside, through the public API only: answers read from
//! their headers go in, the rate and the waits come out. Each test shows a transition by the
//! rule that differs on either side of it (a refusal's cut is the mode's own).

use std::time::{Duration, SystemTime};

use crate::{Answer, Fixed, Law, Params};

/// Seconds as the law's time.
fn at(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// An answer of `status` with these header lines, 20 ms of latency, read at a fixed wall clock.
fn heard(status: u16, headers: &[(&str, &str)]) -> Answer {
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
    Answer::read(
        status,
        headers.iter().copied(),
        Duration::from_millis(20),
        wall,
    )
}

/// Thread `thread` asks to send from `from` on, and waits as it is told: when it sent.
fn send(law: &mut Law, thread: usize, from: Duration) -> Duration {
    let mut now = from;
    let mut draw = Fixed(0.5);
    let mut wait = law.delay(now, thread, &mut draw);
    for _ in 0..1000 {
        now += wait;
        wait = law.acquire(now, thread);
        if wait.is_zero() {
            return now;
        }
    }
    panic!("thread {thread} never sent");
}

fn tell(law: &mut Law, thread: usize, now: Duration, answer: &Answer) {
    law.on_response(now, thread, answer, &mut Fixed(0.5));
}

/// The factor a refusal at `now` cut the rate by.
fn cut_by(law: &mut Law, thread: usize, now: Duration, refusal: &Answer) -> f64 {
    let before = law.thread_rate();
    tell(law, thread, now, refusal);
    law.thread_rate() / before
}

#[test]
fn resets_of_a_whole_period_make_a_sliding_window_whose_refusal_takes_one_request() {
    // 30 a minute, the level at 25 on three answers over 3 s. A bucket would be whole again in
    // (30 − 25)/0.5 = 10 s; one process hears 60 s (a sliding window, whose newest request
    // leaves a period later), the other 10 s. The first refusal then takes one request per
    // period off the first, `1 − 1/(n·x·period)`, and halves the other.
    let refused = heard(
        429,
        &[
            ("RateLimit-Policy", "\"default\";q=30;w=60"),
            ("RateLimit", "\"default\";r=0;t=56"),
            ("Retry-After", "2"),
        ],
    );
    for (reset, sliding) in [("t=60", true), ("t=10", false)] {
        let mut law = Law::new(1, Params::default());
        let item = format!("\"default\";r=25;{reset}");
        let ok = heard(
            200,
            &[
                ("RateLimit-Policy", "\"default\";q=30;w=60"),
                ("RateLimit", item.as_str()),
            ],
        );
        for s in [100.0, 101.5, 103.0] {
            tell(&mut law, 0, at(s), &ok);
        }
        // The policy moved the rate to the process's share of 30 a minute.
        assert!(
            (law.thread_rate() - 0.5).abs() < 1e-12,
            "{}",
            law.thread_rate()
        );
        let factor = cut_by(&mut law, 0, at(103.5), &refused);
        let want = if sliding { 1.0 - 1.0 / 30.0 } else { 0.5 };
        assert!((factor - want).abs() < 1e-12, "{reset}: {factor}");
        assert_eq!(law.backoffs(), 1);
    }
}

#[test]
fn on_a_crowds_bucket_a_refusal_at_the_start_is_a_crowd_and_a_later_one_a_thread() {
    // Heroku's 4,500 an hour, only the remaining count: a bucket that holds the swing of a
    // crowd of K = 1,000 senders, 2√K = 63 tokens. A process of four threads refused before
    // any window closed reads a crowd that emptied the bucket: it cuts to 4/63.2 of its rate.
    // It is then past its start; its next refusal, a round later, marks one thread of four:
    // an n-th of a halving, 2^(−1/4).
    let mut law = Law::new(4, Params::default());
    let refused = heard(429, &[("RateLimit-Remaining", "0")]);
    let sent = send(&mut law, 0, at(0.0));
    let first = cut_by(&mut law, 0, sent + at(0.05), &refused);
    let crowd = 4.0 / (2.0 * 1000f64.sqrt());
    assert!((first - crowd).abs() < 1e-12, "{first}");
    // The next request goes out after the cut, and its refusal comes a spacing later.
    let spacing = at(law.spacing());
    let sent = send(&mut law, 0, sent + spacing);
    let second = cut_by(&mut law, 0, sent + spacing, &refused);
    assert!((second - 0.5f64.powf(0.25)).abs() < 1e-12, "{second}");
    assert_eq!(law.backoffs(), 2);
}

#[test]
fn the_first_count_ends_blind_mode() {
    // Told 10 a second, two threads. A refusal with no count is blind mode's: the refused
    // thread is one of two, cut to 0.3, so the process by 0.3^(1/2). Once an answer carries a
    // count the level can be read, and a refusal is a bucket's (10 tokens: too small for a
    // crowd's swing), a halving.
    let params = Params {
        quota: Some(10.0),
        period: Some(Duration::from_secs(1)),
        ..Params::default()
    };
    let mut law = Law::new(2, params);
    let sent = send(&mut law, 0, at(0.0));
    let blind = cut_by(&mut law, 0, sent + at(0.02), &heard(429, &[]));
    assert!((blind - 0.3f64.sqrt()).abs() < 1e-12, "{blind}");
    let counted = [("RateLimit-Remaining", "5"), ("RateLimit-Limit", "10")];
    let sent = send(&mut law, 1, sent + at(1.0));
    tell(&mut law, 1, sent + at(0.02), &heard(200, &counted));
    let sent = send(&mut law, 0, sent + at(1.0));
    let refused = heard(
        429,
        &[("RateLimit-Remaining", "0"), ("RateLimit-Limit", "10")],
    );
    let bucket = cut_by(&mut law, 0, sent + at(1.0), &refused);
    assert!((bucket - 0.5).abs() < 1e-12, "{bucket}");
}

#[test]
fn on_a_sliding_window_a_jump_of_the_level_is_an_echo_not_a_turnover() {
    // 1,000 an hour, one thread, the level at 197 for two and a half minutes, then up to 372
    // in 6 s as the requests a crowd sent together an hour ago leave the window. One process
    // heard a whole hour in every stated reset (a sliding window: σ = 72 s, three in a row over
    // more than 2σ), the other a bucket's own reset, (1000 − 197)/R = 2,890 s. To the bucket no
    // refill explains 175 tokens in 6 s: a fixed window turned over, and a refusal there (no
    // reset to explain it) halves the rate. To the sliding window the jump is what left it: it
    // stays sliding, and a refusal takes one request per period off.
    for (reset, sliding) in [("3600", true), ("2890", false)] {
        let mut law = Law::new(1, Params::default());
        let answer = |remaining: &str, status: u16| {
            heard(
                status,
                &[
                    ("RateLimit-Policy", "1000;w=3600"),
                    ("RateLimit-Limit", "1000"),
                    ("RateLimit-Remaining", remaining),
                    ("RateLimit-Reset", reset),
                ],
            )
        };
        for s in [3450.0, 3525.0, 3601.0] {
            tell(&mut law, 0, at(s), &answer("197", 200));
        }
        tell(&mut law, 0, at(3607.0), &answer("372", 200));
        let x = law.thread_rate();
        // A refusal without a count: no reading of the level closes a window and steers first.
        let factor = cut_by(&mut law, 0, at(3608.0), &heard(429, &[]));
        let want = if sliding {
            1.0 - 1.0 / (x * 3600.0)
        } else {
            0.5
        };
        assert!(
            (factor - want).abs() < 1e-12,
            "reset {reset}: {factor}, want {want}"
        );
    }
}

#[test]
fn in_sliding_mode_the_level_is_read_as_the_periods_total() {
    // 30 a minute, one thread, its share 0.5 a second. Three answers with a whole minute's
    // reset make a sliding window; the level then stays at 5 for a minute. Read as a bucket,
    // a level that does not move says the total is the refill; read as a sliding window, the
    // last minute took 25, so the total is 25/60, short of the whole 30/60: the window of the
    // law, a period long, moves the rate by (30/25)^0.4.
    // The same answers with a bucket's own reset, (30 − 5)/0.5 = 50 s, read as a bucket's
    // level held still: the total is the refill, and the rate moves otherwise.
    for (reset, sliding) in [("t=60", true), ("t=50", false)] {
        let mut law = Law::new(1, Params::default());
        let item = format!("\"default\";r=5;{reset}");
        let at_five = heard(
            200,
            &[
                ("RateLimit-Policy", "\"default\";q=30;w=60"),
                ("RateLimit", item.as_str()),
            ],
        );
        for s in [97.0, 98.5, 100.0, 130.0] {
            tell(&mut law, 0, at(s), &at_five);
        }
        assert!(
            (law.thread_rate() - 0.5).abs() < 1e-12,
            "{}",
            law.thread_rate()
        );
        tell(&mut law, 0, at(160.0), &at_five);
        let want = 0.5 * (30.0f64 / 25.0).powf(0.4);
        let moved = law.thread_rate();
        assert_eq!(
            (moved - want).abs() < 1e-12,
            sliding,
            "{reset}: {moved}, {want}"
        );
    }
}

#[test]
fn in_sliding_mode_a_level_falling_faster_than_the_periods_average_is_the_rate_now() {
    // 30 a minute, full: three answers with a whole minute's reset make a sliding window,
    // then the level falls by 20 in 20 s, where the period's average says 10 taken in the
    // minute. The fall, `S(t) − S(t − period)`, is a lower bound of the rate now: the window
    // reads 20 taken in its 23 s and corrects within it, by the whole gain.
    let mut law = Law::new(1, Params::default());
    let level = |r: u64| {
        let item = format!("\"default\";r={r};t=60");
        heard(
            200,
            &[
                ("RateLimit-Policy", "\"default\";q=30;w=60"),
                ("RateLimit", item.as_str()),
            ],
        )
    };
    for (s, r) in [
        (97.0, 30),
        (98.5, 30),
        (100.0, 30),
        (110.0, 20),
        (120.0, 10),
    ] {
        tell(&mut law, 0, at(s), &level(r));
    }
    let total = 20.0 / 23.0;
    let want = 0.5 * (0.5f64 / total).powf(0.4);
    assert!(
        (law.thread_rate() - want).abs() < 1e-12,
        "{}",
        law.thread_rate()
    );
}

#[test]
fn a_lone_thread_on_a_two_token_bucket_keeps_its_rate_near_the_refill() {
    // 2 a second from a bucket of 2 tokens, one thread, the bucket empty at first: the first
    // request is refused and halves the rate. A count read after a request is then at most 1,
    // the readable top, where the price must reach the refill. At half the refill the bucket
    // overflows between requests and every count reads that top: a level that never moves
    // says nothing of the refill lost. Read as the refill less that flat slope, the window's
    // total stayed the refill whatever the process sent, and its rate sank (to a sixth of the
    // refill after five minutes); read as the process's own sends, the rate climbs back.
    let params = Params {
        quota: Some(2.0),
        period: Some(Duration::from_secs(1)),
        ..Params::default()
    };
    let mut law = Law::new(1, params);
    let (rate, burst) = (2.0, 2.0);
    let (mut level, mut filled) = (0.0, 0.0);
    let (mut now, mut granted) = (at(0.0), Vec::new());
    while now < at(300.0) {
        now = send(&mut law, 0, now);
        let s = now.as_secs_f64();
        level = (level + rate * (s - filled)).min(burst);
        filled = s;
        let status = if level >= 1.0 {
            level -= 1.0;
            granted.push(s);
            200
        } else {
            429
        };
        let remaining = (level.floor() as u64).to_string();
        let answer = heard(
            status,
            &[
                ("RateLimit-Limit", "2"),
                ("RateLimit-Remaining", remaining.as_str()),
            ],
        );
        now += at(0.02);
        tell(&mut law, 0, now, &answer);
    }
    let x = law.thread_rate();
    assert!(x > 0.9 * rate, "{x}");
    // Over the last minute, at least 0.9 of the refill went through.
    let late = granted.iter().filter(|&&s| s >= 240.0).count() as f64;
    let share = late / (rate * 60.0);
    assert!(share > 0.9, "{share} of the refill");
}
