//! What is wrong with a scenario: every problem at once, each with its file, line and field,
//! and the `--set` (or flag) that put the value there.

use std::fmt;

/// Everything wrong with one scenario, each problem with its place.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    /// The file (or `<inline>`).
    pub origin: String,
    pub problems: Vec<Problem>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub line: Option<usize>,
    /// Empty for problems with the file as a whole.
    pub field: String,
    pub message: String,
    /// The `--set` that put the value there, when one did.
    pub from_override: Option<String>,
}

impl std::error::Error for ScenarioError {}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}", self.origin)?;
            if let Some(line) = p.line {
                write!(f, ":{line}")?;
            }
            f.write_str(": ")?;
            if !p.field.is_empty() {
                write!(f, "{}: ", p.field)?;
            }
            f.write_str(&p.message)?;
            // A `--set store.url=redis://:PW@…` is quoted without its password.
            match p.from_override.as_deref().map(crate::redact::shown_url) {
                // A named flag (`--limit 5`) is quoted as the user typed it, and an axis level
                // or a [[cells]] rule (`axes.rs`) names itself.
                Some(o)
                    if o.starts_with("--")
                        || o.starts_with("level ")
                        || o.starts_with("[[cells]]") =>
                {
                    write!(f, " (from {o})")?
                }
                Some(o) => write!(f, " (from --set {o})")?,
                None => {}
            }
        }
        Ok(())
    }
}

impl ScenarioError {
    pub fn whole_file(origin: &str, message: impl Into<String>) -> Self {
        ScenarioError {
            origin: origin.to_string(),
            problems: vec![Problem {
                line: None,
                field: String::new(),
                message: message.into(),
                from_override: None,
            }],
        }
    }
}
