//! Engines own time: the sim engine advances a virtual clock; the live engine runs on a real
//! one. The algorithms only answer.

use std::sync::atomic::AtomicBool;

use crate::time::Nanos;

pub mod client_loop;
mod error;
pub mod live;
mod queue;
pub mod sim;

pub use error::EngineError;

/// Where the engine reports how far it got, and learns it should stop early.
pub struct Control<'a> {
    /// Called now and then with the virtual time reached.
    pub progress: &'a mut dyn FnMut(Nanos),
    /// Set (e.g. by Ctrl-C) to end the run early with a partial summary.
    pub interrupt: &'a AtomicBool,
}
