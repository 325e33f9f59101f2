//! Randomness, owned by the engines and handed to the algorithms: the one generator type, the
//! streams one seed is split into, and a fresh seed for runs that name none.
//!
//! One seed is split into independent streams, one per thread and purpose. Streams are derived
//! by hashing, so a thread's stream does not depend on how many random numbers others drew.

use rand::SeedableRng;

/// The one random generator type: PCG is small, fast, and documented to give the same stream
/// for the same seed on every platform and version, which byte-identical outputs depend on.
pub type SimRng = rand_pcg::Pcg64Mcg;

/// A new random seed that a TOML file can record (TOML integers are signed 64-bit).
pub fn fresh_seed() -> u64 {
    rand::random::<u64>() >> 1
}

/// What a stream is used for; separate streams keep a variant that changes how often the
/// throttle draws from shifting the latencies every other variant sees.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    Throttle = 1,
    Network = 2,
    /// The server's own randomness (fault injection's random errors); one stream per run,
    /// index 0.
    Server = 3,
    /// `throttle-sim shapes`: one stream per drawn shape (the index is the shape's number), so
    /// shape `i` is the same whatever the count and however many draws the shapes before it
    /// took.
    Shapes = 4,
}

/// SplitMix64's finalizer: a fast bijective mix with good avalanche.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub fn stream(seed: u64, index: u64, purpose: Stream) -> SimRng {
    let a = mix(seed ^ 0x9e37_79b9_7f4a_7c15);
    let b = mix(a ^ index.wrapping_mul(0xd1b5_4a32_d192_ed03));
    SimRng::seed_from_u64(mix(b ^ purpose as u64))
}

/// A fixed generator for unit tests.
#[cfg(test)]
pub(crate) fn test_rng() -> SimRng {
    SimRng::seed_from_u64(7)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_repeatable_and_distinct() {
        let mut a = stream(42, 3, Stream::Throttle);
        let mut b = stream(42, 3, Stream::Throttle);
        assert_eq!(a.next_u64(), b.next_u64());
        let mut c = stream(42, 4, Stream::Throttle);
        let mut d = stream(42, 3, Stream::Network);
        let mut e = stream(43, 3, Stream::Throttle);
        let x = a.next_u64();
        assert_ne!(x, c.next_u64());
        assert_ne!(x, d.next_u64());
        assert_ne!(x, e.next_u64());
    }
}
