//! Time inside the law: whole nanoseconds (`u64`) since the caller's own epoch, so that every
//! implementation of the law (this crate, the simulator, the ports in `ports/`) rounds alike
//! and the same answers give the same waits to the nanosecond.

use std::time::Duration;

pub type Nanos = u64;

const NANOS_PER_SEC: f64 = 1e9;

/// Seconds as a float.
pub fn secs(n: Nanos) -> f64 {
    n as f64 / NANOS_PER_SEC
}

/// Seconds to nanoseconds, saturating: negative and NaN become 0, huge values the maximum;
/// halves round up.
pub fn from_secs(s: f64) -> Nanos {
    if s.is_nan() || s <= 0.0 {
        return 0;
    }
    let n = s * NANOS_PER_SEC;
    if n >= u64::MAX as f64 {
        return u64::MAX;
    }
    let whole = n as u64;
    if n - whole as f64 >= 0.5 {
        whole + 1
    } else {
        whole
    }
}

/// A caller's `Duration` as nanoseconds (saturating past 584 years).
pub fn nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
