//! What one request came back with, as the law reads it, and how it is read off an HTTP
//! answer's status and headers in every form real rate limiters send:
//!
//! - the IETF fields in each of their drafts: separate `RateLimit-Limit` / `-Remaining` /
//!   `-Reset` (draft-6, and Heroku's lone `RateLimit-Remaining`), draft-7's one
//!   `RateLimit: limit=…, remaining=…, reset=…`, draft-8's structured `RateLimit` items
//!   (`r`, `t`) and `RateLimit-Policy` in either form (`100;w=60` or `"name";q=100;w=60`);
//! - the older `X-RateLimit-*` and `X-Rate-Limit-*` fields, whose reset is an epoch second
//!   (GitHub, express-rate-limit's legacy headers, Flask-Limiter), an epoch millisecond, seconds
//!   to the reset (fastify) or a duration (`x-ratelimit-reset-requests: 6m0s`), Discord's
//!   `X-RateLimit-Reset-After`, and per-window fields such as `X-RateLimit-Remaining-Minute`;
//! - `Retry-After` (seconds or an HTTP date) and `retry-after-ms`, else the wait under another
//!   name (Symfony's `X-RateLimit-Retry-After`, bucket4j's, Traefik's `X-Retry-In`);
//! - without a limit field, `X-RateLimit-Used` and `-Remaining` together as the limit (Reddit);
//!   a bare `X-Rate-Limit` as the limit (Zendesk); Shopify's `used/limit` call limit;
//! - a token bucket's refill stated beside its count (Spring Cloud Gateway's
//!   `X-RateLimit-Replenish-Rate`, `-Burst-Capacity` and `-Requested-Tokens`, Atlassian's
//!   `X-RateLimit-FillRate` per `-Interval-Seconds`), and a limit's window stated on its own
//!   (tollbooth's `X-Rate-Limit-Duration`).
//!
//! An answer may state several limits at once (a short and a long one, or the policies of a
//! draft-8 list); the law is told the binding one, the one nearest to empty. `when.rs` reads the
//! times, `fields.rs` the list grammar.

use std::time::{Duration, SystemTime};

use crate::fields::{Member, count, members, number};
use crate::when;

/// The class of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// 2xx.
    Ok,
    /// 429 Too Many Requests (or GitHub's 403 with a rate-limit sign).
    Limited,
    /// 503 Service Unavailable.
    Unavailable,
    /// Any other status, or no answer at all (refused, reset, timed out).
    Error,
}

impl Status {
    /// The class of an HTTP status: any status that is neither 2xx, 429 nor 503 is a failure.
    pub fn of(code: u16) -> Status {
        match code {
            200..=299 => Status::Ok,
            429 => Status::Limited,
            503 => Status::Unavailable,
            _ => Status::Error,
        }
    }

    /// The class of an answer from its status and headers: as [`Status::of`], except that a
    /// 403 carrying a rate-limit sign (`x-ratelimit-remaining: 0`, or a `Retry-After`) is a
    /// refusal, as GitHub answers its primary and secondary limits with 403 or 429. Reads only
    /// those two fields, for a caller that needs the class alone.
    pub fn read<'a>(code: u16, headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Status {
        if code != 403 {
            return Status::of(code);
        }
        let headers: Vec<(&str, &str)> = headers.into_iter().collect();
        let spent = field(&headers, "x-ratelimit-remaining").and_then(count) == Some(0);
        if spent || field(&headers, "retry-after").is_some() {
            Status::Limited
        } else {
            Status::of(code)
        }
    }
}

/// The first field named `name` (in any case), trimmed.
fn field<'a>(headers: &[(&'a str, &'a str)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

/// A quota the server states: `limit` requests per `window` (`RateLimit-Policy`'s `q` and `w`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub limit: u64,
    pub window: Duration,
}

/// One answer, with the fields the law reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Answer {
    pub status: Status,
    /// What is left of the key's allowance.
    pub remaining: Option<u64>,
    /// The bucket or the window's limit.
    pub limit: Option<u64>,
    /// How long the server asks to wait (read on a refusal or a failure only: Flask-Limiter
    /// sends `Retry-After` on every answer, where on a 2xx it is the reset).
    pub retry_after: Option<Duration>,
    /// The stated quota.
    pub policy: Option<Policy>,
    /// How long until the allowance is whole again or the window resets.
    pub reset: Option<Duration>,
    /// From send to answer.
    pub latency: Duration,
}

/// The longest wait, reset or policy window read from a server: a day. A larger number (a
/// typo, an attack) is read as a day rather than stalling a client forever.
pub const MAX_SERVER_WAIT: Duration = Duration::from_secs(86_400);

/// How far the answer's `Date` may be from the client's clock before it is the clock an epoch
/// reset is read against (a server whose clock is off states its resets by it). A `Date` is
/// whole seconds, so a second or two apart is only its rounding and the trip.
const CLOCK_SKEW: Duration = Duration::from_secs(2);

impl Answer {
    /// An answer that says nothing but its class (a transport error, or a server that sends
    /// no rate-limit field).
    pub fn bare(status: Status) -> Answer {
        Answer {
            status,
            remaining: None,
            limit: None,
            retry_after: None,
            policy: None,
            reset: None,
            latency: Duration::ZERO,
        }
    }

