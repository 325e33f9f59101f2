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

/// The most problems of one file said one by one; the rest are counted on one line (a file
/// of 24,000 bad group names printed 24,000 lines).
pub const SHOWN_PROBLEMS: usize = 20;

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let more = self.problems.len().saturating_sub(SHOWN_PROBLEMS);
        for (i, p) in self.problems.iter().take(SHOWN_PROBLEMS).enumerate() {
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
        if more > 0 {
            write!(
                f,
                "\n{}: and {more} more problem{} like these (mend these and run again to see \
                 them)",
                self.origin,
                if more == 1 { "" } else { "s" }
            )?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// 24,000 bad group names printed 24,000 lines: past the first [`SHOWN_PROBLEMS`], the
    /// rest are counted.
    #[test]
    fn many_problems_are_said_up_to_a_count() {
        let problem = |i: usize| Problem {
            line: Some(i),
            field: format!("clients[{i}].name"),
            message: "bad".into(),
            from_override: None,
        };
        let e = ScenarioError {
            origin: "f.toml".into(),
            problems: (0..24_000).map(problem).collect(),
        };
        let text = e.to_string();
        assert_eq!(text.lines().count(), SHOWN_PROBLEMS + 1);
        assert!(
            text.ends_with(
                "f.toml: and 23980 more problems like these (mend these and run again to see them)"
            ),
            "{text}"
        );
        let two = ScenarioError {
            origin: "f.toml".into(),
            problems: (0..2).map(problem).collect(),
        };
        assert_eq!(two.to_string().lines().count(), 2);
    }
}
