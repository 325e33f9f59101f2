//! What one request came back with, as the law reads it, and how it is read off an HTTP
//! answer's status and headers in every dialect servers speak: the IETF `RateLimit` and
//! `RateLimit-Policy` fields (and the older `RateLimit-Limit`/`-Remaining`), GitHub's
//! `x-ratelimit-*`, Heroku's lone `RateLimit-Remaining`, `Retry-After` (seconds or a date) and
//! `retry-after-ms`.

use std::time::{Duration, SystemTime};

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
        if github_spent(&headers) || field(&headers, "retry-after").is_some() {
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

/// GitHub's primary limit: `x-ratelimit-remaining` counts 0.
fn github_spent(headers: &[(&str, &str)]) -> bool {
    field(headers, "x-ratelimit-remaining").and_then(count) == Some(0)
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
    /// How long the server asks to wait.
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

    /// An HTTP answer read in whatever dialect it speaks. Header names are matched in any case;
    /// a value that is not a number is ignored. `wall` is the wall clock now, for GitHub's
    /// epoch-second reset and a `Retry-After` date.
    pub fn read<'a>(
        code: u16,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        latency: Duration,
        wall: SystemTime,
    ) -> Answer {
        let headers: Vec<(&str, &str)> = headers.into_iter().collect();
        let get = |name: &str| field(&headers, name);
        let number = |names: &[&str]| names.iter().find_map(|n| get(n).and_then(count));
        let ietf = get("ratelimit");
        let policy = get("ratelimit-policy");
        let remaining = number(&["ratelimit-remaining", "x-ratelimit-remaining"])
            .or_else(|| ietf.and_then(|f| param(f, &["r", "remaining"])));
        let limit = number(&["ratelimit-limit", "x-ratelimit-limit"])
            .or_else(|| policy.and_then(|f| param(f, &["q", "l"])))
            .or_else(|| ietf.and_then(|f| param(f, &["limit"])));
        let github_spent = github_spent(&headers);
        let status = Status::read(code, headers.iter().copied());
        let github_reset = number(&["x-ratelimit-reset"]).map(|at| until_epoch(at, wall));
        // GitHub's primary limit names no wait but the epoch second its count resets.
        let wait = retry_after(get("retry-after-ms"), get("retry-after"), wall)
            .or(github_reset.filter(|_| status == Status::Limited && github_spent));
        let policy = policy.and_then(|f| {
            let limit = param(f, &["q", "l"])?;
            let window = param(f, &["w"]).filter(|w| *w > 0)?;
            Some(Policy {
                limit,
                window: Duration::from_secs(window).min(MAX_SERVER_WAIT),
            })
        });
        let reset = ietf
            .and_then(|f| param(f, &["t", "reset"]))
            .map(Duration::from_secs)
            .or(github_reset);
        Answer {
            status,
            remaining,
            limit,
            retry_after: wait.map(|w| w.min(MAX_SERVER_WAIT)),
            policy,
            reset: reset.map(|r| r.min(MAX_SERVER_WAIT)),
            latency,
        }
    }
}

/// A count: a whole number, or a non-negative decimal cut to its whole part (some APIs send
/// "42.0"); anything else says nothing.
fn count(v: &str) -> Option<u64> {
    v.parse::<u64>().ok().or_else(|| {
        v.parse::<f64>()
            .ok()
            .filter(|f| *f >= 0.0)
            .map(|f| f as u64)
    })
}

/// A numeric parameter of an IETF field, in either draft form: `"default";r=50;t=30` or
/// `limit=100, remaining=50, reset=30`. With several policies the first one is taken.
fn param(field: &str, names: &[&str]) -> Option<u64> {
    field
        .split([';', ','])
        .filter_map(|part| part.trim().split_once('='))
        .find(|(k, _)| names.contains(&k.trim()))
        .and_then(|(_, v)| v.trim().trim_matches('"').parse().ok())
}

/// From `wall` to the epoch second `at` (zero if it has passed).
fn until_epoch(at: u64, wall: SystemTime) -> Duration {
    match SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(at)) {
        Some(t) => t.duration_since(wall).unwrap_or(Duration::ZERO),
        None => Duration::MAX,
    }
}

/// `retry-after-ms` (fractional milliseconds), else `Retry-After` in seconds or as an HTTP
/// date (a date in the past means now).
fn retry_after(ms: Option<&str>, seconds: Option<&str>, wall: SystemTime) -> Option<Duration> {
    if let Some(ms) = ms
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|ms| !ms.is_nan() && *ms >= 0.0)
    {
        // `1e23` or `inf` is a wait past any run, not a panic.
        return Some(Duration::try_from_secs_f64(ms / 1e3).unwrap_or(Duration::MAX));
    }
    let v = seconds?;
    if let Ok(s) = v.parse::<u64>() {
        return Some(Duration::from_secs(s));
    }
    let at = http_date(v)?;
    Some(at.duration_since(wall).unwrap_or(Duration::ZERO))
}

/// An HTTP date in the one form servers must send (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(v: &str) -> Option<SystemTime> {
    let mut parts = v.split_ascii_whitespace();
    let (_weekday, day, month, year, clock, zone) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    if zone != "GMT" || parts.next().is_some() {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let mut hms = clock.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 || year < 1970 {
        return None;
    }
    // Days since 1970-01-01 of a civil date (the proleptic Gregorian calendar).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + h * 3600 + m * 60 + s).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(code: u16, pairs: &[(&str, &str)]) -> Answer {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        Answer::read(code, pairs.iter().copied(), Duration::ZERO, wall)
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
        let policy = Some(Policy {
            limit: 100,
            window: Duration::from_secs(60),
        });
        assert_eq!(ietf.policy, policy);
        assert_eq!(ietf.reset, Some(Duration::from_secs(7)));
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
        assert_eq!(github.retry_after, Some(Duration::from_secs(30)));
        assert_eq!(github.reset, Some(Duration::from_secs(30)));
        let full = read(429, &[("Retry-After", "1"), ("retry-after-ms", "800.5")]);
        assert_eq!(full.retry_after, Some(Duration::from_micros(800_500)));
        assert_eq!(read(404, &[]).status, Status::Error);
    }

    #[test]
    fn a_retry_after_date_is_read_against_the_wall_clock() {
        // 1,000,000,000 s after the epoch is Sun, 09 Sep 2001 01:46:40 GMT.
        let a = read(429, &[("Retry-After", "Sun, 09 Sep 2001 01:47:10 GMT")]);
        assert_eq!(a.retry_after, Some(Duration::from_secs(30)));
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
