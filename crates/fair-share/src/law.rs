//! The law's state for one process and its threads, told the time and the answers. The
//! formulas are in the crate's documentation (lib.rs); this file is them, step by step.

use std::collections::VecDeque;
use std::time::Duration;

use crate::answer::{Answer, Policy, Status};
use crate::draw::Draw;
use crate::params::Params;
use crate::time::{Nanos, from_secs, nanos, secs};

/// A stated quota's refill, requests per second, computed as the simulator always has
/// (`limit · 10⁹ / window`) so both give the same rate to the last bit.
fn policy_rate(limit: u64, window: Nanos) -> f64 {
    if window == 0 {
        return 0.0;
    }
    limit as f64 * 1e9 / window as f64
}

/// One answer's reading of the shared level: when the server counted it, and what was left.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Sample {
    t: f64,
    r: f64,
}

#[derive(Clone, Copy, Debug, Default)]
struct ThreadState {
    /// The process phase at which this thread sends next.
    target: Option<f64>,
    last_send: Option<Nanos>,
    /// This send's jitter, in phase units.
    jit: f64,
    /// Not before this (Retry-After, error backoff).
    hold: Nanos,
    errors: u32,
}

/// The process's phase: periods of the per-thread rate elapsed, continuous across rate changes.
#[derive(Clone, Copy, Debug, Default)]
struct Phase {
    at: Nanos,
    phase: f64,
}

/// A window end the stated resets agree on: when (seconds), and from when to when it was said.
#[derive(Clone, Copy, Debug)]
struct WindowEnd {
    end: f64,
    since: f64,
    seen: f64,
}

/// An answer's stated reset, for `learn_refill`: the end it names (`t` + reset, seconds),
/// when it came, the reset itself and the level read with it.
#[derive(Clone, Copy, Debug)]
struct StatedReset {
    end: f64,
    at: f64,
    reset: f64,
    r: f64,
}

/// A window of the law: the answers since its first reading, from which it measures the total.
/// On a fixed window it may span the server's resets: the level is then read against
/// the first reading after the last of them, and what was taken before that is counted apart.
#[derive(Clone, Copy, Debug)]
struct LawWindow {
    first: Sample,
    samples: u32,
    /// The reading the level is read against: the first, or the first after the last turnover.
    since: Sample,
    /// Tokens taken before `since`: the level's fall up to each turnover, and what the
    /// allowance lost after each reset before its first reading (`B − r`).
    taken: f64,
    /// The process's own refusals in the window: on a fixed window, requests the level cannot
    /// show (an allowance spent reads 0 however many more come).
    refused: f64,
}

impl LawWindow {
    fn new(s: Sample) -> LawWindow {
        LawWindow {
            first: s,
            samples: 1,
            since: s,
            taken: 0.0,
            refused: 0.0,
        }
    }
}

/// Readings of `r + own − B` over a few periods, for `read_echo`.
#[derive(Clone, Copy, Debug)]
struct EchoTally {
    since: f64,
    readings: u32,
    /// Readings with `r + own = B` exactly...
    exact: u32,
    /// ... and above it (refilled since: no sliding window).
    above: u32,
    level: f64,
}

impl EchoTally {
    fn new(since: f64) -> EchoTally {
        EchoTally {
            since,
            readings: 0,
            exact: 0,
            above: 0,
            level: 0.0,
        }
    }
}

/// One process's state.
pub struct Law {
    cfg: Params,
    x: f64,
    /// The bucket `B`: `RateLimit-Limit`, else the quota.
    limit: f64,
    /// `R`, tokens per second.
    rate: f64,
    /// The quota's period, seconds.
    period: f64,
    /// The policy last taken from a `RateLimit-Policy`.
    policy: Option<Policy>,
    /// Whether the server has sent a remaining count.
    headers: bool,
    threads: Vec<ThreadState>,
    clock: Phase,
    offset: Option<f64>,
    window: Option<LawWindow>,
    newest: Option<Sample>,
    /// How far the server's count of the newest reading may lie from its `t`: from the answer's
    /// arrival back to `t` (half its latency). A jump read as a fixed window's turnover
    /// must exceed the refill over the readings' spacing widened by both.
    newest_slack: f64,
    last_decrease: Option<Nanos>,
    last_increase: Option<Nanos>,
    /// Without a count: how fast the process climbs, in requests per second per second at
    /// its fair share (see `blind_success`).
    probe: f64,
    decreases: u64,
    /// Where a fixed window's resets fall, modulo the period: the span every turnover seen so
    /// far agrees on (see `place_reset`). None: the server refills (no fixed window seen).
    reset_span: Option<(f64, f64)>,
    full_start: bool,
    updates: u64,
    /// Readings in a row whose stated reset says sliding window (see `read_reset`).
    sliding_votes: u32,
    /// When the first of them came.
    sliding_since: Option<f64>,
    /// The server is a sliding window: the level is the allowance left unused in the last
    /// period, and it is read as the total rate.
    sliding: bool,
    /// Whether the server has stated a policy (`RateLimit-Policy`) on any answer.
    stated_policy: bool,
    /// The window end the stated resets say now, without a policy (see `read_period`).
    window_end: Option<WindowEnd>,
    /// The one before it, if it was stated alike for long enough.
    last_end: Option<f64>,
    /// The first success that stated the current end (`t` + reset), and its level, for
    /// `read_fixed_end`.
    stated_end: Option<(f64, Sample)>,
    /// The end (`t` + reset) the last answer stated, when it came, the reset it stated and the
    /// level it read, for `learn_refill`.
    moving_end: Option<StatedReset>,
    /// The refill learned from the stated resets, if any (see `learn_refill`).
    refill_bound: Option<f64>,
    /// The lowest ceiling the stated resets put on a bucket's refill, `(B − r + 1)/(reset −
    /// res)`...
    refill_ceiling: Option<f64>,
    /// ... the longest reset stated...
    longest_reset: f64,
    /// ... and whether a lower bound rose above that ceiling or the level turned over as a
    /// fixed window's: no bucket states such resets.
    no_bucket: bool,
    /// When the server counted this process's successes (seconds, in order), over the last
    /// period, on a window too short for its stated resets to say sliding.
    own_counted: VecDeque<f64>,
    echo: Option<EchoTally>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Update {
    pub total: f64,
    pub target: f64,
    pub pull: f64,
}

impl Law {
    pub fn thread_rate(&self) -> f64 {
        self.x
    }

    fn clamp_rate(&self, x: f64) -> f64 {
        let hi = self.cfg.max_rate * self.rate;
        let lo = self.rate / self.cfg.crowd * MIN_RATE_OF_SHARE;
        x.clamp(lo, hi)
    }

    /// `r0` in tokens: the configured share of the bucket, and on a bucket that holds the
    /// crowd's swing at least [`CROWD_RESERVE_OF_SWING`] of it.
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
    fn own_reserve(&self) -> f64 {
        (self.cfg.reserve * self.limit)
            .max(1.0)
            .min(self.limit * MAX_RESERVE)
    }

    /// The room above the reserve that the price may span: most of it.
    fn room(&self) -> f64 {
        self.room_above(self.reserve())
    }

    /// Most of the bucket above `reserve` tokens.
    fn room_above(&self, reserve: f64) -> f64 {
        (self.limit - reserve).max(0.0) * MAX_SPAN_OF_ROOM
    }

    /// `2√K` tokens: the swing of the level under `K` senders at random phases.
    fn crowd_swing(&self) -> f64 {
        CROWD_SWING_SDS * self.cfg.crowd.sqrt()
    }

    /// A bucket (no fixed window) whose room above the configured reserve holds the crowd's
    /// swing: there the price spans that swing, a process alone still pulls, a first
    /// refusal is read as a crowd, and the reserve holds a quarter of the swing.
    fn holds_the_crowd(&self) -> bool {
        self.reset_span.is_none() && self.crowd_swing() <= self.room_above(self.own_reserve())
    }

