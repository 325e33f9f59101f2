//! The drawn rule: which of the sim's server rules, its limit and period, its burst and its
//! state at the start.
//!
//! Seven families, each as likely: `gcra`, `token-bucket`, `fixed-window` (half on the clock's
//! grid, half opened by a key's first request, as Flask-Limiter and express-rate-limit open
//! them), `sliding-window` (the exact log) and `sliding-window-counter` (each half stating its
//! reset as Flask-Limiter does: when the oldest request leaves, when the count next drops by
//! one; the rest when the allowance is whole again), `leaky-bucket` (nginx's
//! `limit_req`: half `nodelay`, the rest delaying every request beyond the rate or all but the
//! first few) and `stacked` (a short limit in front of a long one, as Flask-Limiter's "10 per
//! second; 100 per minute"). The period is one that APIs document (1 s, 10 s, 1 min, 5 min,
//! 15 min, 1 h, 24 h) in three shapes of four, else any whole number of seconds log-uniform on
//! 1 s to 24 h, so a law cannot lean on round periods. The limit is log-uniform on what
//! [`RateBounds`] allows within 1 to 100,000; a bucket's burst is log-uniform on 1 to the limit,
//! and it starts full, empty or part-full (5–95 %), each as likely.

use super::draw::{chance, log_uniform, log_uniform_int, one_of, uniform, weighted};
use super::sizing::{Pace, RateBounds};
use crate::rng::SimRng;
use crate::time::HumanDuration;

/// The periods APIs document, in seconds.
pub const ROUND_PERIODS: [u64; 7] = [1, 10, 60, 300, 900, 3600, 86_400];
/// Share of the shapes whose period is any whole second rather than a round one.
pub const ODD_PERIOD_SHARE: f64 = 0.25;
/// The longest period, in seconds.
pub const MAX_PERIOD_S: u64 = 86_400;
/// A stack's short limit is this many times faster than its long one (log-uniform), and its
/// period at most a sixth of the long one's.
pub const STACK_SPEEDUP: (f64, f64) = (2.0, 20.0);
pub const STACK_PERIOD_RATIO: u64 = 6;
/// A part-full bucket holds this share of its tokens at the start (uniform).
pub const PART_FULL: (f64, f64) = (0.05, 0.95);
/// Periods tried for one rule before the shape is drawn again whole.
const PERIOD_TRIES: usize = 8;

/// A drawn `[server]` rule, with what the sizing and the targets need to know of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Server {
    /// The rule's fields as `[server]` takes them, without latency and headers.
    pub fields: String,
    /// "GCRA, 4500 per 1h, 500 tokens at the start".
    pub describe: String,
    /// `gcra-4500p1h-part`: a part of the shape's name.
    pub short: String,
    /// The sustained rate `R` the rule allows, per second (a stack's slower limit).
    pub rate: f64,
    /// The period that sizes the run (a stack's long one, nginx's second or minute).
    pub period_s: u64,
    /// The most it admits at once from full (a bucket's size, a window's limit, nginx's
    /// `burst + 1`, a stack's smaller): a fleet with more threads than this cannot avoid
    /// refusals at the start.
    pub bucket: u64,
    /// It counts requests in windows (the matrix allows 1 % 429s there, not 0.5 %).
    pub windowed: bool,
    /// What the clients are told where the answers state no quota: `quota` per `period`.
    pub told: (u64, u64),
}

