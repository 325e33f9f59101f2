//! `leaky-bucket`: nginx's `limit_req` (ngx_http_limit_req_module), the leaky bucket in front
//! of a great many APIs: `limit_req_zone … rate=10r/s;` and `limit_req zone=… burst=20
//! [nodelay | delay=8];`, per key.
//!
//! nginx keeps, per key, an `excess` in thousandths of a request and the millisecond of its
//! last admission. A request at millisecond `now` computes
//!
//! ```text
//! excess = max(excess − rate × (now − last) / 1000 + 1000, 0)
//! ```
//!
//! with `rate` in thousandths of a request per second and integer division, as nginx does
//! (so time is counted in whole milliseconds, and what each update's division drops is lost).
//! It is refused when `excess > burst × 1000`, and then changes nothing (a refusal costs
//! nothing, and `last` stays). Otherwise the excess is stored, `last` moves to `now` (when a
//! millisecond has passed), and the request is served: at once when `excess ≤ delay × 1000`,
//! else after `(excess − delay × 1000) × 1000 / rate` milliseconds. A key nginx has not seen
//! starts at excess 0: its first request stores 0, not 1000, so a fresh key takes `burst + 1`
//! at once.
//!
//! The delay is the part other rules do not have: the request is counted when it arrives,
//! and its answer is held (the engines' [`Held`]), so a client sees a slow 200, not a 429.
//! nginx's three forms are `delay`:
//! - `0` (the default: nginx with neither `nodelay` nor `delay=`): every request beyond the
//!   rate is delayed, so the bucket smooths a burst into the rate;
//! - `N` (nginx ≥ 1.15.7's `delay=N`): the first `N` beyond the rate are served at once and
//!   the rest delayed (an `N` at least `burst` delays nothing);
//! - `"nodelay"`: nothing is delayed; a burst passes at once and the bucket only refuses.
//!
//! nginx answers a refusal with 503 unless `limit_req_status` says otherwise; APIs set 429,
//! which is this rule's default (`status = 503` gives nginx's own). It sends no rate-limit
//! headers and no `Retry-After`, so scenarios of it want `[server] headers = "none"`; what the
//! decision states for the other dialects is a bucket's: `limit` `burst + 1` (what a fresh key
//! takes at once), `remaining` the requests that would still be admitted at this millisecond,
//! on a refusal the wait until the next would be, and a reset when `burst + 1` would be again.
//!
//! Not modelled: nginx drops a key's node once it has drained and been idle for 60 s, and
//! only when a new key needs the memory (a dropped key starts again at excess 0 rather than at
//! up to 1000), `dry_run`, and several `limit_req` on one location (`stacked` holds several
//! rules, but charges them as Flask-Limiter does, not all-or-nothing as nginx does).
//!
//! Parameters and defaults (the rate is the other rules' nominal 4500 per hour; the rest are
//! nginx's own defaults):
//! - `rate`: `"75r/m"`, as nginx writes it (`r/s` or `r/m`).
//! - `burst`: 0.
//! - `delay`: 0, or a number, or `"nodelay"`.
//! - `status`: 429, or 503.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::token_bucket::bucket_capacity_with_outages;
use super::{Decision, Held, Limiter, Rule};
use crate::config::ParamProblem;
use crate::exchange::Status;
use crate::time::{NANOS_PER_SEC, Nanos};

const NANOS_PER_MS: Nanos = 1_000_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LeakyBucketConfig {
    /// nginx's `rate=`. Default `"75r/m"`.
    pub rate: NginxRate,
    /// Requests beyond the rate the bucket holds (nginx's `burst=`). Default 0.
    pub burst: u64,
    /// Which of those are served late. Default 0: all of them.
    pub delay: Delay,
    /// The status of a refusal (nginx's `limit_req_status`). Default 429.
    pub status: u16,
}

