//! The drawn shapes as one scenario file: a header naming the command that wrote it, the
//! targets every shape shares, and one level of a single `shape` axis per shape (so one cell
//! per shape), each setting the whole `[server]`, the whole `[[clients]]` list, the run's length
//! and, where they differ, its fairness window and targets.
//!
//! Written by hand rather than through `toml::to_string`, so the file reads as the matrix
//! files do (a shape per block, tables inline) and its bytes depend on nothing but the draws.

use std::fmt::Write as _;

use super::answers::states_quota;
use super::fleet::Group;
use super::sizing::MIN_WINDOW_S;
use super::targets::{BASE, Range};
use super::{Shape, shapes};
use crate::time::HumanDuration;

/// Seeds each shape is judged on: `[run] seeds`.
pub const SEEDS: u64 = 3;

/// The whole file for shapes 1 to `count` of `seed`.
pub fn file_text(count: usize, seed: u64) -> String {
    let all = shapes(count, seed);
    let mut out = header(count, seed);
    let width = count.to_string().len().max(3);
    for s in &all {
        level(&mut out, s, width);
    }
    out
}

fn header(count: usize, seed: u64) -> String {
    let version = env!("CARGO_PKG_VERSION");
    let mut out = format!(
        "# Written by `throttle-sim shapes --count {count} --seed {seed}` (throttle-sim {version}):\n\
         # {count} API shapes and fleets drawn at random from the distribution docs/shapes.md\n\
         # describes, one cell each. The same version, count and seed write these bytes again.\n\
         #\n\
         #   throttle-sim check FILE                  fair-share in every shape, {SEEDS} seeds each\n\
         #   throttle-sim compare FILE --algorithms fair-share,oracle,independent,aimd\n\
         #   throttle-sim run FILE --cell NAME        one shape, with its charts\n\
         #   python3 scripts/shapes.py --count {count} --seed {seed}   the pass bar on these shapes\n\n"
    );
    out += "name = \"shapes\"\n";
    let _ = writeln!(
        out,
        "description = {}\n",
        quote(&format!(
            "{count} API shapes and fleets drawn by throttle-sim shapes (seed {seed}), each run \
             long enough to settle and judged on the means over {SEEDS} seeds against the \
             API-shape matrix's targets."
        ))
    );
    let _ = writeln!(
        out,
        "[run]\nseed = {seed}\nseeds = {SEEDS}\nduration = \"30m\"\nsample_every = \"1m\"\n\
         series = \"group\"\nfairness_window = \"{}\"\n",
        HumanDuration::from_secs(MIN_WINDOW_S)
    );
    out += "# Every shape sets its own [server] and [[clients]]; these are the file's defaults.\n";
    out += "[server]\nkind = \"gcra\"\nlimit = 4500\nperiod = \"1h\"\n\n";
    out += "[[clients]]\nname = \"w\"\nalgorithm = \"fair-share\"\n\n";
    out += "# The targets of every shape, unless its level says otherwise (docs/shapes.md).\n";
    out += "[expect]\n";
    for (metric, lo, hi) in BASE {
        let _ = writeln!(out, "{metric} = [{lo:?}, {hi:?}]");
    }
    out += "\n[[axes]]\nname = \"shape\"\n";
    out += "description = \"one drawn API shape and fleet per level\"\n";
    out
}

fn level(out: &mut String, s: &Shape, width: usize) {
    let name = format!(
        "{:0width$}-{}-{}",
        s.number,
        s.server.short,
        s.fleet.short()
    );
    let mut describe = format!(
        "{}; {} headers, {}; {}",
        s.server.describe,
        s.dialect,
        s.latency.describe(),
        s.fleet.describe()
    );
    if !s.why.is_empty() {
        describe += &format!(" (judged as {})", s.why.join(", "));
    }
    let _ = writeln!(out, "\n[[axes.levels]]\nname = {}", quote(&name));
    let _ = writeln!(out, "description = {}", quote(&describe));
    if !s.targets.is_empty() {
        let _ = writeln!(out, "expect = {{ {} }}", ranges(&s.targets));
    }
    out.push_str("[axes.levels.set]\n");
    let _ = writeln!(
        out,
        "\"run.duration\" = \"{}\"",
        HumanDuration::from_secs(s.duration_s)
    );
    if s.window_s != MIN_WINDOW_S {
        let _ = writeln!(
            out,
            "\"run.fairness_window\" = \"{}\"",
            HumanDuration::from_secs(s.window_s)
        );
    }
    let _ = writeln!(
        out,
        "server = {{ {}, latency = {}, headers = \"{}\" }}",
        s.server.fields,
        s.latency.toml(),
        s.dialect
    );
    out.push_str("clients = [\n");
    for g in &s.fleet.groups {
        let _ = writeln!(out, "  {},", group(g, s));
    }
    out.push_str("]\n");
}

/// One `[[clients]]` entry: fair-share, told the quota where the answers state none (every
/// other algorithm `compare --algorithms` switches to drops `quota` and `period`, which it does
/// not take).
fn group(g: &Group, s: &Shape) -> String {
    let mut text = format!(
        "{{ name = \"{}\", processes = {}, threads = {}, algorithm = \"fair-share\"",
        g.name, g.processes, g.threads
    );
    if g.start_s > 0 {
        let _ = write!(
            text,
            ", start = \"{}\"",
            HumanDuration::from_secs(g.start_s)
        );
    }
    if let Some(stop) = g.stop_s {
        let _ = write!(text, ", stop = \"{}\"", HumanDuration::from_secs(stop));
    }
    if !states_quota(s.dialect) {
        let (quota, period) = s.server.told;
        let _ = write!(
            text,
            ", quota = {quota}, period = \"{}\"",
            HumanDuration::from_secs(period)
        );
    }
    text + " }"
}

fn ranges(rs: &[Range]) -> String {
    rs.iter()
        .map(|(metric, lo, hi)| format!("{metric} = [{lo:?}, {hi:?}]"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_scenario;

    #[test]
    fn the_file_is_a_scenario_with_a_cell_per_shape() {
        let text = file_text(40, 3);
        assert!(text.starts_with("# Written by `throttle-sim shapes --count 40 --seed 3`"));
        let s = parse_scenario(&text, "shapes.toml", "shapes", &[], 1).unwrap();
        let names = s.axes.names();
        assert_eq!(names.len(), 40);
        assert!(names[0].starts_with("001-"), "{}", names[0]);
        assert_eq!(s.run.seeds, Some(SEEDS as u32));
    }

    #[test]
    fn the_same_seed_writes_the_same_bytes_and_another_seed_others() {
        assert_eq!(file_text(20, 9), file_text(20, 9));
        assert_ne!(file_text(20, 9), file_text(20, 10));
        // The first shapes of a longer file are the shorter file's.
        let short = file_text(9, 9);
        let long = file_text(20, 9);
        let body = |t: &str| t.split("[[axes.levels]]").nth(5).unwrap().to_string();
        assert_eq!(body(&short), body(&long));
    }
}
