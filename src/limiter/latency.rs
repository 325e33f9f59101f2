//! Service latency: how long the server takes to answer, fixed, lognormal, or the absolute value
//! of a normal draw (the AWS backoff simulator's network hop, |N(10 ms, 2 ms)|).

use std::fmt;

use rand_distr::{Distribution, LogNormal, Normal};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::check_nonzero_duration;
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, from_secs};

/// `latency = "20ms"`, `latency = { distribution = "lognormal", median = "20ms", sigma = 0.5 }`
/// or `latency = { distribution = "normal", mean = "10ms", sd = "2ms" }`.
#[derive(Clone, Debug, PartialEq)]
pub enum Latency {
    Fixed(HumanDuration),
    /// ln(latency) is normal with mean ln(median) and standard deviation `sigma`.
    LogNormal {
        median: HumanDuration,
        sigma: f64,
    },
    /// |N(mean, sd)|: a normal draw folded at zero, as the AWS backoff post's simulator draws
    /// each network hop (so a wide `sd` never gives a negative time).
    Normal {
        mean: HumanDuration,
        sd: HumanDuration,
    },
}

impl Default for Latency {
    fn default() -> Self {
        Latency::Fixed(HumanDuration::from_millis(20))
    }
}

/// A ready-to-sample form, built once per run.
#[derive(Clone, Debug)]
pub enum LatencySampler {
    Fixed(Nanos),
    LogNormal(LogNormal<f64>),
    /// Seconds.
    Normal(Normal<f64>),
}

impl LatencySampler {
    pub fn sample(&self, rng: &mut SimRng) -> Nanos {
        match self {
            LatencySampler::Fixed(n) => *n,
            LatencySampler::LogNormal(d) => from_secs(d.sample(rng)),
            LatencySampler::Normal(d) => from_secs(d.sample(rng).abs()),
        }
    }
}

impl Latency {
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        match self {
            Latency::Fixed(_) => Vec::new(),
            Latency::LogNormal { median, sigma } => {
                let mut out = Vec::new();
                check_nonzero_duration(&mut out, "latency.median", *median);
                if !(sigma.is_finite() && *sigma >= 0.0) {
                    out.push(("latency.sigma", format!("must be 0 or more (got {sigma})")));
                }
                out
            }
            Latency::Normal { .. } => Vec::new(),
        }
    }

    /// The mean answer time, seconds: what a client that paces its sends subtracts from its
    /// spacing (a lognormal's mean lies above its median by `e^(σ²/2)`; a folded normal's
    /// above its `mean` by what the fold adds).
    pub fn mean_secs(&self) -> f64 {
        match self {
            Latency::Fixed(d) => d.secs(),
            Latency::LogNormal { median, sigma } => median.secs() * (sigma * sigma / 2.0).exp(),
            Latency::Normal { mean, sd } => folded_normal_mean(mean.secs(), sd.secs()),
        }
    }

    /// Call only on a latency without [`Latency::problems`].
    pub fn sampler(&self) -> LatencySampler {
        match self {
            Latency::Fixed(d) => LatencySampler::Fixed(d.nanos()),
            Latency::LogNormal { median, sigma } => {
                let d = LogNormal::new(median.secs().ln(), *sigma)
                    .expect("lognormal parameters are validated before a run");
                LatencySampler::LogNormal(d)
            }
            Latency::Normal { mean, sd } => LatencySampler::Normal(
                Normal::new(mean.secs(), sd.secs()).expect("a duration is finite and not negative"),
            ),
        }
    }
}

/// `E|X|` for `X ~ N(mu, sd)`: `sd·√(2/π)·e^(−mu²/2sd²) + mu·erf(mu/(sd√2))`.
fn folded_normal_mean(mu: f64, sd: f64) -> f64 {
    if sd <= 0.0 {
        return mu.abs();
    }
    let z = mu / (sd * std::f64::consts::SQRT_2);
    sd * (2.0 / std::f64::consts::PI).sqrt() * (-z * z).exp() + mu * erf(z)
}

/// The error function, to within 1.5e-7 (Abramowitz and Stegun, formula 7.1.26).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    (1.0 - poly * (-x * x).exp()).copysign(x)
}

/// The table form; which fields a distribution needs is checked after reading.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LatencyTable {
    distribution: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    median: Option<HumanDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sigma: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mean: Option<HumanDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sd: Option<HumanDuration>,
}

/// lognormal's `sigma` when none is given.
const DEFAULT_SIGMA: f64 = 0.5;

impl LatencyTable {
    fn latency(self) -> Result<Latency, String> {
        let only = |allowed: &[&str]| {
            let given = [
                ("median", self.median.is_some()),
                ("sigma", self.sigma.is_some()),
                ("mean", self.mean.is_some()),
                ("sd", self.sd.is_some()),
            ];
            match given.iter().find(|(f, set)| *set && !allowed.contains(f)) {
                Some((f, _)) => Err(format!(
                    "`{f}` does not apply to the {} distribution (it takes {})",
                    self.distribution,
                    allowed.join(" and ")
                )),
                None => Ok(()),
            }
        };
        match self.distribution.as_str() {
            "lognormal" => {
                only(&["median", "sigma"])?;
                Ok(Latency::LogNormal {
                    median: self.median.ok_or("lognormal needs `median`")?,
                    sigma: self.sigma.unwrap_or(DEFAULT_SIGMA),
                })
            }
            "normal" => {
                only(&["mean", "sd"])?;
                Ok(Latency::Normal {
                    mean: self.mean.ok_or("normal needs `mean`")?,
                    sd: self.sd.ok_or("normal needs `sd`")?,
                })
            }
            other => Err(format!(
                "unknown latency distribution `{other}`, expected `lognormal` or `normal`"
            )),
        }
    }
}

