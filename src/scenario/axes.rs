//! `[[axes]]`: one scenario file that stands for many, the cartesian product of named levels.
//!
//! Each axis is a named list of levels, each level a table of overrides like a variant's
//! `set` (plus an `expect` of its own). A *cell* picks one level of every axis, is named by
//! their names joined with `/` in the order the axes are written (`5x5/gcra_5ps`), and is the
//! file with its levels' overrides applied in that order (a later axis wins where two set the
//! same path), then the `[[cells]]` rules that match it, then the command line's `--set`s.
//! `compare` and `check` expand every cell; `run` takes one (`--cell`, which is `--set cell=…`).
//!
//! `[[cells]]` rules say what holds for a set of cells rather than for one axis's level: a rule
//! matches a cell when, for every axis it names, the cell's level is one of those listed
//! (`match = { fleet = ["200x1", "1x200"], server = "gcra_5ps" }`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{EXPECTABLE_METRICS, Expect, Override, OverrideError};

/// The most cells one file may stand for: a product of a few axes of tens of levels fits well
/// below it, and each cell is at least a run per seed.
pub const MAX_CELLS: usize = 10_000;

/// The top-level field that picks a cell (`--cell NAME` is `--set cell=NAME`).
pub const CELL_FIELD: &str = "cell";

/// `--cell NAME`, which is `--set cell=NAME`, quoted in errors as the flag was typed.
pub fn cell_override(name: &str) -> Override {
    Override::from_flag(
        "--cell",
        name,
        CELL_FIELD,
        toml::Value::String(name.to_string()),
    )
}

/// One `[[axes]]` entry: a dimension of the scenario and its levels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub levels: Vec<Level>,
}

/// One level of an axis: overrides applied to the file, and ranges added to its `[expect]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Path → value, as `--set` takes them; applied in the order written.
    #[serde(default)]
    pub set: toml::Table,
    #[serde(default)]
    pub expect: Expect,
}

/// One `[[cells]]` rule: overrides and ranges for every cell it matches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellRule {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Axis name → the levels (one name or a list) a matching cell has on that axis.
    #[serde(rename = "match")]
    pub matches: BTreeMap<String, Levels>,
    #[serde(default)]
    pub set: toml::Table,
    #[serde(default)]
    pub expect: Expect,
}

/// One level name or several.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Levels {
    One(String),
    Many(Vec<String>),
}

impl Levels {
    fn contains(&self, name: &str) -> bool {
        match self {
            Levels::One(n) => n == name,
            Levels::Many(ns) => ns.iter().any(|n| n == name),
        }
    }

    fn names(&self) -> Vec<&str> {
        match self {
            Levels::One(n) => vec![n.as_str()],
            Levels::Many(ns) => ns.iter().map(String::as_str).collect(),
        }
    }
}

/// A file's axes and rules.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Axes {
    pub axes: Vec<Axis>,
    pub rules: Vec<CellRule>,
}

/// One cell: its name, its level on each axis, and the overrides that make it.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub name: String,
    /// The level's name on each axis, in the axes' order.
    pub levels: Vec<String>,
    pub overrides: Vec<Override>,
}

/// Why a cell cannot be picked or made.
#[derive(Debug, thiserror::Error)]
pub enum CellError {
    #[error(
        "this file has [[axes]] and stands for {count} cells; pick one with --cell (e.g. \
         --cell {example}), or run them all with `compare` or `check`"
    )]
    NeedsCell { count: usize, example: String },
    #[error("this file has no [[axes]], so it has no cell `{0}`")]
    NoAxes(String),
    #[error(
        "no cell `{name}`: a cell names one level of each axis, joined by `/` ({}); e.g. `{example}`",
        axes.join(" / ")
    )]
    NoSuchCell {
        name: String,
        axes: Vec<String>,
        example: String,
    },
    #[error("{at}: {source}")]
    Override {
        at: String,
        #[source]
        source: OverrideError,
    },
}

impl Axes {
    pub fn is_empty(&self) -> bool {
        self.axes.is_empty()
    }

    /// How many cells the axes make (saturating, for the bound check).
    pub fn count(&self) -> usize {
        self.axes
            .iter()
            .fold(1usize, |n, a| n.saturating_mul(a.levels.len()))
    }

