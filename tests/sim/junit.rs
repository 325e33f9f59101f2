//! `check --junit FILE`: the verdicts as JUnit XML that CI systems read, checked by a small
//! XML reader of its own (well-formed, entities resolved) and for the Apache Ant shape:
//! a bare `testsuites` > `testsuite` (name, package, id, timestamp, hostname, tests, failures,
//! errors, skipped, time) > `properties`, `testcase` (name, classname, time) > at most one of
//! `failure` / `error` / `skipped`, each with a message, then `system-out` and `system-err`;
//! the counts agree with the cases. Where xmllint is at hand the report is also validated
//! against the schema in `tests/data/junit/JUnit.xsd`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::SystemTime;

use assert_cmd::Command;

fn bin() -> Command {
    Command::cargo_bin("throttle-sim").unwrap()
}

/// An element of the document: its name, attributes (values with entities resolved), children
/// and text.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Element>,
    text: String,
}

impl Element {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn count(&self, name: &str) -> usize {
        self.attr(name)
            .unwrap_or_else(|| panic!("<{}> has no {name}", self.name))
            .parse()
            .unwrap_or_else(|_| panic!("<{}> {name} is not a count", self.name))
    }
}

/// The document's root element, read by roxmltree (which refuses what is not well-formed XML),
/// after the XML declaration the report starts with.
fn parse(doc: &str) -> Result<Element, String> {
    if !doc.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>") {
        return Err("no XML declaration".into());
    }
    let tree = roxmltree::Document::parse(doc).map_err(|e| e.to_string())?;
    Ok(element(tree.root_element()))
}

/// A node of roxmltree's tree as an [`Element`]: its text is the text directly inside it.
fn element(node: roxmltree::Node) -> Element {
    Element {
        name: node.tag_name().name().to_string(),
        attrs: node
            .attributes()
            .map(|a| (a.name().to_string(), a.value().to_string()))
            .collect(),
        children: node
            .children()
            .filter(|c| c.is_element())
            .map(element)
            .collect(),
        text: node
            .children()
            .filter(|c| c.is_text())
            .filter_map(|c| c.text())
            .collect(),
    }
}

/// The Ant JUnit shape CI systems read (Jenkins' and GitLab's too), with the counts agreeing.
fn check_shape(root: &Element) {
    assert_eq!(root.name, "testsuites");
    assert!(
        root.attrs.is_empty(),
        "the Ant root has no attributes: {root:?}"
    );
    for (id, suite) in root.children.iter().enumerate() {
        assert_eq!(suite.name, "testsuite");
        assert!(suite.attr("name").is_some_and(|n| !n.is_empty()));
        assert!(suite.attr("package").is_some_and(|n| !n.is_empty()));
        assert_eq!(suite.count("id"), id);
        assert!(suite.attr("hostname").is_some_and(|n| !n.is_empty()));
        suite.attr("time").unwrap().parse::<f64>().unwrap();
        let names: Vec<&str> = suite.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names.first(), Some(&"properties"), "{names:?}");
        assert_eq!(names[names.len() - 2..], ["system-out", "system-err"]);
        let cases = &suite.children[1..suite.children.len() - 2];
        let mut own = [0usize; 3];
        for case in cases {
            assert_eq!(case.name, "testcase");
            assert!(case.attr("name").is_some_and(|n| !n.is_empty()));
            assert!(case.attr("classname").is_some());
            case.attr("time").unwrap().parse::<f64>().unwrap();
            assert!(case.children.len() <= 1, "{case:?}");
            for outcome in &case.children {
                let slot = match outcome.name.as_str() {
                    "failure" => 0,
                    "error" => 1,
                    "skipped" => 2,
                    other => panic!("<{other}> in a testcase"),
                };
                own[slot] += 1;
                assert!(outcome.attr("message").is_some_and(|m| !m.is_empty()));
            }
        }
        assert_eq!(suite.count("tests"), cases.len());
        assert_eq!(suite.count("failures"), own[0]);
        assert_eq!(suite.count("errors"), own[1]);
        assert_eq!(suite.count("skipped"), own[2]);
    }
}

/// The `testcase` children of a suite.
fn cases(suite: &Element) -> Vec<&Element> {
    suite
        .children
        .iter()
        .filter(|c| c.name == "testcase")
        .collect()
}

