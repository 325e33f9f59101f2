//! `throttle-sim shapes`: API shapes and fleets drawn at random from a documented distribution
//! (docs/shapes.md), written as one `[[axes]]` scenario with a cell per shape, so `check` and
//! `compare` judge a law on them cell by cell.
//!
//! A fixed list of cells can be learned: a law tuned until it meets every cell of the matrix
//! may still fall off a cliff one step beside it. A generator cannot be learned the same way:
//! each seed draws shapes nobody tuned for. Every shape is drawn from its own random stream
//! (`rng::Stream::Shapes`, indexed by the shape's number), so the same seed gives the same file
//! byte for byte, and the first 30 shapes of `--count 300` are the shapes of `--count 30`.
//!
//! A shape is drawn in this order, each draw knowing the ones before it: the fleet
//! (`fleet.rs`), the latency and header dialect (`answers.rs`), the rule with a limit the fleet
//! and latency allow (`server.rs`, within `sizing.rs`'s bounds), then the run's length and
//! fairness window (`sizing.rs`), the churning groups' times (`fleet.rs`) and the targets
//! (`targets.rs`). `write.rs` turns the shapes into the file.

mod answers;
mod draw;
mod fleet;
mod server;
mod sizing;
mod targets;
mod write;

pub use write::file_text;

use answers::{Latency, draw_dialect, draw_latency};
use fleet::{Fleet, draw_fleet};
use server::{Server, draw_server};
use sizing::RateBounds;
use targets::Range;

use crate::rng::{Stream, stream};

/// The most shapes one file holds (the most cells a file may stand for).
pub const MAX_COUNT: usize = crate::scenario::MAX_CELLS;

/// One drawn shape: an API, a fleet, how long it runs and what it is judged on.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// Its number in the file, from 1.
    pub number: usize,
    pub server: Server,
    pub latency: Latency,
    /// `[server] headers`.
    pub dialect: &'static str,
    pub fleet: Fleet,
    pub duration_s: u64,
    /// `[run] fairness_window`, in seconds.
    pub window_s: u64,
    /// The `[expect]` ranges that differ from the file's, and why.
    pub targets: Vec<Range>,
    pub why: Vec<&'static str>,
}

/// Shape `number` (from 1) of `seed`. A shape whose fleet and latency allow no limit on the
/// rule and periods drawn is drawn again whole, from the same stream.
pub fn draw_shape(seed: u64, number: usize) -> Shape {
    let mut rng = stream(seed, number as u64, Stream::Shapes);
    loop {
        let mut fleet = draw_fleet(&mut rng);
        let latency = draw_latency(&mut rng);
        let dialect = draw_dialect(&mut rng);
        let bounds = RateBounds::new(&fleet, latency.p99_secs());
        let Some(server) = draw_server(&mut rng, &bounds) else {
            continue;
        };
        let duration_s = sizing::duration_s(server.pace(), &fleet);
        let window_s = sizing::window_s(server.rate, fleet.total_threads());
        if fleet.churn {
            fleet.schedule(&mut rng, duration_s, window_s);
        }
        let (targets, why) = targets::targets(&server, &fleet);
        return Shape {
            number,
            server,
            latency,
            dialect,
            fleet,
            duration_s,
            window_s,
            targets,
            why,
        };
    }
}

/// Shapes 1 to `count` of `seed`.
pub fn shapes(count: usize, seed: u64) -> Vec<Shape> {
    (1..=count).map(|n| draw_shape(seed, n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_is_its_seeds_and_numbers_alone() {
        assert_eq!(draw_shape(7, 3), shapes(5, 7)[2]);
        assert_ne!(draw_shape(7, 3), draw_shape(8, 3));
        assert_ne!(draw_shape(7, 3), draw_shape(7, 4));
    }

    #[test]
    fn shapes_fit_the_bounds_of_the_distribution() {
        for s in shapes(400, 11) {
            assert!(s.duration_s >= sizing::MIN_DURATION_S, "{s:?}");
            assert!(s.duration_s <= sizing::MAX_DURATION_S, "{s:?}");
            let threads = s.fleet.total_threads() as f64;
            assert!(
                s.duration_s as f64 >= 20.0 * threads / s.server.rate - 1.0,
                "{s:?}"
            );
            assert!(
                s.server.rate * s.duration_s as f64 <= sizing::BUDGET * 1.001,
                "{s:?}"
            );
            if s.fleet.churn {
                assert!(s.duration_s >= sizing::CHURN_WINDOWS * s.window_s, "{s:?}");
            }
        }
    }
}
