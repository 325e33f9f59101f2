//! nginx's `limit_req` (Debian's nginx-light), in front of a static file: one zone keyed by
//! the client's address, which every client here shares (127.0.0.1), `limit_req_status 429`.
//! nginx sends no rate-limit field, so the client is told the quota and `fit` may say it
//! cannot tell. A location that only `return`s is never limited (its phase comes before
//! `limit_req`'s), hence the file; `/ready` is such a location.
//!
//! With `nodelay`, a request beyond the rate is answered at once while the burst lasts and
//! refused after; without it, nginx holds such a request until the rate lets it through, and
//! refuses only what would overflow a queue of `burst`.

use std::path::Path;
use std::process::Command;

use crate::harness::{self, Launch, Limiter};
use crate::headers::{self, BACK_TO_BACK, Capture, Send};
use crate::measure::{Rule, Setup, UNCOUNTED};

/// The nginx that build.rs found (empty where none was).
const NGINX: &str = env!("THROTTLE_SIM_NGINX");

/// One `limit_req` configuration.
#[derive(Clone, Copy)]
struct Config {
    per_second: u32,
    burst: u32,
    nodelay: bool,
}

/// The whole configuration, every file nginx writes inside `dir` (it runs in the foreground,
/// as one process, so that killing it leaves no worker behind).
fn conf(c: Config, port: u16, dir: &Path) -> String {
    let d = dir.display();
    let nodelay = if c.nodelay { " nodelay" } else { "" };
    format!(
        "daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    limit_req_zone $binary_remote_addr zone=real_{port}:1m rate={rate}r/s;
    limit_req_status 429;
    server {{
        listen 127.0.0.1:{port};
        root {d}/html;
        location = /ready {{ return 204; }}
        location / {{ limit_req zone=real_{port} burst={burst}{nodelay}; }}
    }}
}}
",
        rate = c.per_second,
        burst = c.burst,
    )
}

fn start(c: Config) -> Limiter {
    let mut limiter = harness::start("nginx", |port, dir| {
        let html = dir.join("html");
        std::fs::create_dir_all(&html).expect("nginx's root folder");
        std::fs::write(html.join("index.html"), "ok\n").expect("the file nginx serves");
        let file = dir.join("nginx.conf");
        std::fs::write(&file, conf(c, port, dir)).expect("nginx.conf");
        let mut command = Command::new(NGINX);
        // -e: the error log from the start, before the configuration names it.
        command
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&file)
            .arg("-e")
            .arg(dir.join("error.log"));
        Launch {
            command,
            announces: false,
        }
    });
    limiter.set_versions(version());
    limiter
}

/// `nginx 1.22.1`, from what `nginx -v` prints (to stderr).
fn version() -> String {
    let out = Command::new(NGINX)
        .arg("-v")
        .output()
        .expect("nginx -v runs");
    let said = String::from_utf8_lossy(&out.stderr);
    said.trim()
        .rsplit('/')
        .next()
        .map_or_else(|| "nginx".into(), |v| format!("nginx {v}"))
}

/// A bucket of 5 refilled at 1 a second, let through at once (5 answered, the sixth
/// refused), and a queue of 2 at 1 a second (of 5 at once: 1 answered, 2 held, 2 refused); and
/// a bucket of 4 refilled at 5 a second, let through at once.
const CAPTURES: [(Capture, Config); 3] = [
    (
        Capture {
            name: "nginx-limit-req-nodelay",
            config: "rate=1r/s burst=4 nodelay=true status=429",
            send: BACK_TO_BACK,
        },
        Config {
            per_second: 1,
            burst: 4,
            nodelay: true,
        },
    ),
    (
        Capture {
            name: "nginx-limit-req-delay",
            config: "rate=1r/s burst=2 nodelay=false status=429",
            send: Send::AllAtOnce(5),
        },
        Config {
            per_second: 1,
            burst: 2,
            nodelay: false,
        },
    ),
    (
        Capture {
            name: "nginx-limit-req",
            config: "rate=5r/s burst=3 nodelay=true status=429",
            send: BACK_TO_BACK,
        },
        Config {
            per_second: 5,
            burst: 3,
            nodelay: true,
        },
    ),
];

