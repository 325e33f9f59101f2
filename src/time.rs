//! Virtual time: integer nanoseconds, and the human duration strings of scenario files.
//!
//! Every engine speaks [`Nanos`]; floating-point seconds appear only inside algorithms that
//! need them (and in output files), so the sim's event order never depends on rounding.

use std::fmt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time or a span of time, in nanoseconds since the start of the run.
pub type Nanos = u64;

pub const NANOS_PER_SEC: u64 = 1_000_000_000;
pub const NANOS_PER_MS: u64 = 1_000_000;

/// Seconds as a float, for formulas and output.
pub fn secs(n: Nanos) -> f64 {
    n as f64 / NANOS_PER_SEC as f64
}

/// Seconds to nanoseconds, saturating: negative and NaN become 0, huge values the maximum.
pub fn from_secs(s: f64) -> Nanos {
    if s.is_nan() || s <= 0.0 {
        0
    } else {
        let n = s * NANOS_PER_SEC as f64;
        if n >= u64::MAX as f64 {
            u64::MAX
        } else {
            round_non_negative(n)
        }
    }
}

/// A [`Duration`] as nanoseconds, saturating past 584 years.
pub fn duration_nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The one conversion of a number from outside (a header, a scenario, a flag) to a real
/// [`Duration`]: seconds as a float, saturating as [`from_secs`] does. NaN and negative
/// values are zero, values past what a `Duration` holds are `Duration::MAX` (which
/// [`instant_after`] then caps); `Duration::from_secs_f64` would panic on either.
pub fn duration_from_secs(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
    }
}

/// A real span multiplied by a time scale, as virtual nanoseconds: saturating at
/// `Nanos::MAX`, zero for NaN.
pub fn scaled_nanos(real: Duration, scale: f64) -> Nanos {
    let n = real.as_nanos() as f64 * scale;
    // `as` saturates (and turns NaN into 0): no overflow whatever the server sent.
    n as Nanos
}

/// The longest wait an instant is ever pushed out by: a century. Any wait a server or a
/// scale asks for beyond it is as good as forever, and an `Instant` holds it on every
/// platform (`Instant + Duration::MAX` panics with "overflow when adding duration to
/// instant").
pub const FOREVER: Duration = Duration::from_secs(100 * 365 * 86_400);

/// The longest wait a server's answer may ask of a client, in real time: a day. A
/// `Retry-After`, a reset or a policy window past it (`retry-after-ms: 1e23`, an epoch reset
/// of 2^64 − 1) is read as a day, so no algorithm is told to wait for centuries.
pub const MAX_SERVER_WAIT: Duration = Duration::from_secs(86_400);

/// `at + d`, checked: a span past [`FOREVER`] (or past what the clock holds) is `FOREVER`
/// from `at`. Every instant computed from a number that came from outside goes through
/// here.
pub fn instant_after(at: Instant, d: Duration) -> Instant {
    at.checked_add(d.min(FOREVER))
        .or_else(|| at.checked_add(FOREVER))
        .unwrap_or(at)
}

/// `n.round() as u64` for `0 ≤ n < 2^64` without the libm call `round` is on x86-64 (the
/// engine converts a delay on every request): the cast truncates, and the fraction it drops,
/// `n − trunc(n)`, is exact in floating point, so comparing it with one half rounds exactly as
/// `round` does (halves away from zero).
#[inline]
fn round_non_negative(n: f64) -> u64 {
    let whole = n as u64;
    if n - whole as f64 >= 0.5 {
        whole + 1
    } else {
        whole
    }
}

/// A duration read from a scenario file: `"250ms"`, `"90s"`, `"1h30m"`, or a plain number of
/// seconds. Written back in the same compact form, exactly, so a resolved scenario repeats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HumanDuration(pub Nanos);

impl HumanDuration {
    pub fn from_secs(s: u64) -> Self {
        HumanDuration(s * NANOS_PER_SEC)
    }
    pub fn from_millis(ms: u64) -> Self {
        HumanDuration(ms * 1_000_000)
    }
    pub fn nanos(self) -> Nanos {
        self.0
    }
    pub fn secs(self) -> f64 {
        secs(self.0)
    }
}

