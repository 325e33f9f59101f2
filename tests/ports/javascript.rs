//! The JavaScript port (`ports/javascript/`), Node's standard library only.

use std::process::Command;

use crate::harness::{GCRA_100PM, Port, held};

pub const JAVASCRIPT: Port = Port {
    name: "javascript",
    available: !cfg!(no_node),
    command: || {
        let mut c = Command::new("node");
        c.arg("ports/javascript/drive.mjs");
        c
    },
};

#[test]
#[cfg_attr(
    no_node,
    ignore = "needs node on PATH (none was found when this test was built): install it (apt-get install nodejs), then cargo test --test ports javascript"
)]
fn javascript_port_agrees_with_the_sim_on_a_per_minute_bucket() {
    held("javascript", &GCRA_100PM);
}

/// The second tier: heroku_5x5 for 40 s of real time.
mod tier2 {
    use crate::harness::{HEROKU_5X5, held};

    #[test]
    #[cfg_attr(
        no_node,
        ignore = "needs node on PATH (none was found when this test was built): install it (apt-get install nodejs), then cargo test --test ports javascript"
    )]
    #[cfg_attr(
        not(no_node),
        ignore = "tier 2, 40 s of real time (every port at once): cargo test -- --ignored tier2::"
    )]
    fn javascript_port_agrees_with_the_sim_on_heroku_5x5() {
        held("javascript", &HEROKU_5X5);
    }
}
