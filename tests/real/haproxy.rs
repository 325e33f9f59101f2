//! HAProxy (Debian's haproxy) as a rate-limiting proxy: a stick table keyed by one string,
//! which every request shares as if all clients sent the same token, storing its
//! `http_req_rate` over a period, and `http-request deny deny_status 429` above the limit. The
//! proxy answers the requests itself (`http-request return`), so no backend runs.
//!
//! Its rule is a sliding-window counter with two differences from `limits`' (Flask-Limiter's):
//! its windows follow on from the key's first request rather than lying on the clock's grid,
//! and `track-sc0` counts every request it tracks before `deny` reads the rate, refused ones
//! included, so a client that keeps sending while refused keeps itself out. HAProxy sends no
//! rate-limit field (nothing to capture): the client is told the quota, and `fit` says it cannot
//! tell. The sim's model is `sliding-window-counter` with `start = "first-request"` and
//! `refused = "counted"` in the `none` dialect.

use std::path::Path;
use std::process::Command;

use crate::harness::{self, Launch, Limiter};
use crate::measure::{Rule, Setup, UNCOUNTED};

/// The haproxy that build.rs found (empty where none was).
const HAPROXY: &str = env!("THROTTLE_SIM_HAPROXY");

/// The limit and its period.
#[derive(Clone, Copy)]
struct Config {
    limit: u32,
    period_s: u32,
}

/// The whole configuration: in the foreground (`-db`), one process; `/ready` is answered
/// before the request is tracked, so asking it spends nothing.
fn conf(c: Config, port: u16) -> String {
    format!(
        "global
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend api
    bind 127.0.0.1:{port}
    stick-table type string len 8 size 16 expire {expire}s store http_req_rate({period}s)
    http-request return status 204 if {{ path /ready }}
    http-request track-sc0 str(token)
    http-request deny deny_status 429 if {{ sc_http_req_rate(0) gt {limit} }}
    http-request return status 200 content-type text/plain string ok
",
        period = c.period_s,
        expire = 4 * c.period_s,
        limit = c.limit,
    )
}

fn start(c: Config) -> Limiter {
    let mut limiter = harness::start("HAProxy", |port, dir: &Path| {
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, conf(c, port)).expect("haproxy.cfg");
        let mut command = Command::new(HAPROXY);
        command.arg("-db").arg("-f").arg(&file);
        Launch {
            command,
            announces: false,
        }
    });
    limiter.set_versions(version());
    limiter
}

/// `HAProxy 2.6.12`, from the first line `haproxy -v` prints.
fn version() -> String {
    let out = Command::new(HAPROXY)
        .arg("-v")
        .output()
        .expect("haproxy -v runs");
    let said = String::from_utf8_lossy(&out.stdout);
    said.split_whitespace()
        .nth(2)
        .map_or_else(|| "HAProxy".into(), |v| format!("HAProxy {v}"))
}

const RATE: &str = "haproxy-http-req-rate";

/// 50 requests per 5 s of the shared key's request rate, refusals counted; the client told
/// 50 per 5 s.
pub fn setups() -> Vec<Setup> {
    let config = Config {
        limit: 50,
        period_s: 5,
    };
    vec![Setup {
        name: RATE,
        tests: "haproxy::http_req_rate_",
        available: cfg!(not(no_haproxy)),
        rules: vec![Rule::SlidingCounter {
            limit: 50.0,
            window: 5.0,
        }],
        period: 5.0,
        told: Some((50, "5s")),
        targets: UNCOUNTED,
        cannot_tell: Some("the answers carry no remaining count"),
        model: r#"
kind = "sliding-window-counter"
limit = 50
window = "5s"
start = "first-request"
refused = "counted"
headers = "none"
latency = "300us"
"#,
        on_grid: false,
        start: Box::new(move || start(config)),
    }]
}

configuration_tests!(
    no_haproxy,
    "needs haproxy (none was found when this test was built): apt-get install haproxy, then cargo test --test real haproxy",
    RATE,
    http_req_rate_fit,
    http_req_rate_sim_agrees,
    http_req_rate_fair_share_targets
);
