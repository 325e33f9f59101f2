//! **Bucket** mode: the level refills at `R`, and the law steers two things at once, once per
//! window of the law (`window.rs`), read from the shared level `r`, the same number for every
//! client of the key.
//!
//! *The D step* steers the total send rate of everyone, `S = R − Δr/Δt`, toward a target that
//! drains the bucket's surplus above a reserve `r0` over `τ = max(drain_fill·B/R,
//! drain_windows·W')`: `R_t = max(R/4, R + (r̄ − r0)/τ)`, and `ln x += γ·clamp(ln(R_t/S))`,
//! clamped to `[−ln 100, ln 2]`. Its gain has no population in it, because `S` is already the sum
//! over everyone, so it holds from one thread to thousands and multiplies every process's rate by
//! the same factor. A first window that reads a flood (a total more than four times its target:
//! a crowd started together, each process sure it is alone) takes the whole step down at once.
//! A full start spends its surplus at most at `full_drain·R` on top of the refill.
//!
//! *The pull* brings every process toward one common function of the level, the price
//! `g(r) = (R/K)·e^((r − r0)/L)`: `ln x += λ·max(ln min(g(r), R_t) − ln x, −ln 100)`, so the only
//! rest point is equal per-thread rates (Kelly's price: the level is the price, `g` the demand
//! curve). One window of it moves the bucket by about `N·λ·Δln x` tokens with one window of
//! delay, so `λ = min(pull_max, L/(P·N̂))` is sized by the process's own estimate of the crowd,
//! `N̂ = max(S/max(x, g), n)`. A process that is nearly the whole total has nobody to be fair to:
//! on a small bucket its pull fades as the square of `1 − n·x/S` within 0.1 of the whole (its
//! price would hold the level near the top and waste the refill); on a bucket that holds the
//! crowd's swing it keeps half its pull (it may stand beside one far below it).
//!
//! *A refill nothing states*: a process that reads itself as the whole total, on a bucket whose
//! refill no policy, quota or stated reset has given, doubles its rate after a window that read
//! the bucket full at both ends (a slow start), and then takes the refill its own successes
//! prove (`refill.rs`).
//!
//! *The crowd's bucket*: where the room above the configured reserve holds `2√K` tokens, the
//! level's swing under `K` senders at random phases, the price spans at least that swing (a
//! steeper price reads the swing as a change of the crowd), the reserve is at least a quarter of
//! it, and a first refusal is read as a crowd (`refusal.rs`).

use super::Law;
use super::Update;
use super::fixed::MIN_SPAN_TOKENS;
use super::fixed::WINDOW_PULL_PERIODS;
use super::window::LawWindow;
use super::{MAX_STEP_DOWN, MIN_TOTAL_OF_RATE, Sample, clamp_step};
use crate::time::Nanos;

/// The reserve never exceeds this fraction of the bucket (unitless): the rest is the room the
/// price spans.
pub(super) const MAX_RESERVE: f64 = 0.25;
/// The price spans at least this many tokens on a bucket (4 on a fixed window, `fixed.rs`),
/// where a level held refills all the same: a wider span makes
/// the price less steep, so the pull may be stronger (churn on a 100-per-minute bucket: windowed
/// fairness 0.939 at 4 tokens, 0.967 at 10, 0.988 at 10 with `pull_periods` 1.5)...
pub(super) const MIN_BUCKET_SPAN_TOKENS: f64 = 10.0;
/// ... or, where the bucket has room for it, this many times `√K` tokens (unitless, standard
/// deviations of the swing): `K` senders at
/// random phases swing the level by about `√K` tokens, and a price that spans less reads that
/// noise as a change of the crowd (200 one-thread processes on a 100-token bucket: second-half
/// 429s 6.9 % and fairness 0.61 at 10 tokens, 0.01 % and 0.97 at `2√K` = 63). The same
/// `2√K`, read as a count of threads, is the crowd a first refusal assumes (`refusal.rs`)...
pub(super) const CROWD_SWING_SDS: f64 = 2.0;
/// ... but the span is at most this fraction of the bucket above the reserve (unitless): the
/// price must reach `R` below the top.
pub(super) const MAX_SPAN_OF_ROOM: f64 = 0.8;
/// Where the bucket holds the crowd's swing, the reserve holds at least this share of it
/// (unitless),
/// `√K/2` tokens: a crowd of `K` rests at the reserve, where the price is `R/K` per
/// thread, and a reserve of one token left its swing to the 429s (1,000 threads on a
/// 100-token bucket: 4.3 % refused in the second half, 1.5 % with `√K/2`; 200 one-thread
/// processes there kept Jain's index 0.952, 0.978 with it).
pub(super) const CROWD_RESERVE_OF_SWING: f64 = 0.25;
/// On a bucket that holds the crowd's swing, a process that reads itself as the whole total
/// keeps `1 − LONE_PULL_KEPT · share` of its pull (unitless): with the weight falling to nothing,
/// a process started at `R/(2K)` per thread beside one that drained the level to the reserve
/// was held at the crowd's price for five hours (fast_slow, Jain 0.503; 0.995 at one half).
pub(super) const LONE_PULL_KEPT: f64 = 0.5;
/// A share of the total within this (unitless) of the whole is a lone process read through the noise of
/// the total, whose pull fades as the square of `1 − share` (a lone client on a 5-token bucket
/// pulled at `1 − share` loses 18 % of its utilization).
pub(super) const LONE_SHARE_NOISE: f64 = 0.1;
/// The target never falls below this fraction of `R` (unitless): a level held low still sends
/// a quarter of the refill, and reads again.
pub(super) const MIN_TARGET_OF_RATE: f64 = 0.25;
/// The price's exponent is capped here (unitless, `e^50`), far above any rate.
pub(super) const MAX_PRICE_EXPONENT: f64 = 50.0;
/// A first window that reads a total this many times its target (unitless) cuts straight to it:
/// a D step capped per window would leave the flood to the 429s, each halving one process at a
/// time (200 one-thread processes on a 4,500-an-hour bucket: 4 % 429s over five hours, all in
/// the first minutes; 0.6 % with the cut).
pub(super) const FIRST_CUT_OVERLOAD: f64 = 4.0;

