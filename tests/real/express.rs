//! express-rate-limit on express: `tests/real/node/express_app.mjs`. Every request counts
//! against one key (a `keyGenerator` that ignores the address), in a window of `windowMs`
//! opened by the key's first request; the answers carry the IETF draft's fields in the
//! revision `standardHeaders` names (draft-6: `RateLimit-Limit`, `-Remaining`, `-Reset` and
//! `RateLimit-Policy`; draft-7: one `RateLimit: limit=…, remaining=…, reset=…`; draft-8:
//! structured `RateLimit` and `RateLimit-Policy`), and with `legacyHeaders` the
//! `X-RateLimit-*` fields too.

use std::process::Command;

use crate::harness::{self, Launch, Limiter};
use crate::headers::{self, BACK_TO_BACK, Capture};
use crate::measure::{self, COUNTED, Rule, Setup};

/// The options the server passes to `rateLimit`.
struct Config {
    limit: u32,
    window_ms: u32,
    standard_headers: &'static str,
    legacy_headers: bool,
}

fn start(c: &Config) -> Limiter {
    let app = harness::root().join("tests/real/node/express_app.mjs");
    harness::start("express-rate-limit", |port, _| {
        let mut command = Command::new("node");
        command
            .arg(&app)
            .args(["--port", &port.to_string()])
            .args(["--limit", &c.limit.to_string()])
            .args(["--window-ms", &c.window_ms.to_string()])
            .args(["--standard-headers", c.standard_headers])
            .args(["--legacy-headers", &c.legacy_headers.to_string()]);
        Launch {
            command,
            announces: true,
        }
    })
}

/// 5 per 10 s in a header revision (or none, `"false"`), with or without the legacy fields.
const fn five_per_ten(standard_headers: &'static str, legacy_headers: bool) -> Config {
    Config {
        limit: 5,
        window_ms: 10_000,
        standard_headers,
        legacy_headers,
    }
}

const CAPTURES: [(Capture, Config); 7] = [
    (
        Capture {
            name: "express-rate-limit-draft-6",
            config: "limit=5 window=10s standardHeaders=draft-6 legacyHeaders=false",
            send: BACK_TO_BACK,
        },
        five_per_ten("draft-6", false),
    ),
    (
        Capture {
            name: "express-rate-limit-draft-6-legacy",
            config: "limit=5 window=10s standardHeaders=draft-6 legacyHeaders=true",
            send: BACK_TO_BACK,
        },
        five_per_ten("draft-6", true),
    ),
    (
        Capture {
            name: "express-rate-limit-draft-7",
            config: "limit=5 window=10s standardHeaders=draft-7 legacyHeaders=false",
            send: BACK_TO_BACK,
        },
        five_per_ten("draft-7", false),
    ),
    (
        Capture {
            name: "express-rate-limit-draft-7-legacy",
            config: "limit=5 window=10s standardHeaders=draft-7 legacyHeaders=true",
            send: BACK_TO_BACK,
        },
        five_per_ten("draft-7", true),
    ),
    (
        Capture {
            name: "express-rate-limit-draft-8",
            config: "limit=5 window=10s standardHeaders=draft-8 legacyHeaders=false",
            send: BACK_TO_BACK,
        },
        five_per_ten("draft-8", false),
    ),
    (
        Capture {
            name: "express-rate-limit-draft-8-legacy",
            config: "limit=5 window=10s standardHeaders=draft-8 legacyHeaders=true",
            send: BACK_TO_BACK,
        },
        five_per_ten("draft-8", true),
    ),
    (
        Capture {
            name: "express-rate-limit-legacy",
            config: "limit=5 window=10s standardHeaders=false legacyHeaders=true",
            send: BACK_TO_BACK,
        },
        five_per_ten("false", true),
    ),
];

#[test]
#[cfg_attr(
    no_express_rate_limit,
    ignore = "needs node and express-rate-limit in tests/real/node/node_modules (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real express"
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

/// 50 per 5 s, in one revision of the draft's fields and no legacy ones.
fn fifty_per_five(name: &'static str, standard_headers: &'static str) {
    let setup = Setup {
        name,
        rules: vec![Rule::FixedWindow {
            limit: 50.0,
            window: 5.0,
        }],
        period: 5.0,
        told: None,
        targets: COUNTED,
        fit_may_not_tell: false,
    };
    let config = Config {
        limit: 50,
        window_ms: 5_000,
        standard_headers,
        legacy_headers: false,
    };
    measure::fair_share_and_fit(&setup, || start(&config));
}

#[test]
#[cfg_attr(
    no_express_rate_limit,
    ignore = "needs node and express-rate-limit in tests/real/node/node_modules (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real express"
)]
fn draft_6_fair_share_and_fit() {
    fifty_per_five("express-rate-limit-draft-6", "draft-6");
}

#[test]
#[cfg_attr(
    no_express_rate_limit,
    ignore = "needs node and express-rate-limit in tests/real/node/node_modules (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real express"
)]
fn draft_7_fair_share_and_fit() {
    fifty_per_five("express-rate-limit-draft-7", "draft-7");
}

#[test]
#[cfg_attr(
    no_express_rate_limit,
    ignore = "needs node and express-rate-limit in tests/real/node/node_modules (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real express"
)]
fn draft_8_fair_share_and_fit() {
    fifty_per_five("express-rate-limit-draft-8", "draft-8");
}
