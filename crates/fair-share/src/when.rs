//! The times rate-limit fields state, in the forms servers write them: seconds to wait, an
//! epoch in seconds or milliseconds, an HTTP date, or a Go-style duration (`6m0s`, `20ms`, as
//! OpenAI's `x-ratelimit-reset-requests` sends). Each is read into "how long from now".

use std::time::{Duration, SystemTime};

use crate::fields::number;

/// The smallest reading taken as an epoch in seconds: 10⁹ s is September 2001, and no wait a
/// server states comes near 31 years. Real clients (GitHub's, Octokit's) tell the two apart
/// the same way.
const EPOCH_SECONDS_FROM: f64 = 1e9;
/// The smallest reading taken as an epoch in milliseconds (also September 2001).
const EPOCH_MILLIS_FROM: f64 = 1e12;

/// How a reset field's number was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResetForm {
    /// Seconds to wait (the IETF drafts, fastify, Discord's `reset-after`).
    Delta,
    /// An epoch second (GitHub, express-rate-limit's legacy headers, Flask-Limiter).
    EpochSeconds,
    /// An epoch millisecond.
    EpochMillis,
    /// A duration with units (`1m30s`).
    Duration,
    /// An HTTP date.
    Date,
}

/// A reset field's value: its form, and how long from `now` it is (zero once it has passed;
/// `Duration::MAX` past what a `Duration` holds).
pub fn reset(value: &str, now: SystemTime) -> Option<(ResetForm, Duration)> {
    let v = value.trim();
    if let Some(x) = number(v) {
        return Some(if x >= EPOCH_MILLIS_FROM {
            (ResetForm::EpochMillis, until(x / 1e3, now))
        } else if x >= EPOCH_SECONDS_FROM {
            (ResetForm::EpochSeconds, until(x, now))
        } else {
            (ResetForm::Delta, seconds(x))
        });
    }
    if let Some(d) = go_duration(v) {
        return Some((ResetForm::Duration, d));
    }
    let at = http_date(v)?;
    Some((
        ResetForm::Date,
        at.duration_since(now).unwrap_or(Duration::ZERO),
    ))
}

/// `Retry-After`: seconds (whole or not), or an HTTP date (a date in the past means now).
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Some(s) = number(v) {
        return Some(seconds(s));
    }
    let at = http_date(v)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A length of time: a number of seconds (`1`, `0.5`), or a Go-style duration (`1m0s`), as
/// tollbooth's `X-Rate-Limit-Duration` states its limit's window.
pub fn span(value: &str) -> Option<Duration> {
    let v = value.trim();
    number(v).map(seconds).or_else(|| go_duration(v))
}

/// A number of seconds; one past what a `Duration` holds is the longest one.
pub fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

/// From `now` to the epoch second `at` (zero if it has passed).
fn until(at: f64, now: SystemTime) -> Duration {
    match SystemTime::UNIX_EPOCH.checked_add(seconds(at)) {
        Some(t) => t.duration_since(now).unwrap_or(Duration::ZERO),
        None => Duration::MAX,
    }
}

/// A Go-style duration: numbers each followed by a unit (`h`, `m`, `s`, `ms`, `us`, `µs`,
/// `ns`), e.g. `6m0s`, `1.5s`, `20ms`.
fn go_duration(v: &str) -> Option<Duration> {
    let mut total = 0.0f64;
    let mut rest = v;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|i| *i > 0)?;
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    total.is_finite().then(|| seconds(total))
}

