//! The Python port (`ports/python/`), standard library only.

use crate::harness::{GCRA_100PM, HEROKU_5X5, Port, agrees};

const PYTHON: Port = Port {
    name: "python",
    program: "python3",
    args: &["ports/python/drive.py"],
};

#[test]
#[cfg_attr(
    no_python3,
    ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test ports python"
)]
fn python_port_agrees_with_the_sim_on_heroku_5x5() {
    agrees(&PYTHON, &HEROKU_5X5);
}

#[test]
#[cfg_attr(
    no_python3,
    ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test ports python"
)]
fn python_port_agrees_with_the_sim_on_a_per_minute_bucket() {
    agrees(&PYTHON, &GCRA_100PM);
}