impl Server {
    /// What sizes its run.
    pub fn pace(&self) -> Pace {
        Pace {
            rate: self.rate,
            period_s: self.period_s,
            windowed: self.windowed,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Family {
    Gcra,
    TokenBucket,
    FixedWindow,
    SlidingWindow,
    SlidingWindowCounter,
    LeakyBucket,
    Stacked,
}

const FAMILIES: [Family; 7] = [
    Family::Gcra,
    Family::TokenBucket,
    Family::FixedWindow,
    Family::SlidingWindow,
    Family::SlidingWindowCounter,
    Family::LeakyBucket,
    Family::Stacked,
];

/// A rule for a shape whose rates are bounded by `bounds`; `None` when none of the periods
/// tried allows a limit (the caller draws the shape again).
pub fn draw_server(rng: &mut SimRng, bounds: &RateBounds) -> Option<Server> {
    match one_of(rng, &FAMILIES) {
        Family::LeakyBucket => leaky_bucket(rng, bounds),
        Family::Stacked => stacked(rng, bounds),
        family => {
            let windowed = !matches!(family, Family::Gcra | Family::TokenBucket);
            let (limit, period) = limit_and_period(rng, bounds, 1, windowed)?;
            Some(match family {
                Family::Gcra => gcra(rng, limit, period),
                Family::TokenBucket => token_bucket(rng, limit, period),
                _ => window(rng, family, limit, period),
            })
        }
    }
}

/// A period of at least `min_s` and a limit the bounds allow over it (`windowed`: for a rule
/// that counts in windows).
fn limit_and_period(
    rng: &mut SimRng,
    bounds: &RateBounds,
    min_s: u64,
    windowed: bool,
) -> Option<(u64, u64)> {
    for _ in 0..PERIOD_TRIES {
        let period = draw_period(rng, min_s);
        if let Some((lo, hi)) = bounds.limits(period, windowed) {
            return Some((log_uniform_int(rng, lo, hi), period));
        }
    }
    None
}

/// A round period of at least `min_s`, or ([`ODD_PERIOD_SHARE`]) any whole second.
fn draw_period(rng: &mut SimRng, min_s: u64) -> u64 {
    let round: Vec<u64> = ROUND_PERIODS.into_iter().filter(|&p| p >= min_s).collect();
    if chance(rng, ODD_PERIOD_SHARE) || round.is_empty() {
        log_uniform_int(rng, min_s, MAX_PERIOD_S)
    } else {
        one_of(rng, &round)
    }
}

/// `1h`, `37m14s`.
fn dur(s: u64) -> HumanDuration {
    HumanDuration::from_secs(s)
}

/// A bucket's tokens at the start: full (`None`), empty or part-full, each as likely; a
/// bucket of one token is full or empty.
fn start(rng: &mut SimRng, bucket: u64) -> (Option<u64>, &'static str) {
    let choices: &[&str] = if bucket >= 2 {
        &["full", "empty", "part"]
    } else {
        &["full", "empty"]
    };
    match one_of(rng, choices) {
        "empty" => (Some(0), "empty"),
        "part" => {
            let share = uniform(rng, PART_FULL.0, PART_FULL.1);
            let tokens = ((bucket as f64 * share).round() as u64).clamp(1, bucket - 1);
            (Some(tokens), "part")
        }
        _ => (None, "full"),
    }
}

/// ", initial = 0" and "empty at the start", or nothing and "full at the start".
fn start_words(initial: Option<u64>) -> (String, String) {
    match initial {
        None => (String::new(), "full at the start".into()),
        Some(0) => (", initial = 0".into(), "empty at the start".into()),
        Some(n) => (
            format!(", initial = {n}"),
            format!("{n} tokens at the start"),
        ),
    }
}

fn gcra(rng: &mut SimRng, limit: u64, period: u64) -> Server {
    let (initial, state) = start(rng, limit);
    let (field, words) = start_words(initial);
    Server {
        fields: format!(
            "kind = \"gcra\", limit = {limit}, period = \"{}\"{field}",
            dur(period)
        ),
        describe: format!("GCRA, {limit} per {}, {words}", dur(period)),
        short: format!("gcra-{limit}p{}-{state}", dur(period)),
        rate: limit as f64 / period as f64,
        period_s: period,
        bucket: limit,
        windowed: false,
        told: (limit, period),
    }
}

fn token_bucket(rng: &mut SimRng, limit: u64, period: u64) -> Server {
    let burst = log_uniform_int(rng, 1, limit);
    let (initial, state) = start(rng, burst);
    let (field, words) = start_words(initial);
    Server {
        fields: format!(
            "kind = \"token-bucket\", rate = {limit}, period = \"{}\", burst = {burst}{field}",
            dur(period)
        ),
        describe: format!(
            "token bucket, {limit} per {}, burst {burst}, {words}",
            dur(period)
        ),
        short: format!("tb-{limit}p{}-b{burst}-{state}", dur(period)),
        rate: limit as f64 / period as f64,
        period_s: period,
        bucket: burst,
        windowed: false,
        told: (limit, period),
    }
}

/// A fixed window (on the clock or opened by the first request), a sliding log or a
/// sliding-window counter.
fn window(rng: &mut SimRng, family: Family, limit: u64, period: u64) -> Server {
    // Each family's plain rule and the variant half of its shapes take, as (short name,
    // words, extra fields): a fixed window opened by its key's first request (Flask-Limiter,
    // express-rate-limit), and the sliding log and counter stating their reset as
    // Flask-Limiter does (when the oldest request leaves the log, when the counter next drops
    // by a request).
    let (kind, plain, variant) = match family {
        Family::SlidingWindow => (
            "sliding-window",
            ("sw", "sliding window (log)", ""),
            (
                "swo",
                "sliding window (log) stating when its oldest request leaves",
                ", reset = \"oldest\"",
            ),
        ),
        Family::SlidingWindowCounter => (
            "sliding-window-counter",
            ("swc", "sliding-window counter", ""),
            (
                "swcn",
                "sliding-window counter stating its next drop",
                ", reset = \"next-drop\"",
            ),
        ),
        _ => (
            "fixed-window",
            ("fw", "fixed window on the clock", ""),
            (
                "fwf",
                "fixed window opened by the first request",
                ", start = \"first-request\"",
            ),
        ),
    };
    let (short, describe, extra) = if chance(rng, 0.5) { variant } else { plain };
    Server {
        fields: format!(
            "kind = \"{kind}\", limit = {limit}, window = \"{}\"{extra}",
            dur(period)
        ),
        describe: format!("{describe}, {limit} per {}", dur(period)),
        short: format!("{short}-{limit}p{}", dur(period)),
        rate: limit as f64 / period as f64,
        period_s: period,
        bucket: limit,
        windowed: true,
        told: (limit, period),
    }
}

/// nginx's `limit_req`: a rate per second or per minute (the only units nginx takes; the
/// other when the one drawn allows no limit), a burst
/// log-uniform on 1 to the rate's count, and `nodelay` (half), every request beyond the rate
/// delayed (`delay = 0`, three in ten) or all but the first few (`delay = N`, one in five).
fn leaky_bucket(rng: &mut SimRng, bounds: &RateBounds) -> Option<Server> {
    let units = if chance(rng, 0.5) { [1, 60] } else { [60, 1] };
    let (count, unit) = units.into_iter().find_map(|unit| {
        let (lo, hi) = bounds.limits(unit, false)?;
        Some((log_uniform_int(rng, lo, hi), unit))
    })?;
    let burst = log_uniform_int(rng, 1, count);
    let delay = weighted(rng, &[("nodelay", 0.5), ("all", 0.3), ("first", 0.2)]);
    let (field, words, tag) = match delay {
        "nodelay" => (
            "\"nodelay\"".to_string(),
            "nodelay".to_string(),
            "nodelay".to_string(),
        ),
        "all" => (
            "0".into(),
            "every request beyond the rate delayed".into(),
            "delay".into(),
        ),
        _ => {
            let n = log_uniform_int(rng, 1, burst);
            (
                n.to_string(),
                format!("delayed after the first {n}"),
                format!("delay{n}"),
            )
        }
    };
    let per = if unit == 1 { "s" } else { "m" };
    Some(Server {
        fields: format!(
            "kind = \"leaky-bucket\", rate = \"{count}r/{per}\", burst = {burst}, delay = {field}"
        ),
        describe: format!("nginx limit_req, {count}r/{per}, burst {burst}, {words}"),
        short: format!("nginx-{count}r{per}-b{burst}-{tag}"),
        // nginx keeps the rate in whole thousandths of a request per second: 11r/m is 0.183.
        rate: (count * 1000 / unit) as f64 / 1000.0,
        period_s: unit,
        bucket: burst + 1,
        windowed: false,
        told: (count, unit),
    })
}

/// The kinds of a stack's short and long limit: Flask-Limiter's three strategies (fixed
/// windows opened by the first request, its moving window, its sliding-window counter), fixed
/// windows on the clock, and a burst bucket in front of a window quota.
const STACK_KINDS: [(&str, &str, &str); 5] = [
    (
        "fixed-window",
        ", start = \"first-request\"",
        "fixed windows opened by the first request",
    ),
    ("sliding-window", "", "sliding windows (log)"),
    ("sliding-window-counter", "", "sliding-window counters"),
    ("fixed-window", "", "fixed windows on the clock"),
    (
        "gcra",
        "",
        "a GCRA bucket in front of a fixed window on the clock",
    ),
];

/// A short limit in front of a long one: the long one drawn as any rule's limit (its period at
/// least [`STACK_PERIOD_RATIO`] seconds), the short one's period a round one at most a sixth of
/// it and its rate [`STACK_SPEEDUP`] times the long one's (at most the long one's count).
/// Flask-Limiter states the first (shortest) limit's headers until one is breached (`shows =
/// "first"`, half the stacks), the others the limit nearest to refusing.
fn stacked(rng: &mut SimRng, bounds: &RateBounds) -> Option<Server> {
    let (long, long_p) = limit_and_period(rng, bounds, STACK_PERIOD_RATIO, true)?;
    let shorter: Vec<u64> = ROUND_PERIODS
        .into_iter()
        .filter(|&p| p * STACK_PERIOD_RATIO <= long_p)
        .collect();
    let short_p = one_of(rng, &shorter);
    let speedup = log_uniform(rng, STACK_SPEEDUP.0, STACK_SPEEDUP.1);
    let short =
        ((speedup * long as f64 * short_p as f64 / long_p as f64).round() as u64).clamp(1, long);
    let (kind, extra, words) = one_of(rng, &STACK_KINDS);
    let shows = one_of(rng, &["binding", "first"]);
    let limit = |kind: &str, n: u64, p: u64| {
        let (span, extra) = if kind == "gcra" {
            ("period", "")
        } else {
            ("window", extra)
        };
        format!(
            "{{ kind = \"{kind}\", limit = {n}, {span} = \"{}\"{extra} }}",
            dur(p)
        )
    };
    let long_kind = if kind == "gcra" { "fixed-window" } else { kind };
    let rate = (long as f64 / long_p as f64).min(short as f64 / short_p as f64);
    Some(Server {
        fields: format!(
            "kind = \"stacked\", limits = [{}, {}], shows = \"{shows}\"",
            limit(kind, short, short_p),
            limit(long_kind, long, long_p)
        ),
        describe: format!(
            "stacked {words}, {short} per {} and {long} per {}, stating the {} limit",
            dur(short_p),
            dur(long_p),
            if shows == "first" { "first" } else { "binding" }
        ),
        short: format!("stack-{short}p{}-{long}p{}", dur(short_p), dur(long_p)),
        rate,
        period_s: long_p,
        bucket: short.min(long),
        windowed: true,
        told: (long, long_p),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::LimiterConfig;
    use crate::rng::test_rng;
    use crate::shapes::fleet::{Fleet, Group};

    fn bounds(processes: u64, threads: u64) -> RateBounds {
        let fleet = Fleet {
            groups: vec![Group {
                name: "w".into(),
                processes,
                threads,
                start_s: 0,
                stop_s: None,
            }],
            churn: false,
        };
        RateBounds::new(&fleet, 0.02)
    }

    /// The fields as the sim types them: every drawn rule is a valid `[server]`.
    fn typed(s: &Server) -> LimiterConfig {
        let table: toml::Table = format!("server = {{ {} }}", s.fields).parse().unwrap();
        let server = table["server"].clone();
        let kind = server["kind"].as_str().unwrap().to_string();
        let mut params = server.as_table().unwrap().clone();
        params.remove("kind");
        let cfg = LimiterConfig::from_params(&kind, toml::Value::Table(params))
            .expect("a known kind")
            .unwrap_or_else(|e| panic!("{}: {e:?}", s.fields));
        assert!(
            cfg.problems().is_empty(),
            "{}: {:?}",
            s.fields,
            cfg.problems()
        );
        cfg
    }

    #[test]
    fn every_family_draws_valid_rules_whose_rate_is_the_rules_own() {
        let mut rng = test_rng();
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..3000 {
            let b = bounds(1 + i % 50, 1 + i % 7);
            let Some(s) = draw_server(&mut rng, &b) else {
                continue;
            };
            let cfg = typed(&s);
            let rate = cfg.build().rate_per_sec();
            assert!(
                (rate - s.rate).abs() <= 1e-3 * s.rate,
                "{}: {rate}",
                s.fields
            );
            assert!(s.bucket >= 1 && s.rate > 0.0, "{s:?}");
            assert!(s.short.len() <= 48, "{}", s.short);
            seen.insert(s.short.split('-').next().unwrap().to_string());
        }
        let all = [
            "fw", "fwf", "gcra", "nginx", "stack", "sw", "swc", "swcn", "swo", "tb",
        ];
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), all);
    }

    #[test]
    fn a_stack_puts_its_short_limit_first_and_binds_on_the_long_one() {
        let mut rng = test_rng();
        let b = bounds(5, 5);
        let mut stacks = 0;
        while stacks < 200 {
            let Some(s) = stacked(&mut rng, &b) else {
                continue;
            };
            stacks += 1;
            let LimiterConfig::Stacked(cfg) = typed(&s) else {
                panic!("{}", s.fields)
            };
            let rates: Vec<f64> = cfg
                .limits
                .iter()
                .map(|l| l.build().rate_per_sec())
                .collect();
            assert!(rates[0] >= rates[1] * 0.999, "{}", s.fields);
            let told = s.told.0 as f64 / s.told.1 as f64;
            assert!((told - rates[1]).abs() <= 1e-9 * told, "{}", s.fields);
        }
    }
}
