//! Rate-limit headers: what the server writes and what the client reads.
//!
//! The server writes the dialect its `[server] headers` names (`limiter/headers.rs`;
//! docs/headers.md lists each one's fields). `full` is the Heroku GCRA demo server's
//! `RateLimit-Remaining` / `RateLimit-Limit`, the IETF draft's `RateLimit-Policy` / `RateLimit`
//! structured fields, and on a 429 `Retry-After` (whole seconds, rounded up) plus `retry-after-ms`
//! (as some APIs send it): with a time scale, whole seconds of real time are far too coarse for the
//! client to recover the virtual wait. The other dialects write only what their API sends.
//!
//! The client reads whichever of these a real API sends: `RateLimit-Remaining`,
//! `X-RateLimit-Remaining` (GitHub style) or the IETF `RateLimit` field (`r=` or the older
//! `remaining=`); `retry-after-ms` or `Retry-After` as seconds or an HTTP date; and on a 429
//! without either, GitHub's `x-ratelimit-reset` (epoch seconds, or seconds to go as
//! @fastify/rate-limit writes it) when nothing remains. GitHub's
//! rate-limit 403s count as 429s.

use std::time::{Duration, SystemTime};

use hyper::header::{HeaderMap, HeaderName, HeaderValue};

use crate::exchange::{Quota, Response, Status};
use crate::limiter::{Decision, Headers, flask_limiter_waits, whole_second_quota};
use crate::time::{FOREVER, MAX_SERVER_WAIT, Nanos, duration_nanos, scaled_nanos};

pub const RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
pub const RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
pub const RETRY_AFTER_MS: HeaderName = HeaderName::from_static("retry-after-ms");
const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const X_RATELIMIT_USED: HeaderName = HeaderName::from_static("x-ratelimit-used");
const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// The two headers that depend only on the policy, built once and cloned (a reference count)
/// into every response.
#[derive(Clone, Debug)]
pub struct PolicyHeaders {
    pub limit: u64,
    /// The policy's window in real time.
    pub window: Duration,
    limit_value: HeaderValue,
    policy_value: HeaderValue,
}

impl PolicyHeaders {
    /// `window` is the policy's window in real time: how long one key takes to earn `limit`.
    pub fn new(limit: u64, window: Duration) -> Self {
        // Whole seconds, and the quota the rate earns over them, as the sim states it.
        let ns = duration_nanos(window);
        let Quota {
            limit: quota,
            window: whole,
        } = whole_second_quota(limit, ns);
        let window_s = whole / 1_000_000_000;
        PolicyHeaders {
            limit,
            window,
            limit_value: HeaderValue::from(limit),
            policy_value: text(&format!("\"default\";q={quota};w={window_s}")),
        }
    }
}

/// The times an answer states, in real time.
#[derive(Clone, Copy, Debug)]
pub struct Waits {
    /// On a refusal, how long until a request would be admitted (`Retry-After`).
    pub retry_after: Option<Duration>,
    /// Until the quota resets: the retry wait on a refusal, else until the key's allowance is
    /// whole again (IETF `t`, GitHub's reset).
    pub reset: Duration,
    /// The wall clock at the decision, for GitHub's epoch-second reset (the only field that
    /// reads it: the server leaves it at the epoch for the other dialects).
    pub now: SystemTime,
}

impl Waits {
    /// The waits of decision `d`: `retry_after` its wait in real time, `until_whole` how long
    /// the key takes to earn back what it has used.
    pub fn of(
        d: &Decision,
        retry_after: Option<Duration>,
        until_whole: Duration,
        now: SystemTime,
    ) -> Waits {
        let reset = if d.status == Status::Limited {
            retry_after.unwrap_or(Duration::ZERO)
        } else {
            until_whole
        };
        Waits {
            retry_after,
            reset,
            now,
        }
    }
}

