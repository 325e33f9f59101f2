//! The law's parameters and their defaults. Every default is in the API's own units (the
//! bucket `B`, the refill `R`, the window) or in the client's own period, so one set serves a
//! 5-per-second API and a 100,000-per-day one; the lib.rs comment has the formulas they enter.

use std::time::Duration;

use crate::time::{nanos, secs};

/// Parameters of the law. `Params::default()` needs nothing but what the server says; set
/// `quota` and `period` for a server that states no `RateLimit-Policy`.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Requests the server grants per `period`, which gives the refill rate `R`. Default: what
    /// the server's `RateLimit-Policy` says (`q` per `w`), else 4500 per hour (Heroku's, whose
    /// API sends only the remaining count). Set both or neither; set, they win over the header.
    pub quota: Option<f64>,
    /// The quota's period (a window rule's window). Default: the policy's `w`, else 1 h.
    pub period: Option<Duration>,
    /// A process's first sends are spread over this long, or one initial spacing `n / R` if
    /// that is longer. Default 0 s.
    pub first_spread: Duration,
    /// Per-thread spacing before the first window, when slower than `n / R`. Default: none.
    pub initial_sleep: Option<Duration>,
    /// The reserve `r0` the law holds, as a fraction of the bucket `B` (at least one token, at
    /// most a quarter of the bucket). Default 0.005: 22 of Heroku's 4,500.
    pub reserve: f64,
    /// The price's span (from `R/K` to `R`) as a fraction of the bucket. Default 0.03. On a
    /// bucket never under `2√K` tokens where 0.8 of the room above the reserve holds them, else
    /// 10; on a fixed window 4.
    pub span: f64,
    /// `K`, the largest crowd the price is sized for, in threads; `2√K` tokens is its level's
    /// swing. Default 1000.
    pub crowd: f64,
    /// `γ`, the D term's gain per window. Default 0.4: below 1, processes whose windows close
    /// first do not run far ahead of the others.
    pub gain: f64,
    /// Windows last at least this many own periods `1/x`, divided by `√n`. Default 1.
    pub window_periods: f64,
    /// Windows hold at least this many answers. Default 3.
    pub min_samples: u32,
    /// Windows last until at least this many tokens were taken by everyone, so the integer
    /// `remaining` is a small error. Default 30 tokens.
    pub min_flow: f64,
    /// The surplus above the reserve is spent over at least this many windows... Default 4:
    /// slower than the D loop it steers.
    pub drain_windows: f64,
    /// ... and at least this fraction of the bucket's fill time `B / R`. Default 1/12
    /// (5 minutes on Heroku's bucket).
    pub drain_fill: f64,
    /// A first reading at least this full (a fraction of `B`) starts in full-start mode.
    /// Default 0.9.
    pub full_level: f64,
    /// In full-start mode the surplus is spent at most this many times `R` on top of the
    /// refill. Default 1.
    pub full_drain: f64,
    /// On a bucket the pull's loop gain per window is at most `1 / pull_periods` (on a fixed
    /// window at most 1/4). Default 1.5.
    pub pull_periods: f64,
    /// The pull's largest weight per window. Default 0.5.
    pub pull_max: f64,
    /// Factor on a 429. Default 0.5.
    pub decrease: f64,
    /// A 429's `Retry-After` is stretched by `U[0, retry_jitter]` of itself or of the thread's
    /// period, whichever is shorter. Default 0.5.
    pub retry_jitter: f64,
    /// Send-time jitter, `±jitter / n` of a period. Default 0.1.
    pub jitter: f64,
    /// Without a remaining count: the first probe, how fast a process at its fair share climbs
    /// after a refusal, in `R²` per second (adapted from there so that half a percent of the
    /// answers are refused). Default 0.00005.
    pub increase: f64,
    /// First wait after a 503 or transport error; doubles per consecutive error. Default 1 s.
    pub error_backoff: Duration,
    /// The longest such wait. Default 60 s.
    pub error_backoff_max: Duration,
    /// The per-thread rate's ceiling, in multiples of `R`. Default 4.
    pub max_rate: f64,
    /// How finely the server states its resets (`t`, `x-ratelimit-reset`), in the caller's
    /// seconds: whole seconds in every dialect, so a reset or a window's end is known to a
    /// second. Default 1 s. A caller whose clock runs `s` times faster than real time (a
    /// simulator's virtual clock at a time scale `s`) reads each of the server's seconds as `s`
    /// of its own: set it to `s` seconds.
    pub reset_resolution: Duration,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            quota: None,
            period: None,
            first_spread: Duration::ZERO,
            initial_sleep: None,
            reserve: 0.005,
            span: 0.03,
            crowd: 1000.0,
            gain: 0.4,
            window_periods: 1.0,
            min_samples: 3,
            min_flow: 30.0,
            drain_windows: 4.0,
            drain_fill: 1.0 / 12.0,
            full_level: 0.9,
            full_drain: 1.0,
            pull_periods: 1.5,
            pull_max: 0.5,
            decrease: 0.5,
            retry_jitter: 0.5,
            jitter: 0.1,
            increase: 0.00005,
            error_backoff: Duration::from_secs(1),
            error_backoff_max: Duration::from_secs(60),
            max_rate: 4.0,
            reset_resolution: Duration::from_secs(1),
        }
    }
}

