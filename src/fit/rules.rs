//! Each rule a trace is replayed against, and the replay: the count every answer should have
//! carried under the rule.

use serde::Serialize;

use super::Event;

/// A rule the trace is replayed against.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Rule {
    /// `size` tokens refilled at `size / period` per second.
    Bucket {
        size: f64,
        period: f64,
    },
    FixedWindow {
        limit: f64,
        window: f64,
        /// Where each window starts: on a clock grid, or at the first request after the last
        /// one ended (Flask-Limiter, express-rate-limit, fastify).
        start: WindowStart,
    },
    SlidingWindow {
        limit: f64,
        window: f64,
    },
    /// The sliding-window counter (the Python limits library's, Cloudflare's): clock windows
    /// of `window`, the first starting `phase` seconds into the trace's clock; a request is
    /// admitted while the previous window's count, weighted by the share of it still inside
    /// the sliding window, plus the current one's stays below `limit`.
    #[serde(rename = "sliding-window-counter")]
    SlidingCounter {
        limit: f64,
        window: f64,
        phase: f64,
    },
}

/// Where a fixed window's windows start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowStart {
    /// One after the other on a grid: the next starts where the last ended.
    Clock,
    /// At the first request after the last one ended, so the windows drift later than any
    /// grid by the gaps between them.
    FirstRequest,
}

impl Rule {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Rule::Bucket { .. } => "a bucket (GCRA or token bucket)",
            Rule::FixedWindow {
                start: WindowStart::Clock,
                ..
            } => "a fixed window",
            Rule::FixedWindow {
                start: WindowStart::FirstRequest,
                ..
            } => "a fixed window started by the first request after the last",
            Rule::SlidingWindow { .. } => "a sliding window",
            Rule::SlidingCounter { .. } => "a sliding-window counter",
        }
    }

    pub(super) fn with_period(self, p: f64) -> Rule {
        match self {
            Rule::Bucket { size, .. } => Rule::Bucket { size, period: p },
            Rule::FixedWindow { limit, start, .. } => Rule::FixedWindow {
                limit,
                window: p,
                start,
            },
            Rule::SlidingWindow { limit, .. } => Rule::SlidingWindow { limit, window: p },
            Rule::SlidingCounter { limit, phase, .. } => Rule::SlidingCounter {
                limit,
                window: p,
                phase: phase.min(p),
            },
        }
    }

    pub(super) fn period(&self) -> f64 {
        match *self {
            Rule::Bucket { period, .. } => period,
            Rule::FixedWindow { window, .. }
            | Rule::SlidingWindow { window, .. }
            | Rule::SlidingCounter { window, .. } => window,
        }
    }

    /// The limit (a bucket's size).
    pub(super) fn limit(&self) -> f64 {
        match *self {
            Rule::Bucket { size, .. } => size,
            Rule::FixedWindow { limit, .. }
            | Rule::SlidingWindow { limit, .. }
            | Rule::SlidingCounter { limit, .. } => limit,
        }
    }

    /// How badly the rule explains the trace, replayed from the first answer's count: per
    /// answer, how far the count it predicts is from the one carried, plus one where it would
    /// have answered 2xx for a 429 or the other way round. The mean over the answers.
    pub fn miss(&self, events: &[Event]) -> f64 {
        self.miss_charged(events, false)
    }

    /// [`Rule::miss`], with refused requests costing a token (`charged`: a bucket's level
    /// falls by one, below zero if need be; a sliding window logs them) or free.
    pub fn miss_charged(&self, events: &[Event], charged: bool) -> f64 {
        let Some(first) = events.iter().position(|e| e.remaining.is_some()) else {
            return f64::INFINITY;
        };
        let start = events[first].remaining.expect("found above") + 1.0;
        let mut total = 0.0;
        let mut predict = Predictor::new(*self, start, events[first].at);
        predict.charged = charged;
        // A fixed window's resets, as the counts show them: a rise of at least half the
        // largest one (and 2: answers that cross on the way may show a rise of 1).
        let reset_rise = (largest_rise(events) / 2.0).max(2.0);
        if let Rule::FixedWindow { window, .. } = *self {
            predict.window_start = window_start(events, reset_rise, window, events[first].at);
        }
        let mut seen: Option<f64> = None;
        for e in &events[first..] {
            // The trace dates a reset only to the first answer after it: one seen up to 5 %
            // of a window early is that window's reset, and the windows are dated from it.
            if let (Rule::FixedWindow { window, start, .. }, Some(r), Some(l)) =
                (*self, e.remaining, seen)
                && r - l >= reset_rise
                && e.at >= predict.window_start + 0.95 * window
                && e.at < predict.window_start + window
            {
                // A window started by a request begins at the first one admitted: a refusal
                // that already shows the new count was answered as the old one ended.
                predict.window_start = match start {
                    WindowStart::FirstRequest if !e.admitted => e.at - window,
                    _ => e.at,
                };
                predict.level = 0.0;
            }
            seen = e.remaining.or(seen);
            if predict.room(e.at) != e.admitted {
                total += 1.0;
            }
            let p = predict.step(e);
            if let Some(r) = e.remaining {
                total += (p - r).abs();
                // Anchored to what the server said, so one unseen request (a co-tenant's, a
                // start the trace missed) costs one miss, not a miss at every answer after.
                predict.anchor(p, r, e.at);
            }
        }
        total / (events.len() - first) as f64
    }
}