    /// The answer with every time a server stated (its wait, its reset, its policy's window)
    /// at most [`MAX_SERVER_WAIT`]: what [`Answer::read`] gives, for a caller that builds an
    /// answer itself (throttle-sim's simulator does).
    pub fn bounded(self) -> Answer {
        Answer {
            retry_after: self.retry_after.map(|w| w.min(MAX_SERVER_WAIT)),
            policy: self.policy.map(|p| Policy {
                window: p.window.min(MAX_SERVER_WAIT),
                ..p
            }),
            reset: self.reset.map(|r| r.min(MAX_SERVER_WAIT)),
            ..self
        }
    }

    /// An HTTP answer read in whatever form it speaks. Header names are matched in any case;
    /// a value that is not a number is ignored. `wall` is the wall clock now, for an epoch
    /// reset and a `Retry-After` date (the answer's `Date` instead, when the two are more than
    /// `CLOCK_SKEW`, 2 s, apart).
    pub fn read<'a>(
        code: u16,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        latency: Duration,
        wall: SystemTime,
    ) -> Answer {
        let headers: Vec<(&str, &str)> = headers.into_iter().collect();
        let now = reference_clock(field(&headers, "date"), wall);
        let status = Status::read(code, headers.iter().copied());
        let limits = Stated::all(&headers, now);
        let binding = binding(&limits);
        let retry_after = field(&headers, "retry-after-ms")
            .or_else(|| field(&headers, "x-ms-retry-after-ms"))
            .and_then(number)
            .map(|ms| when::seconds(ms / 1e3))
            .or_else(|| field(&headers, "retry-after").and_then(|v| when::retry_after(v, now)))
            .or_else(|| {
                RETRY_AFTER_ALIASES.iter().find_map(|name| {
                    field(&headers, name)
                        .and_then(|v| when::reset(v, now))
                        .map(|(_, d)| d)
                })
            });
        let mut reset = binding.and_then(|b| b.reset);
        let wait = if status == Status::Ok {
            // On a 2xx a `Retry-After` can only be the reset (Flask-Limiter sends one there),
            // unless it is zero: Atlassian's says 0 on every answer while tokens are left.
            reset = reset.or(retry_after.filter(|w| !w.is_zero()));
            None
        } else {
            // GitHub's primary limit names no wait but the time its count resets.
            retry_after.or_else(|| {
                binding
                    .filter(|b| b.separate && b.remaining == Some(0) && status == Status::Limited)
                    .and_then(|b| b.reset)
            })
        };
        let policy = binding.and_then(|b| {
            Some(Policy {
                limit: b.quota?,
                window: b.window.filter(|w| !w.is_zero())?,
            })
        });
        Answer {
            status,
            remaining: binding.and_then(|b| b.remaining),
            limit: binding.and_then(|b| b.quota),
            retry_after: wait,
            policy,
            reset,
            latency,
        }
        .bounded()
    }
}

/// The wait under other names than `Retry-After`, read where that is absent: Symfony's
/// documented `X-RateLimit-Retry-After`, bucket4j's `X-Rate-Limit-Retry-After-Seconds` and
/// Traefik's `X-Retry-In` (a Go duration, `285.714286ms`). A number is seconds to go, or from
/// 10⁹ an epoch second, as a reset is told apart ([`when::reset`]).
const RETRY_AFTER_ALIASES: [&str; 3] = [
    "x-ratelimit-retry-after",
    "x-rate-limit-retry-after-seconds",
    "x-retry-in",
];

/// The clock an answer's epoch resets and dates are read against: the client's, unless the
/// answer's `Date` says the server's is more than [`CLOCK_SKEW`] off.
fn reference_clock(date: Option<&str>, wall: SystemTime) -> SystemTime {
    let Some(date) = date.and_then(when::http_date) else {
        return wall;
    };
    let apart = date
        .duration_since(wall)
        .or_else(|_| wall.duration_since(date))
        .unwrap_or_default();
    if apart > CLOCK_SKEW { date } else { wall }
}

/// One limit an answer speaks of: its quota, what is left of it and when it resets.
#[derive(Clone, Debug, Default, PartialEq)]
struct Stated {
    /// A draft-8 policy's name, which ties its count to its `RateLimit-Policy` item.
    name: Option<String>,
    quota: Option<u64>,
    window: Option<Duration>,
    remaining: Option<u64>,
    reset: Option<Duration>,
    /// Read off the separate `RateLimit-*` / `X-RateLimit-*` fields, whose spent count on a
    /// refusal without `Retry-After` means "wait for the reset" (GitHub's primary limit).
    separate: bool,
}

/// The prefixes of the separate fields, in the order a value is taken when several say it
/// (the last is Anthropic's request limit, `anthropic-ratelimit-requests-remaining`).
const SEPARATE: [&str; 4] = [
    "ratelimit-",
    "x-ratelimit-",
    "x-rate-limit-",
    "anthropic-ratelimit-requests-",
];

/// Per-window suffixes (Kong's `X-RateLimit-Remaining-Minute`) and their windows in seconds.
const WINDOW_SUFFIXES: [(&str, u64); 6] = [
    ("second", 1),
    ("minute", 60),
    ("hour", 3600),
    ("day", 86_400),
    ("month", 30 * 86_400),
    ("year", 365 * 86_400),
];

impl Stated {
    /// Every limit the answer states, with the policies joined to their counts.
    fn all(headers: &[(&str, &str)], now: SystemTime) -> Vec<Stated> {
        let mut limits = Vec::new();
        let mut policies: Vec<Stated> = Vec::new();
        if let Some(f) = field(headers, "ratelimit") {
            limits.extend(members(f).iter().map(|m| Stated::item(m, now)));
        }
        if let Some(f) = field(headers, "ratelimit-policy") {
            policies.extend(members(f).iter().filter_map(Stated::policy));
        }
        let separate = Stated::separate(headers, now, &mut policies);
        limits.extend(separate);
        limits.extend(Stated::per_window(headers));
        limits.extend(Stated::call_limit(headers));
        limits.retain(|l| {
            *l != Stated::default()
                && *l
                    != Stated {
                        separate: true,
                        ..Default::default()
                    }
        });
        join_policies(&mut limits, &policies);
        limits
    }

