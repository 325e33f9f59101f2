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