/// A rule's state while the trace is replayed.
pub(super) struct Predictor {
    rule: Rule,
    /// Bucket: its level. Fixed window and counter: the admitted count of the current window.
    level: f64,
    /// Counter: the previous window's count, and the index of the current window.
    previous: f64,
    index: f64,
    window_start: f64,
    /// Sliding window: the admission times still inside it.
    recent: std::collections::VecDeque<f64>,
    last: f64,
    /// Refused requests cost what an admitted one does.
    pub(super) charged: bool,
}

impl Predictor {
    pub(super) fn new(rule: Rule, start: f64, at: f64) -> Self {
        let mut p = Predictor {
            rule,
            level: start,
            window_start: at,
            recent: Default::default(),
            last: at,
            charged: false,
            previous: 0.0,
            index: 0.0,
        };
        match rule {
            // The first window has seen `limit − start` already.
            Rule::FixedWindow { limit, .. } => p.level = (limit - start).max(0.0),
            Rule::SlidingCounter {
                limit,
                window,
                phase,
            } => {
                p.level = (limit - start).max(0.0);
                p.index = ((at - phase) / window).floor();
            }
            Rule::SlidingWindow { limit, .. } => {
                let used = (limit - start).max(0.0) as usize;
                p.recent.extend(std::iter::repeat_n(at - 1e-9, used));
            }
            Rule::Bucket { .. } => {}
        }
        p
    }

    /// Move the state so that it would have predicted `observed` instead of `predicted`.
    pub(super) fn anchor(&mut self, predicted: f64, observed: f64, at: f64) {
        let off = observed - predicted;
        if off == 0.0 {
            return;
        }
        match self.rule {
            Rule::Bucket { size, .. } => {
                self.level = (observed + self.level.max(0.0).fract()).clamp(0.0, size);
            }
            Rule::FixedWindow { limit, .. } => self.level = (limit - observed).max(0.0),
            Rule::SlidingCounter { limit, .. } => {
                let weighted = self.weighted_previous(at);
                self.level = (limit - observed - weighted).round().max(0.0);
            }
            Rule::SlidingWindow { .. } => {
                if off > 0.0 {
                    for _ in 0..(off as usize).min(self.recent.len()) {
                        self.recent.pop_front();
                    }
                } else {
                    self.recent.extend(std::iter::repeat_n(at, (-off) as usize));
                }
            }
        }
    }

    /// Whether the rule has room for one more request at `at`.
    pub(super) fn room(&self, at: f64) -> bool {
        let dt = (at - self.last).max(0.0);
        match self.rule {
            Rule::Bucket { size, period } => (self.level + dt * size / period).min(size) >= 1.0,
            Rule::FixedWindow { limit, window, .. } => {
                at >= self.window_start + window || self.level < limit
            }
            Rule::SlidingWindow { limit, window } => {
                // `recent` is in time order: those still inside are after the cut.
                let expired = self.recent.partition_point(|&t| t <= at - window);
                ((self.recent.len() - expired) as f64) < limit
            }
            Rule::SlidingCounter { limit, .. } => {
                let (previous, current) = self.counts_at(at);
                (previous * self.share_of_previous(at) + current).floor() + 1.0 <= limit
            }
        }
    }

