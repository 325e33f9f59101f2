//! `[server] headers`: which rate-limit fields the server puts on its answers, in which
//! dialect.
//!
//! The rule decides; this setting only says how much of the decision the client is told, and
//! under which names. Real APIs tell their clients different things: the IETF draft's
//! structured fields give the remaining count and the quota, Heroku only the remaining count,
//! GitHub the count, the quota and an epoch-second reset, @fastify/rate-limit the count, the
//! quota and the seconds to the reset, and many APIs nothing but the status.
//! It is applied in one place per engine (the sim's send through [`Headers::response`], the
//! live server's answer in `engine/live/headers.rs`), so every server kind and every fault gets
//! it alike, and the sim hands an algorithm exactly what the live client's parser would read
//! off the same answer (at time scale 1). docs/headers.md lists the fields of each dialect.

use serde::{Deserialize, Serialize};

use super::Decision;
use crate::exchange::{Quota, Response, Status};
use crate::time::Nanos;

const SECOND: Nanos = 1_000_000_000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Headers {
    /// Every field the tool writes: Heroku's `RateLimit-Remaining` and `RateLimit-Limit`, the
    /// IETF `RateLimit` and `RateLimit-Policy`, and on refusals `Retry-After` plus the exact
    /// `retry-after-ms`. No real API sends all of them; it is the default (and the only style
    /// before dialects existed) because it tells a client the most, to the nanosecond.
    #[default]
    Full,
    /// The IETF draft (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy:
    /// "default";q=LIMIT;w=WINDOW` and `RateLimit: "default";r=REMAINING;t=RESET`, with
    /// `Retry-After` in whole seconds on refusals.
    Ietf,
    /// Heroku's platform API: `RateLimit-Remaining` only; no limit, no `Retry-After`.
    Heroku,
    /// GitHub's REST API: `x-ratelimit-limit`, `-remaining`, `-used` and `-reset` (epoch
    /// seconds). A refusal with nothing remaining is a primary limit: the reset says when to
    /// come back. Any other refusal is a secondary limit and carries `retry-after` instead.
    Github,
    /// @fastify/rate-limit's fields, as many libraries send the legacy ones:
    /// `x-ratelimit-limit`, `-remaining`, and `-reset` in whole seconds to go (rounded up at
    /// the instant of the answer, not an epoch second), with `retry-after` (the same seconds)
    /// on refusals. No policy. A reset to go is rounded at each answer's own phase, so two
    /// answers about one window end name it up to a second apart, where GitHub's epoch second
    /// names the same instant on every answer.
    Fastify,
    /// Flask-Limiter's fields (the Python `limits` library's window stats): GitHub's
    /// `x-ratelimit-limit`, `-remaining` and `-reset` as an epoch second, but that second is
    /// the one after the instant's (`int(t + 1)`: a second late when the instant falls on a
    /// whole second, as every window end of a window on the clock's grid does), and
    /// `retry-after` on every answer, the whole seconds from the answer to that second rounded
    /// down (0 under a second). A client reads `retry-after` only on refusals.
    #[serde(rename = "flask-limiter")]
    FlaskLimiter,
    /// No rate-limit fields and no `Retry-After`: only the status tells.
    None,
}

