//! The collector of a scenario's problems, below both the loader (`load.rs`, which types each
//! section) and the range checks (`checks.rs`), which each add to it: neither has to import
//! the other to report.

use std::fmt;

use super::path::FieldPath;

/// Collects every problem instead of stopping at the first, so one run of the tool shows all.
/// The loader and the range checks each add their own methods to it.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) problems: Vec<(FieldPath, String)>,
}

impl Builder {
    pub(super) fn problem(&mut self, path: FieldPath, message: impl fmt::Display) {
        self.problems.push((path, message.to_string()));
    }

    /// Extend the last problem's message when it is of the given kind (before its "did you
    /// mean", which stays last).
    pub(super) fn add_hint(&mut self, kind: &str, hint: &str) {
        if let Some((_, m)) = self.problems.last_mut()
            && m.starts_with(kind)
        {
            let at = m.find("; did you mean").unwrap_or(m.len());
            m.insert_str(at, hint);
        }
    }
}