const SMALL: &str = r#"name = "NAME"
[run]
duration = "10m"
seed = 42
sample_every = "1m"
[server]
limit = 100
period = "1m"
[[clients]]
name = "w"
algorithm = "fair-share"
"#;

fn write(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
}

#[test]
fn junit_has_a_case_per_scenario_and_cell_and_names_what_missed() {
    let tmp = tempfile::tempdir().unwrap();
    // A folder whose name needs escaping in XML.
    let dir = tmp.path().join("a&b<c>\"d'");
    fs::create_dir(&dir).unwrap();
    let pass = dir.join("pass.toml");
    write(
        &pass,
        &format!(
            "{}[expect]\nutilization = [0.5, 1.1]\n",
            SMALL.replace("NAME", "passes")
        ),
    );
    let miss = dir.join("miss.toml");
    write(
        &miss,
        &format!(
            "{}[expect]\nratio_429 = [0.5, 1.0]\nutilization = [0.5, 1.1]\n",
            SMALL.replace("NAME", "misses")
        ),
    );
    let cells = dir.join("cells.toml");
    write(
        &cells,
        &format!(
            "{}[expect]\nutilization = [0.5, 1.1]\n[[axes]]\nname = \"fleet\"\nlevels = [\n  {{ name = \"1x1\" }},\n  {{ name = \"2x2\", set = {{ \"clients.*.processes\" = 2, \"clients.*.threads\" = 2 }} }},\n]\n",
            SMALL.replace("NAME", "cells")
        ),
    );
    let bad = dir.join("bad.toml");
    write(&bad, "name = \"bad\"\n[run]\nduration = \"5 parsecs\"\n");
    let out = tmp.path().join("junit.xml");
    let stdout = bin()
        .env_remove("HOSTNAME")
        .args(["check", "--quiet", "--junit"])
        .arg(&out)
        .args([&pass, &miss, &cells, &bad])
        .assert()
        .code(2)
        .get_output()
        .stdout
        .clone();
    let text = fs::read_to_string(&out).unwrap();
    let root = parse(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    check_shape(&root);
    // The terminal's verdicts are still printed.
    assert!(String::from_utf8_lossy(&stdout).contains("MISSED"));

    let suites: Vec<&str> = root
        .children
        .iter()
        .map(|s| s.attr("name").unwrap())
        .collect();
    let shown = |p: &Path| p.display().to_string();
    assert_eq!(
        suites,
        [shown(&pass), shown(&miss), shown(&cells), shown(&bad)]
    );
    assert!(suites[0].contains("a&b<c>\"d'"), "{suites:?}");
    // Without HOSTNAME in the environment, the machine's name file, else what Ant asks for.
    let host = fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    assert_eq!(root.children[0].attr("hostname"), Some(host.as_str()));
    let case = |suite: usize| cases(&root.children[suite]);
    // One case per scenario; the passing one empty.
    assert_eq!(case(0).len(), 1);
    assert_eq!(case(0)[0].attr("name"), Some("passes"));
    assert!(case(0)[0].children.is_empty());
    // The missed one names the metric, its value and its range, and not the one that passed.
    let failure = &case(1)[0].children[0];
    assert_eq!(failure.name, "failure");
    let message = failure.attr("message").unwrap();
    assert!(
        message.starts_with("ratio_429 = 0.0000 outside [0.5, 1]"),
        "{message}"
    );
    assert!(!message.contains("utilization"), "{message}");
    assert!(message.contains("seed 42"), "{message}");
    assert!(failure.text.contains("utilization = "), "{}", failure.text);
    // One case per cell.
    let names: Vec<&str> = case(2).iter().map(|c| c.attr("name").unwrap()).collect();
    assert_eq!(names, ["1x1", "2x2"]);
    // A file that cannot be read is an error, with why.
    let error = &case(3)[0].children[0];
    assert_eq!(error.name, "error");
    assert!(
        error.attr("message").unwrap().contains("5 parsecs"),
        "{error:?}"
    );
}

/// The schema the report is held to.
fn schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit/JUnit.xsd")
}

/// xmllint's verdict on `file` against the schema: `Ok` when valid, else what it said.
fn xmllint(file: &Path) -> Result<(), String> {
    let out = Process::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(schema())
        .arg(file)
        .output()
        .expect("xmllint runs");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        Ok(())
    } else {
        Err(said)
    }
}

