//! The Rust example client (`examples/fair_share_client.rs`, tokio + hyper on the
//! `fair-share` crate), held to the sim as the ports are. `cargo test` builds the examples;
//! when this binary runs alone (`cargo test --test ports rust`), the run builds it first (a
//! no-op when it is fresh; a binary left from an older crate would say the older `VERSION`).

use std::path::PathBuf;
use std::process::Command;

use crate::harness::{Port, port_tests};

pub const RUST: Port = Port {
    name: "rust",
    available: true,
    command: || Command::new(example()),
};

/// The example's binary, next to this test's in the target folder (built, or rebuilt if the
/// sources changed since).
fn example() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let bin: PathBuf = profile_dir.join("examples").join("fair_share_client");
    let release = profile_dir.ends_with("release");
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "--quiet", "--example", "fair_share_client"]);
    if release {
        build.arg("--release");
    }
    let status = build.status().expect("cargo runs");
    assert!(
        status.success(),
        "cargo build --example fair_share_client failed"
    );
    bin
}

port_tests!("rust", any(), "");
