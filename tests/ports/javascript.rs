//! The JavaScript port (`ports/javascript/`), Node's standard library only.

use crate::harness::{GCRA_100PM, HEROKU_5X5, Port, agrees};

const JAVASCRIPT: Port = Port {
    name: "javascript",
    program: "node",
    args: &["ports/javascript/drive.mjs"],
};

#[test]
#[cfg_attr(
    no_node,
    ignore = "needs node on PATH (none was found when this test was built): install it (apt-get install nodejs), then cargo test --test ports javascript"
)]
fn javascript_port_agrees_with_the_sim_on_heroku_5x5() {
    agrees(&JAVASCRIPT, &HEROKU_5X5);
}

#[test]
#[cfg_attr(
    no_node,
    ignore = "needs node on PATH (none was found when this test was built): install it (apt-get install nodejs), then cargo test --test ports javascript"
)]
fn javascript_port_agrees_with_the_sim_on_a_per_minute_bucket() {
    agrees(&JAVASCRIPT, &GCRA_100PM);
}