#[test]
#[cfg_attr(
    no_xmllint,
    ignore = "needs xmllint on PATH (none was found when this test was built): apt-get install -y libxml2-utils, then cargo test --test sim junit"
)]
fn junit_with_a_pass_a_failure_a_skip_and_an_error_is_valid_against_the_ant_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a&b <c>");
    fs::create_dir(&dir).unwrap();
    let pass = dir.join("pass.toml");
    let expect_utilization = "[expect]\nutilization = [0.5, 1.1]\n";
    write(
        &pass,
        &format!("{}{expect_utilization}", SMALL.replace("NAME", "passes")),
    );
    let miss = dir.join("miss.toml");
    write(
        &miss,
        &format!(
            "{}[expect]\nratio_429 = [0.5, 1.0]\n",
            SMALL.replace("NAME", "misses")
        ),
    );
    let skip = dir.join("skip.toml");
    write(&skip, &SMALL.replace("NAME", "judges_nothing"));
    let bad = dir.join("bad.toml");
    write(&bad, "name = \"bad\"\n[run]\nduration = \"5 parsecs\"\n");
    let out = tmp.path().join("junit.xml");
    let before = SystemTime::now();
    bin()
        .env("HOSTNAME", "ci-runner-7")
        .args(["check", "--quiet", "--junit"])
        .arg(&out)
        .args([&pass, &miss, &skip, &bad])
        .assert()
        .code(2);
    let after = SystemTime::now();
    if let Err(said) = xmllint(&out) {
        panic!("{said}\n{}", fs::read_to_string(&out).unwrap());
    }

    let text = fs::read_to_string(&out).unwrap();
    let root = parse(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    check_shape(&root);
    let outcomes: Vec<Option<&str>> = root
        .children
        .iter()
        .map(|s| cases(s)[0].children.first().map(|o| o.name.as_str()))
        .collect();
    assert_eq!(
        outcomes,
        [None, Some("failure"), Some("skipped"), Some("error")]
    );
    let suite = &root.children[0];
    assert_eq!(suite.attr("hostname"), Some("ci-runner-7"));
    assert_eq!(
        suite.attr("package"),
        Some(dir.display().to_string().as_str())
    );
    // The run's start, in UTC to the second.
    let stamp = suite.attr("timestamp").unwrap();
    let started = humantime::parse_rfc3339(&format!("{stamp}Z")).unwrap();
    let second = std::time::Duration::from_secs(1);
    assert!(
        started + second > before && started <= after,
        "{stamp} is not between {before:?} and {after:?}"
    );
    // A case that ran has its run's time; one that could not run has none.
    let time = |suite: usize| -> f64 {
        cases(&root.children[suite])[0]
            .attr("time")
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(time(0) > 0.0, "{text}");
    assert_eq!(time(3), 0.0);
}

#[test]
#[cfg_attr(
    no_xmllint,
    ignore = "needs xmllint on PATH (none was found when this test was built): apt-get install -y libxml2-utils, then cargo test --test sim junit"
)]
fn the_schema_refuses_what_the_ant_shape_does_not_allow() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = |attrs: &str, inside: &str| {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite {attrs}>{inside}</testsuite>\n</testsuites>\n"
        )
    };
    let attrs = r#"name="s" package="p" id="0" timestamp="2025-01-31T12:00:00" hostname="h" tests="1" failures="0" errors="0" time="0.5""#;
    let case = r#"<testcase name="c" classname="s" time="0.1"/>"#;
    let whole = format!("<properties/>{case}<system-out/><system-err/>");
    let failure_without_type = case.replace("/>", r#"><failure message="m"/></testcase>"#);
    let file = tmp.path().join("r.xml");
    let verdict = |doc: &str| {
        fs::write(&file, doc).unwrap();
        xmllint(&file)
    };
    verdict(&suite(attrs, &whole)).unwrap();
    for bad in [
        suite(attrs, &whole).replace("<testsuites>", "<testsuites tests=\"1\">"),
        suite(&attrs.replace("T12:00:00", "T12:00:00Z"), &whole),
        suite(&attrs.replace(" hostname=\"h\"", ""), &whole),
        suite(&attrs.replace(" id=\"0\"", ""), &whole),
        suite(attrs, &whole.replace("<system-err/>", "")),
        suite(attrs, &whole.replace("<properties/>", "")),
        suite(attrs, &whole.replace(" time=\"0.1\"", "")),
        suite(attrs, &whole.replace(case, &failure_without_type)),
    ] {
        assert!(verdict(&bad).is_err(), "accepted:\n{bad}");
    }
}
