//! From scenario text to a validated [`Scenario`]: parse, apply overrides, type each section
//! with its path tracked, run the range checks (`checks.rs`), and report every problem with
//! its line.

use serde::de::DeserializeOwned;

use super::axes::{Axes, Axis, CELL_FIELD, CellRule, PathStep};
use super::builder::Builder;
use super::checks::{MAX_SCENARIO_BYTES, check_name, safe_name};
use super::overrides::{apply, set_by};
use super::params::drop_foreign_fields;
use super::path::{FieldPath, Segment, line_of};
use super::{
    ClientGroup, CompareConfig, Expect, GroupCommon, MIN_SAMPLE_EVERY, Override, Problem,
    RunConfig, Scenario, ScenarioError, ServerCommon, ServerConfig, Variant,
};
use crate::config::{ConfigError, typed};
use crate::limiter::{FaultConfig, LimiterConfig, ParamStep};
use crate::store::StoreConfig;
use crate::suggest::did_you_mean;
use crate::throttle::ThrottleConfig;

/// Validate scenario text; `origin` names it in errors, `default_name` is used without `name`.
pub fn parse_scenario(
    text: &str,
    origin: &str,
    default_name: &str,
    overrides: &[Override],
    seed_if_absent: u64,
) -> Result<Scenario, ScenarioError> {
    let spans = match toml::de::DeTable::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            let line = e.span().map(|s| line_of(text, s.start));
            return Err(ScenarioError {
                origin: origin.into(),
                problems: vec![Problem {
                    line,
                    field: String::new(),
                    message: format!("not valid TOML: {}", e.message().trim()),
                    from_override: None,
                }],
            });
        }
    };
    let mut root: toml::Table = text.parse().map_err(|e: toml::de::Error| ScenarioError {
        origin: origin.into(),
        problems: vec![Problem {
            line: e.span().map(|s| line_of(text, s.start)),
            field: String::new(),
            message: toml_value_message(e.message()),
            from_override: None,
        }],
    })?;

    let mut b = Builder::default();
    let axes = b.axes(&mut root);
    let (cell, overrides) = b.chosen_cell(&mut root, overrides);
    let mut applied = Vec::new();
    if let Some(name) = &cell
        && b.problems.is_empty()
    {
        let made = axes
            .cell(name)
            .map_err(|e| ScenarioError::whole_file(origin, format!("cell: {e}")))?;
        for o in &made.overrides {
            let paths = apply(&mut root, o)
                .map_err(|e| ScenarioError::whole_file(origin, format!("{}: {e}", o.raw)))?;
            drop_foreign_fields(&mut root, &paths, GROUP_COMMON, SERVER_COMMON);
            applied.extend(paths.into_iter().map(|p| (p, o.raw.clone())));
        }
    }
    for o in overrides {
        let paths = apply(&mut root, o)
            .map_err(|e| ScenarioError::whole_file(origin, format!("--set {}: {e}", o.raw)))?;
        drop_foreign_fields(&mut root, &paths, GROUP_COMMON, SERVER_COMMON);
        applied.extend(paths.into_iter().map(|p| (p, o.raw.clone())));
    }

    let scenario = b.build(root, default_name, seed_if_absent).map(|mut s| {
        s.axes = axes;
        s.cell = cell;
        s
    });
    if b.problems.is_empty() {
        let scenario = scenario.expect("no problems means a scenario");
        return fits_when_written(scenario, origin);
    }
    let problems = b
        .problems
        .into_iter()
        .map(|(path, message)| Problem {
            line: path.line_in(text, spans.get_ref()),
            from_override: set_by(&path, &applied).map(str::to_string),
            field: path.to_string(),
            message,
        })
        .collect();
    Err(ScenarioError {
        origin: origin.into(),
        problems,
    })
}

/// `scenario`, if written out with every default (`Scenario::to_toml`, the results'
/// `scenario.toml`) it is a file the reader takes: a scenario that runs can always be drawn,
/// compared and run again from its results.
fn fits_when_written(scenario: Scenario, origin: &str) -> Result<Scenario, ScenarioError> {
    let written = scenario.to_toml().len() as u64;
    if written <= MAX_SCENARIO_BYTES {
        return Ok(scenario);
    }
    Err(ScenarioError::whole_file(
        origin,
        format!(
            "written out with every default, as its results record it, the scenario is {:.1} \
             MiB, over the {} MiB a scenario file may be (its results could not be read back \
             or run again); use fewer [[clients]] groups: one group's `processes` runs as many \
             processes as you like",
            written as f64 / f64::from(1 << 20),
            MAX_SCENARIO_BYTES >> 20
        ),
    ))
}

const TOP_LEVEL: &[&str] = &[
    "name",
    "description",
    "run",
    "server",
    "clients",
    "variants",
    "expect",
    "store",
    "compare",
    "axes",
    "cells",
    CELL_FIELD,
];
/// The `[[clients]]` fields every algorithm shares.
pub const GROUP_COMMON: &[&str] = &[
    "name",
    "processes",
    "threads",
    "start",
    "stop",
    "jobs",
    "pool",
    "stop_when_remaining_at_most",
    "key",
    "keep_algorithm",
];
/// The `[server]` fields every kind shares.
pub const SERVER_COMMON: &[&str] = &["latency", "outages", "error_rate", "headers"];

