//! The exit codes, a leaf every floor may name: 0 done, 1 an `[expect]` range missed, 2 bad
//! input, 3 the run itself failed, 4 the run ended but every request failed or none was sent,
//! 130 interrupted (Ctrl-C; the shells' 128 + SIGINT).

pub const OK: i32 = 0;
pub const EXPECT_MISSED: i32 = 1;
pub const BAD_INPUT: i32 = 2;
pub const FAILED: i32 = 3;
pub const INTERRUPTED: i32 = 130;
/// The tool did its part, but nothing reached a server that answered: every request failed
/// (refused, reset, timed out, 5xx) or none was sent, or (`client`) the TLS handshake with the
/// target failed before the run. Never a silent 0.
pub const NOTHING_WORKED: i32 = 4;
