//! The random primitives every draw of a shape is made of. Rate limits and fleet sizes span
//! orders of magnitude (1 to 100,000 requests, 1 to 2,000 threads), so most draws are
//! log-uniform: each decade is as likely as the next, and a uniform draw would put nearly every
//! shape in the top decade.

use rand::RngExt;

use crate::rng::SimRng;

/// A real log-uniform on `[lo, hi]` (`lo > 0`): its logarithm is uniform.
pub fn log_uniform(rng: &mut SimRng, lo: f64, hi: f64) -> f64 {
    if hi <= lo {
        return lo;
    }
    rng.random_range(lo.ln()..hi.ln()).exp().clamp(lo, hi)
}

/// A whole number log-uniform on `lo..=hi` (`lo ≥ 1`): the real draw on `[lo, hi + 1)`
/// rounded down, so `k` comes with probability `ln((k + 1) / k) / ln((hi + 1) / lo)` and one
/// is as likely among 1 and 2 as 100 is among 100 to 199.
pub fn log_uniform_int(rng: &mut SimRng, lo: u64, hi: u64) -> u64 {
    let lo = lo.max(1);
    if hi <= lo {
        return lo;
    }
    (log_uniform(rng, lo as f64, (hi + 1) as f64).floor() as u64).clamp(lo, hi)
}

/// A whole number uniform on `lo..=hi`.
pub fn uniform_int(rng: &mut SimRng, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    rng.random_range(lo..=hi)
}

/// A real uniform on `[lo, hi)`.
pub fn uniform(rng: &mut SimRng, lo: f64, hi: f64) -> f64 {
    if hi <= lo {
        return lo;
    }
    rng.random_range(lo..hi)
}

/// True with probability `p`.
pub fn chance(rng: &mut SimRng, p: f64) -> bool {
    rng.random_bool(p.clamp(0.0, 1.0))
}

/// One of `choices`, each with its weight (the weights need not sum to 1).
pub fn weighted<T: Copy>(rng: &mut SimRng, choices: &[(T, f64)]) -> T {
    let total: f64 = choices.iter().map(|c| c.1).sum();
    let mut x = uniform(rng, 0.0, total);
    for &(choice, weight) in choices {
        if x < weight {
            return choice;
        }
        x -= weight;
    }
    choices.last().expect("at least one choice").0
}

/// One of `choices`, each as likely.
pub fn one_of<T: Copy>(rng: &mut SimRng, choices: &[T]) -> T {
    choices[rng.random_range(0..choices.len())]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;

    #[test]
    fn log_uniform_whole_numbers_stay_in_range_and_favour_no_decade() {
        let mut rng = test_rng();
        let draws: Vec<u64> = (0..30_000)
            .map(|_| log_uniform_int(&mut rng, 1, 100_000))
            .collect();
        assert!(draws.iter().all(|&d| (1..=100_000).contains(&d)));
        // Five decades, each about a fifth of the draws.
        for decade in 0..5 {
            let (lo, hi) = (10u64.pow(decade), 10u64.pow(decade + 1));
            let share = draws.iter().filter(|&&d| d >= lo && d < hi).count() as f64 / 30_000.0;
            assert!((share - 0.2).abs() < 0.02, "decade {decade}: {share}");
        }
        assert_eq!(log_uniform_int(&mut rng, 7, 7), 7);
        assert_eq!(log_uniform_int(&mut rng, 9, 3), 9);
    }

    #[test]
    fn weighted_choices_follow_their_weights() {
        let mut rng = test_rng();
        let n = 20_000;
        let heavy = (0..n)
            .filter(|_| weighted(&mut rng, &[('a', 3.0), ('b', 1.0)]) == 'a')
            .count() as f64;
        assert!((heavy / n as f64 - 0.75).abs() < 0.02);
    }
}
