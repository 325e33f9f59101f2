//! The exit codes, a leaf every floor may name: 0 done, 1 an `[expect]` range missed, 2 bad
//! input, 3 the run itself failed, 4 the run ended but every request failed or none was sent,
//! 5 `fit` cannot tell the rule from the trace, 130 interrupted (Ctrl-C; the shells' 128 +
//! SIGINT).

pub const OK: i32 = 0;
pub const EXPECT_MISSED: i32 = 1;
pub const BAD_INPUT: i32 = 2;
pub const FAILED: i32 = 3;
pub const INTERRUPTED: i32 = 130;
/// The tool did its part, but nothing reached a server that answered: every request failed
/// (refused, reset, timed out, 5xx) or none was sent, or (`client`) the TLS handshake with the
/// target failed before the run, or the target stopped taking connections during it. Never a
/// silent 0.
pub const NOTHING_WORKED: i32 = 4;
/// `fit` read the trace but cannot tell the server's rule from it (too short, too even, or
/// no counts): it says what to record instead and writes no `fit.toml`. Not a 0, so a script
/// that goes on to `run fit.toml` stops here.
pub const CANNOT_TELL: i32 = 5;

/// Every exit code with what it means, in a few words: the one source of each command's
/// `--help` list and of README.md's table (a test holds the table to it).
pub const MEANINGS: &[(i32, &str)] = &[
    (OK, "done"),
    (
        EXPECT_MISSED,
        "an [expect] range missed (each named with its value and range)",
    ),
    (
        BAD_INPUT,
        "bad input (the file, line and field, or the flag, named)",
    ),
    (
        FAILED,
        "the run failed (a disk error, a live worker process died)",
    ),
    (
        NOTHING_WORKED,
        "every request failed or none was sent, or the target took no connection",
    ),
    (
        CANNOT_TELL,
        "fit cannot tell the rule from the trace (nothing written)",
    ),
    (INTERRUPTED, "interrupted (Ctrl-C; what finished is kept)"),
];

/// `Exit codes:` and a line for each of `codes`, as a command's `--help` ends.
pub fn help(codes: &[i32]) -> String {
    let mut out = String::from("Exit codes:");
    for (code, meaning) in MEANINGS.iter().filter(|(c, _)| codes.contains(c)) {
        out.push_str(&format!("\n  {code:<4} {meaning}"));
    }
    out
}

/// `help` of every code.
pub fn help_all() -> String {
    help(&MEANINGS.iter().map(|(c, _)| *c).collect::<Vec<_>>())
}

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Work under way that a second Ctrl-C (or SIGTERM) must not cut short: held while it lasts.
static KEPT: AtomicUsize = AtomicUsize::new(0);
/// A second interrupt came while some work was kept.
static SECOND: AtomicBool = AtomicBool::new(false);

/// While the returned guard lives, a second interrupt does not end the process at once
/// ([`second_interrupt`] says so instead): `serve --record` holds one from the first request
/// until its folder is written, so that the two signals `timeout` relays, or an impatient
/// second Ctrl-C, never leave the folder half-written.
pub fn keep_until_written() -> KeepGuard {
    KEPT.fetch_add(1, Ordering::SeqCst);
    KeepGuard(())
}

/// Holds off a second interrupt's immediate exit; see [`keep_until_written`].
#[must_use = "the work is kept only while the guard lives"]
pub struct KeepGuard(());

impl Drop for KeepGuard {
    fn drop(&mut self) {
        KEPT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Called by the signal handler on a second interrupt: true when the process may end now
/// (nothing is kept); otherwise the interrupt is noted for [`interrupted_twice`].
pub fn second_interrupt() -> bool {
    if KEPT.load(Ordering::SeqCst) == 0 {
        return true;
    }
    SECOND.store(true, Ordering::SeqCst);
    false
}

/// A second interrupt came while work was kept.
pub fn interrupted_twice() -> bool {
    SECOND.load(Ordering::SeqCst)
}
