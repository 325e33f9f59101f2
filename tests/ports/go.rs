//! The Go port (`ports/go/`), standard library only: its driver is built once with `go build`
//! (`tests/common/go.rs`), before any server starts.

use std::process::Command;

use crate::common::go::go_driver;
use crate::harness::{GCRA_100PM, Port, held};

pub const GO: Port = Port {
    name: "go",
    available: !cfg!(no_go),
    command: || Command::new(go_driver()),
};

#[test]
#[cfg_attr(
    no_go,
    ignore = "needs go on PATH (none was found when this test was built): install it (apt-get install golang-go), then cargo test --test ports go"
)]
fn go_port_agrees_with_the_sim_on_a_per_minute_bucket() {
    held("go", &GCRA_100PM);
}

/// The second tier: heroku_5x5 for 40 s of real time.
mod tier2 {
    use crate::harness::{HEROKU_5X5, held};

    #[test]
    #[cfg_attr(
        no_go,
        ignore = "needs go on PATH (none was found when this test was built): install it (apt-get install golang-go), then cargo test --test ports go"
    )]
    #[cfg_attr(
        not(no_go),
        ignore = "tier 2, 40 s of real time (every port at once): cargo test -- --ignored tier2::"
    )]
    fn go_port_agrees_with_the_sim_on_heroku_5x5() {
        held("go", &HEROKU_5X5);
    }
}
