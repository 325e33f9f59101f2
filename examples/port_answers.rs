//! Writes `ports/answers.json`, the answers every port must read as the library's
//! `Answer::read` reads them: each with its status, its header lines, the wall clock it is read
//! at (Unix nanoseconds) and the library's reading (the class, the remaining count, the limit,
//! the wait `Retry-After` names, the policy and the reset, times in nanoseconds, `null` where the
//! answer says nothing). They are every answer captured from a real limiter
//! (`crates/fair-share/testdata/real-headers/`, each read at its own `Date`), and answers made by
//! hand for every rule of the reading: the forms of the IETF fields, the separate fields' four
//! prefixes (Anthropic's the last), the forms of a reset and of a date (HTTP's, RFC 850's,
//! asctime's, RFC 3339's), Discord's `reset-after`, the wait under other names than
//! `Retry-After`, the limit made of `used` and `remaining`, a bucket's refill (Spring Cloud
//! Gateway's, Atlassian's) and tollbooth's window, Shopify's call limit, Zendesk's bare
//! `X-Rate-Limit`, the binding limit, how a policy joins its
//! count, limits of one quota and count read as one (Kong's, express-rate-limit's), the answer's
//! `Date` as the clock, `Retry-After` (and `retry-after-ms`, `x-ms-retry-after-ms`) on a success
//! and on a refusal, and numbers no server should send. `tests/port_scripts.rs` holds each port's
//! `--answers` mode to the library's reading, and this file to what this program writes now.
//!
//!     cargo run --example port_answers -- ports/answers.json

use std::path::Path;
use std::time::{Duration, SystemTime};

use fair_share::{Answer, Status};
use serde::Serialize;

/// What the library reads in an answer, as the fixture and the ports' `--answers` write it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reading {
    /// `ok`, `limited`, `unavailable` or `error`.
    pub status: &'static str,
    pub remaining: Option<u64>,
    pub limit: Option<u64>,
    /// Nanoseconds.
    pub retry_after: Option<u64>,
    pub policy: Option<PolicyReading>,
    /// Nanoseconds.
    pub reset: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyReading {
    pub limit: u64,
    /// Nanoseconds.
    pub window: u64,
}

/// One answer of the fixture.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub name: String,
    pub status: u16,
    /// The wall clock the answer is read at, in Unix nanoseconds.
    pub wall: u64,
    /// The header lines as sent: names in any case, values untrimmed.
    pub headers: Vec<(String, String)>,
    pub read: Reading,
}

/// The library's reading of an answer at `wall` (Unix nanoseconds).
pub fn reading(status: u16, headers: &[(String, String)], wall: u64) -> Reading {
    let pairs = headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let wall = SystemTime::UNIX_EPOCH + Duration::from_nanos(wall);
    let a = Answer::read(status, pairs, Duration::ZERO, wall);
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).expect("capped at a day");
    Reading {
        status: match a.status {
            Status::Ok => "ok",
            Status::Limited => "limited",
            Status::Unavailable => "unavailable",
            Status::Error => "error",
        },
        remaining: a.remaining,
        limit: a.limit,
        retry_after: a.retry_after.map(nanos),
        policy: a.policy.map(|p| PolicyReading {
            limit: p.limit,
            window: nanos(p.window),
        }),
        reset: a.reset.map(nanos),
    }
}

/// The fixture's text: an object whose `answers` are one case a line.
pub fn fixture() -> String {
    let lines: Vec<String> = cases()
        .iter()
        .map(|c| serde_json::to_string(c).expect("a case serializes"))
        .collect();
    let about = "Answers and what crates/fair-share's Answer::read reads in them (times in \
                 nanoseconds, wall the clock it is read at, in Unix nanoseconds); every port \
                 must read them alike. Written by examples/port_answers.rs; \
                 tests/port_scripts.rs checks both.";
    format!(
        "{{\"about\": {},\n\"answers\": [\n{}\n]}}\n",
        serde_json::to_string(about).expect("a string"),
        lines.join(",\n")
    )
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: port_answers FILE");
        std::process::exit(2);
    };
    std::fs::write(&path, fixture()).expect("the file is writable");
    println!("{path}: {} answers", cases().len());
}

/// Every case: the captured answers, then the hand-made ones.
pub fn cases() -> Vec<Case> {
    let mut out: Vec<Case> = captured()
        .into_iter()
        .chain(made())
        .map(|(name, status, wall, headers)| {
            let read = reading(status, &headers, wall);
            Case {
                name,
                status,
                wall,
                headers,
                read,
            }
        })
        .collect();
    let mut names: Vec<&str> = out.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), out.len(), "every case has a name of its own");
    out.shrink_to_fit();
    out
}

type Input = (String, u16, u64, Vec<(String, String)>);

/// Every answer of `testdata/real-headers/*.txt`: blocks of a status line and `Name: value`
/// lines, apart by blank lines, after `#` comments; each read at its `Date`.
fn captured() -> Vec<Input> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/fair-share/testdata/real-headers");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the captured headers")
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let file = path.file_name().and_then(|n| n.to_str()).expect("a name");
        let text = std::fs::read_to_string(&path).expect("a readable file");
        let mut n = 0;
        for block in text.split("\n\n") {
            let mut lines = block
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty());
            let Some(status) = lines.next().and_then(|l| l.split(' ').nth(1)) else {
                continue;
            };
            let status: u16 = status.parse().expect("a status code");
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let date = headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("date"))
                .and_then(|(_, v)| imf_seconds(v.trim()))
                .expect("every captured answer has a Date");
            n += 1;
            out.push((
                format!("{file} answer {n} ({status})"),
                status,
                date * NS,
                headers,
            ));
        }
    }
    out
}

const NS: u64 = 1_000_000_000;
/// The hand-made answers' wall clock: a quarter second past a whole second, so that an epoch
/// reset reads as whole seconds and three quarters.
const WALL_S: u64 = 1_790_000_000;
const WALL: u64 = WALL_S * NS + 250_000_000;

/// The epoch second `d` seconds after the hand-made answers' clock, as text.
fn epoch(d: i64) -> String {
    (WALL_S as i64 + d).to_string()
}

