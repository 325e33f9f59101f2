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
use crate::measure::{FIFTY_PER_FIVE, Setup};

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

const DRAFT_6: &str = "express-rate-limit-draft-6";
const DRAFT_7: &str = "express-rate-limit-draft-7";
const DRAFT_8: &str = "express-rate-limit-draft-8";

/// 50 per 5 s, in one revision of the draft's fields and no legacy ones; in the sim, a fixed
/// window opened by the first request, in the `ietf` dialect (the limit, the policy's window,
/// what remains, the seconds to the reset, and `Retry-After` in whole seconds on a 429: what
/// each revision's fields say).
fn fifty_per_five(
    name: &'static str,
    tests: &'static str,
    standard_headers: &'static str,
) -> Setup {
    let config = Config {
        limit: 50,
        window_ms: 5_000,
        standard_headers,
        legacy_headers: false,
    };
    Setup::counted(
        name,
        tests,
        cfg!(not(no_express_rate_limit)),
        vec![FIFTY_PER_FIVE],
        r#"
kind = "fixed-window"
limit = 50
window = "5s"
start = "first-request"
headers = "ietf"
latency = "1ms"
"#,
        Box::new(move || start(&config)),
    )
}

/// The configurations of the runs.
pub fn setups() -> Vec<Setup> {
    vec![
        fifty_per_five(DRAFT_6, "express::draft_6_", "draft-6"),
        fifty_per_five(DRAFT_7, "express::draft_7_", "draft-7"),
        fifty_per_five(DRAFT_8, "express::draft_8_", "draft-8"),
    ]
}

configuration_tests!(
    no_express_rate_limit,
    "needs node and express-rate-limit in tests/real/node/node_modules (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real express",
    DRAFT_6,
    draft_6_fit,
    draft_6_sim_agrees,
    draft_6_fair_share_targets,
    misses = "fair-share 0.30.0 met the targets in 6 of 10 live runs (0.27.0: 7 of 10, 0.25.0: 1 of 5): 429s 0.80 % ± 0.47, utilization 0.947 ± 0.010, fairness 0.979 ± 0.015; the 4 misses under the independent bound's utilization × fairness (at least its 0.98 − 0.05: 0.905 to 0.931, utilization 0.930 to 0.950), none over its 429s (at most its 1.83 % + 0.5 points)"
);

configuration_tests!(
    no_express_rate_limit,
    "needs node and express-rate-limit in tests/real/node/node_modules (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real express",
    DRAFT_7,
    draft_7_fit,
    draft_7_sim_agrees,
    draft_7_fair_share_targets,
    misses = "fair-share 0.30.0 met the targets in 7 of 10 live runs (0.27.0: 5 of 10, 0.25.0: 5 of 5, 0.24.0: 7 of 13): 429s 0.70 % ± 0.44, utilization 0.949 ± 0.005, fairness 0.977 ± 0.014; the 3 misses under the independent bound's utilization × fairness (at least its 0.98 − 0.05: 0.890 to 0.927), none over its 429s (at most its 1.83 % + 0.5 points)"
);

configuration_tests!(
    no_express_rate_limit,
    "needs node and express-rate-limit in tests/real/node/node_modules (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real express",
    DRAFT_8,
    draft_8_fit,
    draft_8_sim_agrees,
    draft_8_fair_share_targets,
    misses = "fair-share 0.30.0 met the targets in 6 of 10 live runs (0.27.0: 7 of 10, 0.25.0: 3 of 5): 429s 1.08 % ± 0.45, utilization 0.946 ± 0.007, fairness 0.967 ± 0.036; the 4 misses under the independent bound's utilization × fairness (at least its 0.98 − 0.05: 0.852 to 0.906), two of them with a process over twice another's 2xx for 3 and 6 periods in a row, none over its 429s (at most its 1.83 % + 0.5 points)"
);
