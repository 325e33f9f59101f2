//! What the law believes about the server (its [`Shape`]) and where the process is in its life
//! (its [`Phase`]), and every transition between them, in [`Mode::on`]: the readers
//! (`level.rs`, `stated.rs`, `echo.rs`, and the answer's count in `mod.rs`) name the evidence
//! ([`Evidence`]), this file decides what it changes.
//!
//! ```text
//!               a count     ┌────────┐  3 resets in a row say a whole period,  ┌───────────────┐
//!  ┌─────────┐   is read    │        │  or alone, the level echoes own sends   │               │
//!  │ NoCount │ ───────────> │ Bucket │ ──────────────────────────────────────> │ SlidingWindow │
//!  └─────────┘              │        │ <────────────────────────────────────── │               │
//!                           └────────┘  a reset short of a period, no quota    └───────────────┘
//!                             │    ^    known, or the level refills between       │        ^
//!       a turnover, or an end │    │    own sends                                 │        │ alone, the
//!       that stays put while  │    │ the level rises, or      an end that stays │        │ level echoes
//!       the count falls       v    │ the end drifts           put, count falling│        │ own sends
//!                       ┌─────────────┐ <─────────────────────────────────────────┘        │
//!                       │ FixedWindow │ ───────────────────────────────────────────────────┘
//!                       └─────────────┘
//!                        ↺ each turnover narrows down where the resets fall, and a stated
//!                          end later than the reset predicted moves them on
//!
//!   Phase:   Start ──── a rate cut ────> StartRefused
//!              │                              │
//!              │ a window closes              │ a window closes
//!              └──────────────> Steady <──────┘
//! ```
//!
//! A sliding window read from the level's echo stays one whatever the stated resets say, until
//! the level refills between own sends.
//!
//! A full start (the first reading finds the bucket at least `full_level` full) is a flag beside
//! the phase: it lasts until the level comes down into the price's range or a fixed window is
//! read, whatever the phase.

/// What the law believes about the server's rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Shape {
    /// No answer has carried a remaining count yet: blind mode (`blind.rs`).
    NoCount,
    /// The level refills at `R` (a token bucket, GCRA, or anything not yet told apart):
    /// `bucket.rs`.
    Bucket,
    /// The level is an allowance that nothing refills until the next reset; the resets fall a
    /// period apart, somewhere in `resets` (seconds, modulo the period): `fixed.rs`.
    FixedWindow { resets: (f64, f64) },
    /// The level is what the last period left unused: `sliding.rs`.
    SlidingWindow,
}

/// Where the process is in its life, for the two rules that only hold at its start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Phase {
    /// No window of the law has closed and the rate was never cut: a refusal now is a crowd
    /// that emptied the bucket before anyone could read it (`refusal.rs`), and a first window
    /// that reads a flood cuts straight to its target (`bucket.rs`).
    Start,
    /// Cut once already, before any window closed: a first window may still read a flood.
    StartRefused,
    /// At least one window of the law has closed.
    Steady,
}

/// What a reader saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Evidence {
    /// An answer (a success or a refusal) carried a remaining count.
    CountRead,
    /// The first reading found the bucket at least `full_level` full.
    FullAtFirstReading,
    /// The level came down into the price's range: a full start's surplus is spent.
    LevelInPriceRange,
    /// The level jumped up by more than the refill explains (not in sliding mode): a fixed
    /// window turned over, and every turnover seen puts the resets in `resets`.
    Turnover { resets: (f64, f64) },
    /// Two successes, far enough apart, stated the same window end while the count fell: a
    /// fixed window before any turnover, its resets in `resets`.
    StatedEndStaysPut { resets: (f64, f64) },
    /// On a fixed window, a success's stated end, less the header's rounding, lies beyond the
    /// reset predicted: a window opened by its key's first request after the last one closed
    /// turns over a little later each period than the turnovers seen say. The resets move to
    /// `resets`.
    StatedEndLater { resets: (f64, f64) },
    /// On a fixed window, the level rose by more than a count's rounding without a reset.
    RefilledWithoutReset,
    /// On a fixed window, the stated end drifted by more than two resolutions, and not by
    /// whole periods, without a turnover of the level: a sliding-window counter's next drop or
    /// a sliding log's oldest admission, which stayed put through the first window.
    EndDrifted,
    /// Three answered readings in a row, over more than two slacks, each stated a whole
    /// period and more than a bucket's reset (`(B − r)/R`).
    ResetsSaySliding,
    /// A stated reset short of a period (a window counting down), or no quota known to tell
    /// a bucket's reset by, or a fixed window already read.
    ResetsSayNotSliding,
    /// Alone on a window too short for its resets to tell: the level read `B` less the own
    /// successes of the last period, nearly every time.
    LevelEchoesOwnSuccesses,
    /// ... or above it half the time: something refills.
    LevelRefillsBetweenSuccesses,
    /// A window of the law closed and steered the rate.
    WindowClosed,
    /// A refusal cut the rate.
    RateCut,
}

