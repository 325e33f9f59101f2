//! Engines own time: the sim engine advances a virtual clock; the algorithms only answer.

pub mod layout;
pub mod live;
pub mod sim;

pub use layout::Layout;