impl Default for LeakyBucketConfig {
    fn default() -> Self {
        LeakyBucketConfig {
            rate: NginxRate {
                count: 75,
                per: RatePer::Minute,
            },
            burst: 0,
            delay: Delay::After(0),
            status: 429,
        }
    }
}

/// A rate as nginx's `limit_req_zone` writes it: `10r/s`, `30r/m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NginxRate {
    pub count: u64,
    pub per: RatePer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RatePer {
    Second,
    Minute,
}

impl NginxRate {
    /// In thousandths of a request per second, rounded down, as nginx stores it.
    fn thousandths(self) -> u128 {
        let seconds = match self.per {
            RatePer::Second => 1,
            RatePer::Minute => 60,
        };
        u128::from(self.count) * 1000 / seconds
    }
}

impl fmt::Display for NginxRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.per {
            RatePer::Second => "s",
            RatePer::Minute => "m",
        };
        write!(f, "{}r/{unit}", self.count)
    }
}

impl std::str::FromStr for NginxRate {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not an nginx rate; write e.g. \"10r/s\" or \"30r/m\"");
        let t = s.trim();
        let (count, per) = if let Some(n) = t.strip_suffix("r/s") {
            (n, RatePer::Second)
        } else if let Some(n) = t.strip_suffix("r/m") {
            (n, RatePer::Minute)
        } else {
            return Err(bad());
        };
        let count = count.parse().map_err(|_| bad())?;
        Ok(NginxRate { count, per })
    }
}

impl Serialize for NginxRate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NginxRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(de::Error::custom)
    }
}

/// Which requests beyond the rate are served late.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delay {
    /// The first `N` beyond the rate at once, the rest late; 0 delays all of them.
    After(u64),
    /// None of them (nginx's `nodelay`).
    NoDelay,
}

impl Serialize for Delay {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Delay::After(n) => s.serialize_u64(*n),
            Delay::NoDelay => s.serialize_str("nodelay"),
        }
    }
}

impl<'de> Deserialize<'de> for Delay {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct DelayVisitor;
        impl Visitor<'_> for DelayVisitor {
            type Value = Delay;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"nodelay\" or the number of requests beyond the rate served at once")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Delay, E> {
                Ok(Delay::After(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Delay, E> {
                u64::try_from(n)
                    .map(Delay::After)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Delay, E> {
                match s {
                    "nodelay" => Ok(Delay::NoDelay),
                    _ => Err(E::invalid_value(de::Unexpected::Str(s), &self)),
                }
            }
        }
        d.deserialize_any(DelayVisitor)
    }
}

impl Rule for LeakyBucketConfig {
    const NAME: &'static str = "leaky-bucket";
    const DESCRIPTION: &'static str = "nginx's limit_req: a leaky bucket of `rate` (\"10r/s\", \"30r/m\") with `burst` requests beyond it, counted in milliseconds as nginx does; those beyond the rate are served late (`delay` 0), after the first N (`delay` N) or at once (`delay = \"nodelay\"`)";

    const NOTES: &'static [&'static str] = &[
        "rate as nginx's limit_req_zone writes it: \"10r/s\" or \"30r/m\"",
        "delay = 0 (nginx's default: every request beyond the rate served late), N (delay=N: the first N at once), or \"nodelay\"",
        "status = 429 (limit_req_status 429, what APIs set) or 503 (nginx's own default); nginx sends no rate-limit headers: headers = \"none\"",
    ];

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        if self.rate.count == 0 {
            out.push(("rate", "must be at least 1r/s or 1r/m".to_string()));
        } else if self.rate.count > u64::from(u32::MAX) {
            out.push((
                "rate",
                format!("must be at most {}r/s (got {})", u32::MAX, self.rate),
            ));
        }
        if self.burst > u64::from(u32::MAX) {
            out.push(("burst", format!("must be at most {}", u32::MAX)));
        }
        if !matches!(self.status, 429 | 503) {
            out.push((
                "status",
                format!("must be 429 or 503 (got {})", self.status),
            ));
        }
        out
    }

    fn limiter(&self) -> Box<dyn Limiter> {
        Box::new(LeakyBucket::new(self))
    }
}

