//! The body of every command: from parsed flags to output and an exit code, one file per
//! command, so `main.rs` only dispatches and the engines never see the command line.

mod advise;
mod check;
mod client;
mod compare;
mod fit;
mod list;
mod plot;
mod run;
mod serve;
mod shapes;

pub use advise::advise;
pub use check::check;
pub use client::client;
pub use compare::compare;
pub use fit::fit;
pub use list::list;
pub use plot::plot;
pub use run::run;
pub use serve::serve;
pub use shapes::shapes;

/// A flag's whole number as a TOML value: TOML integers are `i64`, and the flags that give
/// one refuse what is past `i64::MAX` (`cli::parse_whole`, `parse_seed`), so the clamp here
/// never bites.
fn toml_integer(v: u64) -> toml::Value {
    toml::Value::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}
