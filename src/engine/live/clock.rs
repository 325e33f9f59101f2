//! The live engine's clock: virtual nanoseconds are real time since the run's origin multiplied
//! by `time_scale`, so `time_scale = 60` runs an hour of the algorithms' time in a real minute.
//!
//! Processes cannot share an `Instant`, so the origin crosses process boundaries as wall-clock
//! nanoseconds since the Unix epoch and is turned back into a monotonic `Instant` on arrival.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::time::{Nanos, duration_from_secs, duration_nanos, instant_after, scaled_nanos};

#[derive(Clone, Copy, Debug)]
pub struct ScaledClock {
    origin: Instant,
    scale: f64,
}

impl ScaledClock {
    /// A clock whose virtual time 0 is now.
    pub fn starting_now(scale: f64) -> Self {
        ScaledClock {
            origin: Instant::now(),
            scale,
        }
    }

    /// The clock another process started at `origin_unix_nanos` (wall clock).
    pub fn from_unix_origin(origin_unix_nanos: u64, scale: f64) -> Self {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let origin_wall = UNIX_EPOCH + Duration::from_nanos(origin_unix_nanos);
        let origin = match wall.duration_since(origin_wall) {
            Ok(ago) => now.checked_sub(ago).unwrap_or(now),
            Err(ahead) => instant_after(now, ahead.duration()),
        };
        ScaledClock { origin, scale }
    }

    /// Wall-clock nanoseconds since the Unix epoch of this clock's origin, for other processes.
    pub fn unix_origin(&self) -> u64 {
        let wall = SystemTime::now() - self.origin.elapsed();
        wall.duration_since(UNIX_EPOCH).map_or(0, duration_nanos)
    }

    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Virtual time now.
    pub fn now(&self) -> Nanos {
        self.to_virtual(self.origin.elapsed())
    }

    /// The real instant at which virtual time reaches `t`; a time past [`crate::time::FOREVER`]
    /// of real time (a server's huge reset, a tiny scale) is that far, not an overflow.
    pub fn instant_at(&self, t: Nanos) -> Instant {
        instant_after(self.origin, self.to_real(t))
    }

    /// A virtual span as real time.
    pub fn to_real(&self, d: Nanos) -> Duration {
        duration_from_secs(d as f64 / self.scale / 1e9)
    }

    /// A real span as virtual time.
    pub fn to_virtual(&self, d: Duration) -> Nanos {
        scaled_nanos(d, self.scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_converts_both_ways() {
        let c = ScaledClock::starting_now(60.0);
        assert_eq!(c.to_virtual(Duration::from_secs(1)), 60_000_000_000);
        assert_eq!(c.to_real(60_000_000_000), Duration::from_secs(1));
        assert_eq!(
            c.instant_at(120_000_000_000) - c.instant_at(0),
            Duration::from_secs(2)
        );
    }

    /// A time a server names cannot crash the clock: a virtual time past what an `Instant`
    /// holds once turned into real time (a server's reset of 2^64 − 1, a tiny scale) panicked
    /// with "overflow when adding duration to instant" (or, smaller still, in
    /// `Duration::from_secs_f64`); it is a century away instead.
    #[test]
    fn a_time_past_any_clock_is_a_century_away_not_a_panic() {
        for scale in [1e-9, 1e-12, 1e-300, 1.0] {
            let c = ScaledClock::starting_now(scale);
            let far = c.instant_at(u64::MAX);
            assert!(far > c.instant_at(0), "{scale}");
            assert!(far - c.instant_at(0) <= crate::time::FOREVER, "{scale}");
        }
        let c = ScaledClock::starting_now(0.0);
        let _ = c.instant_at(1);
        assert_eq!(c.to_virtual(Duration::MAX), 0);
    }

    #[test]
    fn an_origin_survives_the_trip_through_the_wall_clock() {
        let c = ScaledClock::starting_now(1.0);
        let again = ScaledClock::from_unix_origin(c.unix_origin(), 1.0);
        let gap = c.now().abs_diff(again.now());
        // The two readings differ only by the wall clock's jitter between the calls.
        assert!(gap < 5_000_000, "{gap} ns apart");
    }
}