/// The hand-made answers: each a name, a status, the wall clock and the header lines.
fn made() -> Vec<Input> {
    let mut out: Vec<Input> = Vec::new();
    let mut at = |wall: u64, name: &str, status: u16, headers: &[(&str, &str)]| {
        let headers = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        out.push((name.to_string(), status, wall, headers));
    };
    let in_30 = epoch(30);
    let in_30_ms = format!("{}250", epoch(30));
    let date_now = imf(WALL_S);
    let date_in_30 = imf(WALL_S + 30);
    let date_hour_later = imf(WALL_S + 3600);
    let epoch_hour_later = epoch(3600 + 30);

    // The class of an answer.
    let mut case =
        |name: &str, status: u16, headers: &[(&str, &str)]| at(WALL, name, status, headers);
    case("status: 200 with no field", 200, &[]);
    case("status: 299 is a success", 299, &[]);
    case("status: 199 is an error", 199, &[]);
    case("status: 404 is an error", 404, &[]);
    case("status: 503 names its wait", 503, &[("Retry-After", "120")]);
    case(
        "status: 500 with Retry-After names a wait too",
        500,
        &[("Retry-After", "5")],
    );
    case(
        "status: 403 with x-ratelimit-remaining 0 is a refusal (GitHub's primary limit)",
        403,
        &[
            ("x-ratelimit-limit", "5000"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", &in_30),
            ("x-ratelimit-used", "5000"),
            ("x-ratelimit-resource", "core"),
        ],
    );
    case(
        "status: 403 with Retry-After is a refusal (GitHub's secondary limit)",
        403,
        &[("retry-after", "60"), ("x-ratelimit-remaining", "4999")],
    );
    case(
        "status: 403 with an empty Retry-After is a refusal still",
        403,
        &[("Retry-After", "")],
    );
    case(
        "status: 403 with x-ratelimit-remaining 0.0 is a refusal",
        403,
        &[("X-RateLimit-Remaining", "0.0")],
    );
    case(
        "status: 403 with x-ratelimit-remaining 1 is an error",
        403,
        &[("X-RateLimit-Remaining", "1"), ("X-RateLimit-Limit", "60")],
    );
    case(
        "status: 403 with x-rate-limit-remaining 0 is an error (only x-ratelimit- signs)",
        403,
        &[
            ("x-rate-limit-remaining", "0"),
            ("x-rate-limit-reset", &in_30),
        ],
    );
    case(
        "status: 403 with ratelimit-remaining 0 is an error",
        403,
        &[("RateLimit-Remaining", "0")],
    );
    case("status: 403 with nothing is an error", 403, &[]);

    // A refusal's wait.
    case(
        "wait: a 429 with the separate fields spent and no Retry-After waits for the reset",
        429,
        &[
            ("X-RateLimit-Limit", "60"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", &in_30),
        ],
    );
    case(
        "wait: the same with ratelimit- fields and seconds to the reset",
        429,
        &[("RateLimit-Remaining", "0"), ("RateLimit-Reset", "12")],
    );
    case(
        "wait: the same with a duration reset",
        429,
        &[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "1m30s"),
        ],
    );
    case(
        "wait: Retry-After wins over the spent count's reset",
        429,
        &[
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", &in_30),
            ("Retry-After", "3"),
        ],
    );
    case(
        "wait: a spent IETF item names no wait (not the separate fields)",
        429,
        &[
            ("RateLimit-Policy", "\"default\";q=100;w=60"),
            ("RateLimit", "\"default\";r=0;t=30"),
        ],
    );
    case(
        "wait: a spent separate count on a 503 names no wait",
        503,
        &[
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", &in_30),
        ],
    );
    case(
        "wait: a 429 whose separate count is not spent names no wait",
        429,
        &[
            ("X-RateLimit-Remaining", "1"),
            ("X-RateLimit-Reset", &in_30),
        ],
    );
    case(
        "wait: a spent Kong window names no wait (not the separate fields)",
        429,
        &[
            ("X-RateLimit-Limit-Minute", "10"),
            ("X-RateLimit-Remaining-Minute", "0"),
        ],
    );
    case(
        "wait: a spent separate count that does not bind names no wait",
        429,
        &[
            ("RateLimit-Policy", "\"a\";q=10;w=1"),
            ("RateLimit", "\"a\";r=0;t=1"),
            ("X-RateLimit-Limit", "1000"),
            ("X-RateLimit-Remaining", "500"),
            ("X-RateLimit-Reset", &in_30),
        ],
    );
    case(
        "wait: a spent item and a spent separate count, the later reset binds and is waited",
        429,
        &[
            ("RateLimit-Policy", "\"a\";q=10;w=1"),
            ("RateLimit", "\"a\";r=0;t=1"),
            ("X-RateLimit-Limit", "1000"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", &in_30),
        ],
    );

    // Retry-After and retry-after-ms.
    case(
        "retry-after: decimal seconds",
        429,
        &[("Retry-After", "1.5")],
    );
    case("retry-after: a leading plus", 429, &[("Retry-After", "+5")]);
    case("retry-after: 5. and .5", 429, &[("Retry-After", "5.")]);
    case("retry-after: .5", 429, &[("Retry-After", ".5")]);
    case("retry-after: an exponent", 429, &[("Retry-After", "2.5E1")]);
    case(
        "retry-after: an HTTP date",
        429,
        &[("Retry-After", &date_in_30)],
    );
    case(
        "retry-after: a date in the past is now",
        429,
        &[("Retry-After", "Thu, 01 Jan 1970 00:00:00 GMT")],
    );
    case(
        "retry-after: not a number nor a date",
        429,
        &[("Retry-After", "soon")],
    );
    case("retry-after: negative", 429, &[("Retry-After", "-3")]);
    case("retry-after: NaN", 429, &[("Retry-After", "NaN")]);
    case(
        "retry-after: inf is capped at a day",
        429,
        &[("Retry-After", "inf")],
    );
    case(
        "retry-after: Infinity is capped too",
        429,
        &[("Retry-After", "+Infinity")],
    );
    case(
        "retry-after: a year is capped at a day",
        429,
        &[("Retry-After", "31536000")],
    );
    case("retry-after: 1e400", 429, &[("Retry-After", "1e400")]);
    case(
        "retry-after: a nanosecond's half rounds to even",
        429,
        &[("Retry-After", "0.0009765625")],
    );
    case(
        "retry-after: hex is no number",
        429,
        &[("Retry-After", "0x10")],
    );
    case(
        "retry-after: digits apart by an underscore are no number",
        429,
        &[("Retry-After", "1_0")],
    );
    case(
        "retry-after-ms wins over Retry-After",
        429,
        &[("Retry-After", "1"), ("retry-after-ms", "800.5")],
    );
    case(
        "retry-after-ms that is no number gives way to Retry-After",
        429,
        &[("retry-after-ms", "soon"), ("Retry-After", "2")],
    );
    case(
        "retry-after-ms negative gives way to Retry-After",
        429,
        &[("retry-after-ms", "-3"), ("Retry-After", "2")],
    );
    case(
        "retry-after-ms 1e23 is capped at a day",
        429,
        &[("retry-after-ms", "1e23")],
    );
    case(
        "retry-after-ms of a third of a nanosecond",
        429,
        &[("retry-after-ms", "0.000333")],
    );
    case(
        "retry-after: on a 2xx it is the reset, not a wait (Flask-Limiter)",
        200,
        &[("Retry-After", "7"), ("X-RateLimit-Remaining", "3")],
    );
    case(
        "retry-after: on a 2xx with no count it is the reset still",
        200,
        &[("Retry-After", "7")],
    );
    case(
        "retry-after: on a 2xx it gives way to a stated reset",
        200,
        &[
            ("Retry-After", "7"),
            ("RateLimit-Remaining", "3"),
            ("RateLimit-Reset", "5"),
        ],
    );
    case(
        "retry-after: a date on a 2xx is the reset",
        204,
        &[("Retry-After", &date_in_30)],
    );
    case(
        "retry-after-ms on a 2xx is the reset",
        200,
        &[("retry-after-ms", "1500")],
    );
    case(
        "retry-after: x-ms-retry-after-ms (Azure)",
        429,
        &[("x-ms-retry-after-ms", "1500")],
    );
    case(
        "retry-after: retry-after-ms before x-ms-retry-after-ms",
        429,
        &[("x-ms-retry-after-ms", "1500"), ("retry-after-ms", "250")],
    );
    case(
        "retry-after: x-ms-retry-after-ms before Retry-After",
        429,
        &[("Retry-After", "2"), ("X-MS-Retry-After-Ms", " 1500 ")],
    );
    case(
        "retry-after: a retry-after-ms of no number hides x-ms-retry-after-ms, Retry-After read",
        429,
        &[
            ("retry-after-ms", "soon"),
            ("x-ms-retry-after-ms", "1500"),
            ("Retry-After", "2"),
        ],
    );
    case(
        "retry-after: x-ms-retry-after-ms of no number leaves Retry-After",
        429,
        &[("x-ms-retry-after-ms", "-1"), ("Retry-After", "2")],
    );
    case(
        "retry-after: x-ms-retry-after-ms on a 2xx is the reset",
        200,
        &[("x-ms-retry-after-ms", "1500")],
    );
    case(
        "retry-after: a 403 with x-ms-retry-after-ms is an error that names a wait",
        403,
        &[("x-ms-retry-after-ms", "1500")],
    );
    case(
        "retry-after: on a 503 a wait, with the reset stated apart",
        503,
        &[
            ("Retry-After", "9"),
            ("RateLimit-Remaining", "4"),
            ("RateLimit-Reset", "5"),
        ],
    );

    // The Date as the clock.
    case(
        "date: an hour ahead of the wall clock, the epoch reset is read by it",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &epoch_hour_later),
            ("Date", &date_hour_later),
        ],
    );
    case(
        "date: an hour ahead, a Retry-After date is read by it",
        429,
        &[
            ("Retry-After", &imf(WALL_S + 3600 + 45)),
            ("Date", &date_hour_later),
        ],
    );
    case(
        "date: an hour behind, the epoch reset is read by it",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &epoch(-3600 + 20)),
            ("Date", &imf(WALL_S - 3600)),
        ],
    );
    case(
        "date: a second off is rounding, the wall clock is kept",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &in_30),
            ("Date", &imf(WALL_S + 1)),
        ],
    );
    case(
        "date: the reset in milliseconds by a skewed Date",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &format!("{}500", epoch(600 + 2))),
            ("Date", &imf(WALL_S + 600)),
        ],
    );
    case(
        "date: that is no date leaves the wall clock",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &in_30),
            ("Date", "yesterday"),
        ],
    );
    case(
        "date: a negative hour is no date",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &in_30),
            ("Date", "Sun, 09 Sep 2001 -9223372036854775808:00:00 GMT"),
        ],
    );
    case(
        "date: the first Date is the one read",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &epoch_hour_later),
            ("Date", &date_hour_later),
            ("Date", &date_now),
        ],
    );
    case(
        "date: an hour ahead in RFC 850's form, the epoch reset is read by it",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &epoch_hour_later),
            ("Date", &rfc850(WALL_S + 3600)),
        ],
    );
    case(
        "date: an hour ahead in asctime's form, the epoch reset is read by it",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &epoch_hour_later),
            ("Date", &asctime(WALL_S + 3600)),
        ],
    );
    case(
        "date: an hour ahead in RFC 3339 with a fraction, the epoch reset is read by it",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &epoch_hour_later),
            ("Date", &format!("{}.5Z", rfc3339_local(WALL_S + 3600, 0))),
        ],
    );
    case(
        "date: an hour before 1970 began (RFC 3339 east of it) is the clock",
        429,
        &[
            ("Retry-After", "1970-01-01T00:00:30Z"),
            ("Date", "1970-01-01T00:00:00+01:00"),
        ],
    );
    // The skew's edge: at exactly 2 s the wall clock is kept, a nanosecond more and the Date is
    // the clock.
    for (wall, name) in [
        (
            (WALL_S - 2) * NS,
            "date: exactly 2 s ahead, the wall clock is kept",
        ),
        (
            (WALL_S - 2) * NS - 1,
            "date: 2 s and a nanosecond ahead, the Date is the clock",
        ),
        (
            (WALL_S + 2) * NS,
            "date: exactly 2 s behind, the wall clock is kept",
        ),
        (
            (WALL_S + 2) * NS + 1,
            "date: 2 s and a nanosecond behind, the Date is the clock",
        ),
    ] {
        at(
            wall,
            name,
            200,
            &[
                ("X-RateLimit-Remaining", "3"),
                ("X-RateLimit-Reset", &in_30),
                ("Date", &date_now),
            ],
        );
    }

    // The forms of an HTTP date (in Retry-After).
    let mut case =
        |name: &str, status: u16, headers: &[(&str, &str)]| at(WALL, name, status, headers);
    for (name, date) in [
        ("http date: a one-digit day", "Fri, 9 Jan 2026 01:02:03 GMT"),
        (
            "http date: a one-digit hour is none",
            "Fri, 09 Jan 2026 1:02:03 GMT",
        ),
        (
            "http date: a three-digit second is none",
            "Fri, 09 Jan 2026 01:02:003 GMT",
        ),
        (
            "http date: runs of spaces and tabs",
            "Fri,  09\tJan  2026 01:02:03 GMT",
        ),
        ("http date: any weekday", "Xyz, 09 Jan 2026 01:02:03 GMT"),
        ("http date: a leap second", "Fri, 09 Jan 2026 23:59:60 GMT"),
        (
            "http date: a fourth part of the clock is none",
            "Fri, 09 Jan 2026 01:02:03:99 GMT",
        ),
        (
            "http date: a leading plus on the day and year",
            "Fri, +09 Jan +2026 01:02:03 GMT",
        ),
        (
            "http date: a leading plus on the hour is none",
            "Fri, 09 Jan 2026 +1:02:03 GMT",
        ),
        (
            "http date: 31 February is 3 March",
            "Tue, 31 Feb 2026 00:00:00 GMT",
        ),
        (
            "http date: gmt in lower case is none",
            "Fri, 09 Jan 2026 01:02:03 gmt",
        ),
        ("http date: UTC is none", "Fri, 09 Jan 2026 01:02:03 UTC"),
        (
            "http date: a month in upper case is none",
            "Fri, 09 JAN 2026 01:02:03 GMT",
        ),
        (
            "http date: no minutes is none",
            "Fri, 09 Jan 2026 01:02 GMT",
        ),
        (
            "http date: hour 24 is none",
            "Fri, 09 Jan 2026 24:00:00 GMT",
        ),
        (
            "http date: second 61 is none",
            "Fri, 09 Jan 2026 00:00:61 GMT",
        ),
        ("http date: day 0 is none", "Fri, 00 Jan 2026 00:00:00 GMT"),
        ("http date: 1969 is none", "Wed, 31 Dec 1969 23:59:59 GMT"),
        ("http date: 10000 is none", "Sat, 01 Jan 10000 00:00:00 GMT"),
        ("http date: the year 9999", "Fri, 31 Dec 9999 23:59:59 GMT"),
        ("http date: no weekday is none", "09 Jan 2026 01:02:03 GMT"),
        (
            "http date: a seventh part is none",
            "Fri, 09 Jan 2026 01:02:03 GMT x",
        ),
        (
            "http date: a negative minute is none",
            "Fri, 09 Jan 2026 01:-2:03 GMT",
        ),
    ] {
        case(name, 429, &[("Retry-After", date)]);
    }

    // The obsolete forms HTTP recipients must still accept (RFC 850's, asctime's) and RFC 3339's,
    // in Retry-After: 30 s ahead of the wall clock reads 29.75 s, a malformed one nothing.
    let in_30_local = |offset: i64| rfc3339_local(WALL_S + 30, offset);
    let utc_in_30 = format!("{}Z", in_30_local(0));
    for (name, date) in [
        ("http date: RFC 850's form", rfc850(WALL_S + 30)),
        (
            "http date: RFC 850's form with a four-digit year",
            rfc850(WALL_S + 30).replace("-26 ", "-2026 "),
        ),
        (
            "http date: RFC 850's date of more than three parts, the first three read",
            rfc850(WALL_S + 30).replace("-26 ", "-26-99 "),
        ),
        (
            "http date: RFC 850's form in UTC is none",
            rfc850(WALL_S + 30).replace("GMT", "UTC"),
        ),
        (
            "http date: RFC 850's form with a one-digit hour is none",
            "Monday, 21-Sep-26 2:13:50 GMT".to_string(),
        ),
        (
            "http date: RFC 850's date of two parts is none",
            "Monday, 21-Sep 14:13:50 GMT".to_string(),
        ),
        (
            "http date: RFC 850's year 49 is 2049, capped at a day",
            "Thursday, 01-Jan-49 00:00:00 GMT".to_string(),
        ),
        (
            "http date: RFC 850's year 50 is 1950, none",
            "Sunday, 01-Jan-50 00:00:00 GMT".to_string(),
        ),
        (
            "http date: RFC 850's year 70 is 1970, long past",
            "Thursday, 01-Jan-70 00:00:00 GMT".to_string(),
        ),
        (
            "http date: RFC 850's year 100 is the year 100, none",
            "Monday, 21-Sep-100 14:13:50 GMT".to_string(),
        ),
        ("http date: asctime's form", asctime(WALL_S + 30)),
        (
            "http date: asctime's form with a zero-padded day",
            asctime(WALL_S + 30).replace("Sep 21", "Sep 021"),
        ),
        (
            "http date: asctime's form with GMT after it is none",
            format!("{} GMT", asctime(WALL_S + 30)),
        ),
        (
            "http date: asctime's form without a year is none",
            "Mon Sep 21 14:13:50".to_string(),
        ),
        (
            "http date: asctime's form with a one-digit minute is none",
            "Mon Sep 21 14:3:50 2026".to_string(),
        ),
        ("http date: RFC 3339 in UTC (Anthropic)", utc_in_30.clone()),
        (
            "http date: RFC 3339 with a lower-case t and z",
            utc_in_30.replace('T', "t").replace('Z', "z"),
        ),
        (
            "http date: RFC 3339 with a space for the T",
            utc_in_30.replace('T', " "),
        ),
        (
            "http date: RFC 3339 with a fraction of a second",
            format!("{}.5Z", in_30_local(0)),
        ),
        (
            "http date: RFC 3339 with a fraction of 30 digits",
            format!("{}.123456789012345678901234567890Z", in_30_local(0)),
        ),
        (
            "http date: RFC 3339 with a fraction a hair under a second",
            format!("{}.9999999999Z", in_30_local(0)),
        ),
        (
            "http date: RFC 3339 with a fraction a hair over a nanosecond's half",
            format!("{}.0000000005000001Z", in_30_local(0)),
        ),
        (
            "http date: RFC 3339 two hours east",
            format!("{}+02:00", in_30_local(7200)),
        ),
        (
            "http date: RFC 3339 five and a half hours west",
            format!("{}-05:30", in_30_local(-19_800)),
        ),
        (
            "http date: RFC 3339 with -00:00",
            format!("{}-00:00", in_30_local(0)),
        ),
        (
            "http date: RFC 3339 with a fraction and an offset",
            format!("{}.25+01:00", in_30_local(3600)),
        ),
        (
            "http date: RFC 3339 with an offset of 23:59",
            format!("{}+23:59", in_30_local(86_340)),
        ),
        (
            "http date: RFC 3339 with one-digit month and day, read",
            "2026-9-21T14:13:50Z".to_string(),
        ),
        (
            "http date: RFC 3339 with a leading plus on the year, read",
            format!("+{utc_in_30}"),
        ),
        (
            "http date: RFC 3339 with a leap second",
            "2026-09-21T23:59:60Z".to_string(),
        ),
        (
            "http date: RFC 3339 on 31 February is 3 March, long past",
            "2026-02-31T00:00:00Z".to_string(),
        ),
        ("http date: RFC 3339 without a zone is none", in_30_local(0)),
        (
            "http date: RFC 3339 with Z twice is none",
            format!("{utc_in_30}Z"),
        ),
        (
            "http date: RFC 3339 with GMT is none",
            format!("{} GMT", in_30_local(0)),
        ),
        (
            "http date: RFC 3339 with month 13 is none",
            utc_in_30.replace("-09-", "-13-"),
        ),
        (
            "http date: RFC 3339 with month 0 is none",
            utc_in_30.replace("-09-", "-00-"),
        ),
        (
            "http date: RFC 3339 with a one-digit hour is none",
            "2026-09-21T4:13:50Z".to_string(),
        ),
        (
            "http date: RFC 3339 without seconds is none",
            "2026-09-21T14:13Z".to_string(),
        ),
        (
            "http date: RFC 3339 with an empty fraction is none",
            format!("{}.Z", in_30_local(0)),
        ),
        (
            "http date: RFC 3339 with a fraction of no digits is none",
            format!("{}.5sZ", in_30_local(0)),
        ),
        (
            "http date: RFC 3339 with an offset of 24 hours is none",
            format!("{}+24:00", in_30_local(0)),
        ),
        (
            "http date: RFC 3339 with an offset of 60 minutes is none",
            format!("{}+00:60", in_30_local(0)),
        ),
        (
            "http date: RFC 3339 with an offset without a colon is none",
            format!("{}+0200", in_30_local(7200)),
        ),
        (
            "http date: RFC 3339 with a negative year is none",
            format!("-{utc_in_30}"),
        ),
        (
            "http date: RFC 3339 with a date of four parts is none",
            utc_in_30.replace("2026-", "2026-09-"),
        ),
        (
            "http date: RFC 3339 of the year 1969 is none",
            "1969-12-31T23:59:59Z".to_string(),
        ),
        (
            "http date: RFC 3339 a second after 1970 began, but an hour east, long past",
            "1970-01-01T00:00:01+01:00".to_string(),
        ),
    ] {
        case(name, 429, &[("Retry-After", &date)]);
    }
    // asctime's day padded to two places by a space (the 5th of October).
    let oct_5 = 1_791_158_400;
    at(
        oct_5 * NS + 250_000_000,
        "http date: asctime's form with a one-digit day after two spaces",
        429,
        &[("Retry-After", &asctime(oct_5 + 30))],
    );
    let mut case =
        |name: &str, status: u16, headers: &[(&str, &str)]| at(WALL, name, status, headers);

    // The forms of a reset.
    case(
        "reset: an epoch second",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &in_30),
        ],
    );
    case(
        "reset: an epoch second with decimals (Discord)",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &format!("{}.125", epoch(30))),
        ],
    );
    case(
        "reset: an epoch millisecond",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &in_30_ms),
        ],
    );
    case(
        "reset: an epoch second that has passed is now",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &epoch(-5)),
        ],
    );
    case(
        "reset: 999999999 is seconds to it, capped at a day",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", "999999999"),
        ],
    );
    case(
        "reset: 1000000000 is an epoch second, long past",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", "1000000000"),
        ],
    );
    case(
        "reset: 999999999999 is an epoch second far ahead, capped",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", "999999999999"),
        ],
    );
    case(
        "reset: 1000000000000 is an epoch millisecond, long past",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", "1000000000000"),
        ],
    );
    case(
        "reset: 1e12 written with an exponent is an epoch millisecond",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", "1.79e12"),
        ],
    );
    case(
        "reset: seconds with decimals",
        200,
        &[("RateLimit-Remaining", "3"), ("RateLimit-Reset", "1.25")],
    );
    case(
        "reset: an HTTP date",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &date_in_30),
        ],
    );
    case(
        "reset: an RFC 850 date",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &rfc850(WALL_S + 30)),
        ],
    );
    case(
        "reset: an asctime date",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &asctime(WALL_S + 30)),
        ],
    );
    case(
        "reset: an RFC 3339 date with an offset",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            (
                "X-RateLimit-Reset",
                &format!("{}-03:00", rfc3339_local(WALL_S + 30, -10_800)),
            ),
        ],
    );
    case(
        "reset: an RFC 3339 date that has passed is now",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            (
                "X-RateLimit-Reset",
                &format!("{}Z", rfc3339_local(WALL_S - 5, 0)),
            ),
        ],
    );
    case(
        "reset: NaN says nothing",
        200,
        &[("X-RateLimit-Remaining", "3"), ("X-RateLimit-Reset", "NaN")],
    );
    case(
        "reset: negative says nothing",
        200,
        &[("X-RateLimit-Remaining", "3"), ("X-RateLimit-Reset", "-3")],
    );
    case(
        "reset: inf is capped at a day",
        200,
        &[("X-RateLimit-Remaining", "3"), ("X-RateLimit-Reset", "inf")],
    );
    case(
        "reset: 1e23 is an epoch millisecond far ahead, capped",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", "1e23"),
        ],
    );
    case(
        "reset: 18446744073709551615 is an epoch millisecond far ahead, capped",
        429,
        &[
            ("X-RateLimit-Remaining", "0"),
            ("x-ratelimit-reset", "18446744073709551615"),
        ],
    );
    case(
        "reset: 1e300 is past any clock, capped",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", "1e300"),
        ],
    );
    for (name, d) in [
        ("reset: a duration in minutes and seconds (OpenAI)", "6m0s"),
        (
            "reset: a duration in hours, minutes and seconds",
            "1h2m3.5s",
        ),
        ("reset: a duration in milliseconds", "20ms"),
        ("reset: a duration in microseconds", "250us"),
        (
            "reset: a duration in microseconds with the micro sign",
            "250\u{b5}s",
        ),
        ("reset: a duration with the Greek mu is none", "250\u{3bc}s"),
        ("reset: a duration in nanoseconds", "7ns"),
        ("reset: a duration of a fraction of an hour", "1.5h"),
        ("reset: a duration written .5s", ".5s"),
        ("reset: a duration written 5.s", "5.s"),
        ("reset: a duration of zero", "0s"),
        ("reset: a duration with a unit twice", "1m1m"),
        ("reset: a duration of a third of a microsecond", "0.333us"),
        ("reset: a duration with an unknown unit is none", "5x"),
        ("reset: a duration in days is none", "1d"),
        ("reset: a negative duration is none", "-1s"),
        ("reset: a duration with a space is none", "1 s"),
        ("reset: a duration with two points is none", "1.2.3s"),
        ("reset: a unit alone is none", "s"),
        ("reset: a duration ending in a number is none", "1m30"),
        (
            "reset: a duration past any number is none",
            &format!("{}h", "9".repeat(400)),
        ),
        (
            "reset: a duration past a Duration is capped",
            "9999999999999999999999h",
        ),
    ] {
        case(
            name,
            200,
            &[("x-ratelimit-remaining", "3"), ("x-ratelimit-reset", d)],
        );
    }
    case(
        "reset-after: Discord's seconds to the reset",
        200,
        &[
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset-After", "1.25"),
        ],
    );
    case(
        "reset-after: read before the epoch reset (Discord sends both)",
        200,
        &[
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset", &format!("{}.512", epoch(60))),
            ("X-RateLimit-Reset-After", "64.57"),
            ("X-RateLimit-Bucket", "abcd1234"),
        ],
    );
    case(
        "reset-after: read when the reset says nothing",
        200,
        &[
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset", "soon"),
            ("X-RateLimit-Reset-After", "2.5"),
        ],
    );
    case(
        "reset-after: that is no number leaves the epoch reset",
        200,
        &[
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset", &format!("{}.512", epoch(60))),
            ("X-RateLimit-Reset-After", "soon"),
        ],
    );
    case(
        "reset-after: of a later prefix before the reset of an earlier one",
        200,
        &[
            ("RateLimit-Remaining", "4"),
            ("RateLimit-Reset", "9"),
            ("X-Rate-Limit-Reset-After", "2.5"),
        ],
    );
    case(
        "reset-after: of an earlier prefix that is no number hides a later one's, the reset read",
        200,
        &[
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset", "9"),
            ("X-RateLimit-Reset-After", "later"),
            ("X-Rate-Limit-Reset-After", "2.5"),
        ],
    );
    case(
        "reset-after: that is a duration says nothing",
        200,
        &[
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset-After", "2s"),
        ],
    );
    case(
        "retry under another name: Symfony's X-RateLimit-Retry-After in seconds",
        429,
        &[
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Retry-After", "12"),
            ("X-RateLimit-Limit", "60"),
        ],
    );
    case(
        "retry under another name: an epoch second",
        429,
        &[("X-RateLimit-Retry-After", &epoch(30))],
    );
    case(
        "retry under another name: bucket4j's seconds",
        429,
        &[("X-Rate-Limit-Retry-After-Seconds", "7")],
    );
    case(
        "retry under another name: Traefik's Go duration",
        429,
        &[("X-Retry-In", "285.714286ms")],
    );
    case(
        "retry under another name: Retry-After comes first",
        429,
        &[("Retry-After", "1"), ("X-Retry-In", "285.714286ms")],
    );
    case(
        "retry under another name: read when Retry-After says nothing",
        429,
        &[
            ("Retry-After", "soon"),
            ("X-Rate-Limit-Retry-After-Seconds", "7"),
        ],
    );
    case(
        "retry under another name: one that says nothing leaves the next",
        429,
        &[("X-RateLimit-Retry-After", "soon"), ("X-Retry-In", "2s")],
    );
    case(
        "retry under another name: on a 2xx, the reset",
        200,
        &[("X-RateLimit-Remaining", "3"), ("X-Retry-In", "4s")],
    );
    case(
        "used: with remaining and no limit field, the limit (Reddit)",
        200,
        &[
            ("x-ratelimit-used", "12"),
            ("x-ratelimit-remaining", "588.0"),
            ("x-ratelimit-reset", "312"),
        ],
    );
    case(
        "used: a limit field wins",
        200,
        &[
            ("x-ratelimit-limit", "5000"),
            ("x-ratelimit-used", "1"),
            ("x-ratelimit-remaining", "4998"),
        ],
    );
    case(
        "used: alone says nothing",
        200,
        &[("x-ratelimit-used", "12")],
    );
    case(
        "used: a sum past u64 is no limit",
        200,
        &[
            ("x-ratelimit-used", "18446744073709551615"),
            ("x-ratelimit-remaining", "1"),
        ],
    );
    case(
        "used: that is no number leaves no limit",
        200,
        &[("x-ratelimit-used", "many"), ("x-ratelimit-remaining", "5")],
    );
    case(
        "refill: Spring Cloud Gateway's bucket of 20 at 10 a second",
        200,
        &[
            ("X-RateLimit-Remaining", "19"),
            ("X-RateLimit-Replenish-Rate", "10"),
            ("X-RateLimit-Burst-Capacity", "20"),
            ("X-RateLimit-Requested-Tokens", "1"),
        ],
    );
    case(
        "refill: Spring Cloud Gateway's request costing 60 tokens",
        429,
        &[
            ("X-RateLimit-Remaining", "59"),
            ("X-RateLimit-Replenish-Rate", "1"),
            ("X-RateLimit-Burst-Capacity", "60"),
            ("X-RateLimit-Requested-Tokens", "60"),
        ],
    );
    case(
        "refill: a cost that does not divide the bucket",
        200,
        &[
            ("X-RateLimit-Remaining", "50"),
            ("X-RateLimit-Replenish-Rate", "3"),
            ("X-RateLimit-Burst-Capacity", "100"),
            ("X-RateLimit-Requested-Tokens", "7"),
        ],
    );
    case(
        "refill: a fractional rate beside a limit field",
        200,
        &[
            ("X-RateLimit-Limit", "7"),
            ("X-RateLimit-Remaining", "2"),
            ("X-RateLimit-Replenish-Rate", "0.3"),
        ],
    );
    case(
        "refill: Atlassian's fill rate every interval, retry-after 0 on a 2xx",
        200,
        &[
            ("X-RateLimit-Limit", "15"),
            ("X-RateLimit-Remaining", "14"),
            ("X-RateLimit-Interval-Seconds", "60"),
            ("X-RateLimit-FillRate", "5"),
            ("retry-after", "0"),
        ],
    );
    case(
        "refill: Atlassian's refusal",
        429,
        &[
            ("X-RateLimit-Limit", "15"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Interval-Seconds", "60"),
            ("X-RateLimit-FillRate", "5"),
            ("retry-after", "12"),
        ],
    );
    case(
        "refill: a fill rate without its interval is a second's",
        200,
        &[
            ("X-RateLimit-Limit", "4"),
            ("X-RateLimit-Remaining", "1"),
            ("X-RateLimit-FillRate", "2"),
        ],
    );
    case(
        "refill: of nothing states no window",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Burst-Capacity", "5"),
            ("X-RateLimit-Replenish-Rate", "0"),
        ],
    );
    case(
        "refill: without a bucket states no window",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Replenish-Rate", "2"),
        ],
    );
    case(
        "refill: a cost of zero is one",
        200,
        &[
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Burst-Capacity", "5"),
            ("X-RateLimit-Replenish-Rate", "5"),
            ("X-RateLimit-Requested-Tokens", "0"),
        ],
    );
    case(
        "retry-after: zero on a 2xx is no reset",
        200,
        &[("X-RateLimit-Remaining", "3"), ("Retry-After", "0")],
    );
    case(
        "duration: tollbooth's limit a second, with decimals",
        429,
        &[
            ("X-Rate-Limit-Limit", "10.00"),
            ("X-Rate-Limit-Duration", "1"),
        ],
    );
    case(
        "duration: a Go duration",
        200,
        &[
            ("X-Rate-Limit-Limit", "10"),
            ("X-Rate-Limit-Duration", "1m0s"),
        ],
    );
    case(
        "duration: a refill comes first",
        200,
        &[
            ("X-RateLimit-Limit", "10"),
            ("X-RateLimit-Remaining", "9"),
            ("X-RateLimit-Replenish-Rate", "2"),
            ("X-RateLimit-Duration", "1"),
        ],
    );
    case(
        "duration: that is no length says nothing",
        200,
        &[
            ("X-Rate-Limit-Limit", "10"),
            ("X-Rate-Limit-Duration", "often"),
        ],
    );
    case(
        "call limit: Shopify's 32 of 40",
        200,
        &[("X-Shopify-Shop-Api-Call-Limit", "32/40")],
    );
    case(
        "call limit: more used than the limit leaves nothing",
        429,
        &[
            ("X-Shopify-Shop-Api-Call-Limit", "41/40"),
            ("Retry-After", "1.0"),
        ],
    );
    case(
        "call limit: without a slash says nothing",
        200,
        &[("X-Shopify-Shop-Api-Call-Limit", "40")],
    );
    case(
        "call limit: beside a fuller limit, the nearer to empty binds",
        200,
        &[
            ("X-Shopify-Shop-Api-Call-Limit", " 39 / 40 "),
            ("X-RateLimit-Limit", "100"),
            ("X-RateLimit-Remaining", "50"),
        ],
    );
    case(
        "x-rate-limit: Zendesk's bare limit",
        200,
        &[("X-Rate-Limit", "700"), ("X-Rate-Limit-Remaining", "699")],
    );
    case(
        "reset-after: Discord's refusal",
        429,
        &[
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", &format!("{}.512", epoch(60))),
            ("X-RateLimit-Reset-After", "60.262"),
            ("X-RateLimit-Scope", "user"),
            ("Retry-After", "60"),
        ],
    );

    // The separate fields: prefixes, suffixes, names, repeats.
    case(
        "separate: ratelimit- before x-ratelimit-",
        200,
        &[
            ("X-RateLimit-Limit", "50"),
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &in_30),
            ("RateLimit-Limit", "100"),
            ("RateLimit-Remaining", "7"),
            ("RateLimit-Reset", "9"),
        ],
    );
    case(
        "separate: each field from the first prefix that has it",
        200,
        &[
            ("X-RateLimit-Limit", "50"),
            ("RateLimit-Remaining", "7"),
            ("X-Rate-Limit-Reset", &in_30),
        ],
    );
    case(
        "separate: x-ratelimit- before x-rate-limit-",
        200,
        &[
            ("x-rate-limit-limit", "900"),
            ("x-rate-limit-remaining", "899"),
            ("x-ratelimit-remaining", "5"),
        ],
    );
    case(
        "separate: x-rate-limit- alone (Twitter)",
        200,
        &[
            ("x-rate-limit-limit", "900"),
            ("x-rate-limit-remaining", "899"),
            ("x-rate-limit-reset", &epoch(900)),
        ],
    );
    case(
        "separate: the -requests suffix (OpenAI)",
        200,
        &[
            ("x-ratelimit-limit-requests", "60"),
            ("x-ratelimit-limit-tokens", "150000"),
            ("x-ratelimit-remaining-requests", "59"),
            ("x-ratelimit-remaining-tokens", "149984"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ],
    );
    case(
        "separate: a plain field before the -requests one of its prefix",
        200,
        &[
            ("x-ratelimit-remaining-requests", "9"),
            ("x-ratelimit-remaining", "5"),
        ],
    );
    case(
        "separate: a -requests field of an earlier prefix before a plain one",
        200,
        &[
            ("x-ratelimit-remaining", "5"),
            ("ratelimit-remaining-requests", "9"),
        ],
    );
    case(
        "separate: names in any case and padded, values padded",
        200,
        &[
            (" X-RATELIMIT-REMAINING ", " 42 "),
            ("x-RateLimit-LIMIT", "\t100\t"),
        ],
    );
    case(
        "separate: the first of a repeated field",
        200,
        &[
            ("X-RateLimit-Remaining", "5"),
            ("x-ratelimit-remaining", "3"),
        ],
    );
    case(
        "separate: the first of a repeated field, even when it is no number",
        200,
        &[
            ("X-RateLimit-Remaining", "many"),
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Limit", "10"),
        ],
    );
    case(
        "separate: a prefix whose field is no number hides a later prefix's",
        200,
        &[
            ("RateLimit-Remaining", "many"),
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Limit", "10"),
        ],
    );
    case(
        "separate: a limit with no count states the quota (Heroku's lone remaining's kin)",
        200,
        &[("X-RateLimit-Limit", "60")],
    );
    case(
        "separate: Heroku's lone remaining count",
        200,
        &[("ratelimit-remaining", "4499")],
    );
    case(
        "separate: a reset with no count says nothing",
        200,
        &[("X-RateLimit-Reset", &in_30)],
    );
    case(
        "separate: Reddit's decimal count and seconds to the reset",
        200,
        &[
            ("x-ratelimit-used", "2"),
            ("x-ratelimit-remaining", "598.0"),
            ("x-ratelimit-reset", "412"),
        ],
    );
    case(
        "separate: GitLab's epoch reset beside its reset time",
        200,
        &[
            ("RateLimit-Limit", "600"),
            ("RateLimit-Observed", "1"),
            ("RateLimit-Remaining", "599"),
            ("RateLimit-Reset", &epoch(60)),
            ("RateLimit-ResetTime", &imf(WALL_S + 60)),
        ],
    );
    case(
        "separate: GitHub's success",
        200,
        &[
            ("x-ratelimit-limit", "5000"),
            ("x-ratelimit-remaining", "4987"),
            ("x-ratelimit-reset", &epoch(2400)),
            ("x-ratelimit-used", "13"),
            ("x-ratelimit-resource", "core"),
        ],
    );
    case(
        "separate: a limit field of a name is no quota",
        200,
        &[
            ("X-RateLimit-Limit", "lots"),
            ("X-RateLimit-Remaining", "4"),
        ],
    );

    // Anthropic's request limit (its token limits are not read).
    case(
        "anthropic: its request limit, the reset an RFC 3339 date",
        200,
        &[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "49"),
            ("anthropic-ratelimit-requests-reset", &utc_in_30),
            ("anthropic-ratelimit-tokens-limit", "40000"),
            ("anthropic-ratelimit-tokens-remaining", "39000"),
            ("anthropic-ratelimit-tokens-reset", &utc_in_30),
            ("anthropic-ratelimit-input-tokens-limit", "40000"),
            ("anthropic-ratelimit-input-tokens-remaining", "39000"),
        ],
    );
    case(
        "anthropic: its refusal, with Retry-After",
        429,
        &[
            ("Anthropic-RateLimit-Requests-Limit", "50"),
            ("Anthropic-RateLimit-Requests-Remaining", "0"),
            (
                "Anthropic-RateLimit-Requests-Reset",
                &format!("{}.400Z", rfc3339_local(WALL_S + 1, 0)),
            ),
            ("Retry-After", "2"),
        ],
    );
    case(
        "anthropic: a refusal without Retry-After waits for the reset",
        429,
        &[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", &utc_in_30),
        ],
    );
    case(
        "anthropic: its fields after x-ratelimit-'s",
        200,
        &[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "49"),
            ("anthropic-ratelimit-requests-reset", &utc_in_30),
            ("x-ratelimit-remaining", "7"),
        ],
    );
    case(
        "anthropic: token fields alone say nothing",
        200,
        &[
            ("anthropic-ratelimit-tokens-limit", "40000"),
            ("anthropic-ratelimit-tokens-remaining", "39000"),
            ("anthropic-ratelimit-tokens-reset", &utc_in_30),
        ],
    );
    case(
        "anthropic: the reset in the HTTP date form",
        200,
        &[
            ("anthropic-ratelimit-requests-remaining", "49"),
            ("anthropic-ratelimit-requests-reset", &imf(WALL_S + 30)),
        ],
    );

    // The IETF fields.
    case(
        "ietf: draft-8, several policies, the one nearest to empty binds",
        200,
        &[
            (
                "RateLimit-Policy",
                "\"burst\";q=10;w=1, \"day\";q=1000;w=86400",
            ),
            ("RateLimit", "\"burst\";r=8;t=1, \"day\";r=50;t=3600"),
        ],
    );
    case(
        "ietf: draft-8, the spent burst binds",
        429,
        &[
            (
                "RateLimit-Policy",
                "\"burst\";q=10;w=1, \"day\";q=1000;w=86400",
            ),
            ("RateLimit", "\"burst\";r=0;t=1, \"day\";r=50;t=3600"),
        ],
    );
    case(
        "ietf: draft-8, items in another order than their policies",
        200,
        &[
            (
                "RateLimit-Policy",
                "\"hour\";q=1000;w=3600, \"minute\";q=100;w=60",
            ),
            ("RateLimit", "\"minute\";r=10;t=30, \"hour\";r=900;t=1800"),
        ],
    );
    case(
        "ietf: draft-8, an item of no policy's name takes the only policy",
        200,
        &[
            ("RateLimit-Policy", "\"b\";q=10;w=60"),
            ("RateLimit", "\"a\";r=5;t=3"),
        ],
    );
    case(
        "ietf: draft-8, an item of no policy's name among several has no quota",
        200,
        &[
            ("RateLimit-Policy", "\"b\";q=10;w=60, \"c\";q=20;w=60"),
            ("RateLimit", "\"a\";r=5;t=3"),
        ],
    );
    case(
        "ietf: draft-8, a bare name",
        200,
        &[
            ("RateLimit-Policy", "default;q=100;w=60"),
            ("RateLimit", "default;r=42;t=7"),
        ],
    );
    case(
        "ietf: draft-8, an item that names only its policy",
        200,
        &[
            ("RateLimit-Policy", "\"x\";q=5;w=1, \"y\";q=50;w=10"),
            ("RateLimit", "\"x\""),
        ],
    );
    case(
        "ietf: draft-8, quoted names with commas, semicolons and an escaped quote",
        200,
        &[
            (
                "RateLimit-Policy",
                "\"a,b;c\";q=5;w=10, \"d\\\"e\";q=50;w=100",
            ),
            ("RateLimit", "\"a,b;c\";r=4;t=8, \"d\\\"e\";r=2;t=80"),
        ],
    );
    case(
        "ietf: draft-8, a policy's key and other parameters (pk, spaces)",
        200,
        &[
            (
                "RateLimit-Policy",
                "\"5-in-10sec\"; q=5; w=10; pk=:MTJjYTE3YjQ5YWYy:; qu=\"requests\"",
            ),
            (
                "RateLimit",
                "\"5-in-10sec\"; r=4; t=10; pk=:MTJjYTE3YjQ5YWYy:",
            ),
        ],
    );
    case(
        "ietf: draft-8, keys in upper case",
        200,
        &[
            ("RateLimit-Policy", "\"d\";Q=100;W=60"),
            ("RateLimit", "\"d\";R=5;T=10"),
        ],
    );
    case(
        "ietf: an older draft's l= for the quota",
        200,
        &[
            ("RateLimit-Policy", "\"d\";l=100;w=60"),
            ("RateLimit", "\"d\";r=5;t=10"),
        ],
    );
    case(
        "ietf: quoted values",
        200,
        &[
            ("RateLimit-Policy", "\"d\";q=\"100\";w=\"60\""),
            ("RateLimit", "\"d\";r=\"5\";t=\"10\""),
        ],
    );
    case(
        "ietf: a decimal count is cut to its whole part",
        200,
        &[
            ("RateLimit-Policy", "\"d\";q=100;w=60"),
            ("RateLimit", "\"d\";r=42.9;t=7"),
        ],
    );
    case(
        "ietf: a window of a fraction of a second",
        200,
        &[
            ("RateLimit-Policy", "\"d\";q=10;w=0.5"),
            ("RateLimit", "\"d\";r=5;t=0.25"),
        ],
    );
    case(
        "ietf: a window of zero is no policy",
        200,
        &[
            ("RateLimit-Policy", "\"d\";q=10;w=0"),
            ("RateLimit", "\"d\";r=5;t=1"),
        ],
    );
    case(
        "ietf: a window too small for a nanosecond is no policy",
        200,
        &[
            ("RateLimit-Policy", "\"d\";q=10;w=1e-10"),
            ("RateLimit", "\"d\";r=5;t=1"),
        ],
    );
    case(
        "ietf: a policy with no window states no policy",
        200,
        &[
            ("RateLimit-Policy", "\"d\";q=10"),
            ("RateLimit", "\"d\";r=5;t=1"),
        ],
    );
    case(
        "ietf: a policy with no quota is none",
        200,
        &[
            ("RateLimit-Policy", "\"d\";w=60"),
            ("RateLimit", "\"d\";r=5;t=1"),
        ],
    );
    case(
        "ietf: draft-7's dictionary with a policy list, joined by quota",
        200,
        &[
            ("RateLimit-Policy", "10;w=1, 100;w=60"),
            ("RateLimit", "limit=100, remaining=30, reset=20"),
        ],
    );
    case(
        "ietf: draft-7's dictionary whose quota no policy states",
        200,
        &[
            ("RateLimit-Policy", "10;w=1, 100;w=60"),
            ("RateLimit", "limit=50, remaining=30, reset=20"),
        ],
    );
    case(
        "ietf: draft-7's dictionary with a window of its own",
        200,
        &[("RateLimit", "limit=100, remaining=50, reset=30, w=60")],
    );
    case(
        "ietf: a dictionary's first key of a list is read (r before remaining)",
        200,
        &[("RateLimit", "remaining=9, r=3, limit=10")],
    );
    case(
        "ietf: a dictionary's first key that is no number says nothing",
        200,
        &[("RateLimit", "r=many, remaining=3, limit=10")],
    );
    case(
        "ietf: a head with = inside quotes makes a dictionary",
        200,
        &[("RateLimit", "\"a=b\";r=1;t=2")],
    );
    case(
        "ietf: draft-6's separate fields with a policy list, joined by quota",
        200,
        &[
            ("RateLimit-Limit", "100"),
            ("RateLimit-Remaining", "30"),
            ("RateLimit-Reset", "20"),
            ("RateLimit-Policy", "10;w=1, 100;w=60"),
        ],
    );
    case(
        "ietf: draft-6's quota no policy of several states has no window",
        200,
        &[
            ("RateLimit-Limit", "50"),
            ("RateLimit-Remaining", "30"),
            ("RateLimit-Policy", "10;w=1, 100;w=60"),
        ],
    );
    case(
        "ietf: draft-6, the only policy is not a count's of another quota",
        200,
        &[
            ("RateLimit-Limit", "50"),
            ("RateLimit-Remaining", "30"),
            ("RateLimit-Policy", "100;w=60"),
        ],
    );
    case(
        "ietf: draft-6, the only policy gives a lone count its quota",
        200,
        &[
            ("RateLimit-Remaining", "30"),
            ("RateLimit-Policy", "100;w=60"),
        ],
    );
    case(
        "ietf: draft-7's dictionary, the only policy is not a count's of another quota",
        200,
        &[
            ("RateLimit-Policy", "100;w=60"),
            ("RateLimit", "limit=50, remaining=30, reset=20"),
        ],
    );
    case(
        "ietf: draft-8, the only policy of another name and quota is not the item's",
        200,
        &[
            ("RateLimit-Policy", "\"b\";q=100;w=60"),
            ("RateLimit", "\"a\";r=5;t=3;q=50"),
        ],
    );
    case(
        "ietf: draft-8, the only policy of the same name joins an item of another quota",
        200,
        &[
            ("RateLimit-Policy", "\"a\";q=100;w=60"),
            ("RateLimit", "\"a\";r=5;t=3;q=50"),
        ],
    );
    case(
        "ietf: Envoy's limit field with a policy of another quota",
        200,
        &[
            ("RateLimit-Limit", "10, 100;w=60"),
            ("RateLimit-Remaining", "7"),
            ("RateLimit-Reset", "1"),
        ],
    );
    case(
        "ietf: Envoy's limit with its policy, 10, 10;w=1",
        200,
        &[
            ("RateLimit-Limit", "10, 10;w=1"),
            ("RateLimit-Remaining", "7"),
            ("RateLimit-Reset", "1"),
        ],
    );
    case(
        "ietf: Envoy's limit with two policies",
        200,
        &[
            ("RateLimit-Limit", "10, 10;w=1, 100;w=60"),
            ("RateLimit-Remaining", "7"),
            ("RateLimit-Reset", "1"),
        ],
    );
    case(
        "ietf: Envoy's x-ratelimit-limit with its policy",
        429,
        &[
            ("x-ratelimit-limit", "10, 10;w=1"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1"),
        ],
    );
    case(
        "ietf: a limit field's policies before its count",
        200,
        &[
            ("RateLimit-Limit", "100;w=60, 100"),
            ("RateLimit-Remaining", "7"),
        ],
    );
    case(
        "ietf: a limit field's policies join those of RateLimit-Policy",
        200,
        &[
            ("RateLimit-Limit", "10, 10;w=1"),
            ("RateLimit-Policy", "\"hour\";q=500;w=3600"),
            ("RateLimit-Remaining", "7"),
        ],
    );
    case(
        "ietf: a policy alone states the quota",
        200,
        &[("RateLimit-Policy", "100;w=60")],
    );
    case(
        "ietf: several policies alone, the first states the quota",
        200,
        &[("RateLimit-Policy", "10;w=1, 100;w=60")],
    );
    case(
        "ietf: empty members are skipped",
        200,
        &[
            ("RateLimit-Policy", " , 100;w=60 ,, "),
            ("RateLimit", ", \"x\";r=5 ,"),
        ],
    );
    case(
        "ietf: a policy quota of 1e23 is the largest count",
        200,
        &[
            ("RateLimit-Policy", "\"d\";q=1e23;w=60"),
            ("RateLimit", "\"d\";r=5;t=1"),
        ],
    );
    case(
        "ietf: a numeric head of 1e23 is the largest count",
        200,
        &[
            ("RateLimit-Policy", "1e23;w=60"),
            ("RateLimit-Remaining", "5"),
        ],
    );
    case(
        "ietf: a numeric head of a fraction is cut",
        200,
        &[
            ("RateLimit-Policy", "10.9;w=60"),
            ("RateLimit-Remaining", "5"),
        ],
    );
    case(
        "ietf: a reset in the item as a duration",
        200,
        &[("RateLimit", "\"d\";r=5;t=90s")],
    );
    case(
        "ietf: an item with no count and no quota",
        200,
        &[("RateLimit", "\"d\";t=9")],
    );

    // The binding limit.
    case(
        "binding: the smallest share of its quota, not the smallest count",
        200,
        &[
            ("RateLimit-Policy", "\"a\";q=10;w=1, \"b\";q=1000;w=3600"),
            ("RateLimit", "\"a\";r=5;t=1, \"b\";r=100;t=600"),
        ],
    );
    case(
        "binding: a count without a quota, the smallest count",
        200,
        &[
            ("RateLimit-Policy", "\"a\";q=10;w=1, \"b\";q=1000;w=3600"),
            ("RateLimit", "\"a\";r=5;t=1, \"c\";r=100;t=600"),
        ],
    );
    case(
        "binding: a quota of zero, the smallest count",
        200,
        &[
            ("RateLimit-Policy", "\"a\";q=0;w=1, \"b\";q=1000;w=3600"),
            ("RateLimit", "\"a\";r=7;t=1, \"b\";r=6;t=600"),
        ],
    );
    case(
        "binding: equal shares, the later reset",
        200,
        &[
            ("RateLimit-Policy", "\"a\";q=10;w=10, \"b\";q=20;w=60"),
            ("RateLimit", "\"a\";r=5;t=50, \"b\";r=10;t=5"),
        ],
    );
    case(
        "binding: equal shares, a reset before none",
        200,
        &[
            ("RateLimit-Policy", "\"a\";q=10;w=10, \"b\";q=20;w=60"),
            ("RateLimit", "\"a\";r=5, \"b\";r=10;t=5"),
        ],
    );
    case(
        "binding: equal shares and resets, the first",
        200,
        &[
            ("RateLimit-Policy", "\"a\";q=10;w=10, \"b\";q=20;w=60"),
            ("RateLimit", "\"a\";r=5;t=5, \"b\";r=10;t=5"),
        ],
    );
    case(
        "binding: equal shares told apart by the last bit of a float",
        200,
        &[
            (
                "RateLimit-Policy",
                "\"a\";q=3;w=10, \"b\";q=9007199254740993;w=60",
            ),
            ("RateLimit", "\"a\";r=1;t=50, \"b\";r=3002399751580331;t=5"),
        ],
    );
    case(
        "binding: counts of the largest sizes",
        200,
        &[
            (
                "RateLimit-Policy",
                "\"a\";q=18446744073709551615;w=10, \"b\";q=18446744073709551614;w=60",
            ),
            (
                "RateLimit",
                "\"a\";r=18446744073709551614;t=5, \"b\";r=18446744073709551613;t=6",
            ),
        ],
    );

    // One limit stated twice: limits of one quota and one count are one, the first's values
    // kept and the other's filling in what it left out.
    case(
        "merge: an IETF item beside legacy fields of its quota and count, the IETF reset (express-rate-limit)",
        200,
        &[
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset", &epoch(11)),
            ("RateLimit", "\"5-in-10sec\"; r=4; t=10"),
            ("RateLimit-Policy", "\"5-in-10sec\"; q=5; w=10"),
        ],
    );
    case(
        "merge: draft-7's dictionary beside legacy fields, the IETF reset",
        200,
        &[
            ("RateLimit", "limit=5, remaining=4, reset=10"),
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset", &epoch(11)),
        ],
    );
    case(
        "merge: the legacy fields' reset fills in the one the item left out",
        200,
        &[
            ("RateLimit", "limit=5, remaining=4"),
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset", &epoch(11)),
        ],
    );
    case(
        "merge: a refusal without Retry-After waits for the IETF reset of a limit the separate fields state too",
        429,
        &[
            ("RateLimit-Policy", "\"d\";q=5;w=10"),
            ("RateLimit", "\"d\";r=0;t=10"),
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", &epoch(11)),
        ],
    );
    case(
        "merge: the same quota with other counts stays apart, the smaller binds",
        200,
        &[
            ("RateLimit", "limit=5, remaining=4, reset=10"),
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Remaining", "3"),
            ("X-RateLimit-Reset", &epoch(11)),
        ],
    );
    case(
        "merge: the same count of other quotas stays apart",
        200,
        &[
            ("RateLimit", "limit=10, remaining=4, reset=10"),
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset", &epoch(11)),
        ],
    );
    case(
        "merge: counts with no quota stay apart, the later reset binds",
        200,
        &[
            ("RateLimit", "remaining=4, reset=10"),
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Reset", &epoch(11)),
        ],
    );
    case(
        "merge: a quota with no count stays apart",
        200,
        &[
            ("RateLimit", "limit=5, reset=10"),
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Reset", &epoch(11)),
        ],
    );
    case(
        "merge: two draft-8 items of one quota and count, the longer window's name, window and reset",
        200,
        &[
            ("RateLimit-Policy", "\"a\";q=10;w=60, \"b\";q=10;w=3600"),
            ("RateLimit", "\"a\";r=4, \"b\";r=4;t=100"),
        ],
    );
    case(
        "merge: three limits of one quota and count are one",
        200,
        &[
            ("RateLimit", "limit=5, remaining=4"),
            ("X-RateLimit-Limit", "5"),
            ("X-RateLimit-Remaining", "4"),
            ("X-RateLimit-Limit-Minute", "5"),
            ("X-RateLimit-Remaining-Minute", "4"),
            ("X-RateLimit-Reset", "7"),
        ],
    );

    // Kong's per-window fields.
    case(
        "kong: the minute binds over the second",
        200,
        &[
            ("X-RateLimit-Limit-Second", "5"),
            ("X-RateLimit-Remaining-Second", "4"),
            ("X-RateLimit-Limit-Minute", "100"),
            ("X-RateLimit-Remaining-Minute", "10"),
        ],
    );
    case(
        "kong: every window, the hour binds",
        200,
        &[
            ("X-RateLimit-Limit-Second", "10"),
            ("X-RateLimit-Remaining-Second", "9"),
            ("X-RateLimit-Limit-Minute", "100"),
            ("X-RateLimit-Remaining-Minute", "90"),
            ("X-RateLimit-Limit-Hour", "1000"),
            ("X-RateLimit-Remaining-Hour", "10"),
            ("X-RateLimit-Limit-Day", "10000"),
            ("X-RateLimit-Remaining-Day", "9000"),
            ("X-RateLimit-Limit-Month", "100000"),
            ("X-RateLimit-Remaining-Month", "90000"),
            ("X-RateLimit-Limit-Year", "1000000"),
            ("X-RateLimit-Remaining-Year", "900000"),
        ],
    );
    case(
        "kong: the month binds, its 30 days capped at a day",
        200,
        &[
            ("X-RateLimit-Limit-Minute", "100"),
            ("X-RateLimit-Remaining-Minute", "90"),
            ("X-RateLimit-Limit-Month", "100000"),
            ("X-RateLimit-Remaining-Month", "10"),
        ],
    );
    case(
        "kong: the year binds, its 365 days capped at a day",
        429,
        &[
            ("x-ratelimit-limit-year", "1000"),
            ("x-ratelimit-remaining-year", "0"),
        ],
    );
    case(
        "kong: a window with no limit states no policy",
        200,
        &[("X-RateLimit-Remaining-Minute", "10")],
    );
    case(
        "kong: a limit with no count states the quota",
        200,
        &[("X-RateLimit-Limit-Hour", "500")],
    );
    case(
        "kong: under the ratelimit- and x-rate-limit- prefixes",
        200,
        &[
            ("RateLimit-Limit-Hour", "500"),
            ("RateLimit-Remaining-Hour", "400"),
            ("X-Rate-Limit-Limit-Day", "5000"),
            ("X-Rate-Limit-Remaining-Day", "100"),
        ],
    );
    case(
        "kong: the first prefix's field hides a later prefix's",
        200,
        &[
            ("X-RateLimit-Remaining-Minute", "many"),
            ("RateLimit-Remaining-Minute", "90"),
            ("RateLimit-Limit-Minute", "100"),
        ],
    );
    case(
        "kong: the separate fields of the nearest window (Kong 3) join its own, the window kept",
        200,
        &[
            ("RateLimit-Limit", "5"),
            ("RateLimit-Remaining", "4"),
            ("RateLimit-Reset", "1"),
            ("X-RateLimit-Limit-Second", "5"),
            ("X-RateLimit-Remaining-Second", "4"),
            ("X-RateLimit-Limit-Minute", "10"),
            ("X-RateLimit-Remaining-Minute", "9"),
        ],
    );
    case(
        "kong: the separate fields of the minute join the minute's, which binds",
        200,
        &[
            ("RateLimit-Limit", "100"),
            ("RateLimit-Remaining", "10"),
            ("RateLimit-Reset", "30"),
            ("X-RateLimit-Limit-Second", "5"),
            ("X-RateLimit-Remaining-Second", "4"),
            ("X-RateLimit-Limit-Minute", "100"),
            ("X-RateLimit-Remaining-Minute", "10"),
        ],
    );
    case(
        "kong: the minute and the hour of one limit and count, the hour named by RateLimit-*",
        200,
        &[
            ("RateLimit-Limit", "100"),
            ("RateLimit-Remaining", "90"),
            ("RateLimit-Reset", "3540"),
            ("X-RateLimit-Limit-Minute", "100"),
            ("X-RateLimit-Remaining-Minute", "90"),
            ("X-RateLimit-Limit-Hour", "100"),
            ("X-RateLimit-Remaining-Hour", "90"),
        ],
    );
    case(
        "kong: the minute and the hour of one limit and count, the hour binds",
        200,
        &[
            ("X-RateLimit-Limit-Minute", "100"),
            ("X-RateLimit-Remaining-Minute", "90"),
            ("X-RateLimit-Limit-Hour", "100"),
            ("X-RateLimit-Remaining-Hour", "90"),
        ],
    );
    case(
        "kong: the hour's RateLimit-* beside the second, minute and hour of one limit and count",
        429,
        &[
            ("X-RateLimit-Limit-Second", "100"),
            ("X-RateLimit-Remaining-Second", "0"),
            ("X-RateLimit-Limit-Minute", "100"),
            ("X-RateLimit-Remaining-Minute", "0"),
            ("X-RateLimit-Limit-Hour", "100"),
            ("X-RateLimit-Remaining-Hour", "0"),
            ("RateLimit-Limit", "100"),
            ("RateLimit-Remaining", "0"),
            ("RateLimit-Reset", "1200"),
        ],
    );
    case(
        "kong: its refusal",
        429,
        &[
            ("RateLimit-Limit", "5"),
            ("RateLimit-Remaining", "0"),
            ("RateLimit-Reset", "1"),
            ("Retry-After", "1"),
            ("X-RateLimit-Limit-Second", "5"),
            ("X-RateLimit-Remaining-Second", "0"),
        ],
    );

    // Numbers no server should send, and text around them.
    case(
        "absurd: retry-after-ms 1e23, a negative count, a window of 3,000 years, r=NaN, t=u64::MAX",
        429,
        &[
            ("retry-after-ms", "1e23"),
            ("RateLimit-Remaining", "-3"),
            ("RateLimit-Policy", "q=5;w=99999999999"),
            ("RateLimit", "r=NaN;t=18446744073709551615"),
        ],
    );
    for (name, r) in [
        ("count: u64::MAX", "18446744073709551615"),
        (
            "count: one past u64::MAX is the largest",
            "18446744073709551616",
        ),
        ("count: 1e23 is the largest", "1e23"),
        ("count: inf is the largest", "inf"),
        ("count: INFINITY is the largest", "INFINITY"),
        ("count: 1e400 is the largest", "1e400"),
        ("count: a decimal is cut", "598.9"),
        ("count: an exponent", "1.5e2"),
        ("count: a leading plus", "+5"),
        ("count: minus zero is zero", "-0"),
        ("count: a tiny fraction is zero", "1e-400"),
        ("count: negative says nothing", "-3"),
        ("count: NaN says nothing", "NaN"),
        ("count: hex says nothing", "0x10"),
        ("count: an underscore says nothing", "1_000"),
        ("count: a comma says nothing", "1,000"),
        ("count: empty says nothing", ""),
        ("count: leading zeros", "000000000000000000000000000042"),
        ("count: inf misspelt says nothing", "infinit"),
        ("count: a lone point says nothing", "."),
        ("count: a lone exponent says nothing", "e5"),
        ("count: an exponent with no digits says nothing", "5e"),
        ("count: Arabic-Indic digits say nothing", "\u{663}"),
        ("count: fullwidth digits say nothing", "\u{ff15}"),
        ("count: a dotless i says nothing", "\u{131}nf"),
        (
            "count: padded in spaces, tabs and Unicode spaces",
            " \t\u{a0}\u{3000}42\u{2003}\u{85} ",
        ),
        ("count: a zero width space is no space", "\u{200b}42"),
        ("count: a byte order mark is no space", "\u{feff}42"),
        ("count: a NUL is no space", "\u{0}42"),
        ("count: an information separator is no space", "\u{1c}42"),
        ("count: a vertical tab is a space", "\u{b}42"),
        ("count: many digits", &format!("{}1", "0".repeat(5000))),
        ("count: many digits past u64", &"9".repeat(5000)),
    ] {
        case(
            name,
            200,
            &[("X-RateLimit-Remaining", r), ("X-RateLimit-Limit", "100")],
        );
    }
    case(
        "count: a padded header name in Unicode spaces",
        200,
        &[("\u{a0}X-RateLimit-Remaining\u{3000}", "5")],
    );
    case(
        "count: 1e99999999999999999999 is the largest",
        200,
        &[("X-RateLimit-Remaining", "1e99999999999999999999")],
    );
    case(
        "count: 1e-99999999999999999999 is zero",
        200,
        &[("X-RateLimit-Remaining", "1e-99999999999999999999")],
    );
    case(
        "count: a float's halfway digits far from the point",
        200,
        &[(
            "X-RateLimit-Remaining",
            &format!("9007199254740993.{}1", "0".repeat(1000)),
        )],
    );
    out
}