    /// Counter: the share of the previous window still inside the sliding window at `at`.
    fn share_of_previous(&self, at: f64) -> f64 {
        let Rule::SlidingCounter { window, phase, .. } = self.rule else {
            return 0.0;
        };
        let into = (at - phase) / window;
        1.0 - (into - into.floor())
    }

    /// Counter: the previous and current windows' counts at `at`, windows turned over since.
    fn counts_at(&self, at: f64) -> (f64, f64) {
        let Rule::SlidingCounter { window, phase, .. } = self.rule else {
            return (0.0, self.level);
        };
        match ((at - phase) / window).floor() - self.index {
            k if k <= 0.0 => (self.previous, self.level),
            1.0 => (self.level, 0.0),
            _ => (0.0, 0.0),
        }
    }

    /// Counter: the previous window's count as it weighs at `at`.
    fn weighted_previous(&self, at: f64) -> f64 {
        self.counts_at(at).0 * self.share_of_previous(at)
    }

    pub(super) fn step(&mut self, e: &Event) -> f64 {
        let dt = (e.at - self.last).max(0.0);
        self.last = e.at;
        match self.rule {
            Rule::Bucket { size, period } => {
                self.level = (self.level + dt * size / period).min(size);
                if e.admitted {
                    self.level = (self.level - 1.0).max(0.0);
                } else if self.charged {
                    // The Heroku demo server's `refused_cost`: the level digs below zero.
                    self.level = (self.level - 1.0).max(-size);
                }
                self.level.max(0.0).floor()
            }
            Rule::FixedWindow {
                limit,
                window,
                start,
            } => {
                if e.at >= self.window_start + window {
                    match start {
                        WindowStart::Clock => {
                            let k = ((e.at - self.window_start) / window).floor();
                            self.window_start += k * window;
                        }
                        // Only an admitted request opens a window (the first after the last
                        // one ended always is): a refusal here says the last one had not
                        // ended yet, and the window stays over until one is admitted.
                        WindowStart::FirstRequest if e.admitted => self.window_start = e.at,
                        WindowStart::FirstRequest => {}
                    }
                    self.level = 0.0;
                }
                if e.admitted {
                    self.level += 1.0;
                }
                (limit - self.level).max(0.0)
            }
            Rule::SlidingCounter {
                limit,
                window,
                phase,
            } => {
                (self.previous, self.level) = self.counts_at(e.at);
                self.index = ((e.at - phase) / window).floor();
                if e.admitted || self.charged {
                    self.level += 1.0;
                }
                (limit - (self.weighted_previous(e.at) + self.level).floor()).max(0.0)
            }
            Rule::SlidingWindow { limit, window } => {
                while self.recent.front().is_some_and(|&t| t <= e.at - window) {
                    self.recent.pop_front();
                }
                if e.admitted || self.charged {
                    self.recent.push_back(e.at);
                }
                (limit - self.recent.len() as f64).max(0.0)
            }
        }
    }
}

/// The largest rise of the count from one answer to the next.
pub(super) fn largest_rise(events: &[Event]) -> f64 {
    let counts = events.iter().filter_map(|e| e.remaining);
    let mut last: Option<f64> = None;
    let mut most = 0.0_f64;
    for r in counts {
        if let Some(l) = last {
            most = most.max(r - l);
        }
        last = Some(r);
    }
    most
}

/// Where the fixed window that holds `t0` starts: a whole number of windows before the first
/// jump of the count by `rise` or more (a window's reset), or `t0` when none is seen.
pub(super) fn window_start(events: &[Event], rise: f64, window: f64, t0: f64) -> f64 {
    let mut last: Option<f64> = None;
    for e in events {
        if let Some(r) = e.remaining {
            if last.is_some_and(|l| r - l >= rise) {
                // Whole windows back to one that holds `t0`, a reset up to 5 % late (the
                // trace dates it at the first answer after) counted as on time.
                let back = ((e.at - t0) / window - 0.05).ceil().max(1.0);
                return e.at - back * window;
            }
            last = Some(r);
        }
    }
    t0
}