/// The law's mode: its shape, its phase, and whether a full start's surplus is still spent.
#[derive(Clone, Copy, Debug)]
pub(super) struct Mode {
    pub(super) shape: Shape,
    pub(super) phase: Phase,
    pub(super) full: bool,
    /// The level echoed the process's own successes (`echo.rs`): a sliding window, whatever
    /// the stated resets say from then on (a sliding log states when its oldest admission
    /// leaves, a second off when busy), until the level refills between successes.
    pub(super) echoed: bool,
}

impl Mode {
    pub(super) fn new() -> Mode {
        Mode {
            shape: Shape::NoCount,
            phase: Phase::Start,
            full: false,
            echoed: false,
        }
    }

    /// The one place the mode changes.
    pub(super) fn on(&mut self, evidence: Evidence) {
        use Evidence as E;
        use Shape as S;
        match evidence {
            // The first count ends blind mode for good: the level is read from now on.
            E::CountRead => {
                if self.shape == S::NoCount {
                    self.shape = S::Bucket;
                }
            }
            // A deep bucket and a sliding window look alike while full: spend the surplus
            // slowly until the level says which.
            E::FullAtFirstReading => self.full = true,
            E::LevelInPriceRange => self.full = false,
            // A fixed window: what the level holds is an allowance, lost at the reset. Its
            // surplus is no full start's.
            E::Turnover { resets } | E::StatedEndStaysPut { resets } => {
                self.shape = S::FixedWindow { resets };
                self.full = false;
            }
            // The same window, turning over later than predicted.
            E::StatedEndLater { resets } => {
                if self.is_fixed() {
                    self.shape = S::FixedWindow { resets };
                }
            }
            // The server refills after all, or its stated end moves on within a window.
            E::RefilledWithoutReset | E::EndDrifted => {
                if let S::FixedWindow { .. } = self.shape {
                    self.shape = S::Bucket;
                }
            }
            E::ResetsSaySliding => {
                if self.shape == S::Bucket {
                    self.shape = S::SlidingWindow;
                }
            }
            // The level's echo outranks the stated resets.
            E::ResetsSayNotSliding if self.echoed => {}
            E::ResetsSayNotSliding | E::LevelRefillsBetweenSuccesses => {
                self.echoed = false;
                if self.shape == S::SlidingWindow {
                    self.shape = S::Bucket;
                }
            }
            // Alone on a fixed window the level would read above `B` too (the own count still
            // holds what was taken before its reset): a turnover seen was a burst's echo. Alone
            // on a sliding log, its resets said otherwise.
            E::LevelEchoesOwnSuccesses => {
                self.shape = S::SlidingWindow;
                self.echoed = true;
            }
            E::WindowClosed => self.phase = Phase::Steady,
            E::RateCut => {
                if self.phase == Phase::Start {
                    self.phase = Phase::StartRefused;
                }
            }
        }
    }

    /// Whether an answer has carried a count (else blind mode).
    pub(super) fn reads_count(&self) -> bool {
        self.shape != Shape::NoCount
    }

    pub(super) fn is_fixed(&self) -> bool {
        matches!(self.shape, Shape::FixedWindow { .. })
    }

    pub(super) fn is_sliding(&self) -> bool {
        self.shape == Shape::SlidingWindow
    }

    /// Where a fixed window's resets fall, modulo the period.
    pub(super) fn reset_span(&self) -> Option<(f64, f64)> {
        match self.shape {
            Shape::FixedWindow { resets } => Some(resets),
            _ => None,
        }
    }

    /// No window of the law has closed yet.
    pub(super) fn before_first_window(&self) -> bool {
        self.phase != Phase::Steady
    }
}