/// Why a duration string could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{input}` is not a duration ({reason}); write e.g. \"250ms\", \"90s\", \"1h30m\"")]
pub struct DurationError {
    pub input: String,
    pub reason: String,
}

/// Parse `"250ms"`, `"90s"`, `"1h30m"`, `"1.5s"`; a bare number is seconds.
pub fn parse_duration(input: &str) -> Result<HumanDuration, DurationError> {
    let err = |reason: &str| DurationError {
        input: input.to_string(),
        reason: reason.to_string(),
    };
    let s = input.trim();
    if s.is_empty() {
        return Err(err("empty"));
    }
    if s.starts_with('-') {
        return Err(err("negative"));
    }
    if let Ok(secs) = s.parse::<f64>() {
        return seconds_value(secs).ok_or_else(|| err(seconds_problem(secs)));
    }
    // humantime reads integer components ("1h30m", "250ms"); a decimal such as "1.5s" is
    // read here because it is what people type.
    if let Some(num) = s
        .strip_suffix('s')
        .filter(|n| !n.ends_with(['m', 'n', 'u', 'µ']))
        && let Ok(v) = num.parse::<f64>()
    {
        return seconds_value(v).ok_or_else(|| err(seconds_problem(v)));
    }
    match humantime::parse_duration(s) {
        Ok(d) => u64::try_from(d.as_nanos())
            .map(HumanDuration)
            .map_err(|_| err("too long: at most 584 years, what nanoseconds in 64 bits count")),
        Err(e) => Err(err(&e.to_string())),
    }
}

/// Why a number of seconds is no duration: not a number, or past what the clock counts.
fn seconds_problem(secs: f64) -> &'static str {
    if secs.is_finite() {
        "too long: at most 584 years, what nanoseconds in 64 bits count"
    } else {
        "not a finite number of seconds"
    }
}

fn seconds_value(secs: f64) -> Option<HumanDuration> {
    if secs.is_finite() && secs >= 0.0 && secs * (NANOS_PER_SEC as f64) < u64::MAX as f64 {
        Some(HumanDuration(from_secs(secs)))
    } else {
        None
    }
}