/// nginx's node for one key.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Thousandths of a request.
    excess: u128,
    /// The millisecond of the last admission that moved it.
    last: u64,
}

pub struct LeakyBucket {
    /// Thousandths of a request per second.
    rate: u128,
    /// Thousandths of a request.
    burst: u128,
    /// Thousandths of a request served at once; `None` for `nodelay`.
    delay: Option<u128>,
    refused: Status,
    nodes: Vec<Option<Node>>,
}

impl LeakyBucket {
    pub fn new(cfg: &LeakyBucketConfig) -> Self {
        LeakyBucket {
            rate: cfg.rate.thousandths().max(1),
            burst: u128::from(cfg.burst) * 1000,
            delay: match cfg.delay {
                Delay::After(n) => Some(u128::from(n) * 1000),
                Delay::NoDelay => None,
            },
            refused: if cfg.status == 503 {
                Status::Unavailable
            } else {
                Status::Limited
            },
            nodes: Vec::new(),
        }
    }

    /// `limit`: what a fresh key takes at once.
    fn limit(&self) -> u64 {
        u64::try_from(self.burst / 1000 + 1).unwrap_or(u64::MAX)
    }

    /// The first nanosecond of the millisecond `last + ⌈thousandths × 1000 / rate⌉`: when
    /// the drain since `last` first reaches `thousandths`.
    fn drained_by(&self, last: u64, thousandths: u128) -> Nanos {
        let ms = (thousandths * 1000).div_ceil(self.rate);
        let ms = u64::try_from(ms).unwrap_or(u64::MAX);
        last.saturating_add(ms).saturating_mul(NANOS_PER_MS)
    }

    /// The decision on a request at `now`, and how long its answer is held.
    fn decide(&mut self, now: Nanos, key: usize) -> Held {
        if key >= self.nodes.len() {
            self.nodes.resize(key + 1, None);
        }
        let now_ms = now / NANOS_PER_MS;
        let excess = match self.nodes[key] {
            None => 0,
            Some(node) => {
                let drained = self.rate * u128::from(now_ms.saturating_sub(node.last)) / 1000;
                let excess = (node.excess + 1000).saturating_sub(drained);
                if excess > self.burst {
                    return Held::now(self.refusal(now, node));
                }
                excess
            }
        };
        // nginx moves `last` only when a millisecond has passed, which is the same thing.
        let last = now_ms;
        self.nodes[key] = Some(Node { excess, last });
        let hold = match self.delay {
            Some(delay) if excess > delay => {
                let ms = (excess - delay) * 1000 / self.rate;
                u64::try_from(ms)
                    .unwrap_or(u64::MAX)
                    .saturating_mul(NANOS_PER_MS)
            }
            _ => 0,
        };
        // Whole again (`burst + 1` at once, as for a fresh key) once the drain since `last`
        // covers the stored excess and one request more, so that the next request stores 0.
        let whole = self.drained_by(last, excess + 1000);
        let decision = Decision {
            status: Status::Ok,
            remaining: u64::try_from((self.burst - excess) / 1000).unwrap_or(u64::MAX),
            limit: self.limit(),
            retry_after: None,
            reset: whole.saturating_sub(now.saturating_add(hold)),
            window: self.window(),
        };
        Held { decision, hold }
    }

    /// A refusal at `now` of a key whose node is `node`: nothing changes; the wait is until
    /// the drain since the key's last admission lets one more in. (A fresh key is never
    /// refused: its first request stores 0.)
    fn refusal(&self, now: Nanos, node: Node) -> Decision {
        let short = node.excess + 1000 - self.burst;
        Decision {
            status: self.refused,
            remaining: 0,
            limit: self.limit(),
            retry_after: Some(self.drained_by(node.last, short).saturating_sub(now)),
            reset: self
                .drained_by(node.last, node.excess + 1000)
                .saturating_sub(now),
            window: self.window(),
        }
    }