    /// A member of the `RateLimit` field: draft-8's `"name";r=…;t=…` or draft-7's
    /// `limit=…, remaining=…, reset=…`.
    fn item(m: &Member, now: SystemTime) -> Stated {
        Stated {
            name: m.name.clone(),
            quota: m.param(&["limit", "q", "l"]).and_then(count),
            window: m.param(&["w"]).and_then(number).map(when::seconds),
            remaining: m.param(&["r", "remaining"]).and_then(count),
            reset: m
                .param(&["t", "reset"])
                .and_then(|v| when::reset(v, now))
                .map(|(_, d)| d),
            separate: false,
        }
    }

    /// A policy: draft-6/7's `100;w=60` or draft-8's `"name";q=100;w=60`.
    fn policy(m: &Member) -> Option<Stated> {
        let quota = m
            .number
            .map(|n| n as u64)
            .or_else(|| m.param(&["q", "l", "limit"]).and_then(count))?;
        Some(Stated {
            name: m.name.clone(),
            quota: Some(quota),
            window: m.param(&["w"]).and_then(number).map(when::seconds),
            ..Stated::default()
        })
    }

    /// The separate fields under any of [`SEPARATE`]'s prefixes (also with OpenAI's
    /// `-requests` suffix). A limit field may carry policies after its count
    /// (`100, 100;w=60`), which join `policies`.
    fn separate(
        headers: &[(&str, &str)],
        now: SystemTime,
        policies: &mut Vec<Stated>,
    ) -> Option<Stated> {
        let get = |what: &str| {
            SEPARATE.iter().find_map(|p| {
                field(headers, &format!("{p}{what}"))
                    .or_else(|| field(headers, &format!("{p}{what}-requests")))
            })
        };
        let mut quota = None;
        // Zendesk names its limit `X-Rate-Limit`, beside `X-Rate-Limit-Remaining`.
        if let Some(f) = get("limit").or_else(|| field(headers, "x-rate-limit")) {
            for m in members(f) {
                if m.param(&["w"]).is_some() {
                    policies.extend(Stated::policy(&m));
                } else if quota.is_none() {
                    quota = m.number.map(|n| n as u64);
                }
            }
        }
        // Discord's `reset-after` is exact where its epoch `reset` is read against a clock.
        let reset = get("reset-after")
            .and_then(number)
            .map(when::seconds)
            .or_else(|| {
                get("reset")
                    .and_then(|v| when::reset(v, now))
                    .map(|(_, d)| d)
            });
        let remaining = get("remaining").and_then(count);
        // Without a limit field, what was used and what remains make it (Reddit's
        // `x-ratelimit-used` beside `-remaining`), or the bucket a refill names.
        let quota = quota
            .or_else(|| get("used").and_then(count)?.checked_add(remaining?))
            .or_else(|| get("burst-capacity").and_then(count));
        // A request that costs several tokens (Spring Cloud Gateway's `requested-tokens`, its
        // way to a rate under one a second): the quota and the count in requests.
        let cost = get("requested-tokens")
            .and_then(count)
            .filter(|c| *c > 1)
            .unwrap_or(1);
        let (quota, remaining) = (quota.map(|q| q / cost), remaining.map(|r| r / cost));
        // A bucket of `quota` refilled at `tokens` every `every`: the window in which the
        // refill fills it, as an IETF policy states a bucket (`q` its size, `q / w` its rate).
        // Spring Cloud Gateway's `replenish-rate` is tokens a second; Atlassian's `fillrate`
        // comes every `interval-seconds`. Else tollbooth's `duration`, the limit's window.
        let refill = get("replenish-rate")
            .and_then(number)
            .map(|t| (t, 1.0))
            .or_else(|| {
                let every = get("interval-seconds").and_then(number).unwrap_or(1.0);
                Some((get("fillrate").and_then(number)?, every))
            })
            .filter(|(tokens, every)| *tokens > 0.0 && *every > 0.0);
        let window = match (refill, quota) {
            (Some((tokens, every)), Some(q)) => {
                Some(when::seconds(q as f64 * cost as f64 * every / tokens))
            }
            _ => get("duration").and_then(when::span),
        };
        let s = Stated {
            quota,
            window,
            remaining,
            reset,
            separate: true,
            ..Stated::default()
        };
        (s.quota.is_some() || s.remaining.is_some()).then_some(s)
    }

    /// Shopify's call limit, `X-Shopify-Shop-Api-Call-Limit: 32/40`: 32 used of a bucket of 40.
    fn call_limit(headers: &[(&str, &str)]) -> Option<Stated> {
        let (used, limit) = field(headers, "x-shopify-shop-api-call-limit")?.split_once('/')?;
        let (used, limit) = (count(used)?, count(limit)?);
        Some(Stated {
            quota: Some(limit),
            remaining: Some(limit.saturating_sub(used)),
            ..Stated::default()
        })
    }

