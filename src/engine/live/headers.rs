//! Rate-limit headers: what the server writes and what the client reads.
//!
//! The server speaks seed 002's `RateLimit-Remaining` / `RateLimit-Limit`, the IETF draft's
//! `RateLimit-Policy` / `RateLimit` structured fields, and on a 429 `Retry-After` (whole
//! seconds, rounded up) plus `retry-after-ms` (as some APIs send it): with a time scale, whole
//! seconds of real time are far too coarse for the client to recover the virtual wait.
//!
//! The client reads whichever of these a real API sends: `RateLimit-Remaining`,
//! `X-RateLimit-Remaining` (GitHub style) or the IETF `RateLimit` field (`r=` or the older
//! `remaining=`), and `retry-after-ms` or `Retry-After` as seconds or an HTTP date.

use std::time::{Duration, SystemTime};

use hyper::header::{HeaderMap, HeaderName, HeaderValue};

use crate::exchange::{Response, Status};
use crate::limiter::Decision;
use crate::time::Nanos;

pub const RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
pub const RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
pub const RETRY_AFTER_MS: HeaderName = HeaderName::from_static("retry-after-ms");
const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");

/// The two headers that depend only on the policy, built once and cloned (a reference count)
/// into every response.
#[derive(Clone, Debug)]
pub struct PolicyHeaders {
    pub limit: u64,
    limit_value: HeaderValue,
    policy_value: HeaderValue,
}

impl PolicyHeaders {
    /// `window` is the policy's window in real time: how long one key takes to earn `limit`.
    pub fn new(limit: u64, window: Duration) -> Self {
        let window_s = window.as_secs_f64().ceil().max(1.0) as u64;
        PolicyHeaders {
            limit,
            limit_value: HeaderValue::from(limit),
            policy_value: text(&format!("\"default\";q={limit};w={window_s}")),
        }
    }
}

/// Write the headers that describe one decision; `retry_after` is already in real time.
pub fn write_decision(
    h: &mut HeaderMap,
    d: &Decision,
    policy: &PolicyHeaders,
    retry_after: Option<Duration>,
) {
    h.insert(RATELIMIT_LIMIT, policy.limit_value.clone());
    h.insert(RATELIMIT_REMAINING, HeaderValue::from(d.remaining));
    h.insert(RATELIMIT_POLICY, policy.policy_value.clone());
    let reset_s = retry_after.map_or(0, |r| r.as_secs_f64().ceil() as u64);
    // `"default";r=N;t=M`, written straight into the value's one buffer.
    let mut field = Vec::with_capacity(40);
    field.extend_from_slice(b"\"default\";r=");
    field.extend_from_slice(itoa::Buffer::new().format(d.remaining).as_bytes());
    field.extend_from_slice(b";t=");
    field.extend_from_slice(itoa::Buffer::new().format(reset_s).as_bytes());
    h.insert(
        RATELIMIT,
        HeaderValue::from_maybe_shared(hyper::body::Bytes::from(field))
            .expect("digits and quotes are valid header text"),
    );
    if let Some(r) = retry_after {
        h.insert(
            hyper::header::RETRY_AFTER,
            HeaderValue::from(reset_s.max(1)),
        );
        h.insert(
            RETRY_AFTER_MS,
            text(&format!("{:.3}", r.as_secs_f64() * 1e3)),
        );
    }
}

fn text(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).expect("formatted numbers are valid header text")
}

/// The class of an HTTP status as the algorithms see it. Any status that is neither 2xx, 429
/// nor 503 is a failure: a 404 or a 500 is no work done.
pub fn classify(status: u16) -> Status {
    match status {
        200..=299 => Status::Ok,
        429 => Status::Limited,
        503 => Status::Unavailable,
        _ => Status::Error,
    }
}

/// A response as a throttle sees it. `latency` is already virtual; `scale` turns the real
/// waits the server asks for into virtual ones, and `now` dates an HTTP-date `Retry-After`.
pub fn read_response(
    status: u16,
    headers: &HeaderMap,
    latency: Nanos,
    scale: f64,
    now: SystemTime,
) -> Response {
    let ietf = headers.get(RATELIMIT).and_then(|v| v.to_str().ok());
    let remaining = first_number(headers, &[RATELIMIT_REMAINING, X_RATELIMIT_REMAINING])
        .or_else(|| ietf.and_then(|f| param(f, &["r", "remaining"])));
    let policy = headers.get(RATELIMIT_POLICY).and_then(|v| v.to_str().ok());
    let limit = first_number(headers, &[RATELIMIT_LIMIT, X_RATELIMIT_LIMIT])
        .or_else(|| policy.and_then(|f| param(f, &["q", "l"])))
        .or_else(|| ietf.and_then(|f| param(f, &["limit"])));
    let retry_after = retry_after(headers, now).map(|d| (d.as_nanos() as f64 * scale) as Nanos);
    Response {
        status: classify(status),
        remaining,
        limit,
        retry_after,
        latency,
    }
}

fn first_number(headers: &HeaderMap, names: &[HeaderName]) -> Option<u64> {
    names.iter().find_map(|n| {
        let v = headers.get(n)?.to_str().ok()?.trim();
        // Some APIs send "42.0"; a negative or garbled count says nothing.
        v.parse::<u64>().ok().or_else(|| {
            v.parse::<f64>()
                .ok()
                .filter(|f| *f >= 0.0)
                .map(|f| f as u64)
        })
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

/// `retry-after-ms` (fractional milliseconds), else `Retry-After` in seconds or as an HTTP
/// date (a date in the past means now).
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = headers
        .get(RETRY_AFTER_MS)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1e3));
    }
    let v = headers
        .get(hyper::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(s) = v.parse::<u64>() {
        return Some(Duration::from_secs(s));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
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
        };
        let policy = PolicyHeaders::new(4500, Duration::from_secs(3600));
        let mut map = HeaderMap::new();
        write_decision(&mut map, &d, &policy, Some(Duration::from_millis(800)));
        assert_eq!(map["ratelimit-policy"], "\"default\";q=4500;w=3600");
        assert_eq!(map["ratelimit"], "\"default\";r=0;t=1");
        assert_eq!(map["retry-after"], "1");
        assert_eq!(map["retry-after-ms"], "800.000");
        let r = read_response(429, &map, 5, 60.0, SystemTime::now());
        assert_eq!(r.status, Status::Limited);
        assert_eq!((r.remaining, r.limit), (Some(0), Some(4500)));
        // 0.8 s of real time at 60× is 48 s of virtual time.
        assert_eq!(r.retry_after, Some(48_000_000_000));
        assert_eq!(r.latency, 5);
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

    #[test]
    fn retry_after_as_seconds_or_an_http_date() {
        let r = read(429, &[("retry-after", "120")]);
        assert_eq!(r.retry_after, Some(120_000_000_000));
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let h = headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:30 GMT")]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(30)));
        // A date already past means "now", not a negative wait.
        let later = now + Duration::from_secs(3600);
        assert_eq!(retry_after(&h, later), Some(Duration::ZERO));
        let h = headers(&[("retry-after", "soon")]);
        assert_eq!(retry_after(&h, now), None);
    }

    #[test]
    fn statuses_are_classified_as_the_metrics_count_them() {
        assert_eq!(classify(204), Status::Ok);
        assert_eq!(classify(429), Status::Limited);
        assert_eq!(classify(503), Status::Unavailable);
        assert_eq!(classify(500), Status::Error);
        assert_eq!(classify(404), Status::Error);
    }
}