impl Builder {
    /// "did you mean" among the fields every kind shares, for the last problem when it is an
    /// unknown field that its kind's own fields had nothing near to.
    fn common_hint(&self, common: &[&str]) -> String {
        match self.problems.last() {
            Some((_, m)) if m.starts_with("unknown field") && !m.contains("did you mean") => {
                unknown_field(m).map_or(String::new(), |f| did_you_mean(f, common.iter().copied()))
            }
            _ => String::new(),
        }
    }

    fn typed<T: DeserializeOwned>(&mut self, value: toml::Value, at: &FieldPath) -> Option<T> {
        match typed(value) {
            Ok(v) => Some(v),
            Err(e) => {
                self.path_problem(at, &e);
                None
            }
        }
    }

    fn path_problem(&mut self, at: &FieldPath, e: &ConfigError) {
        let mut path = at.join_serde(e.path());
        let message = clean_message(e.inner().message());
        // Point at the unknown field itself, so its line is the one reported.
        let mut message = message;
        if let Some(field) = unknown_field(&message) {
            let hint = did_you_mean(field, expected_fields(&message));
            if path.0.last() != Some(&Segment::Key(field.to_string())) {
                path = path.key(field);
            }
            message.push_str(&hint);
        }
        self.problem(path, message);
    }

    fn build(
        &mut self,
        mut root: toml::Table,
        default_name: &str,
        seed_if_absent: u64,
    ) -> Option<Scenario> {
        let top = FieldPath::root();
        for key in root.keys() {
            if !TOP_LEVEL.contains(&key.as_str()) {
                self.problem(
                    top.key(key),
                    format!(
                        "unknown field, expected one of: {}{}",
                        TOP_LEVEL.join(", "),
                        did_you_mean(key, TOP_LEVEL.iter().copied())
                    ),
                );
            }
        }
        let name = match root.remove("name") {
            // The file's name, made safe: it names the results folder.
            None => safe_name(default_name),
            Some(v) => {
                let name = self.string(Some(v), &top.key("name"), default_name);
                if let Err(message) = check_name(&name) {
                    self.problem(top.key("name"), message);
                }
                name
            }
        };
        let description = self.string(root.remove("description"), &top.key("description"), "");

        let run_path = top.key("run");
        let run_table = section(root.remove("run"));
        let sample_every_given = run_table.get("sample_every").is_some();
        let run: Option<RunConfig> = self.typed(run_table, &run_path);
        let server = self.server(root.remove("server"), &top.key("server"));
        let clients = self.clients(root.remove("clients"), &top.key("clients"));
        let variants: Option<Vec<Variant>> = self.typed(
            root.remove("variants")
                .unwrap_or(toml::Value::Array(Vec::new())),
            &top.key("variants"),
        );
        let expect: Option<Expect> = self.typed(section(root.remove("expect")), &top.key("expect"));
        let store: Option<StoreConfig> =
            self.typed(section(root.remove("store")), &top.key("store"));
        let compare: Option<CompareConfig> =
            self.typed(section(root.remove("compare")), &top.key("compare"));

        let (mut run, server, clients, variants, expect, store, compare) = (
            run?, server?, clients?, variants?, expect?, store?, compare?,
        );
        run.seed.get_or_insert(seed_if_absent);
        // The default interval (10 s) shrinks to a shorter run; one the user gave is checked
        // as given (a run of 1 s blamed a `sample_every` nobody wrote).
        if !sample_every_given && run.sample_every > run.duration {
            run.sample_every = run.duration.max(MIN_SAMPLE_EVERY);
        }
        self.check_run(&run, &run_path);
        self.check_faults(&server.faults, &run, &top.key("server"));
        self.check_clients(&clients, &run, &top.key("clients"));
        self.check_variants(&variants, &top.key("variants"));
        self.check_expect(&expect, &top.key("expect"));
        self.check_store(&store, &run, &clients, &top);
        self.check_compare(&compare, &top.key("compare").key("metrics"));
        Some(Scenario {
            name,
            description,
            run,
            server,
            clients,
            variants,
            expect,
            store,
            compare,
            axes: Axes::default(),
            cell: None,
        })
    }

    /// `[[axes]]` and `[[cells]]`, taken out of the file and checked.
    fn axes(&mut self, root: &mut toml::Table) -> Axes {
        let top = FieldPath::root();
        let mut list = |key: &str| root.remove(key).unwrap_or(toml::Value::Array(Vec::new()));
        let (axes, rules) = (list("axes"), list("cells"));
        let axes: Vec<Axis> = self.typed(axes, &top.key("axes")).unwrap_or_default();
        let rules: Vec<CellRule> = self.typed(rules, &top.key("cells")).unwrap_or_default();
        let axes = Axes { axes, rules };
        for (steps, message) in axes.problems() {
            let path = steps.iter().fold(top.clone(), |p, s| match s {
                PathStep::Key(k) => p.key(k),
                PathStep::Index(i) => p.index(*i),
            });
            self.problem(path, message);
        }
        axes
    }

