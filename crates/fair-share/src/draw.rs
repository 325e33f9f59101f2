//! The law's only randomness (where a process's threads sit in line, each send's jitter, a
//! `Retry-After`'s stretch), drawn through [`Draw`] so a caller can supply its own generator:
//! the simulator its seeded one, a test a constant.

/// A source of uniform numbers.
pub trait Draw {
    /// A number in `[lo, hi)`.
    fn below(&mut self, lo: f64, hi: f64) -> f64;
    /// A number in `[lo, hi]`.
    fn within(&mut self, lo: f64, hi: f64) -> f64;
}

/// A small generator (SplitMix64) for callers without one of their own: the law needs a few
/// draws per request, not cryptographic quality.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// Seeded from the standard library's per-process random hasher keys.
    pub fn from_entropy() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x9e37_79b9_7f4a_7c15);
        SplitMix(h.finish())
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A float in `[0, 1)` from the top 53 bits.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl Draw for SplitMix {
    fn below(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.unit() * (hi - lo)
    }
    fn within(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.unit() * (hi - lo)
    }
}

/// Every draw at the same point of its range, `lo + u·(hi − lo)`: a repeatable constant (an
/// event script that gives one number draws so, through a [`Cycle`] of one).
#[derive(Clone, Copy, Debug)]
pub struct Fixed(pub f64);

impl Draw for Fixed {
    fn below(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.0 * (hi - lo)
    }
    fn within(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.0 * (hi - lo)
    }
}

/// The `k`-th draw at `lo + u[k mod len]·(hi − lo)`: the ports' event scripts that list their
/// draws, so a port that draws one more, one fewer or in another order gives other waits.
#[derive(Clone, Debug)]
pub struct Cycle {
    units: Vec<f64>,
    next: usize,
}

impl Cycle {
    /// Goes round `units` from the first; `None` when there is none to go round.
    pub fn new(units: Vec<f64>) -> Option<Self> {
        (!units.is_empty()).then_some(Cycle { units, next: 0 })
    }

    fn unit(&mut self) -> f64 {
        let u = self.units[self.next];
        self.next = (self.next + 1) % self.units.len();
        u
    }
}

impl Draw for Cycle {
    fn below(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.unit() * (hi - lo)
    }
    fn within(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.unit() * (hi - lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_goes_round_its_list_in_order_over_each_range() {
        let mut c = Cycle::new(vec![0.25, 0.5, 0.0]).expect("a list");
        assert_eq!(c.below(0.0, 1.0), 0.25);
        assert_eq!(c.within(-1.0, 1.0), 0.0);
        assert_eq!(c.within(2.0, 4.0), 2.0);
        assert_eq!(c.below(0.0, 8.0), 2.0);
        assert!(Cycle::new(Vec::new()).is_none());
    }
}
