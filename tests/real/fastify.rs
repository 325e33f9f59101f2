//! @fastify/rate-limit on fastify: `tests/real/node/fastify_app.mjs`. Every request counts
//! against one key, `max` per `timeWindow` opened by the key's first request; the answers
//! carry `x-ratelimit-limit`, `-remaining` and `-reset`, which here is the seconds left to the
//! window's end (not an epoch second, as most `X-RateLimit-Reset`s are), and a 429 carries
//! `retry-after`.

use std::process::Command;

use crate::harness::{self, Launch, Limiter};
use crate::headers::{self, BACK_TO_BACK, Capture};
use crate::measure::{FIFTY_PER_FIVE, Setup};

fn start(max: u32, time_window_ms: u32) -> Limiter {
    let app = harness::root().join("tests/real/node/fastify_app.mjs");
    harness::start("@fastify/rate-limit", |port, _| {
        let mut command = Command::new("node");
        command
            .arg(&app)
            .args(["--port", &port.to_string()])
            .args(["--max", &max.to_string()])
            .args(["--time-window-ms", &time_window_ms.to_string()]);
        Launch {
            command,
            announces: true,
        }
    })
}

#[test]
#[cfg_attr(
    no_fastify_rate_limit,
    ignore = "needs node and @fastify/rate-limit in tests/real/node/node_modules (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real fastify"
)]
fn headers_match_the_captured_files() {
    let captures = [Capture {
        name: "fastify-rate-limit",
        config: "limit=5 window=10s",
        send: BACK_TO_BACK,
    }];
    headers::check_all(&captures, |_| start(5, 10_000));
}

const FASTIFY: &str = "fastify-rate-limit";

/// 50 per 5 s; in the sim, a fixed window opened by the first request, in the `fastify`
/// dialect: the limit, the count and the seconds to the reset rounded up at each answer (not
/// GitHub's epoch second, which names the same instant on every answer), `retry-after` on a
/// 429.
pub fn setups() -> Vec<Setup> {
    vec![Setup::counted(
        FASTIFY,
        "fastify::",
        cfg!(not(no_fastify_rate_limit)),
        vec![FIFTY_PER_FIVE],
        r#"
kind = "fixed-window"
limit = 50
window = "5s"
start = "first-request"
headers = "fastify"
latency = "1ms"
"#,
        Box::new(|| start(50, 5_000)),
    )]
}

configuration_tests!(
    no_fastify_rate_limit,
    "needs node and @fastify/rate-limit in tests/real/node/node_modules (not there when this test was built): scripts/install_real_limiters.sh, then cargo test --test real fastify",
    FASTIFY,
    fit,
    sim_agrees,
    fair_share_targets
);
