//! Every registered client algorithm and server kind is reachable the three ways a user names
//! one: it is listed by `list --json`, a scenario file naming it runs, and `--set` switches a
//! scenario to it. A registry entry whose name, serde tag or parameter table disagree fails here.

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use throttle_sim::limiter::LimiterConfig;
use throttle_sim::throttle::ThrottleConfig;

fn bin() -> Command {
    Command::cargo_bin("throttle-sim").unwrap()
}

/// A small scenario with one group of two processes × two threads.
fn scenario_text(kind: &str, algorithm: &str) -> String {
    format!(
        "name = \"registry\"\n\n[run]\nduration = \"10s\"\nseed = 1\n\n\
         [server]\nkind = \"{kind}\"\n\n\
         [[clients]]\nname = \"c\"\nprocesses = 2\nthreads = 2\nalgorithm = \"{algorithm}\"\n"
    )
}

/// Run `file` (with `sets`) into a new folder and return the scenario.toml it recorded.
fn run_recorded(dir: &Path, file: &Path, sets: &[String]) -> toml::Table {
    let out = dir.join(format!("out-{}", fs::read_dir(dir).unwrap().count()));
    let mut cmd = bin();
    cmd.arg("run")
        .arg(file)
        .args(["--quiet", "--no-charts", "--out"])
        .arg(&out);
    for s in sets {
        cmd.args(["--set", s]);
    }
    cmd.assert().success();
    fs::read_to_string(out.join("scenario.toml"))
        .unwrap()
        .parse()
        .unwrap()
}

fn recorded_algorithm(t: &toml::Table) -> &str {
    t["clients"][0]["algorithm"].as_str().unwrap()
}

fn recorded_kind(t: &toml::Table) -> &str {
    t["server"]["kind"].as_str().unwrap()
}

fn listed(key: &str) -> Vec<String> {
    let out = bin().args(["list", "--json"]).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_algorithm_round_trips_through_list_a_scenario_file_and_set() {
    let names = listed("algorithms");
    assert_eq!(
        names,
        ThrottleConfig::NAMES,
        "list --json shows the registry"
    );
    let tmp = tempfile::tempdir().unwrap();
    // A base naming another algorithm, for --set to switch away from.
    let base = tmp.path().join("base.toml");
    fs::write(&base, scenario_text("gcra", "fixed")).unwrap();
    for name in &names {
        let file = tmp.path().join(format!("{name}.toml"));
        fs::write(&file, scenario_text("gcra", name)).unwrap();
        let t = run_recorded(tmp.path(), &file, &[]);
        assert_eq!(recorded_algorithm(&t), name, "scenario file");
        let t = run_recorded(tmp.path(), &base, &[format!("clients.*.algorithm={name}")]);
        assert_eq!(recorded_algorithm(&t), name, "--set");
    }
}

#[test]
fn every_server_kind_round_trips_through_list_a_scenario_file_and_set() {
    let kinds = listed("servers");
    assert_eq!(
        kinds,
        LimiterConfig::NAMES,
        "list --json shows the registry"
    );
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base.toml");
    fs::write(&base, scenario_text("gcra", "none")).unwrap();
    for kind in &kinds {
        let file = tmp.path().join(format!("{kind}.toml"));
        fs::write(&file, scenario_text(kind, "none")).unwrap();
        let t = run_recorded(tmp.path(), &file, &[]);
        assert_eq!(recorded_kind(&t), kind, "scenario file");
        let t = run_recorded(tmp.path(), &base, &[format!("server.kind={kind}")]);
        assert_eq!(recorded_kind(&t), kind, "--set");
    }
}