impl fmt::Display for HumanDuration {
    /// Compact and exact: `1h30m`, `250ms`, `1s500ms`, `0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut n = self.0;
        if n == 0 {
            return f.write_str("0s");
        }
        // Seconds with a fraction read best as a decimal: "1.6s", not "1s600ms".
        if (NANOS_PER_SEC..60 * NANOS_PER_SEC).contains(&n)
            && !n.is_multiple_of(NANOS_PER_SEC)
            && n.is_multiple_of(1_000_000)
        {
            let ms = format!("{:03}", (n % NANOS_PER_SEC) / 1_000_000);
            return write!(f, "{}.{}s", n / NANOS_PER_SEC, ms.trim_end_matches('0'));
        }
        const UNITS: [(&str, u64); 6] = [
            ("h", 3600 * NANOS_PER_SEC),
            ("m", 60 * NANOS_PER_SEC),
            ("s", NANOS_PER_SEC),
            ("ms", 1_000_000),
            ("us", 1_000),
            ("ns", 1),
        ];
        for (unit, size) in UNITS {
            if n >= size {
                write!(f, "{}{}", n / size, unit)?;
                n %= size;
            }
        }
        Ok(())
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as \"250ms\", \"90s\" or \"1h30m\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HumanDuration, E> {
                parse_duration(v).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<HumanDuration, E> {
                v.checked_mul(NANOS_PER_SEC)
                    .map(HumanDuration)
                    .ok_or_else(|| E::custom(format!("{v} seconds is too long")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<HumanDuration, E> {
                if v < 0 {
                    Err(E::custom(format!(
                        "`{v}` is negative; a duration must be 0 or more"
                    )))
                } else {
                    self.visit_u64(v as u64)
                }
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<HumanDuration, E> {
                seconds_value(v).ok_or_else(|| {
                    E::custom(format!("`{v}` is not a duration of 0 seconds or more"))
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_agrees_with_round_at_halves_and_edges() {
        for n in [
            0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            4_503_599_627_370_495.5,
            4_503_599_627_370_497.0,
            9_007_199_254_740_993.0,
            1.8e19,
        ] {
            assert_eq!(round_non_negative(n), n.round() as u64, "{n}");
        }
    }

    proptest::proptest! {
        #[test]
        fn rounding_agrees_with_round(bits in 0u64..0x43F0_0000_0000_0000) {
            // Every non-negative float below 2^64, by its bit pattern.
            let n = f64::from_bits(bits);
            proptest::prop_assert_eq!(round_non_negative(n), n.round() as u64);
        }
    }

    #[test]
    fn parses_the_forms_scenarios_use() {
        assert_eq!(parse_duration("250ms").unwrap().0, 250_000_000);
        assert_eq!(parse_duration("90s").unwrap().0, 90 * NANOS_PER_SEC);
        assert_eq!(parse_duration("1h30m").unwrap().0, 5400 * NANOS_PER_SEC);
        assert_eq!(parse_duration("1.5s").unwrap().0, 1_500_000_000);
        assert_eq!(parse_duration("2").unwrap().0, 2 * NANOS_PER_SEC);
        assert_eq!(parse_duration("0").unwrap().0, 0);
        assert_eq!(parse_duration("20us").unwrap().0, 20_000);
    }

    #[test]
    fn rejects_nonsense_with_the_input_named() {
        for bad in ["", "-5s", "5 parsecs", "abc", "1.5.3s"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.to_string().contains("is not a duration"), "{bad}: {e}");
        }
    }

    #[test]
    fn display_round_trips_exactly() {
        for n in [
            0,
            1,
            999,
            250_000_000,
            1_500_000_000,
            5400 * NANOS_PER_SEC,
            3_723_000_000_017,
        ] {
            let d = HumanDuration(n);
            assert_eq!(parse_duration(&d.to_string()).unwrap(), d, "{d}");
        }
        assert_eq!(HumanDuration(5400 * NANOS_PER_SEC).to_string(), "1h30m");
        assert_eq!(HumanDuration(250_000_000).to_string(), "250ms");
        assert_eq!(HumanDuration(1_600_000_000).to_string(), "1.6s");
        assert_eq!(HumanDuration(1_050_000_000).to_string(), "1.05s");
        assert_eq!(HumanDuration(61_500_000_000).to_string(), "1m1s500ms");
    }

    /// Whatever number a server sends (1e23 ms, 2^64 seconds, NaN, -1) becomes a wait without
    /// a panic, and an instant that far out is capped, not overflowed.
    #[test]
    fn outside_numbers_become_waits_and_instants_without_overflow() {
        assert_eq!(duration_from_secs(1e20), Duration::MAX);
        assert_eq!(duration_from_secs(f64::INFINITY), Duration::MAX);
        assert_eq!(duration_from_secs(f64::NAN), Duration::ZERO);
        assert_eq!(duration_from_secs(-3.0), Duration::ZERO);
        assert_eq!(duration_from_secs(1.5), Duration::from_millis(1500));
        assert_eq!(scaled_nanos(Duration::MAX, 60.0), Nanos::MAX);
        assert_eq!(scaled_nanos(Duration::from_secs(2), f64::NAN), 0);
        assert_eq!(scaled_nanos(Duration::from_secs(2), 0.5), NANOS_PER_SEC);
        let now = Instant::now();
        assert_eq!(instant_after(now, Duration::MAX), now + FOREVER);
        assert_eq!(
            instant_after(now, Duration::from_secs(3)),
            now + Duration::from_secs(3)
        );
    }

    #[test]
    fn seconds_conversions_saturate() {
        assert_eq!(from_secs(-1.0), 0);
        assert_eq!(from_secs(f64::NAN), 0);
        assert_eq!(from_secs(1e30), u64::MAX);
        assert_eq!(from_secs(1.6), 1_600_000_000);
        assert!((secs(1_600_000_000) - 1.6).abs() < 1e-12);
    }
}
