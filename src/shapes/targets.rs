//! What a drawn shape is judged on: the matrix's targets (`scenarios/gauntlet/api_shapes.toml`),
//! applied by the same rules, so a shape is met exactly where a matrix cell like it would be.
//!
//! - every shape: fewer than 0.5 % 429s, utilization and fairness at least 0.97;
//! - a rule that counts in windows (fixed, sliding, counter, a stack of them): 1 % 429s;
//! - a churning fleet: fairness over the whole run counts joins and leaves as unfairness, so
//!   it is judged on windowed fairness (at least 0.97) instead;
//! - 200 or more one-thread processes starting together: each believes it is alone until it
//!   has read the level twice, so 3 % 429s, at most 0.5 % in the second half, fairness 0.95
//!   (windowed, if it churns);
//! - more threads at once than the rule admits at once (a bucket's size, a window's limit,
//!   nginx's burst + 1): the first requests alone force refusals before any reading can tell
//!   the crowd's size, so only the second half's 429s are judged (at most 0.5 %).
//!
//! Later rules win where two set one metric, as the matrix's `[[cells]]` do.

use super::fleet::{Fleet, MANY_SINGLES};
use super::server::Server;

/// One `[expect]` range: metric, low, high.
pub type Range = (&'static str, f64, f64);

/// The file's own `[expect]`: what every shape is judged on unless its level says otherwise.
pub const BASE: [Range; 3] = [
    ("ratio_429", 0.0, 0.005),
    ("utilization", 0.97, 1.0),
    ("fairness", 0.97, 1.0),
];

/// The ranges a shape judges differently from [`BASE`], in a fixed order, and the words for
/// why (for its description).
pub fn targets(server: &Server, fleet: &Fleet) -> (Vec<Range>, Vec<&'static str>) {
    let mut ranges: Vec<Range> = BASE.to_vec();
    let mut why = Vec::new();
    let mut set =
        |metric: &'static str, lo: f64, hi: f64| match ranges.iter_mut().find(|r| r.0 == metric) {
            Some(r) => *r = (metric, lo, hi),
            None => ranges.push((metric, lo, hi)),
        };
    if server.windowed {
        set("ratio_429", 0.0, 0.01);
        why.push("a window rule");
    }
    let fairness = if fleet.churn {
        set("fairness", 0.0, 1.0);
        why.push("churn");
        "fairness_windowed"
    } else {
        "fairness"
    };
    set(fairness, 0.97, 1.0);
    if fleet.singles_at_start() >= MANY_SINGLES {
        set("ratio_429", 0.0, 0.03);
        set("ratio_429_late", 0.0, 0.005);
        set(fairness, 0.95, 1.0);
        why.push("many one-thread processes");
    }
    if fleet.peak_threads() > server.bucket {
        set("ratio_429", 0.0, 1.0);
        set("ratio_429_late", 0.0, 0.005);
        why.push("more threads than tokens");
    }
    ranges.retain(|r| !BASE.contains(r));
    (ranges, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shapes::fleet::Group;

    fn server(bucket: u64, windowed: bool) -> Server {
        Server {
            fields: String::new(),
            describe: String::new(),
            short: String::new(),
            rate: 1.0,
            period_s: 1,
            bucket,
            windowed,
            told: (1, 1),
        }
    }

    fn fleet(groups: &[(u64, u64)], churn: bool) -> Fleet {
        Fleet {
            groups: groups
                .iter()
                .map(|&(processes, threads)| Group {
                    name: "w".into(),
                    processes,
                    threads,
                    start_s: 0,
                    stop_s: None,
                })
                .collect(),
            churn,
        }
    }

    #[test]
    fn the_matrix_rules_apply_as_its_cells_apply_them() {
        // 5 x 5 on a 100-token bucket: the base targets, nothing to write.
        assert_eq!(
            targets(&server(100, false), &fleet(&[(5, 5)], false)).0,
            vec![]
        );
        // A window rule: 1 %.
        assert_eq!(
            targets(&server(100, true), &fleet(&[(5, 5)], false)).0,
            vec![("ratio_429", 0.0, 0.01)]
        );
        // 500 + 500 x 1 on 5 tokens: many singles, then more threads than tokens wins the 429s.
        let (r, why) = targets(&server(5, false), &fleet(&[(1, 500), (500, 1)], false));
        assert_eq!(
            r,
            vec![
                ("ratio_429", 0.0, 1.0),
                ("fairness", 0.95, 1.0),
                ("ratio_429_late", 0.0, 0.005),
            ]
        );
        assert_eq!(
            why,
            ["many one-thread processes", "more threads than tokens"]
        );
        // Churn: fairness free, windowed fairness judged.
        assert_eq!(
            targets(&server(100, false), &fleet(&[(2, 4), (2, 4)], true)).0,
            vec![("fairness", 0.0, 1.0), ("fairness_windowed", 0.97, 1.0)]
        );
    }
}