#[test]
#[cfg_attr(
    no_nginx,
    ignore = "needs nginx (none was found when this test was built): scripts/install_real_limiters.sh, then cargo test --test real nginx"
)]
fn headers_match_the_captured_files() {
    let captures = CAPTURES.map(|(c, _)| c);
    headers::check_all(&captures, |c| {
        let (_, config) = CAPTURES
            .iter()
            .find(|(k, _)| k.name == c.name)
            .expect("a capture's configuration");
        start(*config)
    });
}

const NODELAY: &str = "nginx-limit-req-nodelay";
const DELAY: &str = "nginx-limit-req-delay";

/// One `limit_req` configuration of the runs: nginx states nothing, so the client is told
/// `told`, fit cannot tell, and the sim's model speaks the `none` dialect.
fn nginx(
    name: &'static str,
    tests: &'static str,
    config: Config,
    rule: Rule,
    told: (u32, &'static str),
    model: &'static str,
) -> Setup {
    Setup {
        name,
        tests,
        available: cfg!(not(no_nginx)),
        rules: vec![rule],
        period: 5.0,
        told: Some(told),
        targets: UNCOUNTED,
        cannot_tell: Some("the answers carry no remaining count"),
        model,
        on_grid: false,
        start: Box::new(move || start(config)),
    }
}

/// The configurations of the runs: a bucket of 50 refilled at 10 a second (50 per 5 s),
/// excess answered at once; and 10 a second with up to 5 held in line for their turn and the
/// rest refused, the client told 10 per second (its period of 5 s only sets how long the runs
/// last and when measuring starts).
pub fn setups() -> Vec<Setup> {
    let nodelay = nginx(
        NODELAY,
        "nginx::nodelay_",
        Config {
            per_second: 10,
            burst: 49,
            nodelay: true,
        },
        Rule::Bucket {
            size: 50.0,
            per_second: 10.0,
        },
        (50, "5s"),
        r#"
kind = "leaky-bucket"
rate = "10r/s"
burst = 49
delay = "nodelay"
headers = "none"
latency = "300us"
"#,
    );
    let delay = nginx(
        DELAY,
        "nginx::delay_",
        Config {
            per_second: 10,
            burst: 5,
            nodelay: false,
        },
        Rule::Bucket {
            size: 6.0,
            per_second: 10.0,
        },
        (10, "1s"),
        r#"
kind = "leaky-bucket"
rate = "10r/s"
burst = 5
headers = "none"
latency = "300us"
"#,
    );
    vec![nodelay, delay]
}

configuration_tests!(
    no_nginx,
    "needs nginx (none was found when this test was built): scripts/install_real_limiters.sh, then cargo test --test real nginx",
    NODELAY,
    nodelay_fit,
    nodelay_sim_agrees,
    nodelay_fair_share_targets,
    misses = "fair-share 0.30.0 (blind mode as in 0.26.0) misses now and then: told 5 per 1s, 10 of 10 live runs met the targets (429s 0.49 % ± 0.35, utilization 0.951 ± 0.016, fairness 0.922 ± 0.098); under 0.27.0, 9 of 11, the 2 misses at 2.02 % and 2.39 % 429s, each with one process taking most of the 2xx (fairness 0.56 and 0.51): blind to the count, a process learns nothing of its neighbours"
);

configuration_tests!(
    no_nginx,
    "needs nginx (none was found when this test was built): scripts/install_real_limiters.sh, then cargo test --test real nginx",
    DELAY,
    delay_fit,
    delay_sim_agrees,
    delay_fair_share_targets,
    misses = "fair-share 0.30.0 (blind mode as in 0.26.0) misses now and then: told 10 per 1s, 6 of 10 live runs met the targets (429s 0 to 2.91 %, utilization 0.860 to 1.003), 2 misses at 2.27 % and 2.91 % 429s with one process taking most of the 2xx (fairness 0.41), 2 at utilization 0.883 and 0.860 (no target on fairness without a count; 0.27.0: 7 of 8 met); blind to the count, it does not read the queue's delay"
);
