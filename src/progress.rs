//! How long work shows itself: one bar per running task on a terminal, one plain line per
//! finished run when stderr is piped (CI logs stay readable), nothing with `--quiet`.

use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Bars,
    Lines,
    Quiet,
}

pub struct Progress {
    style: Style,
    multi: MultiProgress,
}

impl Progress {
    /// Bars when stderr is a terminal, lines when it is not, nothing when `quiet`.
    pub fn new(quiet: bool) -> Self {
        let style = if quiet {
            Style::Quiet
        } else if std::io::stderr().is_terminal() {
            Style::Bars
        } else {
            Style::Lines
        };
        Self::with_style(style)
    }

    pub fn with_style(style: Style) -> Self {
        let multi = if style == Style::Bars {
            MultiProgress::new()
        } else {
            MultiProgress::with_draw_target(ProgressDrawTarget::hidden())
        };
        Progress { style, multi }
    }

    pub fn style(&self) -> Style {
        self.style
    }

    /// A bar for one task of `len` simulated seconds, drawn only in [`Style::Bars`].
    pub fn bar(&self, label: &str, len: u64) -> ProgressBar {
        if self.style != Style::Bars {
            return ProgressBar::hidden();
        }
        let bar = self.multi.add(ProgressBar::new(len.max(1)));
        bar.set_style(
            ProgressStyle::with_template("{msg:>24} [{bar:32}] {percent:>3}% ({eta})")
                .expect("the template is valid")
                .progress_chars("=> "),
        );
        bar.set_message(label.to_string());
        bar
    }

    /// A run finished: its one line when piped.
    pub fn run_done(&self, line: &str) {
        if self.style == Style::Lines {
            eprintln!("{line}");
        }
    }

    /// A task (all runs of a variant) finished: a line above the bars on a terminal.
    pub fn task_done(&self, bar: &ProgressBar, line: &str) {
        bar.finish_and_clear();
        if self.style == Style::Bars {
            let _ = self.multi.println(line);
        }
    }
}

/// Whether stdout may carry colour: a terminal, and `NO_COLOR` unset or empty.
pub fn colour_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