/// Write the headers of `dialect` that describe one decision (one a rule made: it has a
/// limit).
pub fn write_decision(
    h: &mut HeaderMap,
    dialect: Headers,
    d: &Decision,
    policy: &PolicyHeaders,
    waits: Waits,
) {
    let reset_s = waits.reset.as_secs_f64().ceil() as u64;
    match dialect {
        Headers::None => {}
        Headers::Heroku => {
            h.insert(RATELIMIT_REMAINING, number(d.remaining));
        }
        Headers::Ietf => {
            h.insert(RATELIMIT_POLICY, policy.policy_value.clone());
            h.insert(RATELIMIT, ietf_field(d.remaining, reset_s));
            write_retry_after(h, waits.retry_after, false);
        }
        Headers::Full => {
            h.insert(RATELIMIT_LIMIT, policy.limit_value.clone());
            h.insert(RATELIMIT_REMAINING, number(d.remaining));
            h.insert(RATELIMIT_POLICY, policy.policy_value.clone());
            h.insert(RATELIMIT, ietf_field(d.remaining, reset_s));
            write_retry_after(h, waits.retry_after, true);
        }
        Headers::Github => {
            h.insert(X_RATELIMIT_LIMIT, policy.limit_value.clone());
            h.insert(X_RATELIMIT_REMAINING, number(d.remaining));
            h.insert(
                X_RATELIMIT_USED,
                number(d.limit.saturating_sub(d.remaining)),
            );
            // A reset past what the wall clock holds is a century away, not a panic.
            let at = (waits.now.checked_add(waits.reset))
                .or_else(|| waits.now.checked_add(FOREVER))
                .unwrap_or(waits.now)
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default();
            let epoch_s = at.as_secs() + u64::from(at.subsec_nanos() > 0);
            h.insert(X_RATELIMIT_RESET, number(epoch_s));
            if d.status == Status::Limited && !Headers::is_primary_refusal(d) {
                write_retry_after(h, waits.retry_after, false);
            }
        }
        Headers::Fastify => {
            h.insert(X_RATELIMIT_LIMIT, policy.limit_value.clone());
            h.insert(X_RATELIMIT_REMAINING, number(d.remaining));
            h.insert(X_RATELIMIT_RESET, number(reset_s));
            write_retry_after(h, waits.retry_after, false);
        }
        Headers::FlaskLimiter => {
            h.insert(X_RATELIMIT_LIMIT, policy.limit_value.clone());
            h.insert(X_RATELIMIT_REMAINING, number(d.remaining));
            // The epoch second after the reset's instant, and the whole seconds to it rounded
            // down, on every answer (`limiter::flask_limiter_waits`, in nanoseconds of the
            // epoch, as the sim states it).
            let now_ns =
                (waits.now.duration_since(SystemTime::UNIX_EPOCH)).map_or(0, duration_nanos);
            let wait = duration_nanos(waits.reset.min(FOREVER));
            let (reset, retry_after) = flask_limiter_waits(wait, now_ns);
            h.insert(
                X_RATELIMIT_RESET,
                number(now_ns.saturating_add(reset) / 1_000_000_000),
            );
            h.insert(
                hyper::header::RETRY_AFTER,
                number(retry_after / 1_000_000_000),
            );
        }
    }
}

/// `"default";r=N;t=M`, written on the stack and copied once into the value (a `Vec` that
/// turns into `Bytes` with spare room costs a second allocation).
fn ietf_field(remaining: u64, reset_s: u64) -> HeaderValue {
    let mut field = Field::default();
    field.push(b"\"default\";r=");
    field.push(itoa::Buffer::new().format(remaining).as_bytes());
    field.push(b";t=");
    field.push(itoa::Buffer::new().format(reset_s).as_bytes());
    field.value()
}

/// `Retry-After` in whole seconds (rounded up, at least 1), and with `ms` the exact
/// `retry-after-ms`.
fn write_retry_after(h: &mut HeaderMap, retry_after: Option<Duration>, ms: bool) {
    if let Some(r) = retry_after {
        let s = (r.as_secs_f64().ceil() as u64).max(1);
        h.insert(hyper::header::RETRY_AFTER, number(s));
        if ms {
            h.insert(RETRY_AFTER_MS, millis(r));
        }
    }
}

