//! Flask-Limiter (on the limits package, in memory) in front of a Flask app served by
//! waitress: `tests/real/python/flask_limiter_app.py`, run by the virtual environment's Python.
//! Every request counts against one key, with the strategy and the limits given; the answers
//! carry `X-RateLimit-Limit`, `-Remaining`, `-Reset` (epoch seconds) and `Retry-After`.

use std::process::Command;
use std::time::Duration;

use crate::harness::{self, Launch, Limiter};
use crate::headers::{self, BACK_TO_BACK, Capture, Send};
use crate::measure::{self, COUNTED, Rule, Setup};

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

/// 50 per 5 s under one strategy.
fn fifty_per_five(name: &'static str, strategy: &'static str, rule: Rule) {
    let setup = Setup {
        name,
        rules: vec![rule],
        period: 5.0,
        told: None,
        targets: COUNTED,
        fit_may_not_tell: false,
    };
    let config = Config {
        strategy,
        limits: "50 per 5 seconds",
    };
    measure::fair_share_and_fit(&setup, || start(&config));
}

#[test]
#[cfg_attr(
    no_flask_limiter,
    ignore = "needs Flask-Limiter in tests/real/python/.venv (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real flask_limiter"
)]
fn fixed_window_fair_share_and_fit() {
    let rule = Rule::FixedWindow {
        limit: 50.0,
        window: 5.0,
    };
    fifty_per_five("flask-limiter-fixed-window", "fixed-window", rule);
}

#[test]
#[cfg_attr(
    no_flask_limiter,
    ignore = "needs Flask-Limiter in tests/real/python/.venv (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real flask_limiter"
)]
fn moving_window_fair_share_and_fit() {
    let rule = Rule::SlidingLog {
        limit: 50.0,
        window: 5.0,
    };
    fifty_per_five("flask-limiter-moving-window", "moving-window", rule);
}

#[test]
#[cfg_attr(
    no_flask_limiter,
    ignore = "needs Flask-Limiter in tests/real/python/.venv (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real flask_limiter"
)]
fn sliding_window_counter_fair_share_and_fit() {
    let rule = Rule::SlidingCounter {
        limit: 50.0,
        window: 5.0,
    };
    fifty_per_five(
        "flask-limiter-sliding-window-counter",
        "sliding-window-counter",
        rule,
    );
}

/// Two fixed windows at once, 20 per second and 50 per 5 s: the second binds in the long run,
/// the first caps how fast the second's allowance can be spent.
#[test]
#[cfg_attr(
    no_flask_limiter,
    ignore = "needs Flask-Limiter in tests/real/python/.venv (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real flask_limiter"
)]
fn two_limits_fair_share_and_fit() {
    let setup = Setup {
        name: "flask-limiter-two-limits",
        rules: vec![
            Rule::FixedWindow {
                limit: 20.0,
                window: 1.0,
            },
            Rule::FixedWindow {
                limit: 50.0,
                window: 5.0,
            },
        ],
        period: 5.0,
        told: None,
        targets: COUNTED,
        fit_may_not_tell: false,
    };
    let config = Config {
        strategy: "fixed-window",
        limits: "20 per 1 second; 50 per 5 seconds",
    };
    measure::fair_share_and_fit(&setup, || start(&config));
}