    /// Every cell's name, the first axis varying slowest.
    pub fn names(&self) -> Vec<String> {
        self.indices()
            .map(|ix| self.levels_of(&ix).join("/"))
            .collect()
    }

    /// Every cell, the first axis varying slowest.
    pub fn cells(&self) -> Result<Vec<Cell>, CellError> {
        self.indices().map(|ix| self.make(&ix)).collect()
    }

    /// The cell of that name.
    pub fn cell(&self, name: &str) -> Result<Cell, CellError> {
        if self.axes.is_empty() {
            return Err(CellError::NoAxes(name.to_string()));
        }
        let parts: Vec<&str> = name.split('/').collect();
        let ix: Option<Vec<usize>> = (parts.len() == self.axes.len())
            .then(|| {
                self.axes
                    .iter()
                    .zip(&parts)
                    .map(|(a, p)| a.levels.iter().position(|l| l.name == *p))
                    .collect()
            })
            .flatten();
        match ix {
            Some(ix) => self.make(&ix),
            None => Err(CellError::NoSuchCell {
                name: name.to_string(),
                axes: self
                    .axes
                    .iter()
                    .map(|a| {
                        let names: Vec<&str> = a.levels.iter().map(|l| l.name.as_str()).collect();
                        format!("{}: {}", a.name, names.join(", "))
                    })
                    .collect(),
                example: self.names().into_iter().next().unwrap_or_default(),
            }),
        }
    }

    /// Every combination of level indices, the first axis varying slowest.
    fn indices(&self) -> impl Iterator<Item = Vec<usize>> + '_ {
        let n = if self.axes.is_empty() {
            0
        } else {
            self.count()
        };
        (0..n).map(move |mut k| {
            let mut ix = vec![0; self.axes.len()];
            for (i, a) in self.axes.iter().enumerate().rev() {
                let len = a.levels.len().max(1);
                ix[i] = k % len;
                k /= len;
            }
            ix
        })
    }

    fn levels_of(&self, ix: &[usize]) -> Vec<String> {
        self.axes
            .iter()
            .zip(ix)
            .map(|(a, &i)| a.levels[i].name.clone())
            .collect()
    }

    fn make(&self, ix: &[usize]) -> Result<Cell, CellError> {
        let levels = self.levels_of(ix);
        let mut overrides = Vec::new();
        for (a, &i) in self.axes.iter().zip(ix) {
            let l = &a.levels[i];
            let at = format!("level `{}` of axis `{}`", l.name, a.name);
            overrides.extend(overrides_of(&l.set, &l.expect, &at)?);
        }
        for (k, rule) in self.rules.iter().enumerate() {
            let matches = rule.matches.iter().all(|(axis, wanted)| {
                self.axes
                    .iter()
                    .position(|a| &a.name == axis)
                    .is_some_and(|p| wanted.contains(&levels[p]))
            });
            if matches {
                let at = format!("[[cells]] rule {}", k + 1);
                overrides.extend(overrides_of(&rule.set, &rule.expect, &at)?);
            }
        }
        Ok(Cell {
            name: levels.join("/"),
            levels,
            overrides,
        })
    }

    /// What is wrong with the axes and rules as written: (where, message) pairs, where being
    /// `axes[i]…` or `cells[i]…` relative to the top of the file.
    pub fn problems(&self) -> Vec<(Vec<PathStep>, String)> {
        let mut out = Vec::new();
        let mut problem = |at: Vec<PathStep>, m: String| out.push((at, m));
        if self.count() > MAX_CELLS {
            problem(
                vec![PathStep::Key("axes")],
                format!(
                    "the axes make {} cells; at most {MAX_CELLS} are allowed",
                    self.count()
                ),
            );
        }
        for (i, a) in self.axes.iter().enumerate() {
            let here = |rest: &[PathStep]| {
                let mut p = vec![PathStep::Key("axes"), PathStep::Index(i)];
                p.extend_from_slice(rest);
                p
            };
            if let Some(m) = bad_name(&a.name) {
                problem(here(&[PathStep::Key("name")]), m);
            }
            if self.axes[..i].iter().any(|o| o.name == a.name) {
                problem(
                    here(&[PathStep::Key("name")]),
                    format!("`{}` names two axes", a.name),
                );
            }
            if a.levels.is_empty() {
                problem(
                    here(&[PathStep::Key("levels")]),
                    "an axis needs at least one level".into(),
                );
            }
            for (j, l) in a.levels.iter().enumerate() {
                let at = |k: &'static str| {
                    here(&[
                        PathStep::Key("levels"),
                        PathStep::Index(j),
                        PathStep::Key(k),
                    ])
                };
                if let Some(m) = bad_name(&l.name) {
                    problem(at("name"), m);
                }
                if a.levels[..j].iter().any(|o| o.name == l.name) {
                    problem(
                        at("name"),
                        format!("`{}` names two levels of axis `{}`", l.name, a.name),
                    );
                }
                for m in set_problems(&l.set) {
                    problem(at("set"), m);
                }
                for m in expect_problems(&l.expect) {
                    problem(at("expect"), m);
                }
            }
        }
        for (i, r) in self.rules.iter().enumerate() {
            let at = |k: &'static str| {
                vec![PathStep::Key("cells"), PathStep::Index(i), PathStep::Key(k)]
            };
            for (axis, wanted) in &r.matches {
                let Some(a) = self.axes.iter().find(|a| &a.name == axis) else {
                    let known: Vec<&str> = self.axes.iter().map(|a| a.name.as_str()).collect();
                    problem(
                        at("match"),
                        format!("no axis `{axis}` (axes: {})", known.join(", ")),
                    );
                    continue;
                };
                for name in wanted.names() {
                    if !a.levels.iter().any(|l| l.name == name) {
                        problem(at("match"), format!("axis `{axis}` has no level `{name}`"));
                    }
                }
            }
            for m in set_problems(&r.set) {
                problem(at("set"), m);
            }
            for m in expect_problems(&r.expect) {
                problem(at("expect"), m);
            }
        }
        out
    }
}

