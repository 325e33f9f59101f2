//! The Go port (`ports/go/`), standard library only: its driver is built once with `go build`
//! (`tests/common/go.rs`), before any server starts.

use std::process::Command;

use crate::common::go::go_driver;
use crate::harness::{Port, port_tests};

pub const GO: Port = Port {
    name: "go",
    available: !cfg!(no_go),
    command: || Command::new(go_driver()),
};

port_tests!(
    "go",
    no_go,
    "needs go on PATH (none was found when this test was built): install it (apt-get install golang-go), then cargo test --test ports go"
);
