//! The Ruby port (`ports/ruby/`), standard library only.

use std::process::Command;

use crate::harness::{GCRA_100PM, Port, held};

pub const RUBY: Port = Port {
    name: "ruby",
    available: !cfg!(no_ruby),
    command: || {
        let mut c = Command::new("ruby");
        c.arg("ports/ruby/drive.rb");
        c
    },
};

#[test]
#[cfg_attr(
    no_ruby,
    ignore = "needs ruby on PATH (none was found when this test was built): install it (apt-get install ruby), then cargo test --test ports ruby"
)]
fn ruby_port_agrees_with_the_sim_on_a_per_minute_bucket() {
    held("ruby", &GCRA_100PM);
}

/// The second tier: heroku_5x5 for 40 s of real time.
mod tier2 {
    use crate::harness::{HEROKU_5X5, held};

    #[test]
    #[cfg_attr(
        no_ruby,
        ignore = "needs ruby on PATH (none was found when this test was built): install it (apt-get install ruby), then cargo test --test ports ruby"
    )]
    #[cfg_attr(
        not(no_ruby),
        ignore = "tier 2, 40 s of real time (every port at once): cargo test -- --ignored tier2::"
    )]
    fn ruby_port_agrees_with_the_sim_on_heroku_5x5() {
        held("ruby", &HEROKU_5X5);
    }
}
