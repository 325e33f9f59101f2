//! The Rust example client (`examples/fair_share_client.rs`, tokio + hyper on the
//! `fair-share` crate), held to the sim as the ports are. `cargo test` builds the examples;
//! when this binary runs alone (`cargo test --test ports rust`), the run builds it first (a
//! no-op when it is fresh; a binary left from an older crate would say the older `VERSION`).

use std::process::Command;

use crate::harness::{Port, built_example, port_tests};

pub const RUST: Port = Port {
    name: "rust",
    available: true,
    command: || Command::new(built_example(&[], "fair_share_client")),
};

port_tests!("rust", any(), "");
