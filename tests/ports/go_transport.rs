//! The Go port's `http.RoundTripper` (`ports/go/transport.go`): the Go driver with `--via
//! transport`, every goroutine sending through one `fairshare.Transport` per process.

use std::process::Command;

use crate::common::go::go_driver;
use crate::harness::{Port, port_tests};

pub const GO_TRANSPORT: Port = Port {
    name: "go-transport",
    available: !cfg!(no_go),
    command: || {
        let mut driver = Command::new(go_driver());
        driver.args(["--via", "transport"]);
        driver
    },
};

port_tests!(
    "go-transport",
    no_go,
    "needs go on PATH (none was found when this test was built): install it (apt-get install golang-go), then cargo test --test ports go_transport"
);
