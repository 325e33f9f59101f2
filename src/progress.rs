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

/// The status line on screen, if one is: [`warn`] prints above it instead of through it.
static STATUS: std::sync::Mutex<Option<ProgressBar>> = std::sync::Mutex::new(None);

/// How often a [`StatusLine`] is drawn again.
pub const STATUS_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// One line at the bottom of a terminal, drawn again a few times a second from `render`
/// while a live run or `serve` goes on. Only on a terminal and without `--quiet`; piped,
/// nothing is drawn and nothing else changes. Dropped, it clears itself.
pub struct StatusLine {
    bar: ProgressBar,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StatusLine {
    /// A line drawn from `render` every [`STATUS_EVERY`], or `None` when `quiet` or stderr is
    /// not a terminal.
    pub fn start(quiet: bool, render: impl FnMut() -> String + Send + 'static) -> Option<Self> {
        if quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        Some(Self::on(ProgressDrawTarget::stderr(), render))
    }

    fn on(target: ProgressDrawTarget, mut render: impl FnMut() -> String + Send + 'static) -> Self {
        use std::sync::atomic::Ordering;
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(ProgressStyle::with_template("{msg}").expect("the template is valid"));
        bar.set_message(render());
        *lock_status() = Some(bar.clone());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let (bar, stop) = (bar.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(STATUS_EVERY);
                    bar.set_message(render());
                }
            })
        };
        StatusLine {
            bar,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        *lock_status() = None;
        self.bar.finish_and_clear();
    }
}

fn lock_status() -> std::sync::MutexGuard<'static, Option<ProgressBar>> {
    STATUS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Print `line` on stderr: above the status line when one is drawn, never through it.
pub fn warn(line: &str) {
    match lock_status().as_ref() {
        Some(bar) => bar.println(line),
        None => eprintln!("{line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_draws_itself_again_and_warnings_go_above_it() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let calls = std::sync::Arc::new(AtomicU64::new(0));
        let c = calls.clone();
        let line = StatusLine::on(ProgressDrawTarget::hidden(), move || {
            format!("{}", c.fetch_add(1, Ordering::Relaxed))
        });
        assert!(lock_status().is_some(), "warnings know of the line");
        // Drawn at once and again after each period (the thread's own loop, told no time).
        while calls.load(Ordering::Relaxed) < 3 {
            std::thread::yield_now();
        }
        drop(line);
        assert!(lock_status().is_none(), "gone once dropped");
    }
}
