//! A short, stable stand-in for a secret: `serve` shows API keys (`Authorization` values) in
//! `GET /_stats` and its Ctrl-C summary by fingerprint, never as typed: a screen or a log is no
//! place for a credential.
//!
//! The hash is 64-bit FNV-1a, written out here because std's `DefaultHasher` may change
//! between Rust releases and the fingerprint must not: the same token gives the same
//! fingerprint on every machine and every build, so a user can compute it to find their key.
//! It is not a cryptographic hash; only 32 bits are shown, so a long random token cannot be
//! told from its fingerprint, but a short guessable one could be found by trying candidates.

/// FNV-1a, 64 bits (the offset basis and prime of the published algorithm).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `fnv:` and the first 8 hex digits of the key's FNV-1a hash, e.g. `fnv:a430d846`.
pub fn fingerprint(key: &str) -> String {
    shown_hash(fnv1a64(key.as_bytes()))
}

/// The fingerprint of a key whose FNV-1a hash is `fnv` (see [`fingerprint`]).
pub fn shown_hash(fnv: u64) -> String {
    format!("fnv:{:08x}", fnv >> 32)
}

/// A 64-bit hash of `bytes` keyed afresh in every process (SipHash, through std's
/// `RandomState`): what tells secrets apart inside one run without keeping them. Unlike the
/// shown fingerprint it is wide enough that two of 100,000 keys agree about once in three
/// billion runs, and no one can make two agree on purpose without the run's key.
pub fn keyed_hash(bytes: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    static KEYS: std::sync::OnceLock<std::hash::RandomState> = std::sync::OnceLock::new();
    KEYS.get_or_init(std::hash::RandomState::new)
        .hash_one(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_fnv1a_values() {
        // The reference vectors of the FNV-1a 64-bit algorithm.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn the_keyed_hash_tells_apart_what_the_fingerprint_does_not() {
        // These two share the shown fingerprint `fnv:820a5676`.
        let (a, b) = (b"Bearer tok157397", b"Bearer tok678860");
        assert_eq!(fnv1a64(a) >> 32, fnv1a64(b) >> 32);
        assert_ne!(keyed_hash(a), keyed_hash(b));
        assert_eq!(keyed_hash(a), keyed_hash(a));
    }

    #[test]
    fn is_short_stable_and_hides_the_token() {
        let f = fingerprint("Bearer s3cr3t-token");
        assert_eq!(f, fingerprint("Bearer s3cr3t-token"));
        assert_ne!(f, fingerprint("Bearer s3cr3t-tokeN"));
        assert_eq!(f.len(), "fnv:".len() + 8);
        assert!(!f.contains("s3cr3t"));
        assert_eq!(fingerprint("foobar"), "fnv:85944171");
    }
}
