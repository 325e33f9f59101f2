//! Flask-Limiter (on the limits package, in memory) in front of a Flask app served by
//! waitress: `tests/real/python/flask_limiter_app.py`, run by the virtual environment's Python.
//! Every request counts against one key, with the strategy and the limits given; the answers
//! carry `X-RateLimit-Limit`, `-Remaining`, `-Reset` (epoch seconds) and `Retry-After`.

use std::process::Command;
use std::time::Duration;

use crate::harness::{self, Launch, Limiter};
use crate::headers::{self, BACK_TO_BACK, Capture, Send};
use crate::measure::{FIFTY_PER_FIVE, Rule, Setup};

/// `--strategy` and `--limits` of the server.
struct Config {
    strategy: &'static str,
    limits: &'static str,
}

fn start(c: &Config) -> Limiter {
    let dir = harness::root().join("tests/real/python");
    harness::start("Flask-Limiter", |port, _| {
        let mut command = Command::new(dir.join(".venv/bin/python"));
        // -B: no bytecode written next to the app or into the environment.
        command
            .arg("-B")
            .arg(dir.join("flask_limiter_app.py"))
            .args(["--port", &port.to_string()])
            .args(["--strategy", c.strategy, "--limits", c.limits]);
        Launch {
            command,
            announces: true,
        }
    })
}

const CAPTURES: [(Capture, Config); 4] = [
    (
        Capture {
            name: "flask-limiter-fixed-window",
            config: "limit=5 window=10s strategy=fixed-window",
            send: BACK_TO_BACK,
        },
        Config {
            strategy: "fixed-window",
            limits: "5 per 10 seconds",
        },
    ),
    (
        Capture {
            name: "flask-limiter-moving-window",
            config: "limit=5 window=10s strategy=moving-window",
            send: BACK_TO_BACK,
        },
        Config {
            strategy: "moving-window",
            limits: "5 per 10 seconds",
        },
    ),
    (
        Capture {
            name: "flask-limiter-sliding-window-counter",
            config: "limit=5 window=10s strategy=sliding-window-counter",
            send: BACK_TO_BACK,
        },
        Config {
            strategy: "sliding-window-counter",
            limits: "5 per 10 seconds",
        },
    ),
    (
        Capture {
            name: "flask-limiter-two-limits",
            config: "limit=2 window=1s limit=5 window=10s strategy=fixed-window",
            // Never two within a second's window: the 2xx state the 1 s limit (the shortest
            // window, while none is spent), the sixth request's 429 the 10 s one it spent.
            send: Send::OneAtATime {
                most: 10,
                gap: Duration::from_millis(600),
            },
        },
        Config {
            strategy: "fixed-window",
            limits: "2 per 1 second; 5 per 10 seconds",
        },
    ),
];

#[test]
#[cfg_attr(
    no_flask_limiter,
    ignore = "needs Flask-Limiter in tests/real/python/.venv (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real flask_limiter"
)]
fn headers_match_the_captured_files() {
    let captures = CAPTURES.map(|(c, _)| c);
    headers::check_all(&captures, |c| {
        let (_, config) = CAPTURES
            .iter()
            .find(|(k, _)| k.name == c.name)
            .expect("a capture's configuration");
        start(config)
    });
}

const FIXED_WINDOW: &str = "flask-limiter-fixed-window";
const MOVING_WINDOW: &str = "flask-limiter-moving-window";
const SLIDING_WINDOW_COUNTER: &str = "flask-limiter-sliding-window-counter";
const TWO_LIMITS: &str = "flask-limiter-two-limits";

/// One configuration of the server; in the sim, `model` in the `flask-limiter` dialect: the
/// limit, what remains, the reset as the epoch second after its instant (`int(t + 1)`) and
/// `Retry-After` the whole seconds to it rounded down, as Flask-Limiter writes them
/// (docs/headers.md). The numbers measured on the models below before that dialect existed
/// were drawn in the `github` dialect, which rounds the reset up: on the sliding-window
/// counter, whose window ends fall on whole seconds, it stated them a second earlier than
/// Flask-Limiter does, and fair-share 0.25.0 drew 0.04 % ± 0.17 429s on 20 seeds of the model
/// where live runs drew 0.4 to 1.6 % (0.39 % ± 0.56 in the `flask-limiter` dialect).
fn flask(
    name: &'static str,
    tests: &'static str,
    config: Config,
    rules: Vec<Rule>,
    model: &'static str,
) -> Setup {
    Setup::counted(
        name,
        tests,
        cfg!(not(no_flask_limiter)),
        rules,
        model,
        Box::new(move || start(&config)),
    )
}