/// The quota without a configured or stated one: Heroku's 4,500 per hour.
pub(crate) const DEFAULT_QUOTA: f64 = 4500.0;
pub(crate) const DEFAULT_PERIOD_SECS: f64 = 3600.0;

/// Each parameter's unit, in field order: what its number counts (a tool listing the
/// parameters prints it next to the default).
pub const UNITS: &[(&str, &str)] = &[
    (
        "quota",
        "requests per period; default the server's policy q, else 4500",
    ),
    ("period", "duration; default the policy's w, else 1h"),
    ("first_spread", "duration"),
    ("initial_sleep", "duration per thread; default none (n / R)"),
    ("reserve", "fraction of the bucket B"),
    ("span", "fraction of the bucket B"),
    ("crowd", "threads (K)"),
    ("gain", "share of the step per window"),
    ("window_periods", "own periods 1/x, over the root of n"),
    ("min_samples", "answers per window"),
    ("min_flow", "tokens per window"),
    ("drain_windows", "windows"),
    ("drain_fill", "fraction of the fill time B / R"),
    ("full_level", "fraction of the bucket B"),
    ("full_drain", "multiples of R"),
    ("pull_periods", "windows"),
    ("pull_max", "share of the step per window"),
    ("decrease", "factor on a 429"),
    ("retry_jitter", "fraction of Retry-After or of 1/x"),
    ("jitter", "fraction of a period, over n"),
    (
        "increase",
        "R² per second, the first probe without a remaining count",
    ),
    ("error_backoff", "duration, doubling per error"),
    ("error_backoff_max", "duration"),
    ("max_rate", "multiples of R per thread"),
    (
        "reset_resolution",
        "duration: how finely the server states resets",
    ),
];