/// The civil date and clock of Unix seconds: the weekday (0 is Sunday), day, month (1 to 12),
/// year, hour, minute and second.
fn civil(secs: u64) -> (usize, i64, i64, i64, u64, u64, u64) {
    let days = (secs / 86_400) as i64;
    let (h, m, s) = (secs % 86_400 / 3600, secs % 3600 / 60, secs % 60);
    // The civil date of a day since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // 1970-01-01 was a Thursday.
    let weekday = (days + 4).rem_euclid(7) as usize;
    (weekday, day, month, year, h, m, s)
}

const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`) from Unix seconds.
fn imf(secs: u64) -> String {
    let (wd, day, month, year, h, m, s) = civil(secs);
    format!(
        "{}, {day:02} {} {year} {h:02}:{m:02}:{s:02} GMT",
        &WEEKDAYS[wd][..3],
        MONTHS[(month - 1) as usize]
    )
}

/// RFC 850's date (`Sunday, 06-Nov-94 08:49:37 GMT`) from Unix seconds.
fn rfc850(secs: u64) -> String {
    let (wd, day, month, year, h, m, s) = civil(secs);
    format!(
        "{}, {day:02}-{}-{:02} {h:02}:{m:02}:{s:02} GMT",
        WEEKDAYS[wd],
        MONTHS[(month - 1) as usize],
        year % 100
    )
}

/// asctime's date (`Sun Nov  6 08:49:37 1994`) from Unix seconds.
fn asctime(secs: u64) -> String {
    let (wd, day, month, year, h, m, s) = civil(secs);
    format!(
        "{} {} {day:>2} {h:02}:{m:02}:{s:02} {year}",
        &WEEKDAYS[wd][..3],
        MONTHS[(month - 1) as usize]
    )
}

/// RFC 3339's date (`1994-11-06T08:49:37`, no zone) of the clock `offset` seconds from UTC at the
/// Unix second `secs`.
fn rfc3339_local(secs: u64, offset: i64) -> String {
    let (_, day, month, year, h, m, s) = civil(secs.checked_add_signed(offset).expect("a time"));
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}")
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Unix seconds of an HTTP date in the form `imf` writes.
fn imf_seconds(v: &str) -> Option<u64> {
    let p: Vec<&str> = v.split_ascii_whitespace().collect();
    let [_, day, month, year, clock, "GMT"] = p[..] else {
        return None;
    };
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = clock
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms[..] else { return None };
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + m * 60 + s).ok()
}