impl Headers {
    /// The valid values, as a scenario writes them.
    pub const NAMES: &'static [&'static str] = &[
        "full",
        "ietf",
        "heroku",
        "github",
        "fastify",
        "flask-limiter",
        "none",
    ];

    pub fn name(self) -> &'static str {
        match self {
            Headers::Full => "full",
            Headers::Ietf => "ietf",
            Headers::Heroku => "heroku",
            Headers::Github => "github",
            Headers::Fastify => "fastify",
            Headers::FlaskLimiter => "flask-limiter",
            Headers::None => "none",
        }
    }

    /// Whether a refusal in this dialect is GitHub's primary limit (nothing remaining: the
    /// reset is the wait) rather than a secondary one (`retry-after`).
    pub fn is_primary_refusal(d: &Decision) -> bool {
        d.status == Status::Limited && d.remaining == 0
    }

    /// The decision as far as this dialect tells its counts: unchanged when it sends the
    /// remaining count (every dialect but `none`), else without rate-limit fields
    /// ([`Decision::has_headers`] false) and without its wait. For what records the remaining
    /// count an answer carried; what a client reads of it is [`Headers::response`].
    pub fn shown(self, d: Decision) -> Decision {
        match self {
            Headers::None => Decision {
                status: d.status,
                remaining: 0,
                limit: 0,
                retry_after: None,
                reset: 0,
                window: 0,
            },
            _ => d,
        }
    }

    /// The answer to decision `d`, made at `now`, as a client of this dialect reads it: the
    /// status always; the counts and the wait only as far as the dialect writes them, rounded
    /// as it writes them (a decision with `limit` 0 carries no rate-limit headers, see
    /// [`Decision::has_headers`]). The live parser (`engine/live/headers.rs`) reads the same
    /// values off the fields the live server writes.
    #[inline]
    pub fn response(self, d: Decision, now: Nanos, latency: Nanos) -> Response {
        let told = d.has_headers();
        // A rule with a rate states its policy and its reset; `concurrency` and `occ` do not.
        let stated = told && d.window > 0;
        let mut r = Response {
            status: d.status,
            latency,
            ..Response::bare(d.status)
        };
        match self {
            // Exactly what the decision says (the run's output before dialects existed).
            Headers::Full => {
                r.remaining = told.then_some(d.remaining);
                r.limit = told.then_some(d.limit);
                r.retry_after = d.retry_after;
                // The policy and `t` are whole seconds in every dialect that writes them.
                r.quota = stated.then(|| stated_quota(d));
                r.reset = stated.then_some(ceil_seconds(d.stated_reset()));
            }
            _ if !told => {}
            Headers::Ietf => {
                r.remaining = Some(d.remaining);
                r.limit = Some(d.limit);
                r.retry_after = d.retry_after.map(whole_seconds);
                r.quota = stated.then(|| stated_quota(d));
                r.reset = stated.then_some(ceil_seconds(d.stated_reset()));
            }
            Headers::Heroku => r.remaining = Some(d.remaining),
            Headers::Github => {
                // The reset is an epoch second: the wait on a refusal, else until whole.
                let until = |wait: Nanos| {
                    let at = now.saturating_add(wait);
                    at.div_ceil(SECOND).saturating_mul(SECOND) - now
                };
                r.retry_after = if Headers::is_primary_refusal(&d) {
                    Some(until(d.retry_after.unwrap_or(0)))
                } else if d.status == Status::Limited {
                    d.retry_after.map(whole_seconds)
                } else {
                    None
                };
                r.remaining = Some(d.remaining);
                r.limit = Some(d.limit);
                r.reset = stated.then(|| until(d.stated_reset()));
            }
            Headers::Fastify => {
                r.remaining = Some(d.remaining);
                r.limit = Some(d.limit);
                r.reset = stated.then_some(ceil_seconds(d.stated_reset()));
                // Without `retry-after`, a refusal with nothing left waits for the reset (the
                // client reads the legacy fields as GitHub's).
                r.retry_after = match d.retry_after {
                    Some(wait) => Some(whole_seconds(wait)),
                    None if Headers::is_primary_refusal(&d) => r.reset,
                    None => None,
                };
            }
            Headers::FlaskLimiter => {
                let (reset, retry_after) = flask_limiter_waits(d.stated_reset(), now);
                r.remaining = Some(d.remaining);
                r.limit = Some(d.limit);
                r.reset = stated.then_some(reset);
                r.retry_after = (d.status == Status::Limited).then_some(retry_after);
            }
            Headers::None => {}
        }
        r
    }
}

/// What Flask-Limiter states of a reset `wait` after `now` (both from an epoch on a whole
/// second): the time to its reset field, the epoch second after the instant's, and its
/// `Retry-After`, the whole seconds to that second rounded down.
pub fn flask_limiter_waits(wait: Nanos, now: Nanos) -> (Nanos, Nanos) {
    let at = now.saturating_add(wait);
    let reset = (at / SECOND).saturating_add(1).saturating_mul(SECOND) - now;
    (reset, reset / SECOND * SECOND)
}

/// The policy a field in whole seconds can state for a decision: its window rounded up to whole
/// seconds, and the quota its rate earns over them, so that `q/w` is still the rule's rate. A
/// leaky bucket of 2 over 445 a second refills its 3 tokens in 6.7 ms; stated as `q=3;w=1` it
/// would tell a client a rate 148 times too low.
pub fn stated_quota(d: Decision) -> Quota {
    whole_second_quota(d.limit, d.window)
}

/// `limit` per `window` as a policy in whole seconds states it (the sim's answers and the live
/// server's `RateLimit-Policy` alike): the window rounded up, the quota the rate earns over it.
pub fn whole_second_quota(limit: u64, window: Nanos) -> Quota {
    let whole = whole_seconds(window);
    let limit = if whole == window || window == 0 {
        limit
    } else {
        let earned = u128::from(limit) * u128::from(whole) / u128::from(window);
        u64::try_from(earned).unwrap_or(u64::MAX)
    };
    Quota {
        limit,
        window: whole,
    }
}