    /// Kong's per-window fields, `X-RateLimit-Limit-Minute` and `-Remaining-Minute`: one limit
    /// per window named.
    fn per_window(headers: &[(&str, &str)]) -> Vec<Stated> {
        let mut out = Vec::new();
        for (suffix, secs) in WINDOW_SUFFIXES {
            let get = |what: &str| {
                SEPARATE
                    .iter()
                    .find_map(|p| field(headers, &format!("{p}{what}-{suffix}")))
                    .and_then(count)
            };
            let (quota, remaining) = (get("limit"), get("remaining"));
            if quota.is_some() || remaining.is_some() {
                out.push(Stated {
                    quota,
                    window: Some(Duration::from_secs(secs)),
                    remaining,
                    ..Stated::default()
                });
            }
        }
        out
    }
}

/// Give each count its policy: the one of the same name (draft-8), else the one of the same
/// quota, else the only one where the count states no other quota. A policy no count names
/// still states the quota. Then limits that say the same (one quota and one count, as
/// Kong's `RateLimit-*` beside its per-window fields, or draft-8's fields beside the legacy
/// ones) become one, each filling in what the other left out. Where two state different
/// windows, the longer one's values come first: the same count over a longer window is the
/// one that binds (Kong's `RateLimit-*` name the longest window of the smallest count).
fn join_policies(limits: &mut Vec<Stated>, policies: &[Stated]) {
    let mut used = vec![false; policies.len()];
    for l in limits.iter_mut() {
        let by_name = l
            .name
            .as_ref()
            .and_then(|n| policies.iter().position(|p| p.name.as_ref() == Some(n)));
        let by_quota = || {
            l.quota
                .and_then(|q| policies.iter().position(|p| p.quota == Some(q)))
        };
        let only = || (policies.len() == 1 && l.quota.is_none()).then_some(0);
        if let Some(i) = by_name.or_else(by_quota).or_else(only) {
            let p = &policies[i];
            l.quota = l.quota.or(p.quota);
            l.window = l.window.or(p.window);
            used[i] = true;
        }
    }
    if limits.is_empty() {
        limits.extend(
            policies
                .iter()
                .zip(&used)
                .filter(|(_, u)| !**u)
                .map(|(p, _)| p.clone()),
        );
    }
    let mut i = 0;
    while i < limits.len() {
        let same = (i + 1..limits.len()).find(|&j| {
            let (a, b) = (&limits[i], &limits[j]);
            a.quota.is_some()
                && a.quota == b.quota
                && a.remaining.is_some()
                && a.remaining == b.remaining
        });
        match same {
            Some(j) => {
                let mut b = limits.remove(j);
                let a = &mut limits[i];
                if a.window.is_some() && b.window > a.window {
                    std::mem::swap(a, &mut b);
                }
                // GitHub's rule (a spent count waits for the reset) follows the reset kept.
                if a.reset.is_none() {
                    a.separate = b.separate;
                }
                a.window = a.window.or(b.window);
                a.reset = a.reset.or(b.reset);
                a.name = a.name.take().or(b.name);
            }
            None => i += 1,
        }
    }
}