/// A count as a header value. The digits 0–9 (the `RateLimit-Remaining: 0` and
/// `Retry-After: 1` of nearly every refusal) are static values that cost no allocation;
/// `HeaderValue::from(u64)` would cost two.
fn number(n: u64) -> HeaderValue {
    static DIGITS: [HeaderValue; 10] = [
        HeaderValue::from_static("0"),
        HeaderValue::from_static("1"),
        HeaderValue::from_static("2"),
        HeaderValue::from_static("3"),
        HeaderValue::from_static("4"),
        HeaderValue::from_static("5"),
        HeaderValue::from_static("6"),
        HeaderValue::from_static("7"),
        HeaderValue::from_static("8"),
        HeaderValue::from_static("9"),
    ];
    if n < 10 {
        return DIGITS[n as usize].clone();
    }
    let mut field = Field::default();
    field.push(itoa::Buffer::new().format(n).as_bytes());
    field.value()
}

/// A wait in milliseconds with three decimals, the text `format!("{:.3}", ms)` gives for the
/// wait as an `f64`, written from its integer nanoseconds: formatting the float took more time
/// than the rest of a refusal's headers. Exact ties (a whole number of microseconds plus
/// 500 ns) and waits past a day go through the float, whose rounding the text then follows.
fn millis(r: Duration) -> HeaderValue {
    let n = r.as_nanos();
    if n % 1000 == 500 || n >= 86_400 * 1_000_000_000 {
        return text(&format!("{:.3}", r.as_secs_f64() * 1e3));
    }
    let micros = (n + 500) / 1000;
    let mut field = Field::default();
    field.push(itoa::Buffer::new().format(micros / 1000).as_bytes());
    let frac = micros % 1000;
    let digit = |d: u128| b'0' + d as u8;
    field.push(&[
        b'.',
        digit(frac / 100),
        digit(frac / 10 % 10),
        digit(frac % 10),
    ]);
    field.value()
}

/// A header value built on the stack: long enough for any field written here (the IETF
/// field with two 20-digit numbers is 45 bytes).
struct Field {
    buf: [u8; 64],
    len: usize,
}

impl Default for Field {
    fn default() -> Self {
        Field {
            buf: [0; 64],
            len: 0,
        }
    }
}

impl Field {
    fn push(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn value(&self) -> HeaderValue {
        HeaderValue::from_bytes(&self.buf[..self.len])
            .expect("digits and quotes are valid header text")
    }
}

fn text(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).expect("formatted numbers are valid header text")
}

/// The class of an HTTP status as the algorithms see it. Any status that is neither 2xx, 429
/// nor 503 is a failure: a 404 or a 500 is no work done.
pub fn classify(status: u16) -> Status {
    status_of(fair_share::Status::of(status))
}

fn status_of(s: fair_share::Status) -> Status {
    match s {
        fair_share::Status::Ok => Status::Ok,
        fair_share::Status::Limited => Status::Limited,
        fair_share::Status::Unavailable => Status::Unavailable,
        fair_share::Status::Error => Status::Error,
    }
}

/// The header lines an answer carries, as text (a value that is not text says nothing).
fn lines(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)))
}

/// The class of an answer, from its status and headers: as [`classify`], except that a 403
/// carrying a rate-limit sign (`x-ratelimit-remaining: 0`, or a `Retry-After`) is a refusal,
/// as GitHub answers its primary and secondary limits with 403 or 429.
pub fn classify_answer(status: u16, headers: &HeaderMap) -> Status {
    status_of(fair_share::Status::read(status, lines(headers)))
}