/// The configurations of the runs: 50 per 5 s under each strategy, and two fixed windows at
/// once.
pub fn setups() -> Vec<Setup> {
    let fifty_per_five = |strategy| Config {
        strategy,
        limits: "50 per 5 seconds",
    };
    // The live runs are a little less fair than the sim's: over 10 live runs 429s
    // 0.9 % ± 0.5, utilization 0.89 ± 0.03, fairness 0.81 ± 0.08; over 30 sim seeds 1.4 % ±
    // 0.9, 0.85 ± 0.05, 0.88 ± 0.09 (fastify, on the same model: fairness 0.80 ± 0.14 live).
    // Flask-Limiter's `Retry-After` on a 429 is the whole seconds to its reset rounded down, 0
    // under a second, which the `flask-limiter` dialect states (the `github` dialect waits to
    // the reset's second).
    let fixed = flask(
        FIXED_WINDOW,
        "flask_limiter::fixed_window_",
        fifty_per_five("fixed-window"),
        vec![FIFTY_PER_FIVE],
        r#"
kind = "fixed-window"
limit = 50
window = "5s"
start = "first-request"
headers = "flask-limiter"
latency = "1.3ms"
"#,
    );
    // `limits`' moving window states when the oldest request in the window leaves it (when
    // one more would be admitted: under a second and a half here), which Flask-Limiter writes
    // as that epoch second rounded up, and `Retry-After` as the whole seconds to it rounded
    // down (0 on most 429s): the model's `reset = "oldest"`. (With the default reset, when the
    // window is empty again, 30 sim seeds drew 0.28 % ± 0.65 429s where 10 live runs drew
    // 2.6 % ± 1.9.)
    let moving = flask(
        MOVING_WINDOW,
        "flask_limiter::moving_window_",
        fifty_per_five("moving-window"),
        vec![Rule::SlidingLog {
            limit: 50.0,
            window: 5.0,
        }],
        r#"
kind = "sliding-window"
limit = 50
window = "5s"
reset = "oldest"
headers = "flask-limiter"
latency = "1.3ms"
"#,
    );
    // Its windows are on the epoch's grid: the live run starts on it, as the sim's at t = 0.
    // fit has no rule of the counter: the sliding window it approximates is right, and so is
    // saying it cannot tell; a bucket or a fixed window is not. Under the trace's steady load
    // the weighted count drains as a bucket's level does, and fit names a bucket of 50 per
    // 5 s on about a third of the traces (`sliding_window_counter_fit` is ignored, with the
    // numbers, until it does not).
    //
    // `limits` states when the weighted count next falls by a whole request (under a second
    // and a half here; `Retry-After` 0 or 1 on every answer): the model's `reset =
    // "next-drop"`. (With the default reset, when the count is 0 again, 5 to 10 s off, 30 sim
    // seeds drew 2.8 % ± 1.3 429s, utilization 0.88 ± 0.09, fairness 0.84 ± 0.13, where 10 live
    // runs drew 1.2 % ± 1.0, 0.84 ± 0.04, 0.984 ± 0.014.)
    let counter = Setup {
        on_grid: true,
        cannot_tell: Some(""),
        ..flask(
            SLIDING_WINDOW_COUNTER,
            "flask_limiter::sliding_window_counter_",
            fifty_per_five("sliding-window-counter"),
            vec![Rule::SlidingCounter {
                limit: 50.0,
                window: 5.0,
            }],
            r#"
kind = "sliding-window-counter"
limit = 50
window = "5s"
reset = "next-drop"
headers = "flask-limiter"
latency = "1.3ms"
"#,
        )
    };
    // 20 per second and 50 per 5 s: the second binds in the long run, the first caps how fast
    // the second's allowance can be spent. Flask-Limiter asks the shorter first (charging it
    // even when the longer then refuses) and states it on a 2xx, and on a 429 the limit that
    // refused: `stacked` with the limits in that order and `shows = "first"`. The answers state two limits, so fit says it cannot tell.
    let two = Setup {
        cannot_tell: Some("the answers state 2 limits"),
        ..flask(
            TWO_LIMITS,
            "flask_limiter::two_limits_",
            Config {
                strategy: "fixed-window",
                limits: "20 per 1 second; 50 per 5 seconds",
            },
            vec![
                Rule::FixedWindow {
                    limit: 20.0,
                    window: 1.0,
                },
                Rule::FixedWindow {
                    limit: 50.0,
                    window: 5.0,
                },
            ],
            r#"
kind = "stacked"
limits = [
  { kind = "fixed-window", limit = 20, window = "1s", start = "first-request" },
  { kind = "fixed-window", limit = 50, window = "5s", start = "first-request" },
]
shows = "first"
headers = "flask-limiter"
latency = "1.3ms"
"#,
        )
    };
    vec![fixed, moving, counter, two]
}