    /// The cell the file or a `--set cell=…` (`--cell`) picks, the last one winning, and the
    /// other overrides.
    fn chosen_cell<'o>(
        &mut self,
        root: &mut toml::Table,
        overrides: &'o [Override],
    ) -> (Option<String>, Vec<&'o Override>) {
        let mut chosen = root.remove(CELL_FIELD);
        let mut rest = Vec::new();
        for o in overrides {
            if o.path.len() == 1 && o.path[0] == CELL_FIELD {
                chosen = Some(o.value.clone());
            } else {
                rest.push(o);
            }
        }
        let cell = match chosen {
            None => None,
            Some(toml::Value::String(s)) => Some(s),
            Some(other) => {
                self.problem(
                    FieldPath::root().key(CELL_FIELD),
                    format!("a cell is named by a string such as \"5x5/gcra\", not {other}"),
                );
                None
            }
        };
        (cell, rest)
    }

    fn string(&mut self, v: Option<toml::Value>, at: &FieldPath, default: &str) -> String {
        match v {
            None => default.to_string(),
            Some(v) => self.typed(v, at).unwrap_or_default(),
        }
    }

    fn server(&mut self, v: Option<toml::Value>, at: &FieldPath) -> Option<ServerConfig> {
        let (common, mut rest) = self.split(v, at, SERVER_COMMON)?;
        rest.entry("kind").or_insert_with(|| "gcra".into());
        let common: Option<ServerCommon> = self.typed(toml::Value::Table(common), at);
        let limiter: Option<LimiterConfig> = self.tagged(
            rest,
            at,
            "kind",
            LimiterConfig::NAMES,
            LimiterConfig::from_params,
        );
        if limiter.is_none() {
            self.add_hint(
                "unknown field",
                &format!(
                    "; every server also takes {}{}",
                    SERVER_COMMON.join(", "),
                    self.common_hint(SERVER_COMMON)
                ),
            );
        }
        let (common, limiter) = (common?, limiter?);
        for p in limiter.problems() {
            let path = p.at.iter().fold(at.clone(), |path, step| match step {
                ParamStep::Field(f) => path.key(f),
                ParamStep::Index(i) => path.index(*i),
            });
            self.problem(path, p.message);
        }
        for (field, message) in common.latency.problems() {
            self.problem(at.key(field), message);
        }
        Some(ServerConfig {
            limiter,
            latency: common.latency,
            faults: FaultConfig {
                outages: common.outages,
                error_rate: common.error_rate,
            },
            headers: common.headers,
        })
    }

    fn clients(&mut self, v: Option<toml::Value>, at: &FieldPath) -> Option<Vec<ClientGroup>> {
        let Some(v) = v else {
            self.problem(
                at.clone(),
                "missing: a scenario needs at least one [[clients]] group",
            );
            return None;
        };
        let toml::Value::Array(items) = v else {
            self.problem(at.clone(), "must be a list of [[clients]] tables");
            return None;
        };
        if items.is_empty() {
            self.problem(at.clone(), "needs at least one [[clients]] group");
        }
        let mut groups = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            let here = at.index(i);
            let Some((common, mut rest)) = self.split(Some(item), &here, GROUP_COMMON) else {
                continue;
            };
            rest.entry("algorithm").or_insert_with(|| "schneems".into());
            let common: Option<GroupCommon> = self.typed(toml::Value::Table(common), &here);
            let throttle: Option<ThrottleConfig> = self.tagged(
                rest,
                &here,
                "algorithm",
                ThrottleConfig::NAMES,
                ThrottleConfig::from_params,
            );
            if throttle.is_none() {
                self.add_hint(
                    "unknown field",
                    &format!(
                        "; every group also takes {}{}",
                        GROUP_COMMON.join(", "),
                        self.common_hint(GROUP_COMMON)
                    ),
                );
            }
            if let (Some(common), Some(throttle)) = (common, throttle) {
                for (field, message) in throttle.problems() {
                    self.problem(here.key(field), message);
                }
                groups.push(ClientGroup { common, throttle });
            }
        }
        Some(groups)
    }

    /// Split a table into the fields every kind shares and the kind's own.
    fn split(
        &mut self,
        v: Option<toml::Value>,
        at: &FieldPath,
        common_keys: &[&str],
    ) -> Option<(toml::Table, toml::Table)> {
        let table = match v {
            None => toml::Table::new(),
            Some(toml::Value::Table(t)) => t,
            Some(other) => {
                self.problem(
                    at.clone(),
                    format!("must be a table, found {}", other.type_str()),
                );
                return None;
            }
        };
        Some(
            table
                .into_iter()
                .partition(|(k, _)| common_keys.contains(&k.as_str())),
        )
    }

    /// Type a table tagged by `tag` (`algorithm`, `kind`), with an error listing valid names.
    fn tagged<T>(
        &mut self,
        mut table: toml::Table,
        at: &FieldPath,
        tag: &str,
        names: &[&str],
        from_params: impl Fn(&str, toml::Value) -> Option<Result<T, ConfigError>>,
    ) -> Option<T> {
        let name = match table.remove(tag) {
            Some(toml::Value::String(s)) => s,
            _ => {
                self.problem(
                    at.key(tag),
                    format!("must be a string, one of: {}", names.join(", ")),
                );
                return None;
            }
        };
        match from_params(&name, toml::Value::Table(table)) {
            None => {
                self.problem(
                    at.key(tag),
                    format!(
                        "unknown {tag} `{name}`, expected one of: {}{}",
                        names.join(", "),
                        did_you_mean(&name, names.iter().copied())
                    ),
                );
                None
            }
            Some(Ok(v)) => Some(v),
            Some(Err(e)) => {
                self.path_problem(at, &e);
                None
            }
        }
    }
}