    /// `L`, tokens per e-fold of the price.
    pub fn slope(&self) -> f64 {
        let room = self.room();
        let floor = if self.reset_span.is_some() {
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
        if let Some(left) = self.to_reset(t) {
            // What is left at the reset is lost: the reserve shrinks to nothing by then.
            let reserve = WINDOW_RESERVE_SHARE * self.reserve() * (left / self.period).min(1.0);
            // Spread over a window of the law at least; one longer than what is left spans the
            // reset, and the allowances of the server's windows that follow are spent in it
            // too, whole: a reserve kept in them would be lost at their resets.
            let horizon = left.max(self.window_secs());
            let later = self.limit * (horizon - left) / self.period;
            // `r` is read after the request it answers was counted: the allowance at that
            // instant held one more.
            return ((r + 1.0 - reserve + later) / horizon)
                .max(self.rate * MIN_WINDOW_TARGET_OF_RATE);
        }
        let tau = (self.cfg.drain_fill * self.limit / self.rate)
            .max(self.cfg.drain_windows * self.loop_secs());
        let mut surplus = (r - self.reserve()) / tau;
        if self.full_start {
            surplus = surplus.min(self.cfg.full_drain * self.rate);
        }
        (self.rate + surplus).max(self.rate * MIN_TARGET_OF_RATE)
    }

    fn refill(&self) -> f64 {
        if self.reset_span.is_some() {
            0.0
        } else {
            self.rate
        }
    }

    fn planned(&self, t: f64) -> f64 {
        self.to_reset(t).map_or(0.0, |left| {
            (self.limit - self.reserve()).max(0.0) * left / self.period
        })
    }

    fn to_reset(&self, t: f64) -> Option<f64> {
        let period = self.period;
        self.reset_at()
            .map(|reset| period - (t - reset).rem_euclid(period))
    }

    /// The tokens a window must see taken: `min_flow`, but on a fixed window at most a share
    /// of its allowance (a window of the law must close between two of the server's resets).
    fn min_flow(&self) -> f64 {
        if self.reset_span.is_some() {
            self.cfg.min_flow.min(self.limit * MAX_FLOW_OF_ALLOWANCE)
        } else {
            self.cfg.min_flow
        }
    }

    /// How finely the server states its resets, in the client's seconds (`reset_resolution`).
    fn resolution(&self) -> f64 {
        secs(nanos(self.cfg.reset_resolution))
    }

    /// The window length `W`: one own period, or long enough for `min_flow` tokens at `R`.
    pub fn window_secs(&self) -> f64 {
        self.cfg.window_periods / self.x / (self.threads.len() as f64).sqrt()
    }

    /// How long a window lasts at rest: one own period, or long enough for `min_flow` tokens
    /// at `R`.
    fn loop_secs(&self) -> f64 {
        self.window_secs().max(self.cfg.min_flow / self.rate)
    }

    fn phase(&self, now: Nanos) -> f64 {
        self.clock.phase + secs(now.saturating_sub(self.clock.at)) * self.x
    }

    fn set_rate(&mut self, now: Nanos, x: f64) {
        let now = now.max(self.clock.at);
        self.clock = Phase {
            at: now,
            phase: self.phase(now),
        };
        self.x = self.clamp_rate(x);
    }

    /// Apply the window of the law `w`, closed at `last`: the D step toward the target total and
    /// the pull toward the common price. Returns what it measured.
    fn apply_window(&mut self, now: Nanos, w: LawWindow, last: Sample) -> Update {
        let dt = last.t - w.first.t;
        if self.sliding {
            return self.apply_sliding_window(now, w.first, last);
        }
        let since = w.since;
        // On a fixed window the process's own refusals are sent requests the level cannot show.
        let refused = if self.reset_span.is_some() {
            w.refused
        } else {
            0.0
        };
        let total = (self.refill() - (last.r - since.r - w.taken - refused) / dt)
            .max(self.rate * MIN_TOTAL_OF_RATE);
        // The average total against the target at the average level since the last turnover.
        let target = self.target((since.r + last.r) / 2.0, (since.t + last.t) / 2.0);
        // A first window that reads a flood (every process of a crowd starting at once, each
        // sure it is alone) cuts straight to the target: a D step capped per window would leave
        // the flood to the 429s, each halving one process at a time. Not on a full
        // start, whose surplus is the flood's cause (there it cost a sliding hour read as a
        // bucket its fairness), nor on a fixed window (no cell gained there, and 200 singles
        // on a 15-minute window lost fairness, 0.94 to 0.90).
        let flood = self.updates == 0
            && !self.full_start
            && self.reset_span.is_none()
            && total > FIRST_CUT_OVERLOAD * target;
        let gain = if flood { 1.0 } else { self.cfg.gain };
        let mut ln_x = self.x.ln() + gain * clamp_step((target / total).ln());
        let price = self.price(last.r - self.planned(last.t));
        let n = self.threads.len() as f64;
        let crowd = (total / self.x.max(price)).max(n);
        // One window of delay: the pull's loop gain `λ·N/L` per window stays below
        // `1/pull_periods` however long the window lasts.
        let periods = if self.reset_span.is_some() {
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
        let cap = if self.full_start {
            target * self.x / total
        } else {
            target
        };
        let pulled_to = price.min(cap).ln();
        ln_x += pull * (pulled_to - ln_x).max(-MAX_STEP_DOWN.ln());
        self.set_rate(now, ln_x.exp());
        Update {
            total,
            target,
            pull,
        }
    }

    /// A window on a sliding window: what the last period took is `B − r`, so the total is
    /// `(B − r̄)/period` (or the level's fall, while nothing has yet left the period), steered
    /// toward `B/period` with the gain spread over one period (the reading is a
    /// period's average). No pull: the level sits at the reserve whatever the shares, so the
    /// price says nothing there.
    fn apply_sliding_window(&mut self, now: Nanos, first: Sample, last: Sample) -> Update {
        let dt = last.t - first.t;
        let mean = (first.r + last.r) / 2.0;
        let average = (self.limit - mean) / self.period;
        let fall = (first.r - last.r) / dt;
        let total = average.max(fall).max(self.rate * MIN_TOTAL_OF_RATE);
        // Every token left unused is lost a period later, and the refusals carry the signal at
        // the floor (one request per period each): no reserve.
        let target = self.limit / self.period;
        // The level falling faster than the period's average says the rate is high now (the
        // fall is `S(t) − S(t − period)`, a lower bound of `S(t)`): act within a window, as on a
        // bucket. Otherwise the reading is an average over the period: spread the gain.
        let gain = if fall > average {
            self.cfg.gain
        } else {
            self.cfg.gain * (SLIDING_GAIN_PERIODS * dt / self.period).min(1.0)
        };
        let ln_x = self.x.ln() + gain * clamp_step((target / total).ln());
        self.set_rate(now, ln_x.exp());
        Update {
            total,
            target,
            pull: 0.0,
        }
    }

    /// The stated reset's rounding, in the client's time: a whole second, or more where a live
    /// server's second stands for more of it (a time scale); a share of the period if more.
    fn reset_slack(&self) -> f64 {
        (self.period * SLIDING_SLACK).max(self.resolution())
    }

    /// A stated reset (seconds) read at `t` with the level `r`: a bucket is whole again after
    /// `(B − r)/R` (the header rounds up to a whole second); a sliding window says a whole
    /// period whatever the level (its newest request leaves the window a period later). With a
    /// slack of `max(0.02 · period, 1 s)` for the rounding: three readings in a row over more
    /// than two slacks, each within a slack of the period and more than 1.5 slacks beyond the
    /// bucket's, make it a sliding window; a reading 1.5 slacks short of a period undoes it.
    fn read_reset(&mut self, t: f64, stated: f64, r: f64) {
        // Without a stated, given or learned quota the bucket's own reset cannot be told.
        if self.reset_span.is_some() || !self.knows_quota() {
            self.sliding = false;
            self.sliding_votes = 0;
            self.sliding_since = None;
            return;
        }
        let bucket = (self.limit - r).max(0.0) / self.rate;
        let slack = self.reset_slack();
        if stated >= self.period - slack && stated > bucket + 1.5 * slack {
            let since = *self.sliding_since.get_or_insert(t);
            self.sliding_votes = self.sliding_votes.saturating_add(1);
            // Over more than the header's resolution: a fixed window that has just turned over
            // says a whole period too, for a second.
            if self.sliding_votes >= SLIDING_VOTES && t - since > 2.0 * slack {
                self.sliding = true;
            }
        } else if stated < self.period - 1.5 * slack {
            self.sliding_votes = 0;
            self.sliding_since = None;
            self.sliding = false;
        }
    }

    /// On a window too short for the stated resets to tell a sliding window from a
    /// bucket (both round up to the same whole second), the level tells, for a process alone.
    /// A sliding window's level is `B` less what the last period took, so alone there the
    /// process reads `r + own = B` on every success (`own`: its successes counted in the last
    /// period, this one included); others only lower it. A bucket refills in between: alone,
    /// it reads `r + own − B` above zero once a token came back since its success before (a
    /// reading at least `1/R` after another of the same period). Over [`ECHO_PERIODS`] periods,
    /// nearly every such reading exactly `B` with the level well up makes a sliding window;
    /// most of them above `B` undo it.
    fn read_echo(&mut self, t: f64, r: f64) {
        let slack = self.reset_slack();
        if !self.knows_quota() || self.period > ECHO_MAX_SLACKS * slack {
            self.own_counted.clear();
            self.echo = None;
            return;
        }
        let own = &mut self.own_counted;
        let from = t - self.period;
        while own.front().is_some_and(|&s| s <= from) || own.len() as f64 > 2.0 * self.limit {
            own.pop_front();
        }
        let at = own.partition_point(|&s| s <= t);
        let before = at.checked_sub(1).map(|i| own[i]);
        own.insert(at, t);
        // Only a success a refill's token after another in the same period tells: the bucket
        // has given a token back since (a first one, or one close behind, reads `B` on both).
        if before.is_none_or(|b| t - b < 1.0 / self.rate) {
            return;
        }
        let e = r + (at + 1) as f64 - self.limit;
        let tally = self.echo.get_or_insert(EchoTally::new(t));
        tally.readings += 1;
        tally.level += r;
        if e.abs() < 0.5 {
            tally.exact += 1;
        } else if e > 0.0 {
            tally.above += 1;
        }
        let tally = *tally;
        if t - tally.since >= ECHO_PERIODS * self.period && tally.readings >= ECHO_MIN_READINGS {
            let n = tally.readings as f64;
            let level = tally.level / n;
            if tally.exact as f64 >= ECHO_EXACT * n && level >= ECHO_LEVEL * self.limit + 1.0 {
                // Alone on a fixed window the readings are above `B` too (`own` still counts
                // what was taken before its last reset): a turnover seen was a burst's echo.
                self.reset_span = None;
                self.sliding = true;
            } else if 2 * tally.above >= tally.readings {
                self.sliding = false;
            }
            self.echo = Some(EchoTally::new(t));
        }
    }

    /// A fixed window states its end, the same instant on every answer until it turns over,
    /// while its count falls; a bucket's end (when it is whole again) moves on as it is used
    /// (`S/R` seconds per second) and stays put only while nobody takes a token, and a sliding
    /// window's is a period after its newest request. So two successes more than two
    /// resolutions apart that state the same end (within a resolution), the count lower at the
    /// second, are a fixed window: its reset is placed at once, without waiting for a
    /// turnover. A process that joins a busy window then spreads what is left to the reset as
    /// the others do, instead of draining it as a bucket's surplus. Needs the period (a stated
    /// or given quota).
    fn read_fixed_end(&mut self, t: f64, stated: f64, r: f64) {
        if self.reset_span.is_some() || !self.knows_quota() {
            self.stated_end = None;
            return;
        }
        let end = t + stated;
        let same = self.resolution();
        let Some((first_end, first)) = self.stated_end.filter(|(e, _)| (end - e).abs() <= same)
        else {
            self.stated_end = Some((end, Sample { t, r }));
            return;
        };
        if stated <= self.period && r < first.r && t - first.t > 2.0 * same {
            // A stated end is rounded up to the resolution: the end is within one below it.
            self.place_reset(first_end - same, first_end);
            self.place_reset(end - same, end);
            self.stated_end = None;
            self.full_start = false;
            self.sliding = false;
            self.window = None;
        }
    }

    /// Whether the law knows the quota: stated, given, or learned from the stated resets.
    fn knows_quota(&self) -> bool {
        self.policy.is_some() || self.cfg.quota.is_some() || self.refill_bound.is_some()
    }

    /// The refill from the stated resets, for a server that states a limit and a reset but no
    /// policy (GitHub's headers) and is no fixed window: a bucket is whole again `(B − r)/R`
    /// after the answer, and a sliding window has `B` again a period `B/R` after its newest
    /// request, so `(B − r − 1)/reset` is at most `R` for both (the count is rounded down, the
    /// reset up). The refill is the largest such bound, read from answers whose stated end
    /// moved since this process's last one (a fixed window's stays put until it turns over,
    /// and `read_period` reads its quota), and the rate moves with it as with a stated quota.
    ///
    /// A bucket's reset grows by `1/R` per token taken, so two answers in a row that
    /// state the same reset (within a resolution each way) read levels at most `2·res·R + 1`
    /// apart, `R` being at most `(B − r + 1)/(reset − res)`. Levels further apart under one
    /// reset are a sliding window's (a period at any level): its period is the reset, its
    /// refill `B/reset`. Without this the bound above reaches `B/period` only once the level is
    /// near empty, hours into an hourly window.
    ///
    /// A bucket's reset is also rounded up by less than a resolution, so each answer
    /// caps its refill, `R ≤ (B − r + 1)/(reset − res)`. A lower bound above the lowest cap, or
    /// a fixed window's turnover read from the level, says no bucket: the refill is then `B`
    /// over the longest reset stated, the window's period from below (see
    /// `refill_from_longest_reset`).
    fn learn_refill(&mut self, now: Nanos, stated: f64, r: f64) {
        if self.cfg.quota.is_some() || self.policy.is_some() {
            return;
        }
        self.longest_reset = self.longest_reset.max(stated);
        // A fixed window read from the level's turnover is no bucket either: until
        // `read_period` reads its period, the refill comes from the longest reset stated, not
        // the default quota's hour.
        self.no_bucket |= self.reset_span.is_some();
        if self.no_bucket {
            self.refill_from_longest_reset(now);
            return;
        }
        let t = secs(now);
        let end = t + stated;
        let res = self.resolution();
        if stated > res {
            let ceiling = (self.limit - r + 1.0) / (stated - res);
            self.refill_ceiling = Some(self.refill_ceiling.map_or(ceiling, |c| c.min(ceiling)));
        }
        let last = self.moving_end.replace(StatedReset {
            end,
            at: t,
            reset: stated,
            r,
        });
        let Some(last) = last.filter(|l| t > l.at && (end - l.end).abs() > res) else {
            return;
        };
        if stated <= 0.0 {
            return;
        }
        let mut bound = (self.limit - r - 1.0) / stated;
        if stated > 2.0 * res && (stated - last.reset).abs() <= res {
            let bucket_rate_at_most = (self.limit - r.min(last.r) + 1.0) / (stated - res);
            if (r - last.r).abs() > 2.0 * res * bucket_rate_at_most + 1.0 {
                bound = bound.max(self.limit / stated);
            }
        }
        if self.refill_ceiling.is_some_and(|ceiling| bound > ceiling) {
            self.no_bucket = true;
            self.refill_from_longest_reset(now);
            return;
        }
        if bound > self.refill_bound.unwrap_or(0.0) {
            self.refill_bound = Some(bound);
            self.move_refill(now, bound, self.limit / bound);
        }
    }

    /// The stated resets are no bucket's, so the server is a window and the longest
    /// reset stated is its period from below: the refill is `B` over it.
    fn refill_from_longest_reset(&mut self, now: Nanos) {
        if self.longest_reset <= 0.0 {
            return;
        }
        let rate = self.limit / self.longest_reset;
        if self.refill_bound != Some(rate) {
            self.refill_bound = Some(rate);
            self.move_refill(now, rate, self.longest_reset);
        }
    }

    /// A fixed window turned over between `lo` and `hi` (seconds). Its resets are a period
    /// apart, so every turnover seen narrows down where they fall: the span kept so far,
    /// shifted by whole periods, is cut to this one (or replaced by it, if they do not meet:
    /// the period was not what the law believed). The reset is placed at the span's middle.
    /// Read from one turnover alone, it could be off by the readings' spacing, and the
    /// even-spend level the price is read against by as many seconds of the allowance: two
    /// processes would price the same level differently and their shares would stay apart.
    fn place_reset(&mut self, lo: f64, hi: f64) {
        let span = match self.reset_span {
            Some((a, b)) => {
                let shift = (((lo + hi) - (a + b)) / 2.0 / self.period).round() * self.period;
                let (from, to) = (lo.max(a + shift), hi.min(b + shift));
                if from <= to { (from, to) } else { (lo, hi) }
            }
            None => (lo, hi),
        };
        self.reset_span = Some(span);
    }

    /// A reset of the fixed window: the middle of the span its turnovers agree on.
    fn reset_at(&self) -> Option<f64> {
        self.reset_span.map(|(lo, hi)| (lo + hi) / 2.0)
    }

    /// Starts a new window at `s`.
    fn open_window(&mut self, s: Sample) {
        self.window = Some(LawWindow::new(s));
    }

    /// A fixed window turned over between `newest` and `s`, inside an open window of the law
    ///: it carries on across the reset, counting the level's fall up to `newest` and,
    /// when the reset placed falls between the two, what the new allowance lost before `s`.
    /// Dropping the window instead would keep a slow process (fewer answers per server window
    /// than a window of the law needs) from ever closing one.
    fn carry_window(&mut self, newest: Sample, s: Sample) {
        let turnover = self
            .to_reset(newest.t)
            .is_some_and(|left| newest.t + left <= s.t + RESET_TIME_SLACK);
        let limit = self.limit;
        let Some(w) = self.window.as_mut() else {
            self.open_window(s);
            return;
        };
        w.taken += (w.since.r - newest.r).max(0.0);
        if turnover {
            w.taken += (limit - s.r).max(0.0);
        }
        w.since = s;
    }

    /// A reading of the level at `t` (seconds): open, extend or close the window.
    fn observe(&mut self, now: Nanos, t: f64, r: f64) -> Option<Update> {
        let s = Sample { t, r };
        if self.newest.is_none() && r >= self.cfg.full_level * self.limit {
            self.full_start = true;
        } else if r <= self.reserve() + self.slope() * self.crowd().ln() {
            // Down in the price's range: the surplus is spent.
            self.full_start = false;
        }
        // Counted at `t` give or take this (a heavy-tailed latency's answer can come long after).
        let slack = (secs(now) - t).max(0.0);
        // The reading before, if this one is later: the jump is read against it.
        let before = self.newest.filter(|n| t >= n.t);
        let before_slack = self.newest_slack;
        if self.newest.is_none() || before.is_some() {
            self.newest = Some(s);
            self.newest_slack = slack;
        }
        if let Some(newest) = before {
            let refill = self.refill() * (t - newest.t + slack + before_slack);
            // On a sliding window the level jumps when requests sent together leave it, a
            // period after they were sent: an echo, not a turnover. Read as a
            // turnover, it threw a slow process out of sliding mode, and the fixed window's
            // target and a bucket's pull lifted it 30-fold in one window.
            if !self.sliding
                && r > newest.r + refill + (self.limit * RESET_JUMP).max(MIN_RESET_TOKENS)
            {
                // A fixed window turned over: what came before says nothing, and from now on
                // the level is read as a window's allowance.
                // The reset fell between the two readings.
                self.place_reset(newest.t, t);
                self.full_start = false;
                self.carry_window(newest, s);
                return None;
            }
            if self.reset_span.is_some() && r > newest.r + MIN_RESET_TOKENS {
                // The level came back without a reset: the server refills after all.
                self.reset_span = None;
            }
        }
        let Some(w) = self.window.as_mut() else {
            self.open_window(s);
            return None;
        };
        w.samples += 1;
        let w = *w;
        // Counted with the nominal refill even on a windowed server: a window then closes a
        // little sooner.
        let flow = self.rate * (t - w.first.t) - (r - w.since.r) + w.taken;
        let periods = if self.updates == 0 { FIRST_WINDOW } else { 1.0 };
        if t - w.first.t >= self.window_secs() * periods
            && w.samples >= self.cfg.min_samples
            && flow >= self.min_flow()
        {
            let update = self.apply_window(now, w, s);
            self.updates += 1;
            self.open_window(s);
            return Some(update);
        }
        None
    }

    /// The server stated its quota: `R` and the period follow it, and the rate moves with `R`
    /// (a process that started on the default quota is at its share of the real one at once).
    fn take_policy(&mut self, now: Nanos, q: Policy, limit_from_quota: bool) {
        if self.policy == Some(q) {
            return;
        }
        self.policy = Some(q);
        let window = nanos(q.window);
        if limit_from_quota {
            self.limit = q.limit as f64;
        }
        self.move_refill(now, policy_rate(q.limit, window), secs(window));
    }

    /// `R` and the period are now `rate` and `period`: the per-thread rate moves with `R`, so a
    /// process that ran on a wrong quota is at its share of the right one at once.
    fn move_refill(&mut self, now: Nanos, rate: f64, period: f64) {
        let scale = rate / self.rate;
        self.rate = rate;
        self.period = period;
        self.set_rate(now, self.x * scale);
    }

    /// A fixed window's period from its stated reset, for a server that states a limit and a
    /// reset but no policy (GitHub's `x-ratelimit-limit` and `x-ratelimit-reset`). A fixed
    /// window's stated reset is its end, the same instant on every answer until it turns over;
    /// a bucket's (when it is whole again) or a sliding window's (a period after the newest
    /// request) moves with the clock while it is used. Two ends in a row, each stated alike
    /// over more than [`STEADY_END`], with the count jumping up at the first, are a period
    /// apart: the quota is the limit per that period. A configured or stated quota wins.
    fn read_period(&mut self, now: Nanos, stated: f64) {
        if self.cfg.quota.is_some() || self.stated_policy {
            return;
        }
        let t = secs(now);
        let end = t + stated;
        let Some(mut cur) = self.window_end else {
            self.window_end = Some(WindowEnd {
                end,
                since: t,
                seen: t,
            });
            return;
        };
        let (same, steady_for) = (self.resolution(), STEADY_END * self.resolution());
        if (end - cur.end).abs() <= same {
            cur.seen = t;
            self.window_end = Some(cur);
        } else {
            let steady = |w: &WindowEnd| w.seen - w.since > steady_for;
            self.last_end = Some(cur).filter(steady).map(|w| w.end);
            self.window_end = Some(WindowEnd {
                end,
                since: t,
                seen: t,
            });
            return;
        }
        let (Some(last), true) = (self.last_end, cur.seen - cur.since > steady_for) else {
            return;
        };
        let period = (cur.end - last).round();
        // And the count jumped back up there (`observe`'s turnover): a bucket left alone is
        // whole again at one instant too, but fills up to it smoothly.
        let turned_over = self
            .reset_at()
            .is_some_and(|at| (at - last).abs() <= RESET_MATCH * period + same);
        if turned_over && period >= 1.0 && period <= secs(nanos(crate::MAX_SERVER_WAIT)) {
            let q = Policy {
                limit: self.limit as u64,
                window: Duration::from_secs(period as u64),
            };
            self.take_policy(now, q, false);
        }
    }

    /// How long `thread` still waits: until the process phase reaches its target (and its
    /// hold), looked at again every eighth of a period so rate changes reach it.
    fn wait(&self, now: Nanos, thread: usize) -> Nanos {
        let th = &self.threads[thread];
        let left = match th.target {
            Some(target) => {
                let due = target + th.jit - self.phase(now);
                from_secs(due.max(0.0) / self.x)
            }
            None => 0,
        };
        let left = left.max(th.hold.saturating_sub(now));
        let poll = from_secs(self.spacing() / POLLS_PER_PERIOD).max(1);
        left.min(poll)
    }

    fn draw_jitter(&self, draw: &mut (impl Draw + ?Sized)) -> f64 {
        let j = self.cfg.jitter;
        if j <= 0.0 {
            return 0.0;
        }
        draw.within(-j, j) / self.threads.len() as f64
    }
}

/// A process's first window lasts this fraction of `W`: before it closes, the process runs at
/// its start rate, which may be far from its share, and closing it early brings the first
/// correction forward (fast_slow's convergence 63 s at 1.0, 57 s at 0.7; at 0.5 a hundred
/// threads' first round is misread).
const FIRST_WINDOW: f64 = 0.7;
/// On a fixed window, a window of the law closes after at most this share of the allowance.
const MAX_FLOW_OF_ALLOWANCE: f64 = 0.3;
/// Two stated resets name the same window end within one resolution of the header (whole
/// seconds, and a client's clock a little off the server's), and an end is a fixed window's
/// once it was stated alike for longer than this many resolutions.
const STEADY_END: f64 = 2.0;
/// On a sliding window the D gain per window is `γ` spread over this share of the period.
const SLIDING_GAIN_PERIODS: f64 = 1.0;
/// On a fixed window the pull's loop gain per window is at most `1/WINDOW_PULL_PERIODS`
/// (on a bucket `1/pull_periods`): there the pull holds the level above the even-spend plan,
/// and what is left at the reset is lost (at 1.5, GitHub's 5,000 per hour loses 0.3 % of its
/// utilization, and fixed windows of 100 per minute 1.4 %).
const WINDOW_PULL_PERIODS: f64 = 4.0;
/// A share of the total within this of the whole is a lone process read through the noise of
/// the total, whose pull fades as the square of `1 − share` (a lone client on a 5-token bucket
/// pulled at `1 − share` loses 18 % of its utilization).
const LONE_SHARE_NOISE: f64 = 0.1;
/// A stated reset is read with a slack of this share of the period, or of its resolution if
/// more: a bucket says at most `(B − r)/R` plus the rounding, a sliding window a whole period.
const SLIDING_SLACK: f64 = 0.02;
/// Readings in a row that make a sliding window.
const SLIDING_VOTES: u32 = 3;
/// Stated resets tell a sliding window only on a period longer than this many slacks (a bucket
/// may say up to `period`, a sliding window says `period`, each within a slack, and they must
/// lie 1.5 slacks apart); on a shorter one the level's echo is read instead.
const ECHO_MAX_SLACKS: f64 = 2.5;
/// The echo is judged over this many periods...
const ECHO_PERIODS: f64 = 4.0;
/// ... of at least this many readings, ...
const ECHO_MIN_READINGS: u32 = 30;
/// ... this share of them exactly `B` (a request at the period's edge may be counted on the
/// other side of it) ...
const ECHO_EXACT: f64 = 0.95;
/// ... and the level on average above this share of the bucket and a token: a bucket emptied
/// by a lone process reads `B` too (its level a period ago was nothing).
const ECHO_LEVEL: f64 = 0.1;
/// One window moves `ln x` down by at most this factor.
const MAX_STEP_DOWN: f64 = 100.0;
/// A first window that reads a total this many times its target cuts straight to it.
const FIRST_CUT_OVERLOAD: f64 = 4.0;
/// On a fixed window the target keeps this share of the reserve `r0` in the server's current
/// window, shrinking to nothing by the reset (the whole reserve left a lone process of
/// 200 threads on a 10-per-second window at 0.93 of the allowance, a quarter of it drew its 429s).
const WINDOW_RESERVE_SHARE: f64 = 0.75;
/// A rise of the level by this fraction of the bucket more than the refill explains is a
/// fixed window's reset...
const RESET_JUMP: f64 = 0.1;
/// ... or by this many tokens, on a small one (the count is an integer).
const MIN_RESET_TOKENS: f64 = 2.0;
/// A 429 that a fixed window's reset explains cuts no rate when the process (its threads in
/// line) sends at least this often per window (on a shorter window the refusal may as well say
/// the rate is high).
const MIN_SENDS_PER_WINDOW: f64 = 4.0;
/// ... and a `Retry-After` within this fraction of a period of the predicted reset is one.
const RESET_MATCH: f64 = 0.1;
/// A reset placed this close after a reading (seconds) still falls between it and the next.
const RESET_TIME_SLACK: f64 = 1e-9;
/// A waiting thread looks at the rate again this many times per period.
const POLLS_PER_PERIOD: f64 = 8.0;
/// The smallest per-thread rate, as a fraction of the crowd's share `R / K`.
const MIN_RATE_OF_SHARE: f64 = 0.01;
/// The reserve never exceeds this fraction of the bucket...
const MAX_RESERVE: f64 = 0.25;
/// ... and the price's span is at least this many tokens on a fixed window (what the level
/// holds is lost at its reset)...
const MIN_SPAN_TOKENS: f64 = 4.0;
/// ... and this many on a bucket, where a level held refills all the same: a wider span makes
/// the price less steep, so the pull may be stronger (churn on a 100-per-minute bucket: windowed
/// fairness 0.939 at 4 tokens, 0.967 at 10, 0.988 at 10 with `pull_periods` 1.5)...
const MIN_BUCKET_SPAN_TOKENS: f64 = 10.0;
/// ... or, where the bucket has room for it, this many times `√K`: `K` senders at
/// random phases swing the level by about `√K` tokens, and a price that spans less reads that
/// noise as a change of the crowd (200 one-thread processes on a 100-token bucket: second-half
/// 429s 6.9 % and fairness 0.61 at 10 tokens, 0.01 % and 0.97 at `2√K` = 63). The same
/// `2√K`, read as a count of threads, is the crowd a first refusal assumes...
const CROWD_SWING_SDS: f64 = 2.0;
/// ... but at most this fraction of the bucket above the reserve.
const MAX_SPAN_OF_ROOM: f64 = 0.8;
/// Where the bucket holds the crowd's swing, the reserve holds at least this share of it,
/// `√K/2` tokens: a crowd of `K` rests at the reserve, where the price is `R/K` per
/// thread, and a reserve of one token left its swing to the 429s (1,000 threads on a
/// 100-token bucket: 4.3 % refused in the second half, 1.5 % with `√K/2`; 200 one-thread
/// processes there kept Jain's index 0.952, 0.978 with it).
const CROWD_RESERVE_OF_SWING: f64 = 0.25;
/// On a bucket that holds the crowd's swing, a process that reads itself as the whole total
/// keeps `1 − LONE_PULL_KEPT · share` of its pull: with the weight falling to nothing,
/// a process started at `R/(2K)` per thread beside one that drained the level to the reserve
/// was held at the crowd's price for five hours (fast_slow, Jain 0.503; 0.995 at one half).
const LONE_PULL_KEPT: f64 = 0.5;
/// The total is never read below this fraction of `R` (a level that stopped falling).
const MIN_TOTAL_OF_RATE: f64 = 0.02;
/// On a bucket the target never falls below this fraction of `R`...
const MIN_TARGET_OF_RATE: f64 = 0.25;
/// ... and on a fixed window below this one.
const MIN_WINDOW_TARGET_OF_RATE: f64 = 0.05;
/// The price's exponent is capped here, far above any rate (`e^50`).
const MAX_PRICE_EXPONENT: f64 = 50.0;
/// Consecutive errors beyond this many no longer double the backoff (it is capped anyway).
const MAX_ERROR_DOUBLINGS: u32 = 30;
/// Blind to the count: the share of refusals the probe aims for.
const BLIND_REFUSALS: f64 = 0.005;
/// Blind to the count: how hard one answer moves the probe (its log, per answer). One refusal
/// divides it by e; 200 successes (at `BLIND_REFUSALS`) multiply it by e.
const BLIND_ADAPT: f64 = 1.0;
/// Blind to the count: a thread's rate after its refusal, as a share of what it was.
const BLIND_CUT: f64 = 0.3;
/// Blind to the count: how far below the quota a process's rate counts in its climb, `R/X`. A
/// crowd of small processes each at a hundredth of the quota climbed ten thousand times faster
/// than the probe and flooded before their probes could shrink (50 one-thread processes beside
/// a pool of 50 threads on Heroku's bucket: 29 % 429s; 16 % capped at 10).
const BLIND_BELOW_MAX: f64 = 10.0;
/// Blind to the count: the probe's bounds, in `R²` per second.
const BLIND_PROBE_MIN: f64 = 1e-6;
const BLIND_PROBE_MAX: f64 = 1.0;

fn clamp_step(v: f64) -> f64 {
    v.clamp(-MAX_STEP_DOWN.ln(), 2f64.ln())
}

impl Law {
    /// The law for one process of `threads` threads (at least one). Threads are numbered from
    /// 0; the methods below panic on a thread past the last, a caller's bug ([`crate::FairShare`]
    /// answers such a thread with a wait of a second instead).
    pub fn new(threads: usize, params: Params) -> Law {
        let n = threads.max(1);
        let (quota, period) = params.quota_and_period();
        let rate = quota / period;
        let initial_sleep = params.initial_sleep.map(|s| secs(nanos(s)));
        let mut law = Law {
            cfg: params,
            x: 0.0,
            limit: quota,
            rate,
            period,
            policy: None,
            headers: false,
            threads: vec![ThreadState::default(); n],
            clock: Phase::default(),
            offset: None,
            window: None,
            newest: None,
            newest_slack: 0.0,
            last_decrease: None,
            last_increase: None,
            probe: 0.0,
            decreases: 0,
            reset_span: None,
            full_start: false,
            updates: 0,
            sliding_votes: 0,
            sliding_since: None,
            sliding: false,
            stated_policy: false,
            window_end: None,
            last_end: None,
            stated_end: None,
            moving_end: None,
            refill_bound: None,
            refill_ceiling: None,
            longest_reset: 0.0,
            no_bucket: false,
            own_counted: VecDeque::new(),
            echo: None,
        };
        let x0 = match initial_sleep {
            Some(s) => (1.0 / s).min(rate / n as f64),
            None => rate / n as f64,
        };
        law.x = law.clamp_rate(x0);
        law.probe = law.cfg.increase * rate * rate;
        law
    }

    /// The process's threads.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// `thread` wants to send at `now`: how long until its turn (its place in line is set on
    /// its first request, and each request draws its own jitter). Ask [`Law::acquire`] when
    /// the wait is over.
    pub fn delay(
        &mut self,
        now: Duration,
        thread: usize,
        draw: &mut (impl Draw + ?Sized),
    ) -> Duration {
        Duration::from_nanos(self.delay_ns(nanos(now), thread, draw))
    }

    /// `thread` asks again at `now`: zero means send now (the send is booked), else how much
    /// longer to wait (a rate that changed meanwhile is taken into account).
    pub fn acquire(&mut self, now: Duration, thread: usize) -> Duration {
        Duration::from_nanos(self.acquire_ns(nanos(now), thread))
    }

    /// The answer to `thread`'s last request arrived at `now`.
    pub fn on_response(
        &mut self,
        now: Duration,
        thread: usize,
        answer: &Answer,
        draw: &mut (impl Draw + ?Sized),
    ) {
        self.respond_ns(nanos(now), thread, answer, draw);
    }

    /// The spacing `1/x` of one thread's sends, in seconds: what a chart of the law shows.
    pub fn spacing(&self) -> f64 {
        1.0 / self.x
    }

    /// How many times the process cut its rate on a 429.
    pub fn backoffs(&self) -> u64 {
        self.decreases
    }

    pub(crate) fn delay_ns(
        &mut self,
        now: Nanos,
        thread: usize,
        draw: &mut (impl Draw + ?Sized),
    ) -> Nanos {
        if self.threads[thread].target.is_none() {
            let n = self.threads.len() as f64;
            let spread = (secs(nanos(self.cfg.first_spread)) * self.x).max(1.0);
            // Every thread of the process in line, one `1/(n·x0)` after the other, from an
            // offset drawn once per process.
            let offset = match self.offset {
                Some(o) => o,
                None => {
                    let o = draw.below(0.0, 1.0);
                    self.offset = Some(o);
                    self.clock = Phase {
                        at: now,
                        phase: 0.0,
                    };
                    o
                }
            };
            let slot = (thread as f64 + offset) / n * spread;
            self.threads[thread].target = Some(slot);
        }
        self.threads[thread].jit = self.draw_jitter(draw);
        self.wait(now, thread)
    }

    pub(crate) fn acquire_ns(&mut self, now: Nanos, thread: usize) -> Nanos {
        let more = self.wait(now, thread);
        if more == 0 {
            let phase = self.phase(now);
            let th = &mut self.threads[thread];
            let target = th.target.unwrap_or(phase);
            let mut next = target + 1.0;
            if next < phase + 0.5 {
                next += (phase + 0.5 - next).ceil();
            }
            th.target = Some(next);
            th.last_send = Some(now);
        }
        more
    }

    pub(crate) fn respond_ns(
        &mut self,
        now: Nanos,
        thread: usize,
        answer: &Answer,
        draw: &mut (impl Draw + ?Sized),
    ) {
        let policy = answer
            .policy
            .filter(|q| policy_rate(q.limit, nanos(q.window)) > 0.0);
        self.stated_policy |= policy.is_some();
        if self.cfg.quota.is_none()
            && let Some(q) = policy
        {
            self.take_policy(now, q, answer.limit.is_none());
        }
        if let Some(limit) = answer.limit.filter(|l| *l > 0) {
            self.limit = limit as f64;
        } else if let Some(r) = answer.remaining.filter(|r| *r as f64 >= self.limit) {
            // No limit stated, and more left than the bucket the quota implies (a token
            // bucket of 1 per second told as `quota = 1`, `period = 1s`, bursting to 20): the
            // bucket held at least what is left and the request just counted.
            self.limit = r as f64 + 1.0;
        }
        let sent = self.threads[thread].last_send.unwrap_or(now);
        if let (Some(r), Status::Ok | Status::Limited) = (answer.remaining, answer.status) {
            self.headers = true;
            // A refusal's reset counts from the last request let in, not from itself.
            let counted = now.saturating_sub(nanos(answer.latency) / 2).max(sent);
            if let (Some(reset), Status::Ok) = (answer.reset, answer.status) {
                self.read_reset(secs(now), secs(nanos(reset)), r as f64);
                self.read_fixed_end(secs(counted), secs(nanos(reset)), r as f64);
            }
            if answer.status == Status::Ok {
                self.read_echo(secs(counted), r as f64);
            }
            self.observe(now, secs(counted), r as f64);
            if let (Some(reset), Status::Ok) = (answer.reset, answer.status) {
                self.read_period(now, secs(nanos(reset)));
                self.learn_refill(now, secs(nanos(reset)), r as f64);
            }
        }
        match answer.status {
            Status::Ok => {
                self.threads[thread].errors = 0;
                if !self.headers {
                    self.blind_success(now);
                }
            }
            Status::Limited => {
                if let Some(w) = self.window.as_mut() {
                    w.refused += 1.0;
                }
                self.refused(now, thread, sent, answer, draw)
            }
            Status::Unavailable | Status::Error => {
                let th = &mut self.threads[thread];
                let doublings = th.errors.min(MAX_ERROR_DOUBLINGS) as i32;
                let base = secs(nanos(self.cfg.error_backoff)) * 2f64.powi(doublings);
                let wait = base.min(secs(nanos(self.cfg.error_backoff_max)));
                th.errors = th.errors.saturating_add(1);
                th.hold = now.saturating_add(from_secs(wait));
            }
        }
    }

    // Blind to the count. The server sends no remaining count (nginx's `limit_req`, most API
    // gateways): there is no level to read, only the quota the process was told (or the
    // default) and which of its own requests were refused. Refusals hit the processes of a key
    // in proportion to what they send, so every process sees the same share of them; the law
    // steers that share to `BLIND_REFUSALS`, whatever the number of processes:
    //
    // - a process never sends faster than the whole quota `R` it was told;
    // - a success lets it climb by `probe · min(R/X, 10)²` per second of success, `X` its own rate: a
    //   process below its fair share climbs faster, which is what makes shares equal (with
    //   `R/X` to the first power shares stayed apart for hours, gauntlet no_header's fairness
    //   0.82; to the third, a crowd of small processes climbed into floods before the probe
    //   could shrink);
    // - a refusal cuts it to `BLIND_CUT^(1/n)`: a refused thread is one of `n`, as if each
    //   thread were a process of its own cut to `BLIND_CUT`;
    // - the probe grows a little with every success and shrinks with every refusal, so that
    //   it rests where `BLIND_REFUSALS` of the answers are refused (more processes, each
    //   climbing, probe harder together; their probes shrink until the share is back).
    //
    // An additive increase of a fixed size (the classic AIMD) drew refusals in proportion to
    // the square of the number of processes and, scaled by `1/B` as it was, flooded small
    // buckets: 57 % 429s for 3 × 4 threads on nginx's 5 r/s with a burst of 10.

    /// A success without a count: climb.
    fn blind_success(&mut self, now: Nanos) {
        let since = self.last_increase.map_or(0.0, |t| secs(now - t.min(now)));
        self.last_increase = Some(now);
        let n = self.threads.len() as f64;
        let own = n * self.x;
        let below = (self.rate / own).min(BLIND_BELOW_MAX);
        let climb = self.probe * below * below * since;
        self.set_rate(now, ((own + climb) / n).min(self.rate / n));
        self.probe = (self.probe * (BLIND_ADAPT * BLIND_REFUSALS).exp())
            .min(self.rate * self.rate * BLIND_PROBE_MAX);
    }

    /// A refusal without a count: cut, and probe less.
    fn blind_refusal(&mut self, now: Nanos) {
        let n = self.threads.len() as f64;
        self.set_rate(now, self.x * (BLIND_CUT.ln() / n).exp());
        self.probe = (self.probe * (-BLIND_ADAPT * (1.0 - BLIND_REFUSALS)).exp())
            .max(self.rate * self.rate * BLIND_PROBE_MIN);
        // The climb counts seconds of success since the cut.
        self.last_increase = Some(now);
        self.last_decrease = Some(now);
        self.decreases += 1;
    }

    /// A 429 to a request sent at `sent`: cut the rate once per round (unless a fixed window's
    /// reset explains it), and hold the thread for the `Retry-After`, stretched.
    fn refused(
        &mut self,
        now: Nanos,
        thread: usize,
        sent: Nanos,
        answer: &Answer,
        draw: &mut (impl Draw + ?Sized),
    ) {
        self.threads[thread].errors = 0;
        let period = from_secs(self.spacing());
        let retry_after = answer.retry_after.map(nanos);
        // A fixed window's allowance spent: the refusal says to come back at the reset
        // the level's jumps predict. Nothing says the rate is too high for the next one.
        let window_spent = self.period * self.x * self.threads.len() as f64 >= MIN_SENDS_PER_WINDOW
            && retry_after
                .zip(self.to_reset(secs(now)))
                .is_some_and(|(ra, left)| (secs(ra) - left).abs() <= RESET_MATCH * self.period);
        if !self.headers {
            self.blind_refusal(now);
        } else if !window_spent
            && self
                .last_decrease
                .is_none_or(|d| sent >= d && now >= d.saturating_add(period))
        {
            // On a sliding window a refusal at the level's floor is the law aiming at
            // it: the process gives up one request per period, not half its rate.
            let n = self.threads.len() as f64;
            let factor = if self.sliding {
                let per_period = n * self.x * self.period;
                (1.0 - 1.0 / per_period.max(1.0)).max(self.cfg.decrease)
            } else if self.headers && self.holds_the_crowd() {
                if self.updates == 0 && self.decreases == 0 {
                    // Refused before any window could read the level, on a bucket deep
                    // enough to hold a crowd's swing: a crowd emptied it. Every process of a
                    // crowd started together is refused at least once, so all take this cut
                    // alike and stay fair; halving alone left each of them about `log2 N`
                    // refusals to take.
                    (n / self.crowd_swing()).min(self.cfg.decrease)
                } else {
                    // A refusal marks one thread, so a process of `n` threads takes an
                    // `n`-th of the cut, `decrease^(1/n)`: `n` refusals cut it once, as one
                    // refusal each cuts `n` one-thread processes once. Halving the whole
                    // process cut a pool of 500 threads 500 times harder than a single beside
                    // it, and the pool ended at a fifth of a single's per-thread rate.
                    (self.cfg.decrease.ln() / n).exp()
                }
            } else {
                self.cfg.decrease
            };
            self.set_rate(now, self.x * factor);
            self.last_decrease = Some(now);
            self.decreases += 1;
            self.window = None;
        }
        let wait = match retry_after {
            Some(ra) => {
                let stretch = if self.cfg.retry_jitter > 0.0 {
                    draw.within(0.0, self.cfg.retry_jitter)
                } else {
                    0.0
                };
                from_secs(secs(ra) + stretch * secs(ra).min(self.spacing()))
            }
            None => 0,
        };
        self.threads[thread].hold = now.saturating_add(wait);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::draw::SplitMix;

    const S: Nanos = 1_000_000_000;

    fn test_rng() -> SplitMix {
        SplitMix::new(7)
    }
    /// 4500 per hour.
    const R: f64 = 1.25;

    fn build(threads: usize) -> Law {
        Law::new(threads, Params::default())
    }

    /// A process of `threads` for a server granting `quota` per `period_s` from a bucket of
    /// `limit` (as `RateLimit-Limit` says once an answer came).
    fn shaped(threads: usize, quota: f64, period_s: u64, limit: f64) -> Law {
        let mut t = Law::new(
            threads,
            Params {
                quota: Some(quota),
                period: Some(Duration::from_secs(period_s)),
                ..Params::default()
            },
        );
        t.limit = limit;
        t
    }

    /// A process of `threads` on 10 per second in fixed 1-second windows that read a turnover
    /// between 0.95 s (the allowance spent) and 1.05 s (9 left): the reset placed at 1 s.
    fn turned_over_at_one_second(threads: usize) -> Law {
        let mut t = shaped(threads, 10.0, 1, 10.0);
        assert!(t.observe(0, 0.95, 0.0).is_none());
        assert!(t.observe(0, 1.05, 9.0).is_none());
        assert_eq!(t.reset_at(), Some(1.0));
        t
    }

    fn answer(status: Status, remaining: u64) -> Answer {
        Answer {
            remaining: Some(remaining),
            limit: Some(4500),
            ..Answer::bare(status)
        }
    }

    #[derive(Debug, PartialEq)]
    enum Acquire {
        Send,
        Wait(Nanos),
    }

    fn acquire(t: &mut Law, now: Nanos, thread: usize) -> Acquire {
        match t.acquire_ns(now, thread) {
            0 => Acquire::Send,
            w => Acquire::Wait(w),
        }
    }

    fn ns(n: Nanos) -> Option<Duration> {
        Some(Duration::from_nanos(n))
    }

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        assert!(Params::default().problems().is_empty());
        let bad = Params {
            decrease: 1.0,
            reserve: 1.5,
            min_samples: 1,
            ..Params::default()
        };
        let fields: Vec<&str> = bad.problems().iter().map(|p| p.0).collect();
        assert_eq!(fields, ["reserve", "decrease", "min_samples"]);
    }

    #[test]
    fn quota_and_period_go_together() {
        let half = Params {
            quota: Some(100.0),
            ..Params::default()
        };
        let fields: Vec<&str> = half.problems().iter().map(|p| p.0).collect();
        assert_eq!(fields, ["period"]);
    }

    #[test]
    fn the_servers_policy_sets_the_refill_the_bucket_and_moves_the_rate_with_it() {
        let mut t = build(4);
        let mut rng = test_rng();
        assert!((t.thread_rate() - R / 4.0).abs() < 1e-12);
        // `RateLimit-Policy: q=5;w=1` and no `RateLimit-Limit`: 5 per second from 5 tokens.
        let stated = Answer {
            policy: Some(Policy {
                limit: 5,
                window: Duration::from_secs(1),
            }),
            limit: None,
            ..answer(Status::Ok, 4)
        };
        t.delay_ns(0, 0, &mut rng);
        t.respond_ns(S / 10, 0, &stated, &mut rng);
        assert!((t.rate - 5.0).abs() < 1e-12);
        assert_eq!((t.limit, t.period), (5.0, 1.0));
        assert!((t.thread_rate() - 5.0 / 4.0).abs() < 1e-12);
        // A configured quota wins over the header.
        let mut pinned = shaped(4, 100.0, 60, 100.0);
        pinned.respond_ns(S, 0, &stated, &mut rng);
        assert!((pinned.rate - 100.0 / 60.0).abs() < 1e-12);
    }

    #[test]
    fn the_first_pace_is_the_quota_shared_by_the_process_or_the_initial_sleep_if_slower() {
        assert!((build(1000).thread_rate() - R / 1000.0).abs() < 1e-12);
        assert!((build(1).thread_rate() - R).abs() < 1e-12);
        let slow = Law::new(
            1,
            Params {
                initial_sleep: Some(Duration::from_secs(20)),
                ..Params::default()
            },
        );
        assert!((slow.thread_rate() - 0.05).abs() < 1e-12);
    }

    #[test]
    fn the_reserve_and_the_price_come_from_the_bucket() {
        let k = 1000f64.ln();
        // Heroku's 4,500: 0.5 % reserved, the price spans 3 % of the bucket.
        let heroku = build(1);
        assert!((heroku.reserve() - 22.5).abs() < 1e-9);
        assert!((heroku.slope() - 135.0 / k).abs() < 1e-9);
        // 5 per second from 5 tokens: one token reserved (never less), and the price spans
        // 4 tokens' worth at most 0.8 of the room above the reserve.
        let tiny = shaped(1, 5.0, 1, 5.0);
        assert!((tiny.reserve() - 1.0).abs() < 1e-9);
        assert!((tiny.slope() - 3.2 / k).abs() < 1e-9);
        // 100 per minute: the crowd's swing, 2√K = 63 tokens, fits in 0.8 of the room above
        // the reserve (79): the floor of the span on a bucket; 4 tokens on a fixed window.
        // There the reserve is a quarter of that swing, √K/2 = 15.8 tokens, not 0.5 % of 100
        //; on a fixed window the configured share, one token.
        let minute = shaped(1, 100.0, 60, 100.0);
        assert!((minute.slope() - 2.0 * 1000f64.sqrt() / k).abs() < 1e-9);
        assert!((minute.reserve() - 1000f64.sqrt() / 2.0).abs() < 1e-9);
        let mut window = shaped(1, 100.0, 60, 100.0);
        window.place_reset(59.0, 60.0);
        assert!((window.slope() - 4.0 / k).abs() < 1e-9);
        assert!((window.reserve() - 1.0).abs() < 1e-9);
        // 1 per second, burst 20: no room for the swing (0.8 · 19 = 15.2 tokens), so 10 tokens,
        // the same whatever bucket between 14 and 80 tokens a process has learned, and
        // the configured reserve.
        for limit in [20.0, 50.0, 80.0] {
            let t = shaped(1, limit, limit as u64, limit);
            assert!((t.slope() - 10.0 / k).abs() < 1e-9);
            assert!((t.reserve() - 1.0).abs() < 1e-9);
        }
        // The price runs from R/K at the reserve to R at the top of its span, for any bucket.
        for t in [&heroku, &tiny, &minute, &window] {
            let rate = t.rate;
            assert!((t.price(t.reserve()) - rate / 1000.0).abs() < 1e-12);
            let top = t.reserve() + t.slope() * k;
            assert!((t.price(top) - rate).abs() < 1e-9 * rate);
        }
    }

    #[test]
    fn a_shape_scaled_in_tokens_and_rate_gives_the_same_law_in_its_own_units() {
        // A bucket k times deeper refilled k times faster: the reserve, the span and the drain
        // time in bucket fill times are the same (no absolute token or second enters where no
        // floor binds; `min_flow` is a count of tokens, so scaling down would meet it).
        let base = shaped(5, 4500.0, 3600, 4500.0);
        for k in [2.0, 10.0, 100.0] {
            let t = shaped(5, 4500.0 * k, 3600, 4500.0 * k);
            assert!((t.reserve() / t.limit - base.reserve() / base.limit).abs() < 1e-12);
            assert!((t.slope() / t.limit - base.slope() / base.limit).abs() < 1e-12);
            let (r, rb) = (t.limit / 2.0, base.limit / 2.0);
            assert!((t.target(r, 0.0) / t.rate - base.target(rb, 0.0) / base.rate).abs() < 1e-9);
            assert!((t.price(r) / t.rate - base.price(rb) / base.rate).abs() < 1e-9);
        }
    }

    #[test]
    fn the_target_drains_the_surplus_over_a_twelfth_of_the_fill_time_or_four_windows() {
        let t = build(1);
        let r0 = t.reserve();
        // τ_r = max(3600 / 12, 4 × max(1/R, 30/R)) = 300 s.
        assert!((t.target(r0, 0.0) - R).abs() < 1e-12);
        assert!((t.target(r0 + 300.0, 0.0) - (R + 1.0)).abs() < 1e-12);
        assert!((t.target(-1e6, 0.0) - R / 4.0).abs() < 1e-12);
        // A 5-per-second bucket of 5: B/R is a second; four windows of 30 tokens at R are 24 s.
        let tiny = shaped(1, 5.0, 1, 5.0);
        assert!((tiny.target(3.0, 0.0) - (5.0 + 2.0 / 24.0)).abs() < 1e-12);
    }

    #[test]
    fn a_window_measures_the_total_from_the_slope_and_corrects_toward_the_target() {
        let mut t = build(25);
        t.x = R / 100.0;
        let x = t.thread_rate();
        // The bucket sits at the reserve and drops 25 tokens in 10 s: everyone together takes
        // R + 2.5 = 3.75 per second, three times the target R.
        let r0 = t.reserve();
        let first = Sample {
            t: 0.0,
            r: r0 + 12.5,
        };
        let last = Sample {
            t: 10.0,
            r: r0 - 12.5,
        };
        let u = t.apply_window(0, LawWindow::new(first), last);
        assert!((u.total - 3.75).abs() < 1e-12);
        assert!((u.target - R).abs() < 1e-12);
        let d = x.ln() - 0.4 * 3f64.ln();
        let g = t.price(last.r).min(u.target).ln();
        let want = d + u.pull * (g - d).max(-(100f64.ln()));
        assert!((t.thread_rate().ln() - want).abs() < 1e-9);
    }

    #[test]
    fn the_pull_is_bounded_per_window_by_the_crowd_and_a_lone_process_pulls_only_with_room() {
        fn pulled(t: &mut Law, total: f64) -> f64 {
            let r = t.reserve();
            let dt = 1000.0;
            let first = Sample { t: 0.0, r };
            let last = Sample {
                t: dt,
                r: r - (total - t.refill()) * dt,
            };
            t.apply_window(0, LawWindow::new(first), last).pull
        }
        let pull_at = |threads: usize, x: f64, total: f64| {
            let mut t = build(threads);
            t.x = x;
            pulled(&mut t, total)
        };
        // Heroku's 4,500 holds a crowd's swing: the weight is 1 − share/2.
        let l = build(1).slope();
        // A tenth of the total: λ = L/(1.5·N̂) (N̂ = 10), times 1 − 0.05.
        let few = pull_at(1, R / 10.0, R);
        assert!((few - (l / 15.0).min(0.5) * 0.95).abs() < 1e-9, "{few}");
        // A thousandth: a thousand times less per window, however long the window.
        let many = pull_at(1, R / 1000.0, R);
        assert!((many - l / 1500.0 * (1.0 - 0.0005)).abs() < 1e-9, "{many}");
        // The whole total still pulls, at half: it may be beside a process far below it.
        let whole = pull_at(5, R / 5.0, R);
        assert!((whole - (l / 7.5).min(0.5) * 0.5).abs() < 1e-9, "{whole}");
        // On a fixed window: L/(4·N̂), and the lone process's weight, 1 − share.
        let mut window = build(1);
        window.x = R / 10.0;
        window.place_reset(3599.0, 3600.0);
        let l_window = window.slope();
        let on_window = pulled(&mut window, R);
        assert!(
            (on_window - (l_window / 40.0).min(0.5) * 0.9).abs() < 1e-9,
            "{on_window}"
        );
        // A bucket of 20 cannot hold a crowd's swing (63 tokens): a lone client's price sits
        // near its top. There 0.97 of the total is a lone process seen through the total's
        // noise, its weight 0.03 · 0.03/0.1, and the whole total does not pull.
        let small = |x: f64| {
            let mut t = shaped(1, 20.0, 20, 20.0);
            t.x = x;
            (t.slope(), pulled(&mut t, 1.0))
        };
        let (l_small, lone) = small(0.97);
        let lambda = (l_small / (1.5 * 1.0f64.max(1.0 / 0.97))).min(0.5);
        assert!((lone - lambda * 0.03 * 0.3).abs() < 1e-9, "{lone}");
        assert_eq!(small(1.0).1, 0.0);
    }

    #[test]
    fn windows_close_after_a_period_over_root_n_enough_answers_and_enough_flow() {
        let mut t = build(4);
        t.x = 0.01;
        // W = 1 / (0.01 · √4) = 50 s; the first window 0.7 of it.
        let mut r = 4000.0;
        let mut at = |t: &mut Law, s: f64| {
            r -= 20.0;
            t.observe(0, s, r)
        };
        assert!(at(&mut t, 0.0).is_none());
        assert!(at(&mut t, 20.0).is_none());
        assert!(at(&mut t, 34.0).is_none());
        assert!(at(&mut t, 35.0).is_some());
        t.x = 0.01;
        assert!(at(&mut t, 45.0).is_none());
        assert!(at(&mut t, 84.0).is_none());
        assert!(at(&mut t, 85.0).is_some());
        // Long enough, but 3 answers and 30 tokens are still needed.
        let mut u = build(1);
        u.x = 1.0;
        assert!(u.observe(0, 0.0, 100.0).is_none());
        assert!(u.observe(0, 5.0, 100.0).is_none());
        // 10 s at R = 1.25 refilled 12.5 and 4 were taken: 16.5 < 30.
        assert!(u.observe(0, 10.0, 96.0).is_none());
        assert!(u.observe(0, 40.0, 80.0).is_some());
    }

    /// Runs one process's threads against answers that come back at once, and returns each
    /// send's time.
    fn sends(t: &mut Law, until: Nanos) -> Vec<(Nanos, usize)> {
        let mut rng = test_rng();
        let n = t.threads.len();
        let mut due: Vec<Nanos> = (0..n).map(|i| t.delay_ns(0, i, &mut rng)).collect();
        let mut out = Vec::new();
        loop {
            let i = (0..n).min_by_key(|&i| (due[i], i)).unwrap();
            let now = due[i];
            if now >= until {
                return out;
            }
            match acquire(t, now, i) {
                Acquire::Wait(w) => due[i] = now + w,
                Acquire::Send => {
                    out.push((now, i));
                    due[i] = now + t.delay_ns(now, i, &mut rng);
                }
            }
        }
    }

    #[test]
    fn a_process_sends_its_threads_in_line_evenly_spaced() {
        let mut t = Law::new(
            4,
            Params {
                jitter: 0.0,
                ..Params::default()
            },
        );
        t.x = 0.1;
        let out = sends(&mut t, 200 * S);
        // 4 threads at 0.1 per second each: one send every 2.5 s, the threads in turn.
        let gaps: Vec<f64> = out.windows(2).map(|w| secs(w[1].0 - w[0].0)).collect();
        assert!(out.len() >= 70, "{}", out.len());
        for g in &gaps {
            assert!((g - 2.5).abs() < 1e-6, "{gaps:?}");
        }
        let order: Vec<usize> = out.iter().map(|s| s.1).take(8).collect();
        assert_eq!(order, [0, 1, 2, 3, 0, 1, 2, 3]);
        // With jitter each send moves by at most jitter / n of a period: the line holds.
        let mut j = build(4);
        j.x = 0.1;
        let out = sends(&mut j, 400 * S);
        for w in out.windows(2) {
            let gap = secs(w[1].0 - w[0].0);
            assert!((gap - 2.5).abs() <= 2.0 * 0.1 / 4.0 * 10.0 + 1e-6, "{gap}");
        }
    }

    #[test]
    fn a_rate_change_reaches_a_thread_that_is_already_waiting() {
        let mut t = build(1);
        let mut rng = test_rng();
        t.x = 0.01;
        let first = t.delay_ns(0, 0, &mut rng);
        assert!(first <= from_secs(100.0 / 8.0));
        assert_eq!(
            acquire(&mut t, first.max(1), 0),
            Acquire::Wait(t.wait(first.max(1), 0))
        );
        // Ten times the rate, set at 12.5 s: the phase runs ten times faster from there.
        t.set_rate(12 * S, 1.0);
        let mut now = 12 * S;
        while let Acquire::Wait(w) = acquire(&mut t, now, 0) {
            now += w;
        }
        // The first slot (at most one period at 0.01) is reached within a period at 1.0.
        assert!(now <= 14 * S, "{now}");
    }

    #[test]
    fn after_a_reset_the_allowance_is_spread_to_the_next_reset_until_the_level_refills() {
        let mut t = build(1);
        assert!(t.observe(0, 3599.0, 50.0).is_none());
        assert!(t.observe(0, 3601.0, 4500.0).is_none());
        // The reset fell between the two readings: halfway is the best guess.
        assert_eq!(t.reset_at(), Some(3600.0));
        // The allowance read (one more than the count, which the answered request already
        // took) less a share of the reserve (0.75 of 22.5 tokens) that shrinks to
        // nothing at the next reset, over the time left.
        assert!((t.target(4500.0, 3600.0) - (4501.0 - 0.75 * 22.5) / 3600.0).abs() < 1e-12);
        assert!((t.target(1022.5, 6300.0) - (1023.5 - 0.75 * 22.5 / 4.0) / 900.0).abs() < 1e-9);
        // The plan: an even spend's level, all of it at the reset, half halfway.
        assert!((t.planned(5400.0) - 4477.5 / 2.0).abs() < 1e-9);
        assert!(t.observe(0, 3611.0, 4464.0).is_none());
        let u = t.observe(0, 3621.0, 4428.0).expect("the window closes");
        // Inside the window nothing refills. The window of the law opened at 3599 s carries on
        // across the reset: the level fell by nothing before it, the new allowance had
        // lost nothing by 3601 s (4500 left of 4500), and 72 were taken since: 72 in 22 s.
        assert!((u.total - 72.0 / 22.0).abs() < 1e-9, "{}", u.total);
        // A small window resets by two tokens or more.
        let mut small = shaped(1, 10.0, 1, 10.0);
        small.observe(0, 0.9, 1.0);
        small.observe(0, 1.05, 8.0);
        assert!(small.reset_at().is_some());
        // The level rising a little without a reset: the server refills after all.
        t.observe(0, 3640.0, 4440.0);
        assert_eq!(t.reset_at(), None);
    }

    #[test]
    fn without_a_policy_the_refill_is_learned_from_the_stated_resets_of_a_bucket_or_sliding_window()
    {
        // GitHub's dialect: the limit, the count and when the bucket is whole again, no policy.
        let mut rng = test_rng();
        let github = |limit: u64, remaining: u64, reset: Nanos| Answer {
            limit: Some(limit),
            reset: ns(reset),
            ..answer(Status::Ok, remaining)
        };
        // A GCRA of 5 per second from 5 tokens. The first answer has no end to compare with.
        let mut t = build(1);
        let x0 = t.thread_rate();
        t.respond_ns(S, 0, &github(5, 0, S), &mut rng);
        assert_eq!(t.rate, R);
        // Empty again and whole in a second, the end 1.5 s on: at least (5 − 0 − 1)/1 per
        // second, and the rate moves with it.
        t.respond_ns(5 * S / 2, 0, &github(5, 0, S), &mut rng);
        assert_eq!((t.rate, t.period), (4.0, 1.25));
        assert!((t.thread_rate() - x0 * 4.0 / R).abs() < 1e-12);
        // A lower bound leaves it; a higher one raises it.
        t.respond_ns(4 * S, 0, &github(5, 3, S), &mut rng);
        assert_eq!(t.rate, 4.0);
        t.respond_ns(15 * S / 2, 0, &github(5, 0, 4 * S / 5), &mut rng);
        assert!((t.rate - 5.0).abs() < 1e-12, "{}", t.rate);
        // An end that did not move (a fixed window before its turnover) says nothing.
        let mut window = build(1);
        for at in [5, 10, 15, 20] {
            window.respond_ns(at * S, 0, &github(100, 90 - at, (60 - at) * S), &mut rng);
        }
        assert_eq!(window.rate, R);
        // A sliding window of 1,000 per hour says a whole window whatever the count.
        // one reset at levels 300 tokens apart is no bucket's (whose reset would differ by
        // 300/R): the refill is B/reset at once, and lower levels leave it.
        let mut sliding = build(1);
        sliding.respond_ns(20 * S, 0, &github(1000, 600, 3600 * S), &mut rng);
        sliding.respond_ns(40 * S, 0, &github(1000, 300, 3600 * S), &mut rng);
        assert_eq!((sliding.rate, sliding.period), (1000.0 / 3600.0, 3600.0));
        sliding.respond_ns(60 * S, 0, &github(1000, 5, 3600 * S), &mut rng);
        assert_eq!(sliding.rate, 1000.0 / 3600.0);
        // The same reset at levels a bucket's refill explains is a bucket's: a GCRA of 100 per
        // minute at 50 and 49 tokens says 30 s and 31 s (0.6 s a token, rounded up), and only
        // the bound (B − r − 1)/reset is taken.
        let mut bucket = build(1);
        bucket.respond_ns(10 * S, 0, &github(100, 50, 30 * S), &mut rng);
        bucket.respond_ns(12 * S, 0, &github(100, 49, 31 * S), &mut rng);
        assert_eq!(bucket.rate, 50.0 / 31.0);
        // Without the bucket's refill in the rule, 3 tokens apart under one reset would do.
        let mut near = build(1);
        near.respond_ns(10 * S, 0, &github(100, 50, 30 * S), &mut rng);
        near.respond_ns(12 * S, 0, &github(100, 47, 30 * S), &mut rng);
        assert_eq!(near.rate, 52.0 / 30.0);
        // A stated or configured quota wins.
        let mut stated = build(1);
        let policy = Answer {
            policy: Some(Policy {
                limit: 5,
                window: Duration::from_secs(1),
            }),
            ..github(5, 0, S)
        };
        stated.respond_ns(S, 0, &policy, &mut rng);
        stated.respond_ns(5 * S / 2, 0, &github(5, 0, S / 2), &mut rng);
        assert_eq!(stated.rate, 5.0);
        let mut given = shaped(1, 50.0, 600, 5.0);
        given.respond_ns(S, 0, &github(5, 0, S), &mut rng);
        given.respond_ns(5 * S / 2, 0, &github(5, 0, S / 2), &mut rng);
        assert_eq!(given.rate, 50.0 / 600.0);
    }

    /// A success in GitHub's dialect with a limit of 100: the count and the stated reset.
    fn github100(remaining: u64, reset_s: u64) -> Answer {
        Answer {
            limit: Some(100),
            reset: ns(reset_s * S),
            ..answer(Status::Ok, remaining)
        }
    }

    #[test]
    fn resets_no_bucket_states_make_the_refill_the_limit_over_the_longest_reset() {
        // GitHub's dialect on a fixed window of 100 per minute, read by a process that
        // sends rarely, so its answers fall in different windows and the stated end moves.
        let mut rng = test_rng();
        let mut t = build(1);
        // Half-way through a window, 60 left: a bucket whole in 30 s (rounded up) refills at
        // least 39/30 and less than 41/29 a second, and the bound is taken.
        t.respond_ns(30 * S, 0, &github100(60, 30), &mut rng);
        t.respond_ns(90 * S, 0, &github100(60, 30), &mut rng);
        assert!((t.rate - 39.0 / 30.0).abs() < 1e-12, "{}", t.rate);
        // 4 s before a later window's end, 12 left: a bucket would refill at least 87/4 a
        // second, above every ceiling read: no bucket says this. The refill is the limit over
        // the longest reset stated, not 22 a second.
        t.respond_ns(176 * S, 0, &github100(12, 4), &mut rng);
        assert_eq!((t.rate, t.period), (100.0 / 30.0, 30.0));
        assert!(t.no_bucket);
        // A longer reset brings it down toward the window's 100 per minute.
        t.respond_ns(200 * S, 0, &github100(10, 40), &mut rng);
        assert_eq!((t.rate, t.period), (100.0 / 40.0, 40.0));
        // A fixed window whose turnover the level showed is no bucket either: before its
        // period is read, the refill is the limit over the longest reset, not the default
        // quota's 4,500 an hour (a process that sent too rarely to read the period stayed on
        // the hour's rate and at the floor, Jain's index 0.80 for five processes).
        let mut turned = build(1);
        turned.place_reset(59.0, 60.0);
        turned.respond_ns(70 * S, 0, &github100(90, 50), &mut rng);
        assert_eq!((turned.rate, turned.period), (2.0, 50.0));
        // A real bucket's answers never break the ceiling: a GCRA of 100 per minute (0.6 s a
        // token), whole again (100 − r)·0.6 s later, rounded up, read at any level and time.
        let mut bucket = build(1);
        for (at, r) in [(10, 50), (40, 90), (70, 5), (130, 60), (200, 1)] {
            let reset = ((100 - r) as f64 * 0.6).ceil() as u64;
            bucket.respond_ns(at * S, 0, &github100(r, reset), &mut rng);
        }
        assert!(!bucket.no_bucket);
        assert!(
            bucket.rate <= 100.0 / 60.0 && bucket.rate > 1.5,
            "{}",
            bucket.rate
        );
    }

    #[test]
    fn a_count_above_the_bucket_the_quota_implies_raises_the_bucket_unless_a_limit_is_stated() {
        // A token bucket of 1 per second bursting to 20, told as `quota = 1`, `period = 1s`
        // (Heroku's dialect: the count alone). 19 left after a request: the bucket is 20.
        let mut rng = test_rng();
        let mut told = shaped(1, 1.0, 1, 1.0);
        let heroku = |remaining| Answer {
            limit: None,
            ..answer(Status::Ok, remaining)
        };
        told.respond_ns(S, 0, &heroku(19), &mut rng);
        assert_eq!((told.limit, told.rate), (20.0, 1.0));
        // A count below it leaves it; a stated limit wins over the count.
        told.respond_ns(2 * S, 0, &heroku(3), &mut rng);
        assert_eq!(told.limit, 20.0);
        told.respond_ns(3 * S, 0, &answer(Status::Ok, 30), &mut rng);
        assert_eq!(told.limit, 4500.0);
        let mut stated = shaped(1, 1.0, 1, 1.0);
        let contradicting = Answer {
            limit: Some(10),
            ..answer(Status::Ok, 19)
        };
        stated.respond_ns(S, 0, &contradicting, &mut rng);
        assert_eq!(stated.limit, 10.0);
    }

    #[test]
    fn a_jump_the_readings_latencies_allow_is_no_fixed_windows_turnover() {
        // A GCRA of 5 per second, bucket 10, its quota given. Reading A: sent at 10 s with 0
        // left, its answer a second late, so the law dates it 10.5 s, though the server may
        // have counted it at 10 s. Reading B: 5 left at 10.91 s, 20 ms of latency.
        const MS: Nanos = 1_000_000;
        let read = |t: &mut Law, thread: usize, sent: Nanos, latency: Nanos, r: u64| {
            t.threads[thread].last_send = Some(sent);
            let a = Answer {
                limit: Some(10),
                latency: Duration::from_nanos(latency),
                ..answer(Status::Ok, r)
            };
            let mut rng = test_rng();
            t.respond_ns(sent + latency, thread, &a, &mut rng);
        };
        let mut slow = shaped(2, 5.0, 1, 10.0);
        read(&mut slow, 0, 10 * S, S, 0);
        read(&mut slow, 1, 10_900 * MS, 20 * MS, 5);
        // 0.41 s apart, but as much as 0.92 s of refill between the counts: no turnover.
        assert_eq!(slow.reset_span, None);
        // The same levels read 0.41 s apart with 20 ms of latency each: 5 tokens where 2.15
        // can have come back, more than the 2 tokens of slack, is a window's reset.
        let mut fast = shaped(2, 5.0, 1, 10.0);
        read(&mut fast, 0, 10_490 * MS, 20 * MS, 0);
        read(&mut fast, 1, 10_900 * MS, 20 * MS, 5);
        assert!(fast.reset_span.is_some());
    }

    #[test]
    fn on_a_sliding_window_a_jump_is_an_echo_not_a_turnover() {
        // 1,000 per hour, one thread: two readings 6 s apart, the level up from 197 to 372 as
        // the requests a crowd sent together an hour ago leave the window. Read as a bucket, no
        // refill explains 175 tokens in 6 s: a fixed window turned over. Known to be a sliding
        // window, it is what left the window, and the law stays in sliding mode.
        for sliding in [false, true] {
            let mut t = shaped(1, 1000.0, 3600, 1000.0);
            t.sliding = sliding;
            t.observe(3601 * S, 3601.0, 197.0);
            t.observe(3607 * S, 3607.0, 372.0);
            assert_eq!(t.reset_span.is_some(), !sliding, "sliding {sliding}");
            assert_eq!(t.sliding, sliding);
        }
    }

    #[test]
    fn without_a_policy_a_fixed_windows_period_is_read_from_its_stated_reset() {
        // GitHub's dialect on 100 per minute: the limit and the window's end, no policy. The
        // law starts on the default quota (1.25 per second) with the stated bucket of 100.
        let mut rng = test_rng();
        // Answers every 5 s; each window's end is stated alike until it turns over.
        let windows = |t: &mut Law, rng: &mut SplitMix, from: u64, upto: u64| {
            for at in (from..=upto).step_by(5) {
                let end = (at / 60 + 1) * 60;
                // 99 left at a window's start, 4 fewer every 5 s.
                let left = 99 - (at % 60) / 5 * 4;
                t.respond_ns(at * S, 0, &github100(left, end - at), rng);
            }
        };
        let mut t = build(1);
        windows(&mut t, &mut rng, 5, 55);
        assert_eq!(t.period, 3600.0);
        // The second window's end, said alike for more than 2 s: a period of 60 s.
        windows(&mut t, &mut rng, 60, 70);
        assert_eq!(t.period, 60.0);
        assert!((t.rate - 100.0 / 60.0).abs() < 1e-12);
        // A bucket's reset (whole again) moves with the clock: no period is read from it.
        // (It tells the refill instead: at least (100 − 98 − 1)/2 s, see `learn_refill`.)
        let mut bucket = build(1);
        for at in (2..200).step_by(2) {
            bucket.respond_ns(at * S, 0, &github100(98, 2), &mut rng);
        }
        assert_eq!((bucket.rate, bucket.period), (0.5, 200.0));
        assert!(bucket.reset_at().is_none());
        // Nor from a bucket left alone, whose end stays put while it fills (a token every 5 s),
        // then spent on and left alone again: two steady ends, but the count fell between
        // them, never jumped.
        let mut idle = build(1);
        for at in (5..=50).step_by(5) {
            idle.respond_ns(at * S, 0, &github100(50 + at / 5, 250 - at), &mut rng);
        }
        for at in (55..=120).step_by(5) {
            idle.respond_ns(at * S, 0, &github100(20 + at / 5, 400 - at), &mut rng);
        }
        assert!(idle.reset_at().is_none());
        assert!((idle.rate - 68.0 / 345.0).abs() < 1e-12, "{}", idle.rate);
        // A stated or configured quota wins.
        let mut stated = build(1);
        let policy = Answer {
            policy: Some(Policy {
                limit: 100,
                window: Duration::from_secs(3600),
            }),
            ..github100(40, 10)
        };
        stated.respond_ns(S, 0, &policy, &mut rng);
        windows(&mut stated, &mut rng, 5, 130);
        assert_eq!(stated.period, 3600.0);
        let mut given = shaped(1, 50.0, 600, 100.0);
        windows(&mut given, &mut rng, 5, 130);
        assert_eq!(given.period, 600.0);
    }

    #[test]
    fn a_short_fixed_window_is_spent_to_its_last_token_by_the_reset() {
        // 10 per second in fixed 1-second windows, reset seen between 0.95 s and 1.05 s.
        let t = turned_over_at_one_second(1);
        // A tenth of a second before the next reset with the count at 0: the request just
        // answered was the ninth, one is left, and no reserve is worth keeping past the reset
        // (0.1 of the reserve's 0.75 token at 0.1 of the period left): 9.25 per second, where
        // holding a whole token gave the floor, 0.5 per second.
        assert!(
            (t.target(0.0, 1.9) - 9.25).abs() < 1e-9,
            "{}",
            t.target(0.0, 1.9)
        );
    }

    #[test]
    fn a_short_fixed_window_still_closes_windows_of_the_law() {
        // Ten tokens per window can never show `min_flow` (30) between two resets; a window of
        // the law closes after a share of the allowance instead (here 3 tokens).
        let mut t = turned_over_at_one_second(1);
        assert!(t.observe(0, 1.15, 8.0).is_none());
        // The window opened at 0.95 s carries on across the reset: three answers in
        // 0.3 s, 3 tokens taken (1 before the first reading after the reset, 2 since), 6 by the
        // nominal refill's count (3 refilled).
        let u = t
            .observe(0, 1.25, 7.0)
            .expect("the window closes inside the server's window");
        assert!((u.total - 10.0).abs() < 1e-9, "{}", u.total);
    }

    #[test]
    fn a_window_of_the_law_carries_across_a_fixed_windows_turnovers() {
        // 10 per second in fixed windows, read about once a window: a window of the law that
        // restarted at every turnover would never see the three answers it needs.
        let mut t = turned_over_at_one_second(1);
        assert!(t.observe(0, 1.95, 2.0).is_none());
        assert!(t.observe(0, 2.05, 8.0).is_none());
        let u = t
            .observe(0, 2.95, 1.0)
            .expect("the window closes across two resets");
        // Taken: 1 of the first allowance by 1.05 s and 7 more by 1.95 s, 2 of the second by
        // 2.05 s and 7 more by 2.95 s: 17 in the 2 s since the window opened.
        assert!((u.total - 8.5).abs() < 1e-9, "{}", u.total);
        // The level since the last turnover sets the target: 8 and 1 left, 0.55 s on average
        // before the next reset.
        assert!((u.target - t.target(4.5, 2.5)).abs() < 1e-9);
    }

    #[test]
    fn on_a_fixed_window_a_window_of_the_law_longer_than_what_is_left_spends_what_follows() {
        // 10 per second in fixed windows, five threads at 0.2 per second: a window of the law
        // lasts 1/(0.2·√5) ≈ 2.24 s, past the reset and the next two.
        let mut t = turned_over_at_one_second(5);
        t.x = 0.2;
        let (w, r0) = (t.window_secs(), t.reserve());
        // At 1.75 s, 4 left: the allowance now, less the share of the reserve left at a
        // quarter of the window, and the whole allowances of the windows to come up to the
        // horizon (a reserve kept in them is lost at their resets), over it.
        let kept = 0.75 * r0 * 0.25;
        let expected = (4.0 + 1.0 - kept + 10.0 * (w - 0.25)) / w;
        assert!((t.target(4.0, 1.75) - expected).abs() < 1e-9);
        // With a horizon of many windows the target nears the whole allowance per window; a
        // window of the law that ends before the reset spreads what is left over it.
        t.x = 0.001;
        assert!(
            (t.target(4.0, 1.75) - 10.0).abs() < 0.01,
            "{}",
            t.target(4.0, 1.75)
        );
        t.x = 20.0;
        assert!((t.target(4.0, 1.75) - (5.0 - kept) / 0.25).abs() < 1e-9);
    }

    #[test]
    fn on_a_fixed_window_the_process_counts_its_own_refusals_in_the_total() {
        // Two processes read the same levels of a spent fixed window; one of them is also
        // refused once, a request the level (0 however many come) cannot show.
        const MS: Nanos = 1_000_000;
        let mut rng = test_rng();
        let mut read = turned_over_at_one_second(1);
        let mut refused = turned_over_at_one_second(1);
        refused.threads[0].last_send = Some(1_500 * MS);
        let spent = Answer {
            retry_after: ns(500 * MS),
            limit: Some(10),
            ..answer(Status::Limited, 0)
        };
        refused.respond_ns(1_500 * MS, 0, &spent, &mut rng);
        read.observe(1_500 * MS, 1.5, 0.0);
        let a = read.observe(0, 1.7, 0.0).expect("the window closes");
        let b = refused.observe(0, 1.7, 0.0).expect("the window closes");
        // The spent window's refusal cut no rate, and counts one request in 0.75 s.
        assert!(
            (b.total - a.total - 1.0 / 0.75).abs() < 1e-9,
            "{} {}",
            a.total,
            b.total
        );
        // A bucket's level shows what it was asked for: a refusal adds nothing there (the
        // refill, 10 per second, and 3 fewer in 0.5 s).
        let mut bucket = shaped(1, 10.0, 1, 10.0);
        let w = LawWindow {
            refused: 1.0,
            ..LawWindow::new(Sample { t: 0.5, r: 5.0 })
        };
        let u = bucket.apply_window(0, w, Sample { t: 1.0, r: 2.0 });
        assert!((u.total - 16.0).abs() < 1e-9, "{}", u.total);
    }

    #[test]
    fn a_spent_fixed_window_holds_a_process_of_many_slow_threads_without_a_cut() {
        // 100 per minute in fixed windows, one process of 200 threads: each thread sends once
        // in two windows, but the process 100 times per window, in line.
        let mut t = shaped(200, 100.0, 60, 100.0);
        let mut rng = test_rng();
        t.observe(0, 59.0, 0.0);
        t.observe(0, 61.0, 99.0);
        let x = t.thread_rate();
        t.threads[7].last_send = Some(110 * S);
        let spent = Answer {
            retry_after: ns(10 * S),
            limit: Some(100),
            ..answer(Status::Limited, 0)
        };
        t.respond_ns(110 * S, 7, &spent, &mut rng);
        assert_eq!(t.thread_rate(), x);
        assert!(t.threads[7].hold >= 120 * S);
    }

    fn stated(status: Status, remaining: u64, reset_s: u64) -> Answer {
        Answer {
            limit: Some(30),
            reset: ns(reset_s * S),
            ..answer(status, remaining)
        }
    }

    #[test]
    fn alone_on_a_one_second_window_the_level_and_own_successes_tell_a_sliding_window() {
        // 20 per second, every answer stating a reset of one second: a sliding window, a bucket
        // and a fixed window alike. One thread sends every 103 ms for 8 s, alone. A sliding
        // window reads 20 less the 10 it let in over the last second; a bucket refills between
        // sends (19 left each time); a fixed window counts down from 20 each second.
        let sends_since = |k: u64, from_ms: u64| (1..=k).filter(|j| 103 * j > from_ms).count();
        let sliding_level = |k: u64| 20 - sends_since(k, (103 * k).saturating_sub(1000)) as u64;
        let fixed_level = |k: u64| 20 - sends_since(k, (103 * k / 1000 * 1000).max(1) - 1) as u64;
        let readings_from = |first: u64, level: &dyn Fn(u64) -> u64, law: &mut Law| {
            let mut rng = test_rng();
            for k in first..first + 80 {
                let a = Answer {
                    limit: Some(20),
                    reset: ns(S),
                    ..answer(Status::Ok, level(k))
                };
                law.respond_ns(k * 103 * S / 1000, 0, &a, &mut rng);
            }
        };
        let readings = |level: &dyn Fn(u64) -> u64, law: &mut Law| readings_from(1, level, law);
        let mut sliding = shaped(1, 20.0, 1, 20.0);
        // A burst's echo read as a fixed window's turnover before: forgotten.
        sliding.reset_span = Some((0.0, 0.0));
        readings(&sliding_level, &mut sliding);
        assert!(sliding.sliding);
        assert_eq!(sliding.reset_span, None);
        let mut bucket = shaped(1, 20.0, 1, 20.0);
        readings(&|_| 19, &mut bucket);
        assert!(!bucket.sliding);
        let mut fixed = shaped(1, 20.0, 1, 20.0);
        readings(&fixed_level, &mut fixed);
        assert!(!fixed.sliding);
        // A bucket that a process alone keeps empty reads `r + own = B` too: no verdict.
        let mut empty = shaped(1, 20.0, 1, 20.0);
        readings(&|_| 0, &mut empty);
        assert!(!empty.sliding);
        // Half the readings above `B` switch back.
        readings_from(81, &|_| 19, &mut sliding);
        assert!(!sliding.sliding);
    }

    #[test]
    fn a_reset_of_a_whole_period_at_any_level_is_a_sliding_window() {
        // 30 per minute. A bucket at 5 of 30 is whole in 50 s; a sliding window says 60 s (its
        // newest request leaves a minute later) whatever the level.
        let mut rng = test_rng();
        let mut t = shaped(1, 30.0, 60, 30.0);
        for now in [10, 11, 12] {
            t.respond_ns(now * S, 0, &stated(Status::Ok, 5, 50), &mut rng);
        }
        assert!(!t.sliding);
        for now in [10, 11] {
            t.respond_ns(now * S, 0, &stated(Status::Ok, 5, 60), &mut rng);
        }
        // Two readings, and a second apart: a fixed window that has just turned over says a
        // whole period too.
        assert!(!t.sliding);
        t.respond_ns(13 * S, 0, &stated(Status::Ok, 5, 60), &mut rng);
        assert!(t.sliding);
        // A refusal's reset counts from the last request let in: it does not undo it.
        t.respond_ns(14 * S, 0, &stated(Status::Limited, 0, 20), &mut rng);
        assert!(t.sliding);
        // A reset well short of a period (a window counting down) does.
        t.respond_ns(15 * S, 0, &stated(Status::Ok, 5, 40), &mut rng);
        assert!(!t.sliding);
        // Without a quota, stated or given, the bucket's reset is unknown: no verdict.
        let mut blind = build(1);
        for now in [10, 12, 14, 16] {
            blind.respond_ns(now * S, 0, &stated(Status::Ok, 5, 3600), &mut rng);
        }
        assert!(!blind.sliding);
    }

    #[test]
    fn every_turnover_seen_narrows_down_where_the_resets_fall() {
        // A window of a minute. Each turnover is seen between two readings; the resets are a
        // period apart, so the spans meet (shifted by whole periods) and shrink.
        let mut t = shaped(1, 100.0, 60, 100.0);
        t.place_reset(59.0, 60.8);
        assert_eq!(t.reset_at(), Some(59.9));
        t.place_reset(119.5, 121.0);
        assert_eq!(t.reset_span, Some((119.5, 120.8)));
        t.place_reset(179.9, 180.3);
        assert_eq!(t.reset_span, Some((179.9, 180.3)));
        assert!((t.to_reset(200.0).unwrap() - 40.1).abs() < 1e-9);
        // A span that meets none of them: the period was not what the law believed.
        t.place_reset(200.0, 201.0);
        assert_eq!(t.reset_at(), Some(200.5));
    }

    #[test]
    fn a_stated_end_that_stays_put_while_the_count_falls_is_a_fixed_window() {
        // 100 per minute. A fixed window ending at 60 s states the same end on every answer;
        // a bucket's end moves on as it is used, and stays put only while nobody uses it.
        let mut rng = test_rng();
        let said = |remaining: u64, reset_s: u64| Answer {
            limit: Some(100),
            reset: ns(reset_s * S),
            ..answer(Status::Ok, remaining)
        };
        let mut window = shaped(1, 100.0, 60, 100.0);
        window.respond_ns(10 * S, 0, &said(80, 50), &mut rng);
        window.respond_ns(11 * S, 0, &said(78, 49), &mut rng);
        // The same end twice, but within two of the header's seconds: not yet.
        assert_eq!(window.reset_at(), None);
        window.respond_ns(13 * S, 0, &said(75, 47), &mut rng);
        // Each stated end is rounded up to a whole second: the end is in the second below it.
        assert_eq!(window.reset_span, Some((59.0, 60.0)));
        assert_eq!(window.to_reset(13.0), Some(46.5));
        assert_eq!(window.refill(), 0.0);

        // A bucket of 100 refilling 5/3 per second: at 80 it is whole in 12 s, at 70 in 18 s.
        let mut used = shaped(1, 100.0, 60, 100.0);
        used.respond_ns(10 * S, 0, &said(80, 12), &mut rng);
        used.respond_ns(13 * S, 0, &said(70, 18), &mut rng);
        assert_eq!(used.reset_at(), None);
        // Left alone, it fills toward one instant: the same end, but the count rose.
        let mut alone = shaped(1, 100.0, 60, 100.0);
        alone.respond_ns(10 * S, 0, &said(80, 12), &mut rng);
        alone.respond_ns(16 * S, 0, &said(90, 6), &mut rng);
        assert_eq!(alone.reset_at(), None);
        // Without a quota, stated or given, the period is unknown: no verdict.
        let mut blind = build(1);
        blind.respond_ns(10 * S, 0, &said(80, 50), &mut rng);
        blind.respond_ns(13 * S, 0, &said(75, 47), &mut rng);
        assert_eq!(blind.reset_at(), None);
    }

    #[test]
    fn a_buckets_reset_rounded_by_a_time_scaled_server_is_no_sliding_window() {
        // Heroku's 4,500 per hour served live at 60x: the server rounds its reset up to whole
        // real seconds, 60 s of the client's time. At 2 tokens the bucket is whole in 3598.4 s
        // and says 3600, a whole period: within the slack (72 s, 0.02 of the hour), no vote.
        let mut rng = test_rng();
        let mut t = shaped(1, 4500.0, 3600, 4500.0);
        let gcra = Answer {
            limit: Some(4500),
            reset: ns(3600 * S),
            ..answer(Status::Ok, 2)
        };
        for now in [100, 200, 300, 400] {
            t.respond_ns(now * S, 0, &gcra, &mut rng);
        }
        assert!(!t.sliding);
        // A sliding window of the same quota, at 600 left, says a whole hour: 2,880 s beyond
        // the bucket's.
        let mut w = shaped(1, 4500.0, 3600, 4500.0);
        let sliding = Answer {
            reset: ns(3600 * S),
            ..answer(Status::Ok, 600)
        };
        for now in [500, 600, 700] {
            w.respond_ns(now * S, 0, &sliding, &mut rng);
        }
        assert!(w.sliding);
    }

    #[test]
    fn a_time_scaled_servers_whole_seconds_are_read_at_their_own_resolution() {
        // 100 per minute served at 60x: the stated reset, under a real second, says one real
        // second, 60 s of the client's time, a whole period at any level. Read to the second it
        // votes for a sliding window; read at the server's resolution (60 s) it does not.
        let mut rng = test_rng();
        let gcra = Answer {
            limit: Some(100),
            reset: ns(60 * S),
            ..answer(Status::Ok, 4)
        };
        let mut fine = shaped(1, 100.0, 60, 100.0);
        let mut scaled = Law::new(
            1,
            Params {
                quota: Some(100.0),
                period: Some(Duration::from_secs(60)),
                reset_resolution: Duration::from_secs(60),
                ..Params::default()
            },
        );
        for now in [100, 200, 300, 400] {
            fine.respond_ns(now * S, 0, &gcra, &mut rng);
            scaled.respond_ns(now * S, 0, &gcra, &mut rng);
        }
        assert!(fine.sliding);
        assert!(!scaled.sliding);
    }

    #[test]
    fn on_a_sliding_window_the_level_is_read_as_the_periods_total() {
        // One client sending 25 a minute on a 30-per-minute sliding window: the level stays at
        // 5, so its slope says nothing (the law read the refill, 0.5 per second, and held);
        // what the last minute took is 25, so the total is 25/60, short of 30/60.
        let mut t = shaped(1, 30.0, 60, 30.0);
        t.sliding = true;
        t.x = 25.0 / 60.0;
        t.observe(0, 100.0, 5.0);
        t.observe(0, 130.0, 5.0);
        let u = t.observe(0, 160.0, 5.0).expect("the window closes");
        assert!((u.total - 25.0 / 60.0).abs() < 1e-12, "{}", u.total);
        assert!((u.target - 0.5).abs() < 1e-12, "{}", u.target);
        assert_eq!(u.pull, 0.0);
        // One period's worth of gain: the rate moves by (target/total)^0.4.
        let want = 25.0 / 60.0 * (30.0f64 / 25.0).powf(0.4);
        assert!(
            (t.thread_rate() - want).abs() < 1e-12,
            "{}",
            t.thread_rate()
        );
        // The level falling faster than the period's average says the rate is high now (20
        // taken in 20 s, where the average says 10 in the minute): read the fall, and correct
        // within the window.
        let mut f = shaped(1, 30.0, 60, 30.0);
        f.sliding = true;
        f.x = 1.0;
        f.observe(0, 100.0, 30.0);
        f.observe(0, 110.0, 20.0);
        let v = f.observe(0, 120.0, 10.0).expect("the window closes");
        assert!((v.total - 1.0).abs() < 1e-12, "{}", v.total);
        let want = 0.5f64.powf(0.4);
        assert!(
            (f.thread_rate() - want).abs() < 1e-12,
            "{}",
            f.thread_rate()
        );
    }

    #[test]
    fn on_a_sliding_window_a_429_gives_up_one_request_per_period() {
        let mut rng = test_rng();
        let mut t = shaped(1, 30.0, 60, 30.0);
        t.sliding = true;
        t.x = 0.5;
        t.threads[0].last_send = Some(100 * S);
        let refused = Answer {
            retry_after: ns(2 * S),
            ..stated(Status::Limited, 0, 58)
        };
        t.respond_ns(100 * S, 0, &refused, &mut rng);
        assert!((t.thread_rate() - 0.5 * 29.0 / 30.0).abs() < 1e-12);
    }

    #[test]
    fn a_first_window_that_reads_a_flood_cuts_straight_to_the_target() {
        // 200 one-thread processes start together, each sure it is alone: the level falls by
        // 250 tokens in 10 s, everyone together takes R + 25 = 26.25 per second.
        let flood = |updates: u64| {
            let mut t = build(1);
            t.updates = updates;
            let x = t.thread_rate().ln();
            let first = Sample { t: 0.0, r: 400.0 };
            let last = Sample { t: 10.0, r: 150.0 };
            let u = t.apply_window(0, LawWindow::new(first), last);
            assert!((u.total - 26.25).abs() < 1e-12);
            // The target spends some of the 275 tokens over the reserve: still under a
            // fourth of the total.
            assert!(u.target > R && u.target * 4.0 < u.total, "{}", u.target);
            let g = t.price(last.r).min(u.target).ln();
            let pulled = move |d: f64| d + u.pull * (g - d).max(-(100f64.ln()));
            (t.thread_rate().ln(), x, (u.target / u.total).ln(), pulled)
        };
        // The first window cuts by the whole ratio, the pull on top as always...
        let (first, x, ratio, pulled) = flood(0);
        assert!((first - pulled(x + ratio)).abs() < 1e-9);
        // ... a later one by the gain's share of it, as a flood under four times the target
        // does.
        let (later, x, ratio, pulled) = flood(1);
        assert!((later - pulled(x + 0.4 * ratio)).abs() < 1e-9);
        assert!(first < later - 0.5, "{first} against {later}");
        // A full start's flood is its own surplus being spent: no straight cut.
        let mut full = build(1);
        full.observe(0, 0.0, 4500.0);
        let x = full.thread_rate();
        let u = full.apply_window(
            0,
            LawWindow::new(Sample { t: 0.0, r: 4500.0 }),
            Sample { t: 10.0, r: 4000.0 },
        );
        assert!(u.total > 4.0 * u.target);
        assert!(full.thread_rate() > x * (u.target / u.total) * 2.0);
    }

    #[test]
    fn a_full_first_reading_spends_the_surplus_at_the_refill_rate_until_the_price_range() {
        let mut t = build(1);
        assert!(t.observe(0, 0.0, 4500.0).is_none());
        assert!(t.full_start);
        assert!((t.target(4500.0, 0.0) - 2.0 * R).abs() < 1e-12);
        // Down into the price's range ends it.
        let top = t.reserve() + t.slope() * 1000f64.ln();
        t.observe(0, 20.0, top - 1.0);
        assert!(!t.full_start);
        assert!((t.target(4500.0, 20.0) - (R + 4477.5 / 300.0)).abs() < 1e-12);
        let mut u = build(1);
        u.observe(0, 0.0, 4000.0);
        assert!(!u.full_start);
    }

    #[test]
    fn a_429_cuts_once_per_round_and_retry_after_is_honoured_with_positive_jitter() {
        let mut t = build(2);
        let mut rng = test_rng();
        t.x = 0.5;
        // A window has been read: no first cut.
        t.updates = 1;
        let refused = Answer {
            retry_after: ns(10 * S),
            ..answer(Status::Limited, 0)
        };
        for th in 0..2 {
            t.delay_ns(100 * S, th, &mut rng);
            t.threads[th].last_send = Some(100 * S);
        }
        t.respond_ns(101 * S, 0, &refused, &mut rng);
        t.respond_ns(101 * S, 1, &refused, &mut rng);
        // Two threads on Heroku's bucket, which holds a crowd: half of a halving, 2^(−1/2)
        //, once for both refusals of the round.
        let cut = 0.5f64.sqrt();
        assert!((t.thread_rate() - 0.5 * cut).abs() < 1e-12);
        assert_eq!(t.backoffs(), 1);
        for th in 0..2 {
            let hold = t.threads[th].hold;
            assert!((111 * S..=116 * S).contains(&hold), "{hold}");
        }
        let mut now = 101 * S;
        while let Acquire::Wait(w) = acquire(&mut t, now, 0) {
            now += w;
        }
        assert!(now >= 111 * S);
        t.respond_ns(now + 5 * S, 0, &refused, &mut rng);
        assert!((t.thread_rate() - 0.5 * cut * cut).abs() < 1e-12);
    }

    #[test]
    fn a_first_refusal_on_a_bucket_that_holds_a_crowd_cuts_to_a_crowds_share() {
        let mut rng = test_rng();
        let refused = |t: &mut Law, at: Nanos, rng: &mut SplitMix| {
            t.threads[0].last_send = Some(at);
            let limited = Answer {
                limit: Some(t.limit as u64),
                ..answer(Status::Limited, 0)
            };
            t.respond_ns(at, 0, &limited, rng);
            t.thread_rate()
        };
        let swing = 2.0 * 1000f64.sqrt();
        // Heroku's 4,500 refused before any window: a crowd emptied it. The process of
        // 4 threads is cut to 4/(2√K) of its rate, and the next refusal by a quarter of a
        // halving: 2^(−1/4).
        let quarter = 0.5f64.powf(0.25);
        let mut t = build(4);
        t.x = 0.3;
        let first = refused(&mut t, 10 * S, &mut rng);
        assert!((first - 0.3 * 4.0 / swing).abs() < 1e-12, "{first}");
        let second = refused(&mut t, 100_000 * S, &mut rng);
        assert!((second - first * quarter).abs() < 1e-12, "{second}");
        // A process of 100 threads is already slower per thread than such a crowd: it halves.
        let mut many = build(100);
        many.x = 0.01;
        assert_eq!(refused(&mut many, 10 * S, &mut rng), 0.005);
        // After a window has read the level, a refusal cuts a process of four threads by a
        // quarter of a halving, 2^(−1/4): four refusals in four rounds halve it, as
        // one refusal each would halve four one-thread processes.
        let mut read = build(4);
        read.x = 0.3;
        read.updates = 1;
        let once = refused(&mut read, 10 * S, &mut rng);
        assert!((once - 0.3 * quarter).abs() < 1e-12, "{once}");
        for round in 1..4 {
            refused(&mut read, (10 + 100_000 * round) * S, &mut rng);
        }
        assert!((read.thread_rate() - 0.15).abs() < 1e-12);
        // A one-thread process halves.
        let mut single = build(1);
        single.x = 1.0;
        single.updates = 1;
        assert_eq!(refused(&mut single, 10 * S, &mut rng), 0.5);
        // Without a count there is no level, and no crowd to be one thread of: the refused
        // thread is one of four, each cut to BLIND_CUT.
        let mut blind = build(4);
        blind.x = 0.3;
        blind.updates = 1;
        blind.threads[0].last_send = Some(10 * S);
        blind.respond_ns(10 * S, 0, &Answer::bare(Status::Limited), &mut rng);
        assert!((blind.thread_rate() - 0.3 * BLIND_CUT.powf(0.25)).abs() < 1e-12);
        // A bucket of 20 cannot hold a crowd's swing: its refusals are its own noise.
        let mut small = shaped(4, 20.0, 20, 20.0);
        small.x = 0.3;
        assert_eq!(refused(&mut small, 10 * S, &mut rng), 0.15);
    }

    #[test]
    fn a_spent_fixed_window_holds_until_its_reset_without_cutting_the_rate() {
        let mut t = build(1);
        let mut rng = test_rng();
        // A window turned over at 3600 s; the thread sends 1.25 per second, 4500 per window.
        t.observe(0, 3500.0, 50.0);
        t.observe(0, 3600.0, 4500.0);
        let x = t.thread_rate();
        t.threads[0].last_send = Some(5000 * S);
        // Refused at 5000 s with the wait to the reset at 7200 s: the allowance is spent, the
        // rate is not too high for the next window.
        let spent = Answer {
            retry_after: ns(2200 * S),
            ..answer(Status::Limited, 0)
        };
        t.respond_ns(5000 * S, 0, &spent, &mut rng);
        assert_eq!(t.thread_rate(), x);
        assert!(t.threads[0].hold >= 7200 * S);
        // A refusal that the reset does not explain still halves.
        t.threads[0].last_send = Some(5100 * S);
        let other = Answer {
            retry_after: ns(10 * S),
            ..Answer::bare(Status::Limited)
        };
        t.respond_ns(5100 * S, 0, &other, &mut rng);
        assert_eq!(t.thread_rate(), x / 2.0);
    }

    #[test]
    fn errors_back_off_per_thread_without_touching_the_rate() {
        let mut t = build(1);
        let mut rng = test_rng();
        let x = t.thread_rate();
        t.respond_ns(10 * S, 0, &Answer::bare(Status::Unavailable), &mut rng);
        assert_eq!(t.threads[0].hold, 11 * S);
        t.respond_ns(11 * S, 0, &Answer::bare(Status::Error), &mut rng);
        assert_eq!(t.threads[0].hold, 13 * S);
        assert_eq!(t.thread_rate(), x);
        t.respond_ns(13 * S, 0, &Answer::bare(Status::Ok), &mut rng);
        assert_eq!(t.threads[0].errors, 0);
    }

    #[test]
    fn without_a_remaining_count_a_process_climbs_by_its_probe_and_is_cut_per_refusal() {
        let mut t = build(4);
        let mut rng = test_rng();
        // Never above the whole quota it was told.
        assert_eq!(t.thread_rate() * 4.0, R);
        t.respond_ns(0, 0, &Answer::bare(Status::Ok), &mut rng);
        t.respond_ns(100 * S, 0, &Answer::bare(Status::Ok), &mut rng);
        assert_eq!(t.thread_rate() * 4.0, R);
        // A refusal cuts the refused thread's share, a fourth of a cut to BLIND_CUT, and
        // divides the probe by about e.
        let probe = t.probe;
        t.threads[0].last_send = Some(101 * S);
        t.respond_ns(102 * S, 0, &Answer::bare(Status::Limited), &mut rng);
        let cut = R / 4.0 * BLIND_CUT.powf(0.25);
        assert!((t.thread_rate() - cut).abs() < 1e-12);
        assert!((t.probe - probe * (-(1.0 - BLIND_REFUSALS)).exp()).abs() < 1e-15);
        // Then it climbs by the probe times (R/X)² per second of success: faster the further
        // below the quota its own rate is.
        let probe = t.probe;
        t.respond_ns(112 * S, 0, &Answer::bare(Status::Ok), &mut rng);
        let own = 4.0 * cut;
        let expected = (own + probe * (R / own).powi(2) * 10.0) / 4.0;
        assert!(
            (t.thread_rate() - expected).abs() < 1e-12,
            "{}",
            t.thread_rate()
        );
        assert!(t.probe > probe);
    }

    /// Processes sharing one fluid bucket of `limit` tokens refilled at `rate`, answers 20 ms
    /// after each send. Returns the 429s and each process's 2xx per thread over the last
    /// quarter of the run, as fractions of the fair share.
    fn share_one_bucket(
        procs: &mut [Law],
        rate: f64,
        limit: f64,
        initial: f64,
        end: Nanos,
    ) -> (u32, Vec<f64>) {
        let mut rng = test_rng();
        let mut due: Vec<(Nanos, usize, usize)> = Vec::new();
        for (p, proc) in procs.iter_mut().enumerate() {
            proc.limit = limit;
            for i in 0..proc.threads.len() {
                due.push((proc.delay_ns(0, i, &mut rng), p, i));
            }
        }
        let (mut level, mut updated, mut refused) = (initial, 0 as Nanos, 0);
        let late = end - end / 4;
        let mut answered_late = vec![0u32; procs.len()];
        loop {
            let k = (0..due.len()).min_by_key(|&k| due[k].0).unwrap();
            let (now, p, i) = due[k];
            if now >= end {
                break;
            }
            match acquire(&mut procs[p], now, i) {
                Acquire::Wait(w) => due[k].0 = now + w,
                Acquire::Send => {
                    level = (level + rate * secs(now - updated)).min(limit);
                    updated = now;
                    let status = if level >= 1.0 {
                        level -= 1.0;
                        Status::Ok
                    } else {
                        refused += 1;
                        Status::Limited
                    };
                    if now >= late && status == Status::Ok {
                        answered_late[p] += 1;
                    }
                    let answered = now + 20_000_000;
                    let mut a = answer(status, level as u64);
                    a.limit = Some(limit as u64);
                    a.latency = Duration::from_millis(20);
                    procs[p].respond_ns(answered, i, &a, &mut rng);
                    due[k].0 = answered + procs[p].delay_ns(answered, i, &mut rng);
                }
            }
        }
        let n: usize = procs.iter().map(|p| p.threads.len()).sum();
        let fair = rate / n as f64 * secs(end - late);
        let shares = procs
            .iter()
            .zip(&answered_late)
            .map(|(p, &c)| f64::from(c) / p.threads.len() as f64 / fair)
            .collect();
        (refused, shares)
    }

    /// Processes that start at very different paces, sharing Heroku's 4500/h bucket that
    /// starts with 500 tokens, end with equal shares near R/N, without a 429.
    #[test]
    fn processes_starting_far_apart_end_at_equal_shares() {
        let mut procs: Vec<Law> = [(5usize, 0.5), (5, 20.0), (1, 3.0), (3, 60.0)]
            .iter()
            .map(|&(th, s)| {
                Law::new(
                    th,
                    Params {
                        initial_sleep: Some(Duration::from_secs_f64(s)),
                        ..Params::default()
                    },
                )
            })
            .collect();
        let (refused, shares) = share_one_bucket(&mut procs, R, 4500.0, 500.0, 5 * 3600 * S);
        assert_eq!(refused, 0);
        for (p, share) in shares.iter().enumerate() {
            assert!((0.9..1.1).contains(share), "process {p}: {share:.3}");
        }
    }

    /// The same law with the same defaults on a bucket a thousand times smaller and refilled
    /// four times faster: 2 processes × 4 threads on 5 tokens at 5 per second.
    #[test]
    fn a_five_token_bucket_at_five_per_second_is_shared_with_the_same_defaults() {
        let mut procs: Vec<Law> = (0..2).map(|_| shaped(4, 5.0, 1, 5.0)).collect();
        let (refused, shares) = share_one_bucket(&mut procs, 5.0, 5.0, 5.0, 1800 * S);
        let sent_about = 5.0 * 1800.0;
        assert!(f64::from(refused) < 0.005 * sent_about, "{refused} refused");
        for (p, share) in shares.iter().enumerate() {
            assert!((0.9..1.1).contains(share), "process {p}: {share:.3}");
        }
    }
}