    /// How long the key takes to earn `burst + 1` at its rate.
    fn window(&self) -> Nanos {
        let ns = u128::from(self.limit()) * 1000 * u128::from(NANOS_PER_SEC) / self.rate;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

impl Limiter for LeakyBucket {
    fn admit(&mut self, now: Nanos, key: usize) -> Decision {
        self.decide(now, key).decision
    }

    fn admit_held(&mut self, now: Nanos, key: usize, _client: usize) -> Held {
        self.decide(now, key)
    }

    /// As a token bucket of `burst + 1` that starts full and refills at the rate: `burst + 1 +
    /// rate × duration`. An upper bound: nginx's whole milliseconds, and the fractions each
    /// update's division drops, can only lose from it.
    fn capacity(&self, duration: Nanos) -> f64 {
        self.capacity_with_outages(duration, &[])
    }

    fn capacity_with_outages(&self, duration: Nanos, closed: &[(Nanos, Nanos)]) -> f64 {
        let size = self.limit() as f64;
        let per_nano = self.rate as f64 / 1000.0 / NANOS_PER_SEC as f64;
        bucket_capacity_with_outages(size, size, per_nano, duration, closed)
    }

    fn rate_per_sec(&self) -> f64 {
        self.rate as f64 / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: Nanos = NANOS_PER_SEC;
    const MS: Nanos = NANOS_PER_MS;

    fn nginx(rate: &str, burst: u64, delay: Delay) -> LeakyBucket {
        LeakyBucket::new(&LeakyBucketConfig {
            rate: rate.parse().unwrap(),
            burst,
            delay,
            status: 429,
        })
    }

    fn held(b: &mut LeakyBucket, t: Nanos) -> (Status, Nanos) {
        let h = b.admit_held(t, 0, 0);
        (h.decision.status, h.hold)
    }

    /// nginx's documentation example, `rate=1r/s` with `burst=5`: six at once are admitted,
    /// the first served at once and the others one second apart; the seventh is refused.
    #[test]
    fn without_nodelay_a_burst_is_served_at_the_rate() {
        let mut b = nginx("1r/s", 5, Delay::After(0));
        let got: Vec<_> = (0..7).map(|_| held(&mut b, 0)).collect();
        let ok: Vec<_> = (0..6).map(|i| (Status::Ok, i * S)).collect();
        assert_eq!(got[..6], ok[..]);
        assert_eq!(got[6], (Status::Limited, 0));
        let d = b.admit(0, 0);
        assert_eq!((d.remaining, d.limit, d.retry_after), (0, 6, Some(S)));
    }

    #[test]
    fn nodelay_serves_the_burst_at_once_and_delay_n_after_the_first_n() {
        let mut b = nginx("1r/s", 5, Delay::NoDelay);
        assert!((0..6).all(|_| held(&mut b, 0) == (Status::Ok, 0)));
        assert_eq!(held(&mut b, 0).0, Status::Limited);
        // delay=2: excess 0, 1000 and 2000 at once; 3000 waits 1 s, 4000 2 s.
        let mut b = nginx("1r/s", 5, Delay::After(2));
        let holds: Vec<_> = (0..6).map(|_| held(&mut b, 0).1).collect();
        assert_eq!(holds, [0, 0, 0, S, 2 * S, 3 * S]);
    }

    #[test]
    fn the_excess_drains_in_whole_milliseconds() {
        // 3r/s drains 3 thousandths per millisecond: 999 by 333 ms, not enough for a request.
        let mut b = nginx("3r/s", 0, Delay::After(0));
        assert_eq!(held(&mut b, 0).0, Status::Ok);
        let d = b.admit(333 * MS + 999_999, 0);
        assert_eq!(d.status, Status::Limited);
        assert_eq!(d.retry_after, Some(1));
        // At 334 ms, 1002 have drained: the request stores max(0 − 1002 + 1000, 0) = 0.
        assert_eq!(held(&mut b, 334 * MS), (Status::Ok, 0));
        assert_eq!(held(&mut b, 667 * MS).0, Status::Limited);
        assert_eq!(held(&mut b, 668 * MS).0, Status::Ok);
    }

    #[test]
    fn a_fresh_key_starts_at_zero_and_a_refusal_changes_nothing() {
        let mut b = nginx("2r/s", 1, Delay::After(0));
        // Excess 0 then 1000 (served 500 ms late), then refused.
        assert_eq!(held(&mut b, 0), (Status::Ok, 0));
        assert_eq!(held(&mut b, 0), (Status::Ok, 500 * MS));
        for t in 1..500 {
            assert_eq!(held(&mut b, t * MS).0, Status::Limited);
        }
        // Refusals moved nothing: at 500 ms the drain since 0 is exactly 1000.
        assert_eq!(held(&mut b, 500 * MS), (Status::Ok, 500 * MS));
        // Another key is fresh.
        assert_eq!(b.admit_held(500 * MS, 1, 0).hold, 0);
    }

    #[test]
    fn a_held_answer_states_its_times_from_when_it_leaves() {
        let mut b = nginx("1r/s", 3, Delay::After(0));
        let first = b.admit_held(0, 0, 0);
        // Stored 0 at 0 ms: whole again once 1000 has drained, at 1 s.
        assert_eq!(first.decision.reset, S);
        assert_eq!((first.decision.remaining, first.decision.limit), (3, 4));
        assert_eq!(first.decision.window, 4 * S);
        let second = b.admit_held(0, 0, 0);
        // Stored 1000: whole at 2 s; the answer leaves at 1 s.
        assert_eq!((second.hold, second.decision.reset), (S, S));
        assert_eq!(second.decision.remaining, 2);
    }

    #[test]
    fn per_minute_rates_are_thousandths_rounded_down_as_nginx_stores_them() {
        // 75r/m is 1250 thousandths per second: one request every 800 ms exactly.
        let mut b = nginx("75r/m", 0, Delay::After(0));
        assert!((b.rate_per_sec() - 1.25).abs() < 1e-12);
        assert_eq!(held(&mut b, 0).0, Status::Ok);
        assert_eq!(held(&mut b, 799 * MS).0, Status::Limited);
        assert_eq!(held(&mut b, 800 * MS).0, Status::Ok);
        // 7r/m is 116 thousandths: 1000 take 8621 ms, not 8571.
        let mut b = nginx("7r/m", 0, Delay::After(0));
        assert_eq!(held(&mut b, 0).0, Status::Ok);
        assert_eq!(b.admit(8620 * MS, 0).retry_after, Some(MS));
        assert_eq!(held(&mut b, 8621 * MS).0, Status::Ok);
    }

    #[test]
    fn status_503_is_nginx_s_own_refusal() {
        let mut b = LeakyBucket::new(&LeakyBucketConfig {
            status: 503,
            ..LeakyBucketConfig::default()
        });
        assert_eq!(b.admit(0, 0).status, Status::Ok);
        assert_eq!(b.admit(0, 0).status, Status::Unavailable);
    }

    #[test]
    fn capacity_is_a_full_bucket_of_burst_plus_one_and_the_rate() {
        let b = nginx("75r/m", 9, Delay::NoDelay);
        assert_eq!(b.capacity(0), 10.0);
        assert!((b.capacity(3600 * S) - 4510.0).abs() < 1e-6);
        // A client that sends 10 at once and then one every 800 ms gets it exactly.
        let mut c = nginx("75r/m", 9, Delay::NoDelay);
        let ok = (0..10)
            .map(|_| 0)
            .chain((1..=100).map(|i| i * 800 * MS))
            .filter(|&t| c.admit(t, 0).status == Status::Ok)
            .count();
        assert_eq!(ok as f64, b.capacity(80 * S + 1).floor());
    }

    #[test]
    fn rates_and_delays_read_as_nginx_writes_them() {
        let cfg: LeakyBucketConfig =
            toml::from_str("rate = \"10r/s\"\nburst = 20\ndelay = \"nodelay\"").unwrap();
        assert_eq!(cfg.rate.to_string(), "10r/s");
        assert_eq!(cfg.delay, Delay::NoDelay);
        let cfg: LeakyBucketConfig = toml::from_str("rate = \"30r/m\"\ndelay = 8").unwrap();
        assert_eq!((cfg.rate.thousandths(), cfg.delay), (500, Delay::After(8)));
        let back: LeakyBucketConfig = toml::from_str(&toml::to_string(&cfg).unwrap()).unwrap();
        assert_eq!(back, cfg);
        for bad in [
            "rate = \"10r/h\"",
            "rate = 10",
            "delay = \"later\"",
            "delay = -1",
        ] {
            assert!(toml::from_str::<LeakyBucketConfig>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn invalid_parameters_are_named() {
        let cfg = LeakyBucketConfig {
            rate: "0r/s".parse().unwrap(),
            burst: u64::MAX,
            status: 500,
            ..Default::default()
        };
        let fields: Vec<_> = cfg.problems().into_iter().map(|p| p.0).collect();
        assert_eq!(fields, ["rate", "burst", "status"]);
    }

    proptest! {
        /// Against nginx's arithmetic written out in signed integers as its C has it: every
        /// decision and delay agrees, a refusal's wait is the first instant that admits, and
        /// no time has more admitted than the capacity.
        #[test]
        fn decides_as_nginx_and_never_passes_the_capacity(
            per_second in 1u64..50,
            per_minute in any::<bool>(),
            burst in 0u64..8,
            delay in 0u64..10,
            gaps in proptest::collection::vec(0u64..400_000_000, 1..300),
        ) {
            let rate = NginxRate {
                count: per_second,
                per: if per_minute { RatePer::Minute } else { RatePer::Second },
            };
            let delay = if delay == 9 { Delay::NoDelay } else { Delay::After(delay) };
            let cfg = LeakyBucketConfig { rate, burst, delay, status: 429 };
            let mut b = LeakyBucket::new(&cfg);
            let r = rate.thousandths() as i64;
            let (burst_k, delay_k) = (burst as i64 * 1000, match delay {
                Delay::After(n) => n as i64 * 1000,
                Delay::NoDelay => i64::MAX,
            });
            // nginx's node: (excess, last), none before the first request.
            let mut node: Option<(i64, i64)> = None;
            let (mut now, mut admitted) = (0u64, 0u64);
            for gap in gaps {
                now += gap;
                let ms = (now / MS) as i64;
                let h = b.admit_held(now, 0, 0);
                let excess = match node {
                    None => 0,
                    Some((e, last)) => (e - r * (ms - last) / 1000 + 1000).max(0),
                };
                if node.is_some() && excess > burst_k {
                    prop_assert_eq!(h.decision.status, Status::Limited);
                    let wait = h.decision.retry_after.expect("a refusal says when");
                    let mut probe = LeakyBucket { nodes: b.nodes.clone(), ..LeakyBucket::new(&cfg) };
                    prop_assert_eq!(probe.admit(now + wait - 1, 0).status, Status::Limited);
                    prop_assert_eq!(probe.admit(now + wait, 0).status, Status::Ok);
                    continue;
                }
                prop_assert_eq!(h.decision.status, Status::Ok);
                let last = match node {
                    Some((_, last)) if last == ms => last,
                    _ => ms,
                };
                node = Some((excess, last));
                let hold_ms = if excess > delay_k { (excess - delay_k) * 1000 / r } else { 0 };
                prop_assert_eq!(h.hold, hold_ms as u64 * MS);
                admitted += 1;
                prop_assert!(admitted as f64 <= b.capacity(now + 1) + 1e-9);
            }
        }
    }
}