/// A response as a throttle sees it, read by the `fair-share` library's reader
/// (`crates/fair-share/src/answer.rs`: every dialect, a wait, reset or policy window capped at
/// [`MAX_SERVER_WAIT`] of real time), so the simulator's live client and a real client built on
/// the library read an answer alike. `latency` is already virtual; `scale` turns the real waits
/// the server asks for into virtual ones, and `now` dates GitHub's epoch-second reset and an
/// HTTP-date `Retry-After`.
pub fn read_response(
    status: u16,
    headers: &HeaderMap,
    latency: Nanos,
    scale: f64,
    now: SystemTime,
) -> Response {
    let read = fair_share::Answer::read(status, lines(headers), Duration::ZERO, now);
    let virtual_span = |real: Duration| scaled_nanos(real.min(MAX_SERVER_WAIT), scale);
    Response {
        status: status_of(read.status),
        remaining: read.remaining,
        limit: read.limit,
        retry_after: read.retry_after.map(virtual_span),
        latency,
        quota: read.policy.map(|p| Quota {
            limit: p.limit,
            window: virtual_span(p.window),
        }),
        reset: read.reset.map(virtual_span),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn read(status: u16, pairs: &[(&'static str, &str)]) -> Response {
        read_response(status, &headers(pairs), 0, 1.0, SystemTime::UNIX_EPOCH)
    }

    #[test]
    fn the_server_writes_every_form_and_reads_its_own_back() {
        let d = Decision {
            status: Status::Limited,
            remaining: 0,
            limit: 4500,
            retry_after: Some(800_000_000),
            reset: 0,
            window: 0,
        };
        let policy = PolicyHeaders::new(4500, Duration::from_secs(3600));
        let mut map = HeaderMap::new();
        let waits = Waits {
            retry_after: Some(Duration::from_millis(800)),
            reset: Duration::from_millis(800),
            now: SystemTime::now(),
        };
        write_decision(&mut map, Headers::Full, &d, &policy, waits);
        assert_eq!(map["ratelimit-policy"], "\"default\";q=4500;w=3600");
        // nginx's burst of 10 at 5 a second refills 11 in 2.2 s: 15 per 3 s, its rate.
        let bucket = PolicyHeaders::new(11, Duration::from_millis(2200));
        assert_eq!(bucket.policy_value, "\"default\";q=15;w=3");
        assert_eq!(bucket.limit_value, "11");
        assert_eq!(map["ratelimit"], "\"default\";r=0;t=1");
        assert_eq!(map["retry-after"], "1");
        assert_eq!(map["retry-after-ms"], "800.000");
        let r = read_response(429, &map, 5, 60.0, SystemTime::now());
        assert_eq!(r.status, Status::Limited);
        assert_eq!((r.remaining, r.limit), (Some(0), Some(4500)));
        // 0.8 s of real time at 60× is 48 s of virtual time.
        assert_eq!(r.retry_after, Some(48_000_000_000));
        assert_eq!(r.latency, 5);
        // The policy and the reset in whole real seconds, scaled the same way.
        assert_eq!(
            r.quota,
            Some(Quota {
                limit: 4500,
                window: 216_000 * 1_000_000_000
            })
        );
        assert_eq!(r.reset, Some(60 * 1_000_000_000));
    }

    /// Every dialect, written by the server and read by the client at time scale 1, gives the
    /// algorithm what the sim gives it for the same decision at the same time.
    #[test]
    fn every_dialect_reads_back_as_the_sim_shows_it() {
        let limited = |remaining, retry_after| Decision {
            status: Status::Limited,
            remaining,
            limit: 60,
            retry_after,
            reset: 40_000_000_000,
            window: 60_000_000_000,
        };
        let decisions = [
            limited(0, Some(800_000_000)),
            limited(0, Some(2_300_000_000)),
            limited(0, None),
            limited(1, Some(1_500_000_000)),
            Decision {
                status: Status::Ok,
                remaining: 41,
                limit: 60,
                retry_after: None,
                reset: 19_000_000_000,
                window: 60_000_000_000,
            },
            // An injected fault carries no rate-limit headers in any dialect.
            Decision {
                status: Status::Unavailable,
                remaining: 0,
                limit: 0,
                retry_after: None,
                reset: 0,
                window: 0,
            },
        ];
        // The virtual clock's 10.5 s fall half a second into a wall-clock second, as they do
        // for the sim's epoch resets: an epoch reset is told from seconds to it by its size
        // (a wall clock near 1970 would make every epoch read as seconds).
        let now_v: Nanos = 10_500_000_000;
        let now = SystemTime::UNIX_EPOCH
            + Duration::from_secs(1_790_000_000)
            + Duration::from_nanos(now_v);
        let policy = PolicyHeaders::new(60, Duration::from_secs(60));
        for dialect in [
            Headers::Full,
            Headers::Ietf,
            Headers::Heroku,
            Headers::Github,
            Headers::Fastify,
            Headers::FlaskLimiter,
            Headers::None,
        ] {
            for d in decisions {
                let mut map = HeaderMap::new();
                let retry_after = d.retry_after.map(Duration::from_nanos);
                let waits = Waits::of(&d, retry_after, Duration::from_nanos(d.reset), now);
                if d.has_headers() {
                    write_decision(&mut map, dialect, &d, &policy, waits);
                }
                let code = match d.status {
                    Status::Ok => 200,
                    Status::Limited => 429,
                    _ => 503,
                };
                let live = read_response(code, &map, 3, 1.0, now);
                let sim = dialect.response(d, now_v, 3);
                assert_eq!(live, sim, "{dialect:?} {d:?}: {map:?}");
            }
        }
    }

    #[test]
    fn each_dialect_writes_its_own_fields() {
        let d = Decision {
            status: Status::Ok,
            remaining: 41,
            limit: 60,
            retry_after: None,
            reset: 0,
            window: 0,
        };
        let policy = PolicyHeaders::new(60, Duration::from_secs(60));
        let waits = Waits {
            retry_after: None,
            reset: Duration::from_millis(18_200),
            now: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_500),
        };
        let names = |dialect| {
            let mut map = HeaderMap::new();
            write_decision(&mut map, dialect, &d, &policy, waits);
            let mut names: Vec<String> = map.keys().map(|k| k.to_string()).collect();
            names.sort();
            (names, map)
        };
        let (n, map) = names(Headers::Ietf);
        assert_eq!(n, ["ratelimit", "ratelimit-policy"]);
        assert_eq!(map["ratelimit"], "\"default\";r=41;t=19");
        assert_eq!(map["ratelimit-policy"], "\"default\";q=60;w=60");
        let (n, map) = names(Headers::Heroku);
        assert_eq!(n, ["ratelimit-remaining"]);
        assert_eq!(map["ratelimit-remaining"], "41");
        let (n, map) = names(Headers::Github);
        assert_eq!(
            n,
            [
                "x-ratelimit-limit",
                "x-ratelimit-remaining",
                "x-ratelimit-reset",
                "x-ratelimit-used"
            ]
        );
        assert_eq!(map["x-ratelimit-used"], "19");
        assert_eq!(map["x-ratelimit-reset"], "1700000019");
        // @fastify/rate-limit's reset is the seconds to go, rounded up.
        let (n, map) = names(Headers::Fastify);
        assert_eq!(
            n,
            [
                "x-ratelimit-limit",
                "x-ratelimit-remaining",
                "x-ratelimit-reset"
            ]
        );
        assert_eq!(map["x-ratelimit-reset"], "19");
        // Flask-Limiter's: the epoch second after the reset's instant, and `retry-after` on
        // every answer, the whole seconds to it.
        let (n, map) = names(Headers::FlaskLimiter);
        assert_eq!(
            n,
            [
                "retry-after",
                "x-ratelimit-limit",
                "x-ratelimit-remaining",
                "x-ratelimit-reset"
            ]
        );
        assert_eq!(map["x-ratelimit-reset"], "1700000019");
        assert_eq!(map["retry-after"], "18");
        assert!(names(Headers::None).0.is_empty());
        assert_eq!(names(Headers::Full).0.len(), 4);
    }

    /// The values written from integers read exactly as the formatting they replace wrote
    /// them: `retry-after-ms` as `{:.3}` of the float, counts as `HeaderValue::from`.
    #[test]
    fn values_are_the_text_the_standard_formatting_gives() {
        const DAY: u64 = 86_400_000_000_000;
        let mut waits = vec![
            0,
            1,
            499,
            500,
            501,
            999,
            1_000,
            1_499,
            1_500,
            70_500,
            999_499,
            999_500,
            999_501,
            999_999,
            1_000_000,
            DAY - 1,
            DAY,
            u64::MAX,
        ];
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..100_000 {
            // xorshift64: spread over short waits and over many days.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            waits.extend([x % 10_000_000, x % (30 * DAY), x % 1_000 * 1_000 + 500]);
        }
        for n in waits {
            let d = Duration::from_nanos(n);
            let float = format!("{:.3}", d.as_secs_f64() * 1e3);
            assert_eq!(millis(d), float.as_str(), "{n} ns");
            assert_eq!(number(n), HeaderValue::from(n), "{n}");
            assert_eq!(number(n % 20), HeaderValue::from(n % 20));
        }
        assert_eq!(
            ietf_field(u64::MAX, u64::MAX),
            format!("\"default\";r={0};t={0}", u64::MAX).as_str()
        );
    }

    #[test]
    fn github_and_ietf_remaining_are_read() {
        let r = read(
            200,
            &[("x-ratelimit-remaining", "59"), ("x-ratelimit-limit", "60")],
        );
        assert_eq!((r.remaining, r.limit), (Some(59), Some(60)));
        let r = read(
            200,
            &[
                ("ratelimit", "\"default\";r=50;t=30"),
                ("ratelimit-policy", "\"default\";q=100;w=60"),
            ],
        );
        assert_eq!((r.remaining, r.limit), (Some(50), Some(100)));
        let r = read(200, &[("ratelimit", "limit=100, remaining=7, reset=30")]);
        assert_eq!((r.remaining, r.limit), (Some(7), Some(100)));
        let r = read(200, &[]);
        assert_eq!((r.remaining, r.limit, r.retry_after), (None, None, None));
    }

    fn wait(h: &HeaderMap, now: SystemTime) -> Option<Duration> {
        read_response(429, h, 0, 1.0, now)
            .retry_after
            .map(Duration::from_nanos)
    }

    #[test]
    fn retry_after_as_seconds_or_an_http_date() {
        let r = read(429, &[("retry-after", "120")]);
        assert_eq!(r.retry_after, Some(120_000_000_000));
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let h = headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:30 GMT")]);
        assert_eq!(wait(&h, now), Some(Duration::from_secs(30)));
        // A date already past means "now", not a negative wait.
        let later = now + Duration::from_secs(3600);
        assert_eq!(wait(&h, later), Some(Duration::ZERO));
        let h = headers(&[("retry-after", "soon")]);
        assert_eq!(wait(&h, now), None);
    }

    /// A server's wait of any size is a wait, never a panic: `retry-after-ms: 1e23` panicked
    /// in `Duration::from_secs_f64` after only an `is_finite` check. Any number is a wait,
    /// saturating; NaN and negatives none.
    #[test]
    fn a_retry_after_ms_past_any_clock_is_the_longest_wait() {
        let day = MAX_SERVER_WAIT.as_nanos() as Nanos;
        for v in ["1e23", "inf", "1e308", "18446744073709551616000"] {
            let r = read(429, &[("retry-after-ms", v)]);
            assert_eq!(r.retry_after, Some(day), "{v}");
        }
        for v in ["NaN", "-1", "-inf", "soon"] {
            assert_eq!(read(429, &[("retry-after-ms", v)]).retry_after, None, "{v}");
        }
        let r = read(
            429,
            &[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "18446744073709551615"),
            ],
        );
        assert_eq!(r.retry_after, Some(day));
        assert_eq!(r.reset, Some(day));
        let r = read(
            200,
            &[
                ("ratelimit", "\"default\";r=1;t=18446744073709551615"),
                (
                    "ratelimit-policy",
                    "\"default\";q=10;w=18446744073709551615",
                ),
            ],
        );
        assert_eq!(r.reset, Some(day));
        assert_eq!(r.quota.map(|q| q.window), Some(day));
    }

    #[test]
    fn statuses_are_classified_as_the_metrics_count_them() {
        assert_eq!(classify(204), Status::Ok);
        assert_eq!(classify(429), Status::Limited);
        assert_eq!(classify(503), Status::Unavailable);
        assert_eq!(classify(500), Status::Error);
        assert_eq!(classify(404), Status::Error);
        // GitHub's rate-limit 403s are refusals; any other 403 is a failure.
        let h = headers(&[("x-ratelimit-remaining", "0")]);
        assert_eq!(classify_answer(403, &h), Status::Limited);
        let h = headers(&[("retry-after", "60"), ("x-ratelimit-remaining", "12")]);
        assert_eq!(classify_answer(403, &h), Status::Limited);
        let h = headers(&[("x-ratelimit-remaining", "12")]);
        assert_eq!(classify_answer(403, &h), Status::Error);
        assert_eq!(classify_answer(403, &HeaderMap::new()), Status::Error);
        assert_eq!(classify_answer(500, &h), Status::Error);
    }
}
