//! The Python port (`ports/python/`), standard library only.

use std::process::Command;

use crate::harness::{GCRA_100PM, Port, held};

pub const PYTHON: Port = Port {
    name: "python",
    available: !cfg!(no_python3),
    command: || {
        let mut c = Command::new("python3");
        c.arg("ports/python/drive.py");
        c
    },
};

#[test]
#[cfg_attr(
    no_python3,
    ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test ports python"
)]
fn python_port_agrees_with_the_sim_on_a_per_minute_bucket() {
    held("python", &GCRA_100PM);
}

/// The second tier: heroku_5x5 for 40 s of real time.
mod tier2 {
    use crate::harness::{HEROKU_5X5, held};

    #[test]
    #[cfg_attr(
        no_python3,
        ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test ports python"
    )]
    #[cfg_attr(
        not(no_python3),
        ignore = "tier 2, 40 s of real time (every port at once): cargo test -- --ignored tier2::"
    )]
    fn python_port_agrees_with_the_sim_on_heroku_5x5() {
        held("python", &HEROKU_5X5);
    }
}
