//! `stacked`: several limits on one key at once, as real APIs stack a short limit and a long
//! one: Flask-Limiter's `"10 per second; 100 per minute"`, two express-rate-limit middlewares
//! in a row, a burst limit in front of a daily quota. A request is admitted only if every
//! limit admits it.
//!
//! The limits are asked in the order `limits` lists them, and the first refusal ends it: the
//! request is refused with that limit's answer, the limits after it are not asked, and the
//! limits before it, which admitted it, have counted it. That is what Flask-Limiter does: for
//! each limit of a route it calls `limits`' `hit`, which takes from the limit as it tests it,
//! and by default (`RATELIMIT_FAIL_ON_FIRST_BREACH`) it stops at the first breach, leaving the
//! earlier limits charged; express-rate-limit's middlewares in a row do the same, each
//! counting before the next runs. A client that is refused by the long limit therefore keeps
//! spending the short one. Flask-Limiter asks a route's limits shortest time unit first (it
//! sorts them by their granularity: second, minute, hour, …); list them in that order to be
//! charged as it charges. (nginx's several `limit_req` are all-or-nothing instead: a refusal
//! by any leaves the others uncharged. That is not modelled.)
//!
//! What an answer states: a refusal, the refusing limit's answer (its `Retry-After`, as
//! Flask-Limiter's headers are the breached limit's). An admission, with `shows = "binding"`
//! (the default), the answer of the limit nearest to refusing: the fewest requests remaining,
//! and of those the one whose allowance is whole last. With `shows = "first"`, the first
//! limit's, as Flask-Limiter's headers show the shortest window's until one is breached. A
//! limit that serves late (`leaky-bucket` without `nodelay`) holds the answer; with several,
//! the longest hold wins, and the stated times count from when the answer leaves.
//!
//! The capacity is the smallest of the limits' capacities and the rate the smallest of their
//! rates: one limit binding throughout is the most the stack can give, an upper bound when
//! different limits bind at different times.
//!
//! Each entry of `limits` is a server rule of its own, written as in `[server]` (`kind` and
//! its parameters), of any kind with a rate; `concurrency` and `occ` have none, and a stack
//! in a stack is one list. Default: 75 per minute and 4500 per hour (the other rules' nominal
//! rate, both binding), each a fixed window opened by the key's first request, as Flask-
//! Limiter's `"75 per minute; 4500 per hour"` on its default memory storage.

use serde::{Deserialize, Serialize};

use super::{
    Decision, FixedWindowConfig, Held, Limiter, LimiterConfig, ParamStep, Rule, RuleProblem,
    WindowStart,
};
use crate::exchange::Status;
use crate::time::{HumanDuration, Nanos};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StackedConfig {
    /// The limits, asked in this order.
    pub limits: Vec<LimiterConfig>,
    /// Whose answer an admission states. Default the binding limit's.
    pub shows: Shows,
}

impl Default for StackedConfig {
    fn default() -> Self {
        let window = |limit, secs| {
            LimiterConfig::FixedWindow(FixedWindowConfig {
                limit,
                window: HumanDuration::from_secs(secs),
                start: WindowStart::FirstRequest,
            })
        };
        StackedConfig {
            limits: vec![window(75, 60), window(4500, 3600)],
            shows: Shows::Binding,
        }
    }
}

/// Which limit's answer an admitted request is told.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shows {
    /// The limit nearest to refusing.
    #[default]
    Binding,
    /// The first in the list (Flask-Limiter's headers: the shortest window's).
    First,
}

/// Kinds that cannot be stacked, and why.
fn unstackable(inner: &LimiterConfig) -> Option<String> {
    let name = inner.name();
    match inner {
        LimiterConfig::Stacked(_) => Some(
            "a stacked limit cannot hold another `stacked`: list its limits here instead".into(),
        ),
        LimiterConfig::Concurrency(_) | LimiterConfig::Occ(_) => {
            let rated: Vec<_> = LimiterConfig::NAMES
                .iter()
                .filter(|&&n| !matches!(n, "concurrency" | "occ" | "stacked"))
                .copied()
                .collect();
            Some(format!(
                "`{name}` has no rate to stack; a stacked limit holds rate rules: {}",
                rated.join(", ")
            ))
        }
        _ => None,
    }
}

