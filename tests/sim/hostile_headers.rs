//! Any header a server may send — every dialect's field names (and a few unknown
//! ones) with numbers of any size, negative, NaN, infinite, dates and garbage — goes through
//! the client's parser (`engine::live::headers::read_response`, which reads every dialect)
//! into every client algorithm of the registry, with its default parameters: no panic, no
//! arithmetic overflow (this crate's tests are built with overflow checks), and no wait
//! longer than the stated cap: [`CAP_FACTOR`] times the longest wait the algorithm asks for
//! on its own (the same answers without what their headers say) plus the longest a server may ask for
//! ([`throttle_sim::time::MAX_SERVER_WAIT`], a day of real time, scaled).

use std::time::{Duration, SystemTime};

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use proptest::prelude::*;
use throttle_sim::engine::live::headers::read_response;
use throttle_sim::exchange::Response;
use throttle_sim::rng::{Stream, stream};
use throttle_sim::throttle::{Acquire, BuildContext, ThrottleConfig};
use throttle_sim::time::{MAX_SERVER_WAIT, Nanos, scaled_nanos};

/// How many times (its own longest wait + the server's longest) an algorithm may wait.
const CAP_FACTOR: u64 = 2;

/// Every field some dialect reads, and two no dialect knows.
const NAMES: &[&str] = &[
    "retry-after",
    "retry-after-ms",
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-remaining",
    "ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-limit",
    "x-ratelimit-used",
    "x-ratelimit-reset",
    "x-rate-limit-whatever",
    "retry-after-seconds",
];

/// Numbers of every size and sign, as text.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        any::<f64>().prop_map(|f| format!("{f:e}")),
        (0u32..400).prop_map(|e| format!("1e{e}")),
        (0u32..400).prop_map(|e| format!("-1e{e}")),
        Just("18446744073709551615".to_string()),
        Just("18446744073709551616".to_string()),
        Just("340282366920938463463374607431768211456".to_string()),
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("-0".to_string()),
        Just("0.0000000001".to_string()),
    ]
}

/// What a header's value may be: a number, a structured field around numbers, a date, or
/// printable garbage.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        number(),
        (number(), number()).prop_map(|(r, t)| format!("\"default\";r={r};t={t}")),
        (number(), number()).prop_map(|(q, w)| format!("\"default\";q={q};w={w}")),
        (number(), number(), number())
            .prop_map(|(l, r, t)| format!("limit={l}, remaining={r}, reset={t}")),
        Just("Wed, 21 Oct 2015 07:28:00 GMT".to_string()),
        Just("Fri, 31 Dec 9999 23:59:59 GMT".to_string()),
        Just("Thu, 01 Jan 1970 00:00:00 GMT".to_string()),
        "[ -~]{0,40}",
    ]
}

fn headers() -> impl Strategy<Value = Vec<(usize, String)>> {
    proptest::collection::vec((0..NAMES.len(), value()), 0..6)
}

fn status() -> impl Strategy<Value = u16> {
    prop_oneof![
        Just(200u16),
        Just(429),
        Just(403),
        Just(503),
        Just(500),
        Just(301),
        100u16..1000
    ]
}

fn answer(status: u16, pairs: &[(usize, String)], scale: f64) -> Response {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        if let Ok(v) = HeaderValue::from_str(value) {
            map.append(HeaderName::from_static(NAMES[*name]), v);
        }
    }
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    read_response(status, &map, 1_000_000, scale, now)
}

/// The waits an algorithm asks for before each answer of `responses` (and the gate's, when
/// it holds a request), fed those answers in turn on two threads.
fn waits(cfg: &ThrottleConfig, responses: &[Response]) -> Vec<Nanos> {
    let mut t = cfg.build(BuildContext::solo(2));
    let mut rng = stream(7, 0, Stream::Throttle);
    let mut now: Nanos = 0;
    let mut out = Vec::new();
    for (i, r) in responses.iter().enumerate() {
        let th = i % 2;
        let mut d = t.delay(now, th, &mut rng);
        now = now.saturating_add(d.min(3_600_000_000_000));
        if let Acquire::Wait(w) = t.acquire(now, th, &mut rng) {
            d = d.max(w);
            now = now.saturating_add(w.min(3_600_000_000_000));
        }
        out.push(d);
        now = now.saturating_add(r.latency);
        t.on_response(now, th, r, &mut rng);
        assert!(
            !t.sleep_value().is_nan(),
            "{}: sleep value NaN after {r:?}",
            cfg.name()
        );
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_header_into_any_algorithm_is_a_bounded_wait(
        answers in proptest::collection::vec((status(), headers()), 1..12),
        scale in prop_oneof![Just(1.0f64), Just(0.001), Just(10_000.0), 0.001f64..10_000.0],
    ) {
        let responses: Vec<Response> =
            answers.iter().map(|(s, h)| answer(*s, h, scale)).collect();
        let server_cap = scaled_nanos(MAX_SERVER_WAIT, scale);
        for r in &responses {
            // The parser itself caps what a server can ask for.
            prop_assert!(r.retry_after.is_none_or(|w| w <= server_cap), "{r:?}");
            prop_assert!(r.reset.is_none_or(|w| w <= server_cap), "{r:?}");
            prop_assert!(r.quota.is_none_or(|q| q.window <= server_cap), "{r:?}");
        }
        // The same answers (as classified: a 403 with `Retry-After` is a refusal) without
        // what their headers said: what the algorithm waits on its own.
        let bare: Vec<Response> = responses
            .iter()
            .map(|r| Response {
                remaining: None,
                limit: None,
                retry_after: None,
                quota: None,
                reset: None,
                ..*r
            })
            .collect();
        for name in ThrottleConfig::NAMES {
            let cfg = ThrottleConfig::defaults(name).expect("defaults build");
            let own = waits(&cfg, &bare);
            let told = waits(&cfg, &responses);
            let mut own_longest = 0;
            for (i, (&o, &d)) in own.iter().zip(&told).enumerate() {
                own_longest = own_longest.max(o);
                let cap = own_longest.saturating_add(server_cap).saturating_mul(CAP_FACTOR);
                prop_assert!(
                    d <= cap,
                    "{name}: a wait of {d} ns (cap {cap}) after {:?}",
                    &responses[..i]
                );
            }
        }
    }
}
