//! A metric over seeds: its mean and the 95 % t-interval of that mean.
//!
//! With n seeds the interval is `mean ± t(0.975, n − 1) · s / √n`, s the sample standard
//! deviation: the usual interval for a mean from a few independent runs. A seed where the
//! metric is null (a run that never converged, or never got a 2xx) is left out of the mean
//! and counted, so the table can say "3/5".

use serde::{Deserialize, Serialize};

/// `t(0.975, df)` for df = 1..=30, from the t distribution's tables.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The 97.5 % quantile of Student's t with `df` degrees of freedom (df ≥ 1): the table up to
/// 30, then the Cornish-Fisher expansion around the normal quantile (error below 1e-4 there).
pub fn t_975(df: usize) -> f64 {
    assert!(df >= 1, "t needs at least one degree of freedom");
    if df <= T_975.len() {
        return T_975[df - 1];
    }
    let z: f64 = 1.959_963_984_540_054;
    let n = df as f64;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * n)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n * n * n)
}

/// Sample standard deviation (n − 1).
fn sample_stdev(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// One metric of one variant over its seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    /// Mean over the seeds with a value; `null` when none has one.
    pub mean: Option<f64>,
    /// Half the width of the 95 % t-interval; `null` with fewer than two values.
    pub half_width: Option<f64>,
    /// Seeds with a value, of `seeds`.
    pub n: usize,
    pub seeds: usize,
    /// Each seed's value, in seed order.
    pub values: Vec<Option<f64>>,
    /// The metric's own range (`record::metric_bounds`), which the interval shown is held in.
    #[serde(skip)]
    pub bounds: Option<[f64; 2]>,
}

impl Stat {
    pub fn of(values: &[Option<f64>]) -> Stat {
        let xs: Vec<f64> = values.iter().flatten().copied().collect();
        let n = xs.len();
        let mean = (n > 0).then(|| xs.iter().sum::<f64>() / n as f64);
        let half_width = (n >= 2).then(|| t_975(n - 1) * sample_stdev(&xs) / (n as f64).sqrt());
        Stat {
            mean,
            half_width,
            n,
            seeds: values.len(),
            values: values.to_vec(),
            bounds: None,
        }
    }

    /// The statistics of a metric whose values lie in `bounds` (`record::metric_bounds`):
    /// the interval shown ([`Stat::low`], [`Stat::high`]) is cut to that range, where the
    /// symmetric t-interval of a mean near a bound would reach past it (a fairness of
    /// `0.999 ± 0.004` is not above 1).
    pub fn of_bounded(values: &[Option<f64>], bounds: Option<[f64; 2]>) -> Stat {
        Stat {
            bounds,
            ..Stat::of(values)
        }
    }

    /// The interval's low end, within the metric's bounds.
    pub fn low(&self) -> Option<f64> {
        let low = self.mean? - self.half_width.unwrap_or(0.0);
        Some(self.bounds.map_or(low, |[lo, _]| low.max(lo)))
    }

    /// The interval's high end, within the metric's bounds.
    pub fn high(&self) -> Option<f64> {
        let high = self.mean? + self.half_width.unwrap_or(0.0);
        Some(self.bounds.map_or(high, |[_, hi]| high.min(hi)))
    }

    /// The interval as `(low, high)`, when there is one (two seeds or more with a value).
    pub fn interval(&self) -> Option<(f64, f64)> {
        self.half_width?;
        Some((self.low()?, self.high()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        assert_eq!(t_975(4), 2.776);
        assert!((t_975(30) - 2.042).abs() < 1e-9);
        // Past the table: published values 2.021 (40), 2.000 (60), 1.980 (120).
        assert!((t_975(40) - 2.021).abs() < 1e-3, "{}", t_975(40));
        assert!((t_975(60) - 2.000).abs() < 1e-3, "{}", t_975(60));
        assert!((t_975(120) - 1.980).abs() < 1e-3, "{}", t_975(120));
        assert!(t_975(31) < t_975(30) && t_975(31) > t_975(32));
    }

    #[test]
    fn mean_and_interval_on_fixed_numbers() {
        // 1..5: mean 3, s = √2.5, half = 2.776 · √2.5 / √5.
        let s = Stat::of(&[Some(1.0), Some(2.0), Some(3.0), Some(4.0), Some(5.0)]);
        assert_eq!(s.mean, Some(3.0));
        let want = 2.776 * 2.5f64.sqrt() / 5f64.sqrt();
        assert!((s.half_width.unwrap() - want).abs() < 1e-12);
        assert_eq!((s.n, s.seeds), (5, 5));
    }

    #[test]
    fn a_bounded_metrics_interval_stays_within_its_range() {
        // Fairness 0.99 and 1.0: mean 0.995, half-width 12.706 · 0.00707 / √2 = 0.0635.
        let values = [Some(0.99), Some(1.0)];
        let s = Stat::of_bounded(&values, Some([0.0, 1.0]));
        assert_eq!(s.high(), Some(1.0));
        assert!((s.low().unwrap() - (0.995 - s.half_width.unwrap())).abs() < 1e-12);
        let (lo, hi) = s.interval().unwrap();
        assert!(lo >= 0.0 && hi <= 1.0, "{lo} {hi}");
        // Without bounds (seconds, counts) the interval is symmetric.
        let free = Stat::of(&values);
        assert!(free.high().unwrap() > 1.0);
        // A 429 ratio near 0 does not go below it.
        let r = Stat::of_bounded(&[Some(0.0), Some(0.01)], Some([0.0, 1.0]));
        assert_eq!(r.low(), Some(0.0));
    }

    #[test]
    fn nulls_are_left_out_and_counted() {
        let s = Stat::of(&[Some(10.0), None, Some(20.0)]);
        assert_eq!(s.mean, Some(15.0));
        assert_eq!((s.n, s.seeds), (2, 3));
        let one = Stat::of(&[None, Some(7.0)]);
        assert_eq!((one.mean, one.half_width), (Some(7.0), None));
        let none = Stat::of(&[None, None]);
        assert_eq!((none.mean, none.half_width, none.n), (None, None, 0));
    }
}