impl Rule for StackedConfig {
    const NAME: &'static str = "stacked";
    const DESCRIPTION: &'static str = "several limits on one key, each a rule of its own (`limits = [{ kind = \"fixed-window\", … }, …]`): admitted only if every one admits, asked in order, the ones before a refusal charged (Flask-Limiter's \"10 per second; 100 per minute\")";

    const NOTES: &'static [&'static str] = &[
        "limits: each entry a server rule with a rate, written as in [server] (kind and its parameters); asked in order, so list the shortest window first, as Flask-Limiter asks",
        "shows = \"binding\" (an admission states the limit nearest to refusing) or \"first\" (the first limit's, as Flask-Limiter's headers do until one is breached)",
    ];

    /// The inner limits' problems are named by their place: `limits[1].limit`.
    fn problems_at(&self) -> Vec<RuleProblem> {
        let mut out = Vec::new();
        if self.limits.is_empty() {
            out.push(RuleProblem::at_field(
                "limits",
                "must hold at least one limit".into(),
            ));
        }
        for (i, inner) in self.limits.iter().enumerate() {
            let here = [ParamStep::Field("limits"), ParamStep::Index(i)];
            if let Some(message) = unstackable(inner) {
                out.push(RuleProblem {
                    at: [&here[..], &[ParamStep::Field("kind")]].concat(),
                    message,
                });
                continue;
            }
            out.extend(inner.problems().into_iter().map(|p| RuleProblem {
                at: [&here[..], &p.at[..]].concat(),
                message: p.message,
            }));
        }
        out
    }

    fn limiter(&self) -> Box<dyn Limiter> {
        Box::new(Stacked {
            limits: self.limits.iter().map(LimiterConfig::build).collect(),
            shows: self.shows,
        })
    }
}

pub struct Stacked {
    limits: Vec<Box<dyn Limiter>>,
    shows: Shows,
}

impl Stacked {
    /// Ask each limit in turn until one refuses.
    fn decide(&mut self, now: Nanos, key: usize, client: usize) -> Held {
        let mut shown: Option<Held> = None;
        let mut hold = 0;
        for limit in &mut self.limits {
            let h = limit.admit_held(now, key, client);
            if h.decision.status != Status::Ok {
                // Refused here: the ones before keep their count, the ones after are not asked.
                return Held::now(h.decision);
            }
            hold = hold.max(h.hold);
            shown = Some(match (shown, self.shows) {
                (Some(s), Shows::First) => s,
                (Some(s), Shows::Binding) if !binds_before(&h.decision, &s.decision) => s,
                _ => h,
            });
        }
        let Some(shown) = shown else {
            // No limit at all (a stack its problems refuse): nothing to count, nothing to state.
            return Held::now(Decision {
                status: Status::Ok,
                remaining: 0,
                limit: 0,
                retry_after: None,
                reset: 0,
                window: 0,
            });
        };
        // The stated times count from when the answer leaves, which the longest hold sets.
        let later = hold - shown.hold;
        let decision = Decision {
            reset: shown.decision.reset.saturating_sub(later),
            ..shown.decision
        };
        Held { decision, hold }
    }
}

/// Whether admission `a` is nearer to refusing than `b`: fewer remaining, or as few and whole
/// again later.
fn binds_before(a: &Decision, b: &Decision) -> bool {
    (a.remaining, std::cmp::Reverse(a.reset)) < (b.remaining, std::cmp::Reverse(b.reset))
}

impl Limiter for Stacked {
    fn admit(&mut self, now: Nanos, key: usize) -> Decision {
        self.decide(now, key, 0).decision
    }

    fn admit_from(&mut self, now: Nanos, key: usize, client: usize) -> Decision {
        self.decide(now, key, client).decision
    }

    fn admit_held(&mut self, now: Nanos, key: usize, client: usize) -> Held {
        self.decide(now, key, client)
    }

    fn release(&mut self, now: Nanos, key: usize) {
        for limit in &mut self.limits {
            limit.release(now, key);
        }
    }

    /// The smallest of the limits' capacities.
    fn capacity(&self, duration: Nanos) -> f64 {
        self.capacity_with_outages(duration, &[])
    }

    fn capacity_with_outages(&self, duration: Nanos, closed: &[(Nanos, Nanos)]) -> f64 {
        self.limits
            .iter()
            .map(|l| l.capacity_with_outages(duration, closed))
            .reduce(f64::min)
            .unwrap_or(0.0)
    }

