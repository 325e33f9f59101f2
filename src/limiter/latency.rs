//! Service latency: how long the server takes to answer, fixed or lognormal.

use std::fmt;

use rand_distr::{Distribution, LogNormal};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::check_nonzero_duration;
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, from_secs};

/// `latency = "20ms"`, or `latency = { distribution = "lognormal", median = "20ms", sigma = 0.5 }`.
#[derive(Clone, Debug, PartialEq)]
pub enum Latency {
    Fixed(HumanDuration),
    /// ln(latency) is normal with mean ln(median) and standard deviation `sigma`.
    LogNormal {
        median: HumanDuration,
        sigma: f64,
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
}

impl LatencySampler {
    pub fn sample(&self, rng: &mut SimRng) -> Nanos {
        match self {
            LatencySampler::Fixed(n) => *n,
            LatencySampler::LogNormal(d) => from_secs(d.sample(rng)),
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
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LatencyTable {
    distribution: String,
    median: HumanDuration,
    #[serde(default = "default_sigma")]
    sigma: f64,
}

fn default_sigma() -> f64 {
    0.5
}

impl Serialize for Latency {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Latency::Fixed(d) => d.serialize(s),
            Latency::LogNormal { median, sigma } => LatencyTable {
                distribution: "lognormal".into(),
                median: *median,
                sigma: *sigma,
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
            Ok(Form::Table(t)) if t.distribution == "lognormal" => Ok(Latency::LogNormal {
                median: t.median,
                sigma: t.sigma,
            }),
            Ok(Form::Table(t)) => Err(serde::de::Error::custom(format!(
                "unknown latency distribution `{}`, expected `lognormal`",
                t.distribution
            ))),
            Err(_) => Err(serde::de::Error::custom(Expected)),
        }
    }
}

struct Expected;

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "expected a duration such as \"20ms\", or { distribution = \"lognormal\", median = \"20ms\", sigma = 0.5 }",
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
    fn fixed_is_fixed() {
        let s = Latency::default().sampler();
        assert_eq!(s.sample(&mut test_rng()), 20_000_000);
    }
}