/// A step of a problem's path, so the loader can give its line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PathStep {
    Key(&'static str),
    Index(usize),
}

/// A level's or rule's `set` and `expect` as overrides, `at` naming where they come from.
fn overrides_of(set: &toml::Table, expect: &Expect, at: &str) -> Result<Vec<Override>, CellError> {
    let mut out = Vec::new();
    for (path, value) in set {
        let mut o = Override::new(path, value.clone()).map_err(|source| CellError::Override {
            at: at.to_string(),
            source,
        })?;
        o.raw = format!("{at}: {path}");
        out.push(o);
    }
    for (metric, [lo, hi]) in expect {
        let range = toml::Value::Array(vec![(*lo).into(), (*hi).into()]);
        let mut o = Override::new(&format!("expect.{metric}"), range).map_err(|source| {
            CellError::Override {
                at: at.to_string(),
                source,
            }
        })?;
        o.raw = format!("{at}: expect.{metric}");
        out.push(o);
    }
    Ok(out)
}

/// Axis and level names become parts of a cell's name and of folder names: no `/`, no
/// spaces, nothing unprintable.
fn bad_name(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a name may not be empty".into());
    }
    if name.len() > 64 {
        return Some(format!("`{name}` is longer than 64 characters"));
    }
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+');
    (!name.chars().all(ok)).then(|| {
        format!(
            "`{name}` may use only ASCII letters, digits and _ - . + (it names cells and folders)"
        )
    })
}

fn set_problems(set: &toml::Table) -> Vec<String> {
    set.iter()
        .filter_map(|(path, value)| Override::new(path, value.clone()).err())
        .map(|e| e.to_string())
        .collect()
}