/// A date in any form a server writes one: the HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`)
/// and the two obsolete forms HTTP recipients must still accept (RFC 850's
/// `Sunday, 06-Nov-94 08:49:37 GMT` and asctime's `Sun Nov  6 08:49:37 1994`), or RFC 3339
/// (`1994-11-06T08:49:37Z`, with a fraction or an offset; Anthropic's resets).
pub fn http_date(v: &str) -> Option<SystemTime> {
    let v = v.trim();
    imf_date(v)
        .or_else(|| rfc850_date(v))
        .or_else(|| asctime_date(v))
        .or_else(|| rfc3339(v))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`.
fn imf_date(v: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = v.split_ascii_whitespace().collect();
    let [_weekday, day, month, year, clock, "GMT"] = parts[..] else {
        return None;
    };
    civil(
        year.parse().ok()?,
        month_number(month)?,
        day.parse().ok()?,
        clock,
        0.0,
    )
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`: a two-digit year is the one within 50 years of 2000.
fn rfc850_date(v: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = v.split_ascii_whitespace().collect();
    let [_weekday, date, clock, "GMT"] = parts[..] else {
        return None;
    };
    let mut dmy = date.split('-');
    let (day, month, year) = (dmy.next()?, dmy.next()?, dmy.next()?);
    let year: i64 = year.parse().ok()?;
    let year = if year < 50 {
        2000 + year
    } else if year < 100 {
        1900 + year
    } else {
        year
    };
    civil(year, month_number(month)?, day.parse().ok()?, clock, 0.0)
}

/// `Sun Nov  6 08:49:37 1994`.
fn asctime_date(v: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = v.split_ascii_whitespace().collect();
    let [_weekday, month, day, clock, year] = parts[..] else {
        return None;
    };
    civil(
        year.parse().ok()?,
        month_number(month)?,
        day.parse().ok()?,
        clock,
        0.0,
    )
}

/// `1994-11-06T08:49:37Z`, `1994-11-06T08:49:37.25+01:00`.
fn rfc3339(v: &str) -> Option<SystemTime> {
    let (date, rest) = v.split_once(['T', 't', ' '])?;
    let mut ymd = date.split('-');
    let (year, month, day) = (ymd.next()?, ymd.next()?, ymd.next()?);
    if ymd.next().is_some() {
        return None;
    }
    let (clock, offset) = match rest.strip_suffix(['Z', 'z']) {
        Some(c) => (c, 0i64),
        None => {
            let at = rest.rfind(['+', '-'])?;
            let (c, o) = rest.split_at(at);
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let (oh, om) = o[1..].split_once(':')?;
            let (oh, om): (i64, i64) = (oh.parse().ok()?, om.parse().ok()?);
            if !(0..=23).contains(&oh) || !(0..=59).contains(&om) {
                return None;
            }
            (c, sign * (oh * 3600 + om * 60))
        }
    };
    let (whole, fraction) = match clock.split_once('.') {
        Some((w, f)) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => {
            (w, format!("0.{f}").parse::<f64>().ok()?)
        }
        Some(_) => return None,
        None => (clock, 0.0),
    };
    let local = civil(
        year.parse().ok()?,
        month.parse().ok()?,
        day.parse().ok()?,
        whole,
        fraction,
    )?;
    let shift = Duration::from_secs(offset.unsigned_abs());
    if offset >= 0 {
        local.checked_sub(shift)
    } else {
        local.checked_add(shift)
    }
}

fn month_number(m: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    MONTHS.iter().position(|x| *x == m).map(|i| i as i64 + 1)
}

/// The time of a civil date and an `hh:mm:ss` clock (UTC), plus `fraction` of a second.
fn civil(year: i64, month: i64, day: i64, clock: &str, fraction: f64) -> Option<SystemTime> {
    let mut hms = clock.split(':').map(|p| {
        (p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<i64>().ok())
            .flatten()
    });
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some()
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || !(0..=23).contains(&h)
        || !(0..=59).contains(&m)
        || !(0..=60).contains(&s)
        || !(1970..=9999).contains(&year)
    {
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
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs) + seconds(fraction))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(s)
    }

    #[test]
    fn a_reset_is_told_apart_by_its_size() {
        let now = at(1_796_415_223);
        let r = |v| reset(v, now);
        assert_eq!(r("10"), Some((ResetForm::Delta, Duration::from_secs(10))));
        assert_eq!(
            r("1.25"),
            Some((ResetForm::Delta, Duration::from_millis(1250)))
        );
        assert_eq!(
            r("1796415233"),
            Some((ResetForm::EpochSeconds, Duration::from_secs(10)))
        );
        assert_eq!(
            r("1796415233500"),
            Some((ResetForm::EpochMillis, Duration::from_millis(10_500)))
        );
        assert_eq!(
            r("1796415200"),
            Some((ResetForm::EpochSeconds, Duration::ZERO))
        );
        assert_eq!(
            r("6m0s"),
            Some((ResetForm::Duration, Duration::from_secs(360)))
        );
        assert_eq!(
            r("20ms"),
            Some((ResetForm::Duration, Duration::from_millis(20)))
        );
        assert_eq!(
            r("1h2m3.5s"),
            Some((ResetForm::Duration, Duration::from_millis(3_723_500)))
        );
        assert_eq!(r("soon"), None);
        assert_eq!(r("5x"), None);
        assert_eq!(r("-3"), None);
    }

    #[test]
    fn a_retry_after_is_seconds_or_a_date() {
        // 1,000,000,000 s after the epoch is Sun, 09 Sep 2001 01:46:40 GMT.
        let now = at(1_000_000_000);
        let ra = |v| retry_after(v, now);
        assert_eq!(
            ra("Sun, 09 Sep 2001 01:47:10 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(ra("Thu, 01 Jan 1970 00:00:00 GMT"), Some(Duration::ZERO));
        assert_eq!(ra("2"), Some(Duration::from_secs(2)));
        assert_eq!(ra("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(ra("soon"), None);
        assert_eq!(http_date("Sun, 09 Sep 2001 01:46:40 GMT"), Some(now));
    }

    #[test]
    fn every_date_form_a_server_writes() {
        let now = at(1_000_000_000);
        for form in [
            "Sun, 09 Sep 2001 01:46:40 GMT",
            "Sunday, 09-Sep-01 01:46:40 GMT",
            "Sun Sep  9 01:46:40 2001",
            "2001-09-09T01:46:40Z",
            "2001-09-09T03:46:40+02:00",
            "2001-09-08T23:46:40-02:00",
        ] {
            assert_eq!(http_date(form), Some(now), "{form}");
        }
        assert_eq!(
            http_date("2001-09-09T01:46:40.25Z"),
            Some(now + Duration::from_millis(250))
        );
        for bad in [
            "2001-09-09T01:46:40",
            "2001-13-09T01:46:40Z",
            "2001-09-09T1:46:40Z",
            "Sun Sep  9 01:46:40",
            "2001-09-09T01:46:40+25:00",
        ] {
            assert_eq!(http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_date_with_a_negative_or_huge_clock_is_no_date() {
        // A negative hour, minute or second is no time of day; one near i64::MIN overflowed
        // the seconds of the day (a panic in a debug build).
        for v in [
            "Sun, 09 Sep 2001 -1:46:40 GMT",
            "Sun, 09 Sep 2001 01:-1:40 GMT",
            "Sun, 09 Sep 2001 01:46:-1 GMT",
            "Sun, 09 Sep 2001 -9223372036854775808:00:00 GMT",
            "Sun, 09 Sep 2001 00:-9223372036854775808:00 GMT",
        ] {
            assert_eq!(http_date(v), None, "{v}");
        }
        assert!(http_date("Sun, 09 Sep 2001 00:00:60 GMT").is_some());
    }
}