/// A parameter out of its range: its name, and what is wrong with it.
pub type Problem = (&'static str, String);

impl Params {
    /// `R`'s quota and period in seconds, given or the defaults.
    pub(crate) fn quota_and_period(&self) -> (f64, f64) {
        (
            self.quota.unwrap_or(DEFAULT_QUOTA),
            self.period.map_or(DEFAULT_PERIOD_SECS, |p| secs(nanos(p))),
        )
    }

    /// Every parameter out of its range, in field order; empty when the law can run.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        let (quota, period) = self.quota_and_period();
        for (field, v) in [
            ("quota", quota),
            ("period", period),
            ("crowd", self.crowd),
            ("gain", self.gain),
            ("drain_windows", self.drain_windows),
            ("full_drain", self.full_drain),
            ("pull_periods", self.pull_periods),
            ("error_backoff", secs(nanos(self.error_backoff))),
            ("max_rate", self.max_rate),
            ("reset_resolution", secs(nanos(self.reset_resolution))),
        ] {
            if !(v.is_finite() && v > 0.0) {
                out.push((field, format!("must be a number above 0 (got {v})")));
            }
        }
        for (field, v) in [
            ("reserve", self.reserve),
            ("span", self.span),
            ("window_periods", self.window_periods),
            ("drain_fill", self.drain_fill),
            ("pull_max", self.pull_max),
            ("retry_jitter", self.retry_jitter),
            ("increase", self.increase),
            ("min_flow", self.min_flow),
            ("full_level", self.full_level),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                out.push((field, format!("must be a number of 0 or more (got {v})")));
            }
        }
        self.relational_problems(&mut out);
        out
    }

    /// Sets the parameter `name` (its field name; durations in seconds) to `value`, as a
    /// command line or a test script names it.
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), String> {
        let seconds = || {
            Duration::try_from_secs_f64(value).map_err(|_| {
                format!("{name} must be a number of seconds of 0 or more (got {value})")
            })
        };
        match name {
            "quota" => self.quota = Some(value),
            "period" => self.period = Some(seconds()?),
            "first_spread" => self.first_spread = seconds()?,
            "initial_sleep" => self.initial_sleep = Some(seconds()?),
            "error_backoff" => self.error_backoff = seconds()?,
            "error_backoff_max" => self.error_backoff_max = seconds()?,
            "reset_resolution" => self.reset_resolution = seconds()?,
            "min_samples"
                if value >= 0.0 && value.fract() == 0.0 && value <= f64::from(u32::MAX) =>
            {
                self.min_samples = value as u32;
            }
            "min_samples" => {
                return Err(format!("min_samples must be a whole number (got {value})"));
            }
            _ => {
                *self
                    .number(name)
                    .ok_or_else(|| format!("no parameter named {name}"))? = value
            }
        }
        Ok(())
    }

    fn number(&mut self, name: &str) -> Option<&mut f64> {
        Some(match name {
            "reserve" => &mut self.reserve,
            "span" => &mut self.span,
            "crowd" => &mut self.crowd,
            "gain" => &mut self.gain,
            "window_periods" => &mut self.window_periods,
            "min_flow" => &mut self.min_flow,
            "drain_windows" => &mut self.drain_windows,
            "drain_fill" => &mut self.drain_fill,
            "full_level" => &mut self.full_level,
            "full_drain" => &mut self.full_drain,
            "pull_periods" => &mut self.pull_periods,
            "pull_max" => &mut self.pull_max,
            "decrease" => &mut self.decrease,
            "retry_jitter" => &mut self.retry_jitter,
            "jitter" => &mut self.jitter,
            "increase" => &mut self.increase,
            "max_rate" => &mut self.max_rate,
            _ => return None,
        })
    }

    fn relational_problems(&self, out: &mut Vec<Problem>) {
        if self.quota.is_some() != self.period.is_some() {
            let (set, unset) = if self.quota.is_some() {
                ("quota", "period")
            } else {
                ("period", "quota")
            };
            out.push((
                unset,
                format!("must be set with {set} (or leave both to the server's RateLimit-Policy)"),
            ));
        }
        let mut bound = |ok: bool, field: &'static str, what: &str, v: f64| {
            if !ok {
                out.push((field, format!("must be {what} (got {v})")));
            }
        };
        bound(self.reserve < 1.0, "reserve", "below 1", self.reserve);
        bound(self.pull_max <= 1.0, "pull_max", "at most 1", self.pull_max);
        bound(self.gain <= 1.0, "gain", "at most 1", self.gain);
        let decrease = self.decrease > 0.0 && self.decrease < 1.0;
        bound(decrease, "decrease", "above 0 and below 1", self.decrease);
        let jitter = self.jitter >= 0.0 && self.jitter < 1.0;
        bound(jitter, "jitter", "from 0 to below 1", self.jitter);
        if self.min_samples < 2 {
            out.push((
                "min_samples",
                format!("must be at least 2 (got {})", self.min_samples),
            ));
        }
        if self.error_backoff_max < self.error_backoff {
            out.push((
                "error_backoff_max",
                format!(
                    "must be at least error_backoff ({:?}) (got {:?})",
                    self.error_backoff, self.error_backoff_max
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_set_by_name_and_bad_names_or_values_are_said() {
        let mut p = Params::default();
        p.set("quota", 300.0).unwrap();
        p.set("period", 60.0).unwrap();
        p.set("jitter", 0.0).unwrap();
        p.set("min_samples", 5.0).unwrap();
        assert_eq!(
            (p.quota, p.period),
            (Some(300.0), Some(Duration::from_secs(60)))
        );
        assert_eq!((p.jitter, p.min_samples), (0.0, 5));
        assert!(p.problems().is_empty());
        assert_eq!(p.set("speed", 1.0).unwrap_err(), "no parameter named speed");
        assert!(p.set("period", -1.0).unwrap_err().contains("period"));
        assert!(p.set("min_samples", 2.5).is_err());
        p.set("decrease", 1.5).unwrap();
        assert_eq!(p.problems()[0].0, "decrease");
    }

    #[test]
    fn every_parameter_has_a_unit_and_is_settable_by_its_name() {
        for (name, _) in UNITS {
            let mut p = Params::default();
            let v = if *name == "min_samples" { 7.0 } else { 0.37 };
            assert!(p.set(name, v).is_ok(), "{name}");
            assert_ne!(p, Params::default(), "{name} changed nothing");
        }
        // As many as the fields `Debug` shows.
        let fields = format!("{:?}", Params::default()).matches(": ").count();
        assert_eq!(UNITS.len(), fields);
    }
}
