//! The Ruby port (`ports/ruby/`), standard library only.

use crate::harness::{GCRA_100PM, HEROKU_5X5, Port, agrees};

const RUBY: Port = Port {
    name: "ruby",
    program: "ruby",
    args: &["ports/ruby/drive.rb"],
};

#[test]
#[cfg_attr(
    no_ruby,
    ignore = "needs ruby on PATH (none was found when this test was built): install it (apt-get install ruby), then cargo test --test ports ruby"
)]
fn ruby_port_agrees_with_the_sim_on_heroku_5x5() {
    agrees(&RUBY, &HEROKU_5X5);
}

#[test]
#[cfg_attr(
    no_ruby,
    ignore = "needs ruby on PATH (none was found when this test was built): install it (apt-get install ruby), then cargo test --test ports ruby"
)]
fn ruby_port_agrees_with_the_sim_on_a_per_minute_bucket() {
    agrees(&RUBY, &GCRA_100PM);
}