/// A window that read a bucket of unproven refill full at both ends multiplies the rate by
/// this much (unitless): the refill is more than was taken, and only a faster send shows by
/// how much (a lone process on a 92-a-second bucket stating resets in whole seconds climbed
/// from the default quota's 1.25 a second in six minutes, 2 % of the refill used until then).
pub(super) const SLOW_START_STEP: f64 = 2.0;

impl Law {
    /// `r0` in tokens: the configured share of the bucket, and on a bucket that holds the
    /// crowd's swing at least `CROWD_RESERVE_OF_SWING` of it.
    pub fn reserve(&self) -> f64 {
        let own = self.own_reserve();
        if self.holds_the_crowd() {
            own.max(CROWD_RESERVE_OF_SWING * self.crowd_swing())
                .min(self.limit * MAX_RESERVE)
        } else {
            own
        }
    }

    /// `reserve · B`, at least one token and at most a quarter of the bucket.
    pub(super) fn own_reserve(&self) -> f64 {
        (self.cfg.reserve * self.limit)
            .max(1.0)
            .min(self.limit * MAX_RESERVE)
    }

    /// The room above the reserve that the price may span: most of it.
    pub(super) fn room(&self) -> f64 {
        self.room_above(self.reserve())
    }

    /// Most of the bucket above `reserve` tokens.
    pub(super) fn room_above(&self, reserve: f64) -> f64 {
        (self.limit - 1.0 - reserve).max(0.0) * MAX_SPAN_OF_ROOM
    }

    /// `2√K` tokens: the swing of the level under `K` senders at random phases.
    pub(super) fn crowd_swing(&self) -> f64 {
        CROWD_SWING_SDS * self.cfg.crowd.sqrt()
    }

    /// A bucket (no fixed window) whose room above the configured reserve holds the crowd's
    /// swing: there the price spans that swing, a process alone still pulls, a first
    /// refusal is read as a crowd, and the reserve holds a quarter of the swing.
    pub(super) fn holds_the_crowd(&self) -> bool {
        !self.mode.is_fixed() && self.crowd_swing() <= self.room_above(self.own_reserve())
    }

    /// `L`, tokens per e-fold of the price.
    pub fn slope(&self) -> f64 {
        let room = self.room();
        let floor = if self.mode.is_fixed() {
            MIN_SPAN_TOKENS
        } else if self.holds_the_crowd() {
            // The level's swing from a crowd of `K` senders, where the bucket has room
            // for it; never a share of the room, which processes that learn the bucket from
            // the counts they read would each size apart.
            self.crowd_swing()
        } else {
            MIN_BUCKET_SPAN_TOKENS
        };
        let span = (self.cfg.span * self.limit).max(floor.min(room));
        (span / self.cfg.crowd.ln()).max(f64::MIN_POSITIVE)
    }

    pub fn crowd(&self) -> f64 {
        self.cfg.crowd
    }

    pub fn price(&self, r: f64) -> f64 {
        let exponent = ((r - self.reserve()) / self.slope()).min(MAX_PRICE_EXPONENT);
        self.rate / self.crowd() * exponent.exp()
    }

