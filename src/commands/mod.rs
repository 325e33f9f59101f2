//! The body of every command: from parsed flags to output and an exit code, one file per
//! command, so `main.rs` only dispatches and the engines never see the command line.

mod check;
mod client;
mod compare;
mod list;
mod plot;
mod run;
mod serve;

pub use check::check;
pub use client::client;
pub use compare::compare;
pub use list::list;
pub use plot::plot;
pub use run::run;
pub use serve::serve;