configuration_tests!(
    no_flask_limiter,
    "needs Flask-Limiter in tests/real/python/.venv (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real flask_limiter",
    FIXED_WINDOW,
    fixed_window_fit,
    fixed_window_sim_agrees,
    fixed_window_fair_share_targets,
    misses = "fair-share 0.30.0 met the targets in 8 of 10 live runs (429s 0.20 % ± 0.27, utilization 0.975 ± 0.005, fairness 0.967 ± 0.026); the 2 misses on fairness alone (0.932 and 0.908, utilization × fairness 0.904 and 0.881 against the independent bound's 0.981 − 0.05; in one a process over twice another's 2xx for 4 periods in a row); 0.27.0 met them in 11 of 11, 0.24.0 in 12 of 13: a run's fairness lies a few hundredths from the target"
);

configuration_tests!(
    no_flask_limiter,
    "needs Flask-Limiter in tests/real/python/.venv (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real flask_limiter",
    MOVING_WINDOW,
    moving_window_fit,
    moving_window_sim_agrees,
    moving_window_fair_share_targets,
    misses = "fair-share 0.30.0 misses in 10 of 10 live runs: 429s 2.91 % ± 0.84, utilization 0.784 ± 0.030, fairness 0.975 ± 0.015 (0.27.0 over 5: 2.8 %, 0.785, 0.96), utilization × fairness 0.72 to 0.83 where the independent bound reaches 0.98 (429s 1.98 %), in one run a process over twice another's 2xx for 3 periods in a row: the law reads the moving window as a bucket, whose price rests the level at about 7 of the 50 tokens, and on a sliding log what rests there is lost a period later (docs/fair-share-notes.md, after 0.24.0)"
);

configuration_tests!(
    no_flask_limiter,
    "needs Flask-Limiter in tests/real/python/.venv (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real flask_limiter",
    SLIDING_WINDOW_COUNTER,
    sliding_window_counter_fit,
    sliding_window_counter_sim_agrees,
    sliding_window_counter_fair_share_targets,
    misses = "fair-share 0.30.0 misses in 10 of 10 live runs: utilization 0.869 ± 0.019 < 0.95 (429s 0.50 % ± 0.43, fairness 0.982 ± 0.013; 0.27.0 over 5: 0.873, 0.46 %, 0.989), utilization × fairness 0.80 to 0.88 where the independent bound reaches 0.99 (429s 1.12 %)"
);

configuration_tests!(
    no_flask_limiter,
    "needs Flask-Limiter in tests/real/python/.venv (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real flask_limiter",
    TWO_LIMITS,
    two_limits_fit,
    two_limits_sim_agrees,
    two_limits_fair_share_targets,
    misses = "fair-share 0.30.0 misses in 9 of 10 live runs: 429s 3.22 % ± 1.06, utilization 0.908 ± 0.059, fairness 0.878 ± 0.117 (0.28.0 over 5: 2.7 %, 0.897, 0.93; 0.25.0: 4.7 %, 0.885, 0.92), utilization × fairness 0.56 to 0.90 where the independent bound reaches 0.98 (429s 1.83 %); in 8 of 10 one process over twice another's 2xx for 3 periods in a row or more. The long limit here (50 per 5 s) refuses with a wait of at most 5 s, which bounds the key at no less than 12.5 a second against its 10; and of the refusals, nearly all are the long limit's with a `Retry-After` of 0 or 1 s, its window about to turn over: a wait within the reset's rounding, which the stacked-limit rule reads as saying nothing"
);