impl Serialize for Latency {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Latency::Fixed(d) => d.serialize(s),
            Latency::LogNormal { median, sigma } => LatencyTable {
                distribution: "lognormal".into(),
                median: Some(*median),
                sigma: Some(*sigma),
                mean: None,
                sd: None,
            }
            .serialize(s),
            Latency::Normal { mean, sd } => LatencyTable {
                distribution: "normal".into(),
                median: None,
                sigma: None,
                mean: Some(*mean),
                sd: Some(*sd),
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Fixed(HumanDuration),
            Table(LatencyTable),
        }
        match Form::deserialize(d) {
            Ok(Form::Fixed(v)) => Ok(Latency::Fixed(v)),
            Ok(Form::Table(t)) => t.latency().map_err(serde::de::Error::custom),
            Err(_) => Err(serde::de::Error::custom(Expected)),
        }
    }
}

struct Expected;

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "expected a duration such as \"20ms\", { distribution = \"lognormal\", median = \"20ms\", sigma = 0.5 } or { distribution = \"normal\", mean = \"10ms\", sd = \"2ms\" }",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;

    #[test]
    fn lognormal_median_is_the_median() {
        let l = Latency::LogNormal {
            median: HumanDuration::from_millis(20),
            sigma: 0.5,
        };
        let s = l.sampler();
        let mut rng = test_rng();
        let mut v: Vec<_> = (0..20_001).map(|_| s.sample(&mut rng)).collect();
        v.sort_unstable();
        let median = v[10_000] as f64 / 1e6;
        assert!((median - 20.0).abs() < 1.0, "median {median} ms");
    }

    #[test]
    fn normal_is_folded_at_zero_with_the_given_mean() {
        let hop = Latency::Normal {
            mean: HumanDuration::from_millis(10),
            sd: HumanDuration::from_millis(2),
        };
        let s = hop.sampler();
        let mut rng = test_rng();
        let v: Vec<_> = (0..20_000)
            .map(|_| s.sample(&mut rng) as f64 / 1e6)
            .collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean - 10.0).abs() < 0.1, "mean {mean} ms");
        // A mean of 0 is all fold: every draw is |N(0, sd)|, never negative, mean sd·√(2/π).
        let wide = Latency::Normal {
            mean: HumanDuration::from_millis(0),
            sd: HumanDuration::from_millis(10),
        }
        .sampler();
        let v: Vec<_> = (0..20_000)
            .map(|_| wide.sample(&mut rng) as f64 / 1e6)
            .collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean - 7.98).abs() < 0.2, "folded mean {mean} ms");
    }

    #[test]
    fn a_table_names_what_its_distribution_lacks_or_does_not_take() {
        let read = |t: &str| {
            toml::from_str::<toml::Table>(&format!("l = {t}")).unwrap()["l"]
                .clone()
                .try_into::<Latency>()
        };
        assert_eq!(
            read(r#"{ distribution = "normal", mean = "10ms", sd = "2ms" }"#).unwrap(),
            Latency::Normal {
                mean: HumanDuration::from_millis(10),
                sd: HumanDuration::from_millis(2)
            }
        );
        let e = read(r#"{ distribution = "normal", mean = "10ms" }"#).unwrap_err();
        assert!(e.to_string().contains("normal needs `sd`"), "{e}");
        let e = read(r#"{ distribution = "lognormal", median = "10ms", sd = "1ms" }"#).unwrap_err();
        assert!(e.to_string().contains("`sd` does not apply"), "{e}");
        let e = read(r#"{ distribution = "pareto", median = "10ms" }"#).unwrap_err();
        assert!(
            e.to_string().contains("unknown latency distribution"),
            "{e}"
        );
    }

    #[test]
    fn the_stated_mean_is_the_mean_of_the_draws() {
        let ms = |m| HumanDuration::from_millis(m);
        for l in [
            Latency::Fixed(ms(20)),
            Latency::LogNormal {
                median: ms(20),
                sigma: 1.0,
            },
            Latency::Normal {
                mean: ms(10),
                sd: ms(2),
            },
            Latency::Normal {
                mean: ms(3),
                sd: ms(6),
            },
        ] {
            let s = l.sampler();
            let mut rng = test_rng();
            let n = 200_000;
            let drawn = (0..n).map(|_| s.sample(&mut rng) as f64 / 1e9).sum::<f64>() / n as f64;
            let said = l.mean_secs();
            assert!(
                (drawn / said - 1.0).abs() < 0.02,
                "{l:?}: drawn {drawn}, said {said}"
            );
        }
    }

    #[test]
    fn fixed_is_fixed() {
        let s = Latency::default().sampler();
        assert_eq!(s.sample(&mut test_rng()), 20_000_000);
    }
}