    pub fn target(&self, r: f64, t: f64) -> f64 {
        let target = if let Some(left) = self.to_reset(t) {
            self.window_target(r, left)
        } else {
            let tau = (self.cfg.drain_fill * self.limit / self.rate)
                .max(self.cfg.drain_windows * self.loop_secs());
            let mut surplus = (r - self.reserve()) / tau;
            if self.mode.full {
                surplus = surplus.min(self.cfg.full_drain * self.rate);
            }
            (self.rate + surplus).max(self.rate * MIN_TARGET_OF_RATE)
        };
        // Another limit's refusals bound the total (`stacked.rs`).
        target.min(self.other_limit.cap)
    }

    pub(super) fn refill(&self) -> f64 {
        if self.mode.is_fixed() { 0.0 } else { self.rate }
    }

    /// Apply the window of the law `w`, closed at `last`: the D step toward the target total and
    /// the pull toward the common price. Returns what it measured.
    pub(super) fn apply_window(&mut self, now: Nanos, w: LawWindow, last: Sample) -> Update {
        let dt = last.t - w.first.t;
        if self.mode.is_sliding() {
            return self.apply_sliding_window(now, w.first, last);
        }
        let since = w.since;
        // On a fixed window the process's own refusals are sent requests the level cannot show;
        // on a bucket, what it lost to overflowing counts as refilled and taken by nobody (a
        // window carried across a turnover may have counted some before it was read as fixed).
        let (refused, overflow) = if self.mode.is_fixed() {
            (w.refused, 0.0)
        } else {
            (0.0, w.overflow)
        };
        let n = self.threads.len() as f64;
        let total = (self.refill() - (last.r - since.r - w.taken - refused + overflow) / dt)
            .max(self.rate * MIN_TOTAL_OF_RATE);
        // The average total against the target at the average level since the last turnover.
        let target = self.target((since.r + last.r) / 2.0, (since.t + last.t) / 2.0);
        // A first window that reads a flood (every process of a crowd starting at once, each
        // sure it is alone) cuts straight to the target: a D step capped per window would leave
        // the flood to the 429s, each halving one process at a time. Not on a full
        // start, whose surplus is the flood's cause (there it cost a sliding hour read as a
        // bucket its fairness), nor on a fixed window (no cell gained there, and 200 singles
        // on a 15-minute window lost fairness, 0.94 to 0.90).
        let flood = self.mode.before_first_window()
            && !self.mode.full
            && !self.mode.is_fixed()
            && total > FIRST_CUT_OVERLOAD * target;
        let gain = if flood { 1.0 } else { self.cfg.gain };
        let mut ln_x = self.x.ln() + gain * clamp_step((target / total).ln());
        // A process that reads itself as the whole total, on a bucket whose refill nothing
        // states, doubles while the bucket stays full, and learns the refill from its own
        // successes once the step is taken (below).
        let alone = n * self.x >= (1.0 - LONE_SHARE_NOISE) * total;
        if alone && self.overflowing(&w, last) {
            ln_x = ln_x.max(self.x.ln() + SLOW_START_STEP.ln());
        }
        let price = self.price(last.r - self.planned(last.t));
        let crowd = (total / self.x.max(price)).max(n);
        // One window of delay: the pull's loop gain `λ·N/L` per window stays below
        // `1/pull_periods` however long the window lasts.
        let periods = if self.mode.is_fixed() {
            WINDOW_PULL_PERIODS
        } else {
            self.cfg.pull_periods
        };
        let pull = (self.slope() / (periods * crowd)).min(self.cfg.pull_max);
        // A process that is most of the total has nobody to be fair to: on a small bucket its
        // pull would only hold the level up at the price of a lone client, near the top, and
        // throw the refill away. A share within `LONE_SHARE_NOISE` of the whole is a lone
        // process read through the total's noise: the weight falls off as its square there.
        // On a bucket that holds the crowd's swing a lone client's price sits far below the
        // top, and a process that reads itself as the whole may be beside one far below it,
        // held at the price of a crowd of `K` by the level this process drains: it keeps half
        // its pull.
        let share = (n * self.x / total).clamp(0.0, 1.0);
        let pull = if self.holds_the_crowd() {
            pull * (1.0 - LONE_PULL_KEPT * share)
        } else {
            pull * (1.0 - share) * ((1.0 - share) / LONE_SHARE_NOISE).min(1.0)
        };
        let cap = if self.mode.full {
            target * self.x / total
        } else {
            target
        };
        let pulled_to = price.min(cap).ln();
        ln_x += pull * (pulled_to - ln_x).max(-MAX_STEP_DOWN.ln());
        self.set_rate(now, ln_x.exp());
        if alone {
            self.learn_refill_from_successes(now, &w, last);
        }
        Update {
            total,
            target,
            pull,
        }
    }
}