    /// The smallest of the limits' rates.
    fn rate_per_sec(&self) -> f64 {
        self.limits
            .iter()
            .map(|l| l.rate_per_sec())
            .reduce(f64::min)
            .unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{
        Delay, LeakyBucketConfig, SlidingWindowConfig, SlidingWindowCounterConfig,
    };
    use crate::time::NANOS_PER_SEC;
    use proptest::prelude::*;

    const S: Nanos = NANOS_PER_SEC;

    fn window(limit: u64, secs: u64, start: WindowStart) -> LimiterConfig {
        LimiterConfig::FixedWindow(FixedWindowConfig {
            limit,
            window: HumanDuration::from_secs(secs),
            start,
        })
    }

    fn stack(limits: Vec<LimiterConfig>, shows: Shows) -> Box<dyn Limiter> {
        StackedConfig { limits, shows }.limiter()
    }

    /// Flask-Limiter's "2 per second; 5 per minute": the minute refuses the sixth request,
    /// and the second has been charged for it all the same.
    #[test]
    fn every_limit_must_admit_and_those_before_a_refusal_are_charged() {
        let first = WindowStart::FirstRequest;
        let mut s = stack(
            vec![window(2, 1, first), window(5, 60, first)],
            Shows::Binding,
        );
        // Windows of the second opened at 0, 1 s and 2 s; the minute's at 0, now full.
        for t in [0, 0, S, S, 2 * S] {
            assert_eq!(s.admit(t, 0).status, Status::Ok);
        }
        // 2.5 s: the second admits (its second of [2 s, 3 s)), the minute refuses.
        let d = s.admit(2 * S + S / 2, 0);
        assert_eq!((d.status, d.limit), (Status::Limited, 5));
        assert_eq!(d.retry_after, Some(57 * S + S / 2));
        // That refusal took the second's last place: at 2.6 s the second refuses by itself,
        // with its own wait, where uncharged it would have admitted and the minute refused.
        let d = s.admit(2 * S + 600_000_000, 0);
        assert_eq!((d.status, d.limit), (Status::Limited, 2));
        assert_eq!(d.retry_after, Some(400_000_000));
    }

    #[test]
    fn an_admission_states_the_binding_limit_or_the_first() {
        let clock = WindowStart::Clock;
        let limits = vec![window(10, 1, clock), window(12, 60, clock)];
        let mut binding = stack(limits.clone(), Shows::Binding);
        let mut first = stack(limits, Shows::First);
        // After 1: 9 left of 10 per second, 11 of 12 per minute: the second binds.
        let d = binding.admit(0, 0);
        assert_eq!((d.limit, d.remaining), (10, 9));
        for i in 1..6 {
            binding.admit(i * S, 0);
        }
        // After 7 in 7 seconds: 9 of the second, 5 of the minute: the minute binds.
        let d = binding.admit(6 * S, 0);
        assert_eq!((d.limit, d.remaining, d.window), (12, 5, 60 * S));
        for i in 0..7 {
            let d = first.admit(i * S, 0);
            assert_eq!(d.limit, 10);
        }
    }

    #[test]
    fn equally_empty_limits_state_the_one_whole_last() {
        let clock = WindowStart::Clock;
        let mut s = stack(
            vec![window(1, 1, clock), window(1, 60, clock)],
            Shows::Binding,
        );
        let d = s.admit(0, 0);
        assert_eq!((d.remaining, d.reset), (0, 60 * S));
    }

    #[test]
    fn a_held_answer_is_held_for_the_longest_hold_and_states_from_then() {
        let nginx = LimiterConfig::LeakyBucket(LeakyBucketConfig {
            rate: "1r/s".parse().unwrap(),
            burst: 3,
            delay: Delay::After(0),
            ..Default::default()
        });
        let minute = window(100, 60, WindowStart::Clock);
        let mut s = stack(vec![minute, nginx], Shows::First);
        assert_eq!(s.admit_held(0, 0, 0).hold, 0);
        let h = s.admit_held(0, 0, 0);
        // The bucket holds it 1 s; the minute's reset, 60 s from the decision, is 59 s from then.
        assert_eq!(h.hold, S);
        assert_eq!((h.decision.limit, h.decision.reset), (100, 59 * S));
    }

    #[test]
    fn capacity_and_rate_are_the_smallest_of_the_limits() {
        let clock = WindowStart::Clock;
        let s = stack(
            vec![window(10, 1, clock), window(100, 60, clock)],
            Shows::Binding,
        );
        assert!((s.rate_per_sec() - 100.0 / 60.0).abs() < 1e-12);
        assert_eq!(s.capacity(120 * S), 200.0);
        assert_eq!(s.capacity(0), 0.0);
        // Around an outage too: the minute loses its second window, the second loses 60.
        assert_eq!(
            s.capacity_with_outages(120 * S, &[(60 * S, 120 * S)]),
            100.0
        );
    }

    #[test]
    fn inner_problems_are_named_by_their_place() {
        let bad = StackedConfig {
            limits: vec![
                window(0, 1, WindowStart::Clock),
                LimiterConfig::Stacked(StackedConfig::default()),
                LimiterConfig::Concurrency(Default::default()),
                LimiterConfig::SlidingWindow(SlidingWindowConfig {
                    limit: 3,
                    window: HumanDuration(0),
                    ..SlidingWindowConfig::default()
                }),
            ],
            shows: Shows::Binding,
        };
        let named: Vec<String> = bad
            .problems_at()
            .iter()
            .map(|p| format!("{}: {}", RuleProblem::path(&p.at), p.message))
            .collect();
        assert_eq!(named.len(), 4, "{named:#?}");
        assert!(
            named[0].starts_with("limits[0].limit: must be at least 1"),
            "{named:#?}"
        );
        assert!(named[1].starts_with("limits[1].kind: a stacked limit cannot hold"));
        assert!(named[2].starts_with("limits[2].kind: `concurrency` has no rate"));
        assert!(named[2].contains("leaky-bucket"), "{}", named[2]);
        assert_eq!(named[3], "limits[3].window: must be longer than 0s");
        let empty = StackedConfig {
            limits: Vec::new(),
            shows: Shows::Binding,
        };
        assert_eq!(empty.problems_at()[0].at, [ParamStep::Field("limits")]);
        assert!(empty.limiter().admit(0, 0).status == Status::Ok);
    }

    #[test]
    fn a_stack_reads_and_writes_as_a_list_of_rules() {
        let text = r#"
            limits = [
                { kind = "fixed-window", limit = 10, window = "1s", start = "first-request" },
                { kind = "sliding-window-counter", limit = 100, window = "1m" },
            ]
            shows = "first"
        "#;
        let cfg: StackedConfig = toml::from_str(text).unwrap();
        assert_eq!(cfg.limits[1].name(), "sliding-window-counter");
        assert_eq!(cfg.shows, Shows::First);
        let back: StackedConfig = toml::from_str(&toml::to_string(&cfg).unwrap()).unwrap();
        assert_eq!(back, cfg);
        assert!(matches!(
            &cfg.limits[1],
            LimiterConfig::SlidingWindowCounter(SlidingWindowCounterConfig { limit: 100, .. })
        ));
    }

    proptest! {
        /// The stack admits exactly when every limit, asked in order until one refuses, admits:
        /// a replay of the same requests through separate limits agrees, and no limit alone
        /// ever admits more than its own bound (here: a fixed window's per window).
        #[test]
        fn admits_iff_every_limit_asked_in_order_admits(
            short in 1u64..6,
            long in 1u64..30,
            first_request in any::<bool>(),
            gaps in proptest::collection::vec(0u64..400_000_000, 1..300),
        ) {
            let start = if first_request { WindowStart::FirstRequest } else { WindowStart::Clock };
            let limits = vec![window(short, 1, start), window(long, 10, start)];
            let mut s = stack(limits.clone(), Shows::Binding);
            let mut apart: Vec<Box<dyn Limiter>> = limits.iter().map(LimiterConfig::build).collect();
            let (mut now, mut admitted) = (0u64, 0u64);
            let mut per_second = std::collections::BTreeMap::<u64, u64>::new();
            for gap in gaps {
                now += gap;
                let d = s.admit(now, 0);
                let mut expected = Status::Ok;
                for l in &mut apart {
                    if l.admit(now, 0).status != Status::Ok {
                        expected = Status::Limited;
                        break;
                    }
                }
                prop_assert_eq!(d.status, expected);
                if d.status == Status::Ok {
                    admitted += 1;
                    *per_second.entry(now / S).or_default() += 1;
                }
                prop_assert!(admitted as f64 <= s.capacity(now + 1));
                if !first_request {
                    prop_assert!(per_second.values().all(|&c| c <= short));
                }
            }
        }
    }
}