/// The limit that binds: of those that state a count, the one nearest to empty (the smallest
/// share of its quota left, or the smallest count where a quota is missing), the later reset
/// on a tie; else the first that states a quota.
fn binding(limits: &[Stated]) -> Option<&Stated> {
    let counted: Vec<&Stated> = limits.iter().filter(|l| l.remaining.is_some()).collect();
    if counted.is_empty() {
        return limits.iter().find(|l| l.quota.is_some());
    }
    let all_quotas = counted.iter().all(|l| l.quota.is_some_and(|q| q > 0));
    let fullness = |l: &Stated| {
        let r = l.remaining.unwrap_or(0) as f64;
        if all_quotas {
            r / l.quota.unwrap_or(1) as f64
        } else {
            r
        }
    };
    counted.into_iter().min_by(|a, b| {
        fullness(a)
            .total_cmp(&fullness(b))
            .then_with(|| b.reset.cmp(&a.reset))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(code: u16, pairs: &[(&str, &str)]) -> Answer {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        Answer::read(code, pairs.iter().copied(), Duration::ZERO, wall)
    }

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn policy(limit: u64, window_s: u64) -> Option<Policy> {
        Some(Policy {
            limit,
            window: S(window_s),
        })
    }

    /// The answers of a captured file (`testdata/real-headers/`): blocks of a status line and
    /// `Name: value` lines, apart by blank lines, after `#` comments.
    fn captured(text: &str) -> Vec<(u16, Vec<(&str, &str)>)> {
        text.split("\n\n")
            .map(|block| {
                let mut lines = block
                    .lines()
                    .filter(|l| !l.starts_with('#') && !l.is_empty());
                let status = lines.next().and_then(|l| l.split(' ').nth(1));
                let code = status.and_then(|c| c.parse().ok());
                let pairs = lines.filter_map(|l| l.split_once(':')).collect();
                (code, pairs)
            })
            .filter_map(|(code, pairs)| Some((code?, pairs)))
            .collect()
    }

    /// Each answer of a captured file, read against its own `Date` (the second the server
    /// sent it, so an epoch reset reads as whole seconds).
    fn read_captured(text: &str) -> Vec<Answer> {
        captured(text)
            .into_iter()
            .map(|(code, pairs)| {
                let date = field(&pairs, "date").and_then(when::http_date);
                let wall = date.expect("every captured answer has a Date");
                Answer::read(code, pairs, Duration::ZERO, wall)
            })
            .collect()
    }

    /// What an answer says: (status, remaining, limit, policy, reset, retry_after).
    type Said = (
        Status,
        Option<u64>,
        Option<u64>,
        Option<Policy>,
        Option<Duration>,
        Option<Duration>,
    );

    fn said(a: &Answer) -> Said {
        (
            a.status,
            a.remaining,
            a.limit,
            a.policy,
            a.reset,
            a.retry_after,
        )
    }

    macro_rules! capture {
        ($name:literal) => {
            read_captured(include_str!(concat!(
                "../testdata/real-headers/",
                $name,
                ".txt"
            )))
        };
    }

    #[test]
    fn express_rate_limit_in_each_draft_and_legacy() {
        use Status::{Limited, Ok};
        let (ok, refused) = (
            (Ok, Some(4), Some(5), policy(5, 10), Some(S(10)), None),
            (
                Limited,
                Some(0),
                Some(5),
                policy(5, 10),
                Some(S(10)),
                Some(S(10)),
            ),
        );
        for answers in [
            capture!("express-rate-limit-draft-6"),
            capture!("express-rate-limit-draft-7"),
            capture!("express-rate-limit-draft-8"),
        ] {
            let got: Vec<Said> = answers.iter().map(said).collect();
            assert_eq!(got, [ok, refused]);
        }
        // Of the separate fields, `RateLimit-Reset` is read before `X-RateLimit-Reset`.
        let got: Vec<Said> = capture!("express-rate-limit-draft-6-legacy")
            .iter()
            .map(said)
            .collect();
        assert_eq!(got, [ok, refused]);
        // With the legacy fields beside, the two state one limit (the same quota and count)
        // and are read as one: the IETF field's reset (10 s) before the legacy epoch's, which
        // read against the Date is the window's end rounded up to a second (11 s).
        for answers in [
            capture!("express-rate-limit-draft-7-legacy"),
            capture!("express-rate-limit-draft-8-legacy"),
        ] {
            let got: Vec<Said> = answers.iter().map(said).collect();
            assert_eq!(got, [ok, refused]);
        }
        // Legacy alone states no window.
        let got: Vec<Said> = capture!("express-rate-limit-legacy")
            .iter()
            .map(said)
            .collect();
        assert_eq!(
            got,
            [
                (Ok, Some(4), Some(5), None, Some(S(11)), None),
                (Limited, Some(0), Some(5), None, Some(S(11)), Some(S(10))),
            ]
        );
    }

    #[test]
    fn fastifys_reset_is_seconds_to_it_not_an_epoch() {
        let got: Vec<Said> = capture!("fastify-rate-limit").iter().map(said).collect();
        assert_eq!(
            got,
            [
                (Status::Ok, Some(4), Some(5), None, Some(S(10)), None),
                (
                    Status::Limited,
                    Some(0),
                    Some(5),
                    None,
                    Some(S(10)),
                    Some(S(10))
                ),
            ]
        );
    }

    #[test]
    fn flask_limiters_retry_after_on_a_2xx_is_its_reset_not_a_wait() {
        use Status::{Limited, Ok};
        let got: Vec<Said> = capture!("flask-limiter-fixed-window")
            .iter()
            .map(said)
            .collect();
        assert_eq!(
            got,
            [
                (Ok, Some(4), Some(5), None, Some(S(11)), None),
                (Limited, Some(0), Some(5), None, Some(S(11)), Some(S(10))),
            ]
        );
        let got: Vec<Said> = capture!("flask-limiter-moving-window")
            .iter()
            .map(said)
            .collect();
        assert_eq!(
            got[1],
            (Limited, Some(0), Some(5), None, Some(S(11)), Some(S(10)))
        );
        let got: Vec<Said> = capture!("flask-limiter-sliding-window-counter")
            .iter()
            .map(said)
            .collect();
        assert_eq!(
            got,
            [
                (Ok, Some(4), Some(5), None, Some(S(5)), None),
                (Limited, Some(0), Some(5), None, Some(S(5)), Some(S(4))),
            ]
        );
        // Two limits at once: Flask-Limiter states the one it applies.
        let stacked = capture!("flask-limiter-stacked");
        assert_eq!(stacked.len(), 4);
        assert!(stacked.iter().all(|a| a.limit == Some(3)));
        assert_eq!(stacked[1].retry_after, Some(S(1)));
    }

    #[test]
    fn flask_limiters_two_limits_state_the_shortest_on_a_2xx_and_the_spent_one_on_a_429() {
        use Status::{Limited, Ok};
        // "2 per 1 second; 5 per 10 seconds": the 2xx states the 1 s limit (its reset an epoch
        // second, read against the Date), the 429 the 10 s limit it spent, with its wait.
        let got: Vec<Said> = capture!("flask-limiter-two-limits")
            .iter()
            .map(said)
            .collect();
        assert_eq!(
            got,
            [
                (Ok, Some(1), Some(2), None, Some(S(2)), None),
                (Limited, Some(0), Some(5), None, Some(S(8)), Some(S(7))),
            ]
        );
    }

    #[test]
    fn nginx_says_nothing_but_its_status() {
        // With nodelay, and without (a request beyond the rate held, not refused, until the
        // queue of `burst` is full): the same two answers.
        for answers in [
            capture!("nginx-limit-req"),
            capture!("nginx-limit-req-nodelay"),
            capture!("nginx-limit-req-delay"),
        ] {
            let got: Vec<Said> = answers.iter().map(said).collect();
            assert_eq!(
                got,
                [
                    (Status::Ok, None, None, None, None, None),
                    (Status::Limited, None, None, None, None, None),
                ]
            );
        }
    }

    #[test]
    fn a_draft_8_list_of_policies_binds_by_the_one_nearest_to_empty() {
        let a = read(
            200,
            &[
                (
                    "RateLimit-Policy",
                    "\"burst\";q=10;w=1, \"day\";q=1000;w=86400",
                ),
                ("RateLimit", "\"burst\";r=8;t=1, \"day\";r=50;t=3600"),
            ],
        );
        assert_eq!((a.remaining, a.limit), (Some(50), Some(1000)));
        assert_eq!(a.policy, policy(1000, 86_400));
        assert_eq!(a.reset, Some(S(3600)));
        let spent = read(
            429,
            &[
                (
                    "RateLimit-Policy",
                    "\"burst\";q=10;w=1, \"day\";q=1000;w=86400",
                ),
                ("RateLimit", "\"burst\";r=0;t=1, \"day\";r=50;t=3600"),
            ],
        );
        assert_eq!((spent.remaining, spent.limit), (Some(0), Some(10)));
        assert_eq!(spent.policy, policy(10, 1));
    }

    #[test]
    fn draft_6_and_7_policy_lists_and_envoys_limit_with_policies() {
        let a = read(
            200,
            &[
                ("RateLimit-Limit", "10, 10;w=1, 100;w=60"),
                ("RateLimit-Remaining", "7"),
                ("RateLimit-Reset", "1"),
            ],
        );
        assert_eq!((a.remaining, a.limit), (Some(7), Some(10)));
        assert_eq!(a.policy, policy(10, 1));
        let b = read(
            200,
            &[
                ("RateLimit-Policy", "10;w=1, 100;w=60"),
                ("RateLimit", "limit=100, remaining=30, reset=20"),
            ],
        );
        assert_eq!(b.policy, policy(100, 60));
        assert_eq!(b.reset, Some(S(20)));
    }

    #[test]
    fn resets_in_epoch_milliseconds_durations_and_per_window_fields() {
        // The reading's clock is 1,000,000,000 s after the epoch.
        let ms = read(
            200,
            &[
                ("X-RateLimit-Remaining", "3"),
                ("X-RateLimit-Reset", "1000000002500"),
            ],
        );
        assert_eq!(ms.reset, Some(Duration::from_millis(2500)));
        let openai = read(
            200,
            &[
                ("x-ratelimit-limit-requests", "60"),
                ("x-ratelimit-remaining-requests", "59"),
                ("x-ratelimit-reset-requests", "1s"),
                ("x-ratelimit-remaining-tokens", "149984"),
            ],
        );
        assert_eq!((openai.remaining, openai.limit), (Some(59), Some(60)));
        assert_eq!(openai.reset, Some(S(1)));
        let discord = read(
            200,
            &[
                ("X-RateLimit-Remaining", "4"),
                ("X-RateLimit-Reset-After", "1.25"),
            ],
        );
        assert_eq!(discord.reset, Some(Duration::from_millis(1250)));
        let twitter = read(
            200,
            &[
                ("x-rate-limit-limit", "900"),
                ("x-rate-limit-remaining", "899"),
                ("x-rate-limit-reset", "1000000900"),
            ],
        );
        assert_eq!(
            (twitter.remaining, twitter.limit, twitter.reset),
            (Some(899), Some(900), Some(S(900)))
        );
        let kong = read(
            200,
            &[
                ("X-RateLimit-Limit-Second", "5"),
                ("X-RateLimit-Remaining-Second", "4"),
                ("X-RateLimit-Limit-Minute", "100"),
                ("X-RateLimit-Remaining-Minute", "10"),
            ],
        );
        assert_eq!((kong.remaining, kong.limit), (Some(10), Some(100)));
        assert_eq!(kong.policy, policy(100, 60));
    }

    #[test]
    fn kongs_fields_of_the_nearest_window_join_its_per_window_fields() {
        let a = read(
            200,
            &[
                ("RateLimit-Limit", "5"),
                ("RateLimit-Remaining", "4"),
                ("RateLimit-Reset", "1"),
                ("X-RateLimit-Limit-Second", "5"),
                ("X-RateLimit-Remaining-Second", "4"),
                ("X-RateLimit-Limit-Minute", "100"),
                ("X-RateLimit-Remaining-Minute", "90"),
            ],
        );
        assert_eq!(
            (a.remaining, a.limit, a.reset),
            (Some(4), Some(5), Some(S(1)))
        );
        assert_eq!(a.policy, policy(5, 1));
    }

    #[test]
    fn of_one_quota_and_count_over_two_windows_the_longer_binds() {
        // Kong limiting to 100 a minute and 100 an hour: while every request of the hour fell
        // in this minute both windows have 90 left, and its RateLimit-* name the hour (the
        // longest window of the smallest count). The minute's refill is no help: 90 are left
        // until the hour's end, not 100 a minute.
        let kong = [
            ("RateLimit-Limit", "100"),
            ("RateLimit-Remaining", "90"),
            ("RateLimit-Reset", "3540"),
            ("X-RateLimit-Limit-Minute", "100"),
            ("X-RateLimit-Remaining-Minute", "90"),
            ("X-RateLimit-Limit-Hour", "100"),
            ("X-RateLimit-Remaining-Hour", "90"),
        ];
        let a = read(200, &kong);
        assert_eq!((a.policy, a.reset), (policy(100, 3600), Some(S(3540))));
        // Without the RateLimit-* fields, the hour all the same.
        let a = read(200, &kong[3..]);
        assert_eq!((a.policy, a.reset), (policy(100, 3600), None));
        // Two draft-8 policies of one quota: the longer window, with its own reset.
        let a = read(
            200,
            &[
                ("RateLimit-Policy", "\"m\";q=10;w=60, \"h\";q=10;w=3600"),
                ("RateLimit", "\"m\";r=4;t=30, \"h\";r=4;t=1800"),
            ],
        );
        assert_eq!((a.policy, a.reset), (policy(10, 3600), Some(S(1800))));
    }

    #[test]
    fn a_policy_of_another_quota_is_not_the_counts() {
        let a = read(
            200,
            &[
                ("RateLimit-Limit", "50"),
                ("RateLimit-Remaining", "7"),
                ("RateLimit-Policy", "100;w=60"),
            ],
        );
        assert_eq!((a.remaining, a.limit, a.policy), (Some(7), Some(50), None));
    }

    #[test]
    fn discords_reset_after_is_read_before_its_epoch_reset() {
        let a = read(
            200,
            &[
                ("X-RateLimit-Remaining", "4"),
                ("X-RateLimit-Reset", "1000000002"),
                ("X-RateLimit-Reset-After", "1.234"),
            ],
        );
        assert_eq!(a.reset, Some(Duration::from_millis(1234)));
    }

    #[test]
    fn a_wait_under_another_name_is_read_where_retry_after_is_absent() {
        // Symfony's documented `X-RateLimit-Retry-After`, in seconds or as an epoch second.
        let symfony = read(
            429,
            &[
                ("X-RateLimit-Remaining", "0"),
                ("X-RateLimit-Retry-After", "12"),
                ("X-RateLimit-Limit", "60"),
            ],
        );
        assert_eq!(symfony.retry_after, Some(Duration::from_secs(12)));
        let epoch = read(429, &[("X-RateLimit-Retry-After", "1000000030")]);
        assert_eq!(epoch.retry_after, Some(Duration::from_secs(30)));
        // bucket4j's, and Traefik's Go duration.
        let bucket4j = read(429, &[("X-Rate-Limit-Retry-After-Seconds", "7")]);
        assert_eq!(bucket4j.retry_after, Some(Duration::from_secs(7)));
        let traefik = read(429, &[("Retry-After", "1"), ("X-Retry-In", "285.714286ms")]);
        assert_eq!(traefik.retry_after, Some(Duration::from_secs(1)));
        let traefik = read(429, &[("X-Retry-In", "285.714286ms")]);
        assert_eq!(traefik.retry_after, Some(Duration::from_nanos(285_714_286)));
        assert_eq!(read(429, &[("X-Retry-In", "soon")]).retry_after, None);
    }

    #[test]
    fn without_a_limit_field_used_and_remaining_make_the_limit() {
        let reddit = read(
            200,
            &[
                ("x-ratelimit-used", "12"),
                ("x-ratelimit-remaining", "588"),
                ("x-ratelimit-reset", "312"),
            ],
        );
        assert_eq!((reddit.remaining, reddit.limit), (Some(588), Some(600)));
        // A limit field wins.
        let github = read(
            200,
            &[
                ("x-ratelimit-limit", "5000"),
                ("x-ratelimit-used", "1"),
                ("x-ratelimit-remaining", "4998"),
            ],
        );
        assert_eq!(github.limit, Some(5000));
    }

    #[test]
    fn a_buckets_refill_stated_beside_its_count_is_its_policy() {
        // Spring Cloud Gateway's RequestRateLimiter, as its documentation writes it: a bucket
        // of 20 refilled at 10 a second.
        let spring = read(
            200,
            &[
                ("X-RateLimit-Remaining", "19"),
                ("X-RateLimit-Replenish-Rate", "10"),
                ("X-RateLimit-Burst-Capacity", "20"),
                ("X-RateLimit-Requested-Tokens", "1"),
            ],
        );
        assert_eq!(
            (spring.remaining, spring.limit, spring.policy),
            (Some(19), Some(20), policy(20, 2))
        );
        // One request a minute: a token a second, each request costing 60, a bucket of 60;
        // 59 tokens left is no request left.
        let slow = read(
            429,
            &[
                ("X-RateLimit-Remaining", "59"),
                ("X-RateLimit-Replenish-Rate", "1"),
                ("X-RateLimit-Burst-Capacity", "60"),
                ("X-RateLimit-Requested-Tokens", "60"),
            ],
        );
        assert_eq!(
            (slow.remaining, slow.limit, slow.policy),
            (Some(0), Some(1), policy(1, 60))
        );
        // Atlassian's Data Center products: at most 15, 5 more every 60 s, and a
        // `retry-after` of 0 on every answer while tokens are left (no reset).
        let atlassian = read(
            200,
            &[
                ("X-RateLimit-Limit", "15"),
                ("X-RateLimit-Remaining", "14"),
                ("X-RateLimit-Interval-Seconds", "60"),
                ("X-RateLimit-FillRate", "5"),
                ("retry-after", "0"),
            ],
        );
        assert_eq!(
            (atlassian.remaining, atlassian.limit, atlassian.policy),
            (Some(14), Some(15), policy(15, 180))
        );
        assert_eq!((atlassian.reset, atlassian.retry_after), (None, None));
        // A refill of nothing states no window.
        let none = read(
            200,
            &[
                ("X-RateLimit-Remaining", "3"),
                ("X-RateLimit-Replenish-Rate", "0"),
            ],
        );
        assert_eq!(none.policy, None);
    }

    #[test]
    fn tollbooths_window_shopifys_call_limit_and_zendesks_limit() {
        // tollbooth (Go): the limit a second with two decimals, its window on its own, in
        // seconds or as a Go duration.
        let tollbooth = read(
            429,
            &[
                ("X-Rate-Limit-Limit", "10.00"),
                ("X-Rate-Limit-Duration", "1"),
            ],
        );
        assert_eq!(
            (tollbooth.limit, tollbooth.policy),
            (Some(10), policy(10, 1))
        );
        let minute = read(
            200,
            &[
                ("X-Rate-Limit-Limit", "10"),
                ("X-Rate-Limit-Duration", "1m0s"),
            ],
        );
        assert_eq!(minute.policy, policy(10, 60));
        // Shopify's leaky bucket: 32 of 40 used.
        let shopify = read(200, &[("X-Shopify-Shop-Api-Call-Limit", "32/40")]);
        assert_eq!((shopify.remaining, shopify.limit), (Some(8), Some(40)));
        let over = read(429, &[("X-Shopify-Shop-Api-Call-Limit", "41/40")]);
        assert_eq!(over.remaining, Some(0));
        assert_eq!(
            read(200, &[("X-Shopify-Shop-Api-Call-Limit", "40")]).remaining,
            None
        );
        // Zendesk's `X-Rate-Limit` is the limit.
        let zendesk = read(
            200,
            &[("X-Rate-Limit", "700"), ("X-Rate-Limit-Remaining", "699")],
        );
        assert_eq!((zendesk.remaining, zendesk.limit), (Some(699), Some(700)));
    }

    #[test]
    fn anthropics_request_limit_and_azures_retry_after_ms() {
        let a = read(
            429,
            &[
                ("anthropic-ratelimit-requests-limit", "50"),
                ("anthropic-ratelimit-requests-remaining", "0"),
                ("anthropic-ratelimit-requests-reset", "2001-09-09T01:46:52Z"),
                ("anthropic-ratelimit-tokens-remaining", "39000"),
                ("x-ms-retry-after-ms", "1500"),
            ],
        );
        assert_eq!((a.remaining, a.limit), (Some(0), Some(50)));
        assert_eq!(a.reset, Some(S(12)));
        assert_eq!(a.retry_after, Some(Duration::from_millis(1500)));
    }

    #[test]
    fn an_epoch_reset_is_read_by_the_servers_date_when_the_clocks_disagree() {
        // The client's clock is 1,000,000,000; the server's Date says an hour later.
        let a = read(
            200,
            &[
                ("X-RateLimit-Remaining", "3"),
                ("X-RateLimit-Reset", "1000003630"),
                ("Date", "Sun, 09 Sep 2001 02:46:40 GMT"),
            ],
        );
        assert_eq!(a.reset, Some(S(30)));
        // A second apart is the Date's rounding: the client's clock is kept.
        let b = read(
            200,
            &[
                ("X-RateLimit-Remaining", "3"),
                ("X-RateLimit-Reset", "1000000030"),
                ("Date", "Sun, 09 Sep 2001 01:46:41 GMT"),
            ],
        );
        assert_eq!(b.reset, Some(S(30)));
    }

    #[test]
    fn every_dialect_gives_the_count_the_limit_the_policy_and_the_waits() {
        let ietf = read(
            200,
            &[
                ("RateLimit-Policy", "\"default\";q=100;w=60"),
                ("RateLimit", "\"default\";r=42;t=7"),
            ],
        );
        assert_eq!((ietf.remaining, ietf.limit), (Some(42), Some(100)));
        assert_eq!(ietf.policy, policy(100, 60));
        assert_eq!(ietf.reset, Some(S(7)));
        let heroku = read(200, &[("ratelimit-remaining", "4499")]);
        assert_eq!((heroku.remaining, heroku.limit), (Some(4499), None));
        let github = read(
            403,
            &[
                ("X-RateLimit-Limit", "5000"),
                ("X-RateLimit-Remaining", "0"),
                ("X-RateLimit-Reset", "1000000030"),
            ],
        );
        assert_eq!(github.status, Status::Limited);
        assert_eq!(github.retry_after, Some(S(30)));
        assert_eq!(github.reset, Some(S(30)));
        let full = read(429, &[("Retry-After", "1"), ("retry-after-ms", "800.5")]);
        assert_eq!(full.retry_after, Some(Duration::from_micros(800_500)));
        assert_eq!(read(404, &[]).status, Status::Error);
    }

    #[test]
    fn a_retry_after_date_is_read_against_the_wall_clock() {
        // 1,000,000,000 s after the epoch is Sun, 09 Sep 2001 01:46:40 GMT.
        let a = read(429, &[("Retry-After", "Sun, 09 Sep 2001 01:47:10 GMT")]);
        assert_eq!(a.retry_after, Some(S(30)));
        let past = read(429, &[("Retry-After", "Thu, 01 Jan 1970 00:00:00 GMT")]);
        assert_eq!(past.retry_after, Some(Duration::ZERO));
        assert_eq!(read(429, &[("Retry-After", "soon")]).retry_after, None);
    }

    #[test]
    fn absurd_numbers_are_capped_or_ignored() {
        let a = read(
            429,
            &[
                ("retry-after-ms", "1e23"),
                ("RateLimit-Remaining", "-3"),
                ("RateLimit-Policy", "q=5;w=99999999999"),
                ("RateLimit", "r=NaN;t=18446744073709551615"),
            ],
        );
        assert_eq!(a.retry_after, Some(MAX_SERVER_WAIT));
        assert_eq!(a.remaining, None);
        assert_eq!(a.policy.map(|p| p.window), Some(MAX_SERVER_WAIT));
        assert_eq!(a.reset, Some(MAX_SERVER_WAIT));
        let far = read(
            429,
            &[
                ("X-RateLimit-Remaining", "0"),
                ("x-ratelimit-reset", "18446744073709551615"),
            ],
        );
        assert_eq!(far.retry_after, Some(MAX_SERVER_WAIT));
    }
}