/// A time as a field in whole seconds carries it, rounded up (the IETF `t`, possibly 0).
pub fn ceil_seconds(wait: Nanos) -> Nanos {
    wait.div_ceil(SECOND).saturating_mul(SECOND)
}

/// A wait as `Retry-After` in whole seconds carries it: rounded up, and at least one second.
pub fn whole_seconds(wait: Nanos) -> Nanos {
    wait.div_ceil(SECOND).max(1).saturating_mul(SECOND)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFUSED: Decision = Decision {
        status: Status::Limited,
        remaining: 0,
        limit: 4500,
        retry_after: Some(800_000_000),
        reset: 0,
        window: 0,
    };
    const ADMITTED: Decision = Decision {
        status: Status::Ok,
        remaining: 41,
        limit: 4500,
        retry_after: None,
        reset: 0,
        window: 0,
    };
    /// A GCRA of 4500 per hour with 41 left: whole again after 4459 × 0.8 s.
    const STATED: Decision = Decision {
        reset: 4459 * 800_000_000,
        window: 3600 * SECOND,
        ..ADMITTED
    };
    /// An injected fault: no rule answered.
    const FAULT: Decision = Decision {
        status: Status::Unavailable,
        remaining: 0,
        limit: 0,
        retry_after: None,
        reset: 0,
        window: 0,
    };

    fn seen(h: Headers, d: Decision, now: Nanos) -> (Option<u64>, Option<u64>, Option<Nanos>) {
        let r = h.response(d, now, 7);
        assert_eq!((r.status, r.latency), (d.status, 7));
        (r.remaining, r.limit, r.retry_after)
    }

    #[test]
    fn full_tells_the_decision_as_it_is() {
        assert_eq!(
            seen(Headers::Full, REFUSED, 0),
            (Some(0), Some(4500), Some(800_000_000))
        );
        assert_eq!(
            seen(Headers::Full, ADMITTED, 0),
            (Some(41), Some(4500), None)
        );
        assert_eq!(seen(Headers::Full, FAULT, 0), (None, None, None));
        assert_eq!(Headers::default(), Headers::Full);
    }

    #[test]
    fn ietf_rounds_the_wait_up_to_whole_seconds() {
        assert_eq!(
            seen(Headers::Ietf, REFUSED, 5),
            (Some(0), Some(4500), Some(SECOND))
        );
        let long = Decision {
            retry_after: Some(2 * SECOND + 1),
            ..REFUSED
        };
        assert_eq!(seen(Headers::Ietf, long, 0).2, Some(3 * SECOND));
        assert_eq!(
            seen(Headers::Ietf, ADMITTED, 0),
            (Some(41), Some(4500), None)
        );
        assert_eq!(seen(Headers::Ietf, FAULT, 0), (None, None, None));
    }

    #[test]
    fn heroku_tells_only_the_remaining_count() {
        assert_eq!(seen(Headers::Heroku, REFUSED, 0), (Some(0), None, None));
        assert_eq!(seen(Headers::Heroku, ADMITTED, 0), (Some(41), None, None));
        assert_eq!(seen(Headers::Heroku, FAULT, 0), (None, None, None));
    }

    #[test]
    fn github_waits_for_the_reset_second_on_primary_and_retry_after_on_secondary_limits() {
        // Refused at 10.5 s with 0.8 s to wait: the reset is the epoch second 12.
        let now = 10 * SECOND + SECOND / 2;
        assert_eq!(
            seen(Headers::Github, REFUSED, now),
            (Some(0), Some(4500), Some(12 * SECOND - now))
        );
        // A refusal while the count still shows some left is a secondary limit.
        let secondary = Decision {
            remaining: 1,
            ..REFUSED
        };
        assert_eq!(
            seen(Headers::Github, secondary, now),
            (Some(1), Some(4500), Some(SECOND))
        );
        assert_eq!(
            seen(Headers::Github, ADMITTED, now),
            (Some(41), Some(4500), None)
        );
        assert_eq!(seen(Headers::Github, FAULT, now), (None, None, None));
    }

    #[test]
    fn flask_limiter_states_the_second_after_the_reset_and_retry_after_rounded_down() {
        let now = 10 * SECOND + SECOND / 2;
        // Refused at 10.5 s with 0.8 s to wait: the instant 11.3 s is stated as 12, and
        // `retry-after` as the whole second left to it.
        assert_eq!(
            seen(Headers::FlaskLimiter, REFUSED, now),
            (Some(0), Some(4500), Some(SECOND))
        );
        // 0.3 s to wait: the instant 10.8 s is stated as 11, `retry-after` 0.
        let short = Decision {
            retry_after: Some(300_000_000),
            ..REFUSED
        };
        assert_eq!(seen(Headers::FlaskLimiter, short, now).2, Some(0));
        // A window end on a whole second is stated a second late: 15 s as 16.
        let at_the_end = Decision {
            reset: 4 * SECOND + SECOND / 2,
            window: 5 * SECOND,
            ..ADMITTED
        };
        let r = Headers::FlaskLimiter.response(at_the_end, now, 0);
        assert_eq!((r.reset, r.retry_after), (Some(16 * SECOND - now), None));
        assert_eq!(
            Headers::Github.response(at_the_end, now, 0).reset,
            Some(15 * SECOND - now)
        );
        assert_eq!(seen(Headers::FlaskLimiter, FAULT, now), (None, None, None));
    }

    #[test]
    fn none_hides_counts_and_retry_after() {
        assert_eq!(seen(Headers::None, REFUSED, 0), (None, None, None));
        assert_eq!(seen(Headers::None, ADMITTED, 0), (None, None, None));
        assert!(!Headers::None.shown(ADMITTED).has_headers());
        for dialect in [
            Headers::Full,
            Headers::Ietf,
            Headers::Heroku,
            Headers::Github,
            Headers::Fastify,
            Headers::FlaskLimiter,
        ] {
            assert_eq!(dialect.shown(ADMITTED), ADMITTED);
        }
    }

    #[test]
    fn the_policy_and_the_reset_are_told_as_each_dialect_writes_them() {
        let told = |h: Headers, now: Nanos| {
            let r = h.response(STATED, now, 0);
            (r.quota, r.reset)
        };
        let hour = Quota {
            limit: 4500,
            window: 3600 * SECOND,
        };
        // 4459 × 0.8 s = 3567.2 s, written in whole seconds.
        assert_eq!(told(Headers::Full, 0), (Some(hour), Some(3568 * SECOND)));
        // IETF: whole seconds, the reset rounded up.
        assert_eq!(told(Headers::Ietf, 0), (Some(hour), Some(3568 * SECOND)));
        // GitHub: no policy; the reset is an epoch second.
        let now = SECOND / 2;
        assert_eq!(
            told(Headers::Github, now),
            (None, Some(3568 * SECOND - now))
        );
        // @fastify/rate-limit: no policy; the reset in whole seconds to go, rounded up.
        assert_eq!(told(Headers::Fastify, now), (None, Some(3568 * SECOND)));
        assert_eq!(
            seen(Headers::Fastify, REFUSED, now),
            (Some(0), Some(4500), Some(SECOND))
        );
        assert_eq!(told(Headers::Heroku, 0), (None, None));
        assert_eq!(told(Headers::None, 0), (None, None));
        // A window of no whole seconds is stated over the whole seconds that hold it, with
        // the quota its rate earns there: nginx's burst of 10 at 5 a second refills 11 in
        // 2.2 s, stated as 15 per 3 s; a burst of 2 at 445 a second as 445 per second.
        let bucket = |limit: u64, window: Nanos| Decision {
            limit,
            window,
            ..STATED
        };
        let stated = |d: Decision| Headers::Ietf.response(d, 0, 0).quota.unwrap();
        assert_eq!(
            stated(bucket(11, 2_200_000_000)),
            Quota {
                limit: 15,
                window: 3 * SECOND
            }
        );
        assert_eq!(
            stated(bucket(3, 3 * SECOND / 445)),
            Quota {
                limit: 445,
                window: SECOND
            }
        );
        assert_eq!(
            Headers::Full
                .response(bucket(3, 3 * SECOND / 445), 0, 0)
                .limit,
            Some(3)
        );
        // A rule without a rate states neither.
        assert_eq!(Headers::Full.response(ADMITTED, 0, 0).quota, None);
        assert_eq!(Headers::Full.response(FAULT, 0, 0).reset, None);
    }

    #[test]
    fn every_name_reads_back() {
        for name in Headers::NAMES {
            let v: Headers = toml::Value::String(name.to_string()).try_into().unwrap();
            assert_eq!(v.name(), *name);
        }
        assert_eq!(whole_seconds(0), SECOND);
        assert_eq!(whole_seconds(SECOND), SECOND);
    }
}