/// A document that parses but holds a value TOML's types cannot (an integer past 64 bits).
fn toml_value_message(m: &str) -> String {
    if m.contains("as i128") {
        format!(
            "a whole number larger than TOML allows (at most {}): {}",
            i64::MAX,
            m.trim()
        )
    } else {
        format!("not valid TOML: {}", m.trim())
    }
}

fn section(v: Option<toml::Value>) -> toml::Value {
    v.unwrap_or_else(|| toml::Value::Table(toml::Table::new()))
}

fn unknown_field(message: &str) -> Option<&str> {
    message.strip_prefix("unknown field `")?.split('`').next()
}

/// The fields serde lists after "expected one of" (each in backticks).
fn expected_fields(message: &str) -> impl Iterator<Item = &str> {
    let list = message
        .split_once("expected one of ")
        .or_else(|| message.split_once("expected "))
        .map_or("", |(_, l)| l);
    list.split('`').skip(1).step_by(2)
}

/// serde's wording names Rust types; say what a person would.
fn clean_message(m: &str) -> String {
    m.replace("expected u32", "expected a whole number of 0 or more")
        .replace("expected u64", "expected a whole number of 0 or more")
        .replace("expected f64", "expected a number")
        .replace("variant", "value")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
name = "t"
[run]
duration = "1h"
seed = 3

[server]
limit = 100

[[clients]]
name = "a"
threads = 2
initial_sleep = "4s"
"#;

    fn parse(text: &str, sets: &[&str]) -> Result<Scenario, ScenarioError> {
        let o: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
        parse_scenario(text, "t.toml", "t", &o, 99)
    }

    fn err(text: &str, sets: &[&str]) -> String {
        parse(text, sets).unwrap_err().to_string()
    }

    /// The fields a `deny_unknown_fields` struct declares, as serde lists them when it meets
    /// one it does not know.
    fn declared_fields<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> Vec<String> {
        let probe = toml::Value::Table(toml::toml! { not_a_field = 1 });
        let message = probe.try_into::<T>().unwrap_err().to_string();
        let list = message
            .split_once("expected one of ")
            .unwrap_or_else(|| panic!("serde names the fields: {message}"))
            .1;
        let mut fields: Vec<String> = list
            .split('`')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect();
        fields.sort();
        fields
    }

    #[test]
    fn the_common_field_lists_are_the_fields_of_the_common_structs() {
        // The loader splits a group's (a server's) table into these fields and the
        // algorithm's (kind's) own: a field added to the struct and not to the list would be
        // handed to the algorithm and refused as unknown.
        let mut group: Vec<String> = GROUP_COMMON.iter().map(|s| s.to_string()).collect();
        group.sort();
        assert_eq!(group, declared_fields::<GroupCommon>());
        let mut server: Vec<String> = SERVER_COMMON.iter().map(|s| s.to_string()).collect();
        server.sort();
        assert_eq!(server, declared_fields::<ServerCommon>());
    }

    #[test]
    fn reads_a_minimal_scenario_with_defaults() {
        let s = parse(BASE, &[]).unwrap();
        assert_eq!(s.run.seed, Some(3));
        assert_eq!(s.clients[0].common.threads, 2);
        assert_eq!(s.clients[0].common.processes, 1);
        match &s.clients[0].throttle {
            ThrottleConfig::Schneems(c) => assert_eq!(c.initial_sleep.secs(), 4.0),
            other => panic!("{other:?}"),
        }
        match &s.server.limiter {
            LimiterConfig::Gcra(g) => assert_eq!((g.limit, g.period.secs()), (100, 3600.0)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn resolved_toml_reads_back_identically() {
        let s = parse(
            BASE,
            &[
                "clients.*.jitter=0.0",
                "server.latency={distribution=\"lognormal\", median=\"30ms\"}",
            ],
        )
        .unwrap();
        let again = parse(&s.to_toml(), &[]).unwrap();
        assert_eq!(s, again);
    }

    const LOCKED: &str = r#"
name = "l"
[run]
mode = "live"
[[clients]]
name = "jobs"
processes = 2
algorithm = "interval-lock"
[[clients]]
name = "queue"
algorithm = "window-queue"
"#;

    #[test]
    fn a_live_run_of_a_coordinating_algorithm_over_processes_needs_redis() {
        let e = err(LOCKED, &[]);
        assert!(
            e.starts_with(
                "t.toml:8: clients[0].algorithm: interval-lock coordinates its 2 processes"
            ),
            "{e}"
        );
        assert!(
            e.contains("[store] url = \"redis://127.0.0.1:6379\""),
            "{e}"
        );
        assert!(e.contains("--store redis://"), "{e}");
        // One problem only: the window queue runs in one process.
        assert_eq!(e.lines().count(), 1, "{e}");
        // Two groups of one process naming the same queue coordinate too.
        let e = err(
            LOCKED,
            &[
                "clients.jobs.processes=1",
                "clients.jobs.algorithm=window-queue",
                "clients.*.delay_group=guild",
            ],
        );
        assert!(
            e.contains("clients[0].algorithm: window-queue coordinates its 2"),
            "{e}"
        );
        // Sim mode, one process, or a Redis url: accepted.
        assert!(parse(LOCKED, &["run.mode=sim"]).is_ok());
        assert!(parse(LOCKED, &["clients.jobs.processes=1"]).is_ok());
        let s = parse(LOCKED, &["store.url=redis://127.0.0.1:6399"]).unwrap();
        assert_eq!(s.store.url.as_deref(), Some("redis://127.0.0.1:6399"));
        // The url is recorded with the resolved scenario.
        assert_eq!(parse(&s.to_toml(), &[]).unwrap(), s);
    }

    /// `run --store redis://:PW@…` wrote the password into the results' scenario.toml. The
    /// file shows the url without it (and still reads back); only the workers are told it.
    #[test]
    fn a_store_password_is_never_in_the_resolved_scenario() {
        let s = parse(LOCKED, &["store.url=redis://:S3CRETpw@127.0.0.1:6399/2"]).unwrap();
        let written = s.to_toml();
        assert!(!written.contains("S3CRETpw"), "{written}");
        assert!(
            written.contains("url = \"redis://***@127.0.0.1:6399/2\""),
            "{written}"
        );
        assert!(parse(&written, &[]).is_ok());
        assert!(s.to_toml_with_secrets().contains("S3CRETpw"));
        // Nor in what is said of a url that is no Redis url.
        let e = err(LOCKED, &["store.url=http://user:S3CRETpw@h:1"]);
        assert!(
            !e.contains("S3CRETpw") && e.contains("http://***@h:1"),
            "{e}"
        );
    }

    const SHARED: &str = r#"
name = "b"
[run]
mode = "live"
[[clients]]
name = "web"
algorithm = "shared-bucket"
[[clients]]
name = "cron"
algorithm = "shared-bucket"
"#;

    #[test]
    fn groups_on_one_server_key_share_a_bucket_and_so_need_redis_live() {
        let e = err(SHARED, &[]);
        assert!(
            e.contains("clients[0].algorithm: shared-bucket coordinates its 2 processes"),
            "{e}"
        );
        // Groups on different keys have buckets of their own: one process each needs no Redis.
        assert!(parse(SHARED, &["clients.cron.key=other"]).is_ok());
        // Naming one bucket joins them again.
        let e = err(
            SHARED,
            &["clients.cron.key=other", "clients.*.bucket=together"],
        );
        assert!(e.contains("shared-bucket coordinates its 2"), "{e}");
        // AATB's aggregator is keyed the same way.
        let e = err(SHARED, &["clients.*.algorithm=aatb"]);
        assert!(e.contains("aatb coordinates its 2 processes"), "{e}");
        assert!(parse(SHARED, &["clients.*.algorithm=aatb", "run.mode=sim"]).is_ok());
    }

    #[test]
    fn a_store_url_must_be_redis() {
        let text = format!("{BASE}\n[store]\nurl = \"http://127.0.0.1:6379\"\n");
        let e = err(&text, &[]);
        assert!(
            e.starts_with("t.toml:16: store.url: `http://127.0.0.1:6379`: unknown scheme"),
            "{e}"
        );
        let e = err(&format!("{BASE}\n[store]\nhost = \"x\"\n"), &[]);
        assert!(e.contains("store.host: unknown field"), "{e}");
    }

    #[test]
    fn a_missing_seed_is_fixed() {
        let s = parse(&BASE.replace("seed = 3", ""), &[]).unwrap();
        assert_eq!(s.run.seed, Some(99));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = err(&BASE.replace("threads = 2", "threads = 0"), &[]);
        assert_eq!(
            e,
            "t.toml:12: clients[0].threads: must be at least 1 (got 0)"
        );
        let e = err(&BASE.replace("limit = 100", "limit = -5"), &[]);
        assert!(
            e.starts_with("t.toml:8: server.limit: invalid value: integer `-5`"),
            "{e}"
        );
        let e = err(&BASE.replace("threads = 2", "threads = \"two\""), &[]);
        assert!(
            e.starts_with("t.toml:12: clients[0].threads: invalid type: string"),
            "{e}"
        );
    }

    #[test]
    fn unknown_fields_algorithms_and_metrics_list_the_valid_ones() {
        let e = err(
            &BASE.replace("threads = 2", "threads = 2\njiter = 0.1"),
            &[],
        );
        assert!(
            e.contains("t.toml:13: clients[0].jiter: unknown field `jiter`"),
            "{e}"
        );
        assert!(
            e.contains("`jitter`") && e.contains("also takes name, processes"),
            "{e}"
        );
        let e = err(&BASE.replace("threads = 2", "algorithm = \"magic\""), &[]);
        assert!(
            e.contains(
                "clients[0].algorithm: unknown algorithm `magic`, expected one of: schneems"
            ),
            "{e}"
        );
        let e = err(&format!("{BASE}\n[expect]\nspeed = [0, 1]\n"), &[]);
        assert!(e.contains("expect.speed: unknown metric"), "{e}");
        let e = err(&format!("{BASE}\nsurprise = 1\n"), &[]);
        assert!(e.contains("surprise: unknown field"), "{e}");
    }

    #[test]
    fn misspelt_names_get_the_nearest_one_suggested() {
        let cases = [
            (
                BASE.replace("threads = 2", "jiter = 0.1"),
                "did you mean `jitter`?",
            ),
            (
                BASE.replace("threads = 2", "thread = 2"),
                "did you mean `threads`?",
            ),
            (
                BASE.replace("threads = 2", "algorithm = \"fair_share\""),
                "did you mean `fair-share`?",
            ),
            (
                BASE.replace("limit = 100", "kind = \"gcar\""),
                "did you mean `gcra`?",
            ),
            (
                BASE.replace("limit = 100", "perod = \"1m\""),
                "did you mean `period`?",
            ),
            (
                BASE.replace("limit = 100", "latncy = \"1ms\""),
                "did you mean `latency`?",
            ),
            (
                BASE.replace("seed = 3", "seeds = 3\nduraton = \"1h\""),
                "did you mean `duration`?",
            ),
            (
                format!("{BASE}\n[expect]\nratio429 = [0, 1]\n"),
                "did you mean `ratio_429`?",
            ),
            (format!("expects = 1\n{BASE}"), "did you mean `expect`?"),
        ];
        for (text, hint) in cases {
            let e = err(&text, &[]);
            assert!(e.contains(hint), "no `{hint}` in: {e}");
            // The suggestion comes last, after the list of every valid name.
            assert!(e.trim_end().ends_with(hint), "{e}");
        }
        // Nothing near: no guess.
        let e = err(&BASE.replace("threads = 2", "algorithm = \"magic\""), &[]);
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn upside_down_ranges_and_bad_durations_are_refused() {
        let e = err(&format!("{BASE}\n[expect]\nratio_429 = [0.5, 0.1]\n"), &[]);
        assert!(
            e.contains("expect.ratio_429: range [0.5, 0.1] is upside down"),
            "{e}"
        );
        let e = err(&BASE.replace("\"1h\"", "\"5 parsecs\""), &[]);
        assert!(
            e.contains("t.toml:4: run.duration: `5 parsecs` is not a duration"),
            "{e}"
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let text = BASE.replace("threads = 2", "threads = 0\nprocesses = 0");
        let e = parse(&text, &[]).unwrap_err();
        assert_eq!(e.problems.len(), 2, "{e}");
    }

    #[test]
    fn overrides_win_and_are_named_in_errors() {
        let s = parse(
            BASE,
            &["server.limit=600", "run.duration=2h", "clients.a.threads=7"],
        )
        .unwrap();
        match &s.server.limiter {
            LimiterConfig::Gcra(g) => assert_eq!(g.limit, 600),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.run.duration.secs(), 7200.0);
        assert_eq!(s.clients[0].common.threads, 7);
        let e = err(BASE, &["clients.*.threads=0"]);
        assert!(e.contains("(from --set clients.*.threads=0)"), "{e}");
    }

    #[test]
    fn every_server_kind_reads_and_round_trips_with_faults() {
        let text = BASE.replace(
            "limit = 100",
            "kind = \"fixed-window\"\nlimit = 10\nwindow = \"10s\"\noutages = [[\"10m\", \"12m\"]]\nerror_rate = 0.01",
        );
        let s = parse(&text, &[]).unwrap();
        match &s.server.limiter {
            LimiterConfig::FixedWindow(f) => assert_eq!((f.limit, f.window.secs()), (10, 10.0)),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.server.faults.error_rate, 0.01);
        assert_eq!(s.server.faults.outages[0][1].secs(), 720.0);
        assert_eq!(parse(&s.to_toml(), &[]).unwrap(), s);
        for kind in LimiterConfig::NAMES {
            let s = parse(
                &BASE.replace("limit = 100", &format!("kind = \"{kind}\"")),
                &[],
            );
            let s = s.unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(s.server.limiter.name(), *kind);
            assert!(s.server.faults.is_empty());
            assert_eq!(parse(&s.to_toml(), &[]).unwrap(), s, "{kind}");
        }
    }

    #[test]
    fn a_stacked_limit_s_errors_name_the_entry_and_its_field() {
        let stacked = |limits: &str| {
            BASE.replace(
                "limit = 100",
                &format!("kind = \"stacked\"\nlimits = [\n{limits}\n]"),
            )
        };
        let e = err(
            &stacked(
                "  { kind = \"fixed-window\", limit = 10, window = \"1s\" },\n  \
                 { kind = \"fixed-window\", limit = 0, window = \"1m\" },\n  \
                 { kind = \"stacked\" },",
            ),
            &[],
        );
        let lines: Vec<_> = e.lines().collect();
        assert_eq!(
            lines,
            [
                "t.toml:11: server.limits[1].limit: must be at least 1 request per window",
                "t.toml:12: server.limits[2].kind: a stacked limit cannot hold another `stacked`: list its limits here instead",
            ]
        );
        let e = err(&stacked("  { kind = \"leaky\" },"), &[]);
        assert!(
            e.starts_with(
                "t.toml:10: server.limits[0].kind: unknown value `leaky`, expected one of `gcra`"
            ),
            "{e}"
        );
        let e = err(&stacked("  { kind = \"gcra\", limt = 3 },"), &[]);
        assert!(e.contains("server.limits[0]"), "{e}");
        assert!(e.contains("unknown field `limt`"), "{e}");
        let e = err(&stacked(""), &[]);
        assert_eq!(e, "t.toml:9: server.limits: must hold at least one limit");
        // A good stack loads, and switching a scenario to it with --set works.
        let s = parse(
            &stacked("  { kind = \"leaky-bucket\", rate = \"5r/s\" },"),
            &[],
        )
        .unwrap();
        assert_eq!(s.server.limiter.name(), "stacked");
        let s = parse(BASE, &["server.kind=stacked"]).unwrap();
        assert_eq!(s.server.limiter, LimiterConfig::Stacked(Default::default()));
    }

    #[test]
    fn server_kind_and_fault_errors_name_line_and_field() {
        let e = err(
            &BASE.replace("limit = 100", "kind = \"token-bucket\"\nlimit = 5"),
            &[],
        );
        assert!(
            e.contains("t.toml:9: server.limit: unknown field `limit`, expected one of `rate`, `period`, `burst`, `initial`"),
            "{e}"
        );
        assert!(
            e.contains("every server also takes latency, outages, error_rate"),
            "{e}"
        );
        let e = err(&BASE.replace("limit = 100", "kind = \"leaky\""), &[]);
        assert!(
            e.contains("t.toml:8: server.kind: unknown kind `leaky`, expected one of: gcra, fixed-window, sliding-window, sliding-window-counter, token-bucket, leaky-bucket, concurrency, occ, stacked"),
            "{e}"
        );
        let e = err(
            &BASE.replace("limit = 100", "kind = \"concurrency\"\nmax_in_flight = 0"),
            &[],
        );
        assert_eq!(e, "t.toml:9: server.max_in_flight: must be at least 1");
        let e = err(
            &BASE.replace(
                "limit = 100",
                "limit = 100\nerror_rate = 1.5\noutages = [\n  [\"10m\", \"5m\"],\n  [\"50m\", \"2h\"],\n  [\"20m\", \"30m\"],\n  [\"25m\", \"26m\"],\n]",
            ),
            &[],
        );
        let lines: Vec<_> = e.lines().collect();
        assert_eq!(
            lines,
            [
                "t.toml:11: server.outages[0]: starts at 10m, not before its end 5m; write [start, end]",
                "t.toml:12: server.outages[1]: ends at 2h, after the end of the run (1h)",
                "t.toml:14: server.outages[3]: 25m–26m overlaps outages[2] (20m–30m); make them one window",
                "t.toml:9: server.error_rate: must be a probability from 0 to 1 (got 1.5)",
            ]
        );
        let e = err(&BASE.replace("limit = 100", "outages = [\"10m\"]"), &[]);
        assert!(
            e.starts_with("t.toml:8: server.outages[0]: invalid type"),
            "{e}"
        );
        // A shorter run from the command line makes an outage fall outside it.
        let e = err(
            &BASE.replace("limit = 100", "outages = [[\"10m\", \"20m\"]]"),
            &["run.duration=15m"],
        );
        assert!(
            e.contains("server.outages[0]: ends at 20m, after the end of the run (15m)"),
            "{e}"
        );
    }

    #[test]
    fn switching_algorithm_drops_the_parameters_the_new_one_does_not_take() {
        // BASE's group sets schneems' initial_sleep, which `fixed` does not take.
        let s = parse(BASE, &["clients.*.algorithm=fixed"]).unwrap();
        assert_eq!(s.clients[0].throttle.name(), "fixed");
        assert_eq!(s.clients[0].common.threads, 2, "shared fields stay");
        assert!(!s.to_toml().contains("initial_sleep"));
        // A parameter set after the switch must be one the new algorithm takes...
        let e = err(
            BASE,
            &["clients.*.algorithm=fixed", "clients.*.initial_sleep=2s"],
        );
        assert!(e.contains("unknown field `initial_sleep`"), "{e}");
        let s = parse(BASE, &["clients.*.algorithm=fixed", "clients.*.sleep=3s"]).unwrap();
        assert!(s.to_toml().contains("sleep = \"3s\""));
        // ...parameters both take are kept, and switching to the same algorithm keeps all.
        let with_jitter = BASE.replace("threads = 2", "threads = 2\njitter = 0.3");
        let s = parse(&with_jitter, &["clients.*.algorithm=fixed"]).unwrap();
        assert!(s.to_toml().contains("jitter = 0.3"), "{}", s.to_toml());
        let s = parse(BASE, &["clients.*.algorithm=schneems"]).unwrap();
        match &s.clients[0].throttle {
            ThrottleConfig::Schneems(c) => assert_eq!(c.initial_sleep.secs(), 4.0),
            other => panic!("{other:?}"),
        }
        // An unknown algorithm drops nothing and is named with the valid ones.
        let e = err(BASE, &["clients.*.algorithm=magic"]);
        assert!(
            e.contains("unknown algorithm `magic`, expected one of"),
            "{e}"
        );
    }

    #[test]
    fn names_that_would_leave_results_are_refused() {
        for bad in ["../../etc/x", "", "a/b", ".hidden", "-x", "a b"] {
            let e = err(
                &BASE.replace("name = \"t\"", &format!("name = {bad:?}")),
                &[],
            );
            assert!(e.starts_with("t.toml:2: name: "), "{bad:?}: {e}");
        }
        let e = err(BASE, &["name=../up"]);
        assert!(e.contains("`../up` cannot name a results folder"), "{e}");
        assert!(parse(BASE, &["name=ok_name-2.v1"]).is_ok());
        // A file's name is made safe, not refused: the user did not write it.
        let o: Vec<Override> = Vec::new();
        let s = parse_scenario(&BASE.replace("name = \"t\"", ""), "f", "my run", &o, 1).unwrap();
        assert_eq!(s.name, "my_run");
    }

    #[test]
    fn syntax_errors_have_a_line() {
        let e = err("name = \"x\"\n[run\n", &[]);
        assert!(e.starts_with("t.toml:2: not valid TOML"), "{e}");
    }

    #[test]
    fn group_windows_must_make_sense() {
        let e = err(&BASE.replace("threads = 2", "start = \"2h\""), &[]);
        assert!(
            e.contains("clients[0].start: 2h is not before the end of the run"),
            "{e}"
        );
        let e = err(
            &BASE.replace("threads = 2", "start = \"10m\"\nstop = \"5m\""),
            &[],
        );
        assert!(e.contains("clients[0].stop: must be after start"), "{e}");
        let e = err(&format!("{BASE}\n[[clients]]\nname = \"a\"\n"), &[]);
        assert!(e.contains("clients[1].name: `a` names two groups"), "{e}");
    }

    #[test]
    fn workloads_and_stop_rules_are_checked() {
        let s = parse(
            &BASE.replace(
                "threads = 2",
                "threads = 2\npool = 40\nstop_when_remaining_at_most = 10",
            ),
            &[],
        )
        .unwrap();
        assert_eq!(s.clients[0].common.pool, Some(40));
        assert_eq!(s.clients[0].common.stop_when_remaining_at_most, Some(10));
        let e = err(&BASE.replace("threads = 2", "threads = 2\npool = 0"), &[]);
        assert_eq!(e, "t.toml:13: clients[0].pool: must be at least 1 (got 0)");
        let e = err(&BASE.replace("threads = 2", "jobs = 3\npool = 9"), &[]);
        assert!(
            e.contains("t.toml:13: clients[0].pool: a group has either `jobs`"),
            "{e}"
        );
        let e = err(
            &BASE.replace("threads = 2", "processes = 2\npool = 9"),
            &["run.mode=live"],
        );
        assert!(
            e.contains("clients[0].pool: a live run shares a pool"),
            "{e}"
        );
        let e = err(
            &BASE.replace("threads = 2", "stop_when_remaining_at_most = -1"),
            &[],
        );
        assert!(
            e.starts_with("t.toml:12: clients[0].stop_when_remaining_at_most: invalid value"),
            "{e}"
        );
        let e = err(
            &BASE.replace("limit = 100", "limit = 100\nrefill = \"no\""),
            &[],
        );
        assert!(
            e.starts_with("t.toml:9: server.refill: invalid type: string"),
            "{e}"
        );
    }

    mod fuzz {
        use super::{BASE, parse};
        use proptest::prelude::*;

        proptest! {
            /// Whatever a user writes as a value, loading answers with a scenario or errors.
            #[test]
            fn any_value_anywhere_gives_a_scenario_or_an_error(
                field in proptest::sample::select(vec![
                    "duration = \"1h\"", "seed = 3", "limit = 100", "threads = 2",
                    "initial_sleep = \"4s\"", "name = \"a\"",
                ]),
                value in prop_oneof![
                    any::<i64>().prop_map(|v| v.to_string()),
                    any::<f64>().prop_map(|v| format!("{v:?}")),
                    "\"[a-z0-9. -]{0,12}\"",
                    Just("[1, 2]".to_string()),
                    Just("{ a = 1 }".to_string()),
                    Just("nan".to_string()),
                    Just("-inf".to_string()),
                ],
            ) {
                let key = field.split(' ').next().unwrap();
                let text = BASE.replace(field, &format!("{key} = {value}"));
                match parse(&text, &[]) {
                    Ok(s) => {
                        let _ = s.to_toml();
                    }
                    Err(e) => prop_assert!(!e.problems.is_empty()),
                }
            }

            #[test]
            fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
                let _ = parse(&text, &[]);
            }
        }
    }
}
