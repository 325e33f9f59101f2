//! Build-time facts the tests need: whether `python3`, `ruby`, `node`, `go`, GNU parallel and
//! Chromium run here. Without one, the tests that use it (the Python example client's,
//! `tests/live/serve_record.rs`; the ports of fair-share, `tests/ports/`; the sweep recipe's,
//! `tests/sim/shards.rs`; the live page's in a headless browser, `tests/live/dashboard.rs`)
//! are compiled as ignored, with the reason, so `cargo test` shows them skipped rather than
//! passing without running.
//!
//! The same for the real rate limiters of `tests/real/`: nginx, Flask-Limiter in the virtual
//! environment `tests/real/python/.venv`, express-rate-limit and @fastify/rate-limit in
//! `tests/real/node/node_modules` (`scripts/install_real_limiters.sh` installs them all). Each is
//! looked for by running it, since a virtual environment or a node_modules folder can be there
//! and broken (a package missing, a Node.js too old for fastify).

use std::path::Path;
use std::process::{Command, Stdio};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_python3)");
    println!("cargo::rustc-check-cfg=cfg(no_ruby)");
    println!("cargo::rustc-check-cfg=cfg(no_node)");
    println!("cargo::rustc-check-cfg=cfg(no_go)");
    println!("cargo::rustc-check-cfg=cfg(no_ruby_faraday)");
    println!("cargo::rustc-check-cfg=cfg(no_node_fetch)");
    println!("cargo::rustc-check-cfg=cfg(no_gnu_parallel)");
    println!("cargo::rustc-check-cfg=cfg(no_chromium)");
    println!("cargo::rustc-check-cfg=cfg(no_xmllint)");
    for cfg in REAL_LIMITER_CFGS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    // Looked up again when PATH changes (a python3 installed into a new place).
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-changed=build.rs");
    // The interpreters of the ports (`ports/`): Debian's `ruby` and `nodejs` (whose command
    // is `node`), and Debian's `golang-go` for the Go port.
    for (program, cfg) in [
        ("python3", "no_python3"),
        ("ruby", "no_ruby"),
        ("node", "no_node"),
        ("go", "no_go"),
    ] {
        // `go` has no `--version`: `go version`.
        let flag = if program == "go" {
            "version"
        } else {
            "--version"
        };
        let works = Command::new(program)
            .arg(flag)
            .output()
            .is_ok_and(|o| o.status.success());
        if !works {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    // The ports' adapters (tests/ports/ruby_faraday.rs, javascript_fetch.rs): Faraday for Ruby's
    // middleware (Debian's ruby-faraday), a global fetch for Node's wrapper (Node 18 or later).
    for (program, script, cfg) in [
        ("ruby", "require 'faraday'", "no_ruby_faraday"),
        (
            "node",
            "typeof fetch === 'function' || process.exit(1)",
            "no_node_fetch",
        ),
    ] {
        if !succeeds(Command::new(program).args(["-e", script])) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    // moreutils has a `parallel` of its own, with other flags: only GNU's will do.
    let gnu_parallel = Command::new("parallel")
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("GNU parallel")
        });
    if !gnu_parallel {
        println!("cargo::rustc-cfg=no_gnu_parallel");
    }
    // Debian's `chromium` (the name `tests/live/dashboard.rs` starts).
    let chromium = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !chromium {
        println!("cargo::rustc-cfg=no_chromium");
    }
    // Debian's libxml2-utils, whose xmllint checks `check --junit` against its schema.
    let xmllint = Command::new("xmllint")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !xmllint {
        println!("cargo::rustc-cfg=no_xmllint");
    }
    real_limiters();
    python_adapter_libraries();
}

/// The HTTP libraries the Python port's adapters wrap (`ports/python/fair_share/requests.py`,
/// `httpx.py`), each a cfg when `python3` cannot import it: their live tests
/// (`tests/ports/python_adapters.rs`) are then ignored with the reason.
fn python_adapter_libraries() {
    // scripts/install_port_packages.sh's virtual environment, when it is there (its pinned
    // requests and httpx); else the python3 on PATH, if it has them.
    println!("cargo::rerun-if-changed=ports/python/.venv");
    let venv = Path::new("ports/python/.venv/bin/python");
    let python = if venv.exists() {
        venv.as_os_str()
    } else {
        "python3".as_ref()
    };
    for (library, cfg) in [
        ("requests", "no_python_requests"),
        ("httpx", "no_python_httpx"),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if !succeeds(Command::new(python).args(["-B", "-c", &format!("import {library}")])) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}

/// The cfgs `tests/real/` reads, one per limiter: set when that limiter cannot run here.
const REAL_LIMITER_CFGS: [&str; 5] = [
    "no_nginx",
    "no_haproxy",
    "no_flask_limiter",
    "no_express_rate_limit",
    "no_fastify_rate_limit",
];

/// Which of the real limiters run here, each as a cfg when it does not; and nginx's and
/// HAProxy's paths, which the tests start (a user's PATH often lacks `/usr/sbin`, where Debian
/// puts them).
fn real_limiters() {
    // Installing into these folders (a new venv, `npm ci`) looks again; cargo scans a folder
    // for any file changed in it.
    println!("cargo::rerun-if-changed=tests/real/python");
    println!("cargo::rerun-if-changed=tests/real/node");
    // The Debian programs, from PATH or /usr/sbin: their path for the tests, else the cfg.
    for (program, env, cfg) in [
        ("nginx", "THROTTLE_SIM_NGINX", "no_nginx"),
        ("haproxy", "THROTTLE_SIM_HAPROXY", "no_haproxy"),
    ] {
        let sbin = format!("/usr/sbin/{program}");
        let found = [program, sbin.as_str()]
            .into_iter()
            .find(|p| succeeds(Command::new(p).arg("-v")));
        println!("cargo::rustc-env={env}={}", found.unwrap_or(""));
        if found.is_none() {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    // -B: importing writes no bytecode into the venv, which would make cargo run this again.
    let venv_python = Path::new("tests/real/python/.venv/bin/python");
    let flask = venv_python.is_file()
        && succeeds(Command::new(venv_python).args(["-B", "-c", "import flask_limiter, waitress"]));
    if !flask {
        println!("cargo::rustc-cfg=no_flask_limiter");
    }
    for (packages, cfg) in [
        (["express-rate-limit", "express"], "no_express_rate_limit"),
        (["@fastify/rate-limit", "fastify"], "no_fastify_rate_limit"),
    ] {
        // Imported as the servers import them, from the folder of their node_modules.
        let script = packages
            .iter()
            .map(|p| format!("await import('{p}');"))
            .collect::<String>();
        let works = succeeds(
            Command::new("node")
                .args(["--input-type=module", "-e", &script])
                .current_dir("tests/real/node"),
        );
        if !works {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}

/// Whether `command` runs and exits 0 (its output thrown away).
fn succeeds(command: &mut Command) -> bool {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