fn expect_problems(expect: &Expect) -> Vec<String> {
    expect
        .keys()
        .filter(|m| !EXPECTABLE_METRICS.contains(&m.as_str()))
        .map(|m| {
            format!(
                "unknown metric `{m}`, expected one of: {}{}",
                EXPECTABLE_METRICS.join(", "),
                crate::suggest::did_you_mean(m, EXPECTABLE_METRICS.iter().copied())
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axes(text: &str) -> Axes {
        #[derive(Deserialize)]
        struct File {
            axes: Vec<Axis>,
            #[serde(default)]
            cells: Vec<CellRule>,
        }
        let f: File = toml::from_str(text).unwrap();
        Axes {
            axes: f.axes,
            rules: f.cells,
        }
    }

    const TWO: &str = r#"
[[axes]]
name = "fleet"
levels = [
  { name = "1x1", set = { "clients.*.threads" = 1 } },
  { name = "5x5", set = { "clients.*.threads" = 5, "clients.*.processes" = 5 } },
]
[[axes]]
name = "server"
levels = [
  { name = "a", set = { "server.limit" = 10 }, expect = { utilization = [0.9, 1.0] } },
  { name = "b", set = { "server.limit" = 20, "clients.*.threads" = 2 } },
  { name = "c" },
]
[[cells]]
match = { fleet = "5x5", server = ["a", "c"] }
expect = { ratio_429 = [0, 0.5] }
"#;

    #[test]
    fn cells_are_the_product_first_axis_slowest() {
        let a = axes(TWO);
        assert_eq!(a.count(), 6);
        assert_eq!(
            a.names(),
            ["1x1/a", "1x1/b", "1x1/c", "5x5/a", "5x5/b", "5x5/c"]
        );
        assert!(a.problems().is_empty(), "{:?}", a.problems());
    }

    #[test]
    fn a_cell_applies_its_levels_in_axis_order_then_matching_rules() {
        let a = axes(TWO);
        let raw = |c: &Cell| -> Vec<String> { c.overrides.iter().map(|o| o.raw.clone()).collect() };
        let c = a.cell("1x1/b").unwrap();
        assert_eq!(c.levels, ["1x1", "b"]);
        // The later axis sets threads after the earlier one: it wins.
        assert_eq!(
            raw(&c),
            [
                "level `1x1` of axis `fleet`: clients.*.threads",
                "level `b` of axis `server`: server.limit",
                "level `b` of axis `server`: clients.*.threads",
            ]
        );
        let c = a.cell("5x5/a").unwrap();
        let last = c.overrides.last().unwrap();
        assert_eq!(last.raw, "[[cells]] rule 1: expect.ratio_429");
        assert_eq!(last.path, ["expect", "ratio_429"]);
        assert!(raw(&c).contains(&"level `a` of axis `server`: expect.utilization".to_string()));
        // The rule does not match 5x5/b or 1x1/a.
        assert!(
            !raw(&a.cell("5x5/b").unwrap())
                .iter()
                .any(|r| r.contains("rule"))
        );
        assert!(
            !raw(&a.cell("1x1/a").unwrap())
                .iter()
                .any(|r| r.contains("rule"))
        );
    }

    #[test]
    fn an_unknown_cell_names_the_axes_and_an_example() {
        let a = axes(TWO);
        let e = a.cell("5x5").unwrap_err().to_string();
        assert!(e.contains("fleet: 1x1, 5x5 / server: a, b, c"), "{e}");
        assert!(e.contains("e.g. `1x1/a`"), "{e}");
        assert!(a.cell("9x9/a").is_err());
        let none = Axes::default();
        assert!(matches!(none.cell("x"), Err(CellError::NoAxes(_))));
        assert!(none.names().is_empty());
    }

    #[test]
    fn bad_axes_are_named() {
        let a = axes(
            r#"
[[axes]]
name = "a b"
levels = [{ name = "x" }, { name = "x", set = { "server..limit" = 1 } }]
[[axes]]
name = "e"
levels = []
[[cells]]
match = { nope = "x", e = "y" }
expect = { nonsense = [0, 1] }
"#,
        );
        let ms: Vec<String> = a.problems().into_iter().map(|(_, m)| m).collect();
        let all = ms.join("\n");
        for part in [
            "`a b` may use only",
            "`x` names two levels",
            "not a field path",
            "an axis needs at least one level",
            "no axis `nope`",
            "axis `e` has no level `y`",
            "unknown metric `nonsense`",
        ] {
            assert!(all.contains(part), "{part} not in:\n{all}");
        }
    }

    #[test]
    fn too_many_cells_are_refused() {
        let level = |i: usize| Level {
            name: format!("l{i}"),
            description: String::new(),
            set: toml::Table::new(),
            expect: Expect::new(),
        };
        let axis = |n: &str| Axis {
            name: n.into(),
            description: String::new(),
            levels: (0..101).map(level).collect(),
        };
        let a = Axes {
            axes: vec![axis("a"), axis("b")],
            rules: Vec::new(),
        };
        assert!(a.problems()[0].1.contains("10201 cells"));
    }
}
