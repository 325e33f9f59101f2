//! `compare --shard K/N` and `compare --merge`: a sweep cut into slices that separate processes
//! (or hosts, or a batch engine's tasks) run, put together into the comparison one process
//! writes, byte for byte.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::exe;

fn matrix() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/gauntlet/api_dialects.toml")
}

/// The dialects matrix (64 cells), short and over one seed, so the test is quick; the slicing is the same.
const QUICK: [&str; 6] = ["--seeds", "1", "--duration", "10m", "--quiet", "--jobs"];

fn compare(args: &[&str], out: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(exe());
    cmd.arg("compare").args(args).arg("--out").arg(out);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn three_slices_run_as_three_processes_merge_into_the_unsharded_comparison() {
    let tmp = tempfile::tempdir().unwrap();
    let file = matrix();
    let file = file.to_str().unwrap();
    let mut args = vec![file, "--algorithms", "fair-share,aimd"];
    args.extend(QUICK);
    args.push("1");
    let whole = tmp.path().join("whole");
    let out = compare(&args, &whole, &[]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    // Three processes at once, one slice each: by number, by Kubernetes' 0-based index, and by
    // a Slurm array's index counted from its first.
    let slices: Vec<PathBuf> = (1..=3).map(|k| tmp.path().join(format!("s{k}"))).collect();
    let spawn = |k: usize, env: &[(&str, &str)]| {
        let mut cmd = Command::new(exe());
        cmd.arg("compare").args(&args);
        cmd.env_remove("JOB_COMPLETION_INDEX")
            .env_remove("SLURM_ARRAY_TASK_ID");
        if env.is_empty() {
            cmd.args(["--shard", &format!("{k}/3")]);
        } else {
            cmd.args(["--shard", "auto/3"]);
            for (n, v) in env {
                cmd.env(n, v);
            }
        }
        cmd.arg("--out").arg(&slices[k - 1]).spawn().unwrap()
    };
    let children = [
        spawn(1, &[]),
        spawn(2, &[("JOB_COMPLETION_INDEX", "1")]),
        spawn(
            3,
            &[("SLURM_ARRAY_TASK_ID", "7"), ("SLURM_ARRAY_TASK_MIN", "5")],
        ),
    ];
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    for s in &slices {
        assert!(s.join("shard.json").is_file() && s.join("runs.csv").is_file());
        assert!(
            !s.join("compare.csv").exists(),
            "a slice is not a comparison"
        );
    }
    let merged = tmp.path().join("merged");
    let names: Vec<&str> = [2, 0, 1]
        .iter()
        .map(|&i| slices[i].to_str().unwrap())
        .collect();
    let mut margs = vec!["--merge"];
    margs.extend(&names);
    margs.push("--quiet");
    let out = compare(&margs, &merged, &[]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let a = fs::read(whole.join("compare.csv")).unwrap();
    let b = fs::read(merged.join("compare.csv")).unwrap();
    assert!(a.len() > 1000);
    assert!(
        a == b,
        "the merged compare.csv differs from the unsharded one"
    );
    for f in ["compare.json", "compare.md", "report.html", "scenario.toml"] {
        assert_eq!(
            fs::read(whole.join(f)).unwrap(),
            fs::read(merged.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn a_merge_refuses_slices_that_do_not_make_one_comparison() {
    let tmp = tempfile::tempdir().unwrap();
    let file = matrix();
    let file = file.to_str().unwrap();
    let slice = |name: &str, k: usize, extra: &[&str]| {
        let dir = tmp.path().join(name);
        let mut args = vec![file, "--variants", "base"];
        args.extend(QUICK);
        args.push("2");
        args.extend(extra);
        let shard = format!("{k}/3");
        args.extend(["--shard", shard.as_str()]);
        let out = compare(&args, &dir, &[]);
        assert!(out.status.success(), "{out:?}");
        dir
    };
    let s1 = slice("s1", 1, &[]);
    let s2 = slice("s2", 2, &[]);
    let other = slice("other", 3, &["--set", "server.latency=30ms"]);
    let merge = |dirs: &[&Path]| {
        let mut args = vec!["--merge"];
        args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
        let out = compare(&args, &tmp.path().join("m"), &[]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, err) = merge(&[&s1, &s2]);
    assert_eq!(code, Some(2));
    assert!(err.contains("slices missing: 3 of 3"), "{err}");
    let (code, err) = merge(&[&s1, &s1, &s2]);
    assert_eq!(code, Some(2));
    assert!(err.contains("slice 1 of 3 is given twice"), "{err}");
    let (code, err) = merge(&[&s1, &s2, &other]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("different comparisons (the flags differ)"),
        "{err}"
    );
    assert!(
        !tmp.path().join("m").exists(),
        "nothing is written for a refused merge"
    );
    // A slice needs a seed every slice shares.
    let noseed = tmp.path().join("noseed.toml");
    let text = fs::read_to_string(matrix())
        .unwrap()
        .replace("seed = 42", "");
    fs::write(&noseed, text).unwrap();
    let out = compare(
        &[noseed.to_str().unwrap(), "--shard", "1/2", "--quiet"],
        &tmp.path().join("n"),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a fixed seed"));
    let out = compare(
        &[file, "--shard", "auto/2", "--quiet"],
        &tmp.path().join("a"),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("JOB_COMPLETION_INDEX"));
}

/// One slice (1 of 1) of a short comparison of fast_slow, for a test to spoil.
fn one_slice(dir: &Path) {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/fast_slow.toml");
    let out = compare(
        &[
            scenario.to_str().unwrap(),
            "--variants",
            "base",
            "--seeds",
            "2",
            "--duration",
            "10m",
            "--quiet",
            "--shard",
            "1/1",
        ],
        dir,
        &[],
    );
    assert!(out.status.success(), "{out:?}");
}

fn merge_one(slice: &Path, out: &Path) -> (Option<i32>, String) {
    let o = compare(&["--merge", slice.to_str().unwrap()], out, &[]);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

/// A merge trusted the numbers of `shard.json`: `"runs": 1e18` panicked (capacity overflow,
/// exit 101) and `1e9` tried to allocate 224 GB and aborted. Every number is checked against
/// the slice's own plan before anything is allocated.
#[test]
fn a_merge_checks_the_numbers_of_a_slice_before_it_allocates() {
    let tmp = tempfile::tempdir().unwrap();
    let slice = tmp.path().join("s");
    one_slice(&slice);
    let manifest = fs::read_to_string(slice.join("shard.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(v["runs"], 2);
    for (field, value, says) in [
        (
            "runs",
            "1000000000000000000",
            "shard.json: 1 planned variant × 2 seeds make 2 runs, not 1000000000000000000",
        ),
        ("runs", "1000000000", "make 2 runs, not 1000000000"),
        ("shards", "1000000000000000000", "slices"),
        ("shard", "7", "slice 7 of 1"),
    ] {
        let mut spoiled = v.clone();
        spoiled[field] = serde_json::from_str(value).unwrap();
        fs::write(slice.join("shard.json"), spoiled.to_string()).unwrap();
        let out = tmp.path().join(format!("m-{field}-{value}"));
        let (code, err) = merge_one(&slice, &out);
        assert_eq!(code, Some(2), "{field} = {value}: {err}");
        assert!(err.contains(says), "{field} = {value}: {err}");
        assert!(!out.exists(), "nothing is written for a refused merge");
    }
    v["runs"] = 2.into();
    fs::write(slice.join("shard.json"), v.to_string()).unwrap();
    let (code, err) = merge_one(&slice, &tmp.path().join("m"));
    assert!(matches!(code, Some(0 | 1)), "{err}");
}

/// A NaN or infinite metric in a slice's `runs.csv` was shown empty in `compare.csv` but
/// averaged as 0 in `compare.json` and `[expect]`, silently. The slice is refused, naming the
/// file, the line and the column.
#[test]
fn a_merge_refuses_a_metric_that_is_not_a_finite_number() {
    let tmp = tempfile::tempdir().unwrap();
    let slice = tmp.path().join("s");
    one_slice(&slice);
    let rows = fs::read_to_string(slice.join("runs.csv")).unwrap();
    let header: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "utilization").unwrap();
    for bad in ["NaN", "inf", "-inf"] {
        let spoiled: Vec<String> = rows
            .lines()
            .enumerate()
            .map(|(i, l)| {
                let mut cells: Vec<&str> = l.split(',').collect();
                if i == 2 {
                    cells[at] = bad;
                }
                cells.join(",")
            })
            .collect();
        fs::write(slice.join("runs.csv"), spoiled.join("\n") + "\n").unwrap();
        let (code, err) = merge_one(&slice, &tmp.path().join(format!("m{bad}")));
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(
            err.contains("runs.csv: line 3: column `utilization`: ")
                && err.contains("is not a finite number"),
            "{bad}: {err}"
        );
    }
}

/// docs/sweeps.md's one-machine recipe, with GNU parallel starting the slices.
#[test]
#[cfg_attr(
    no_gnu_parallel,
    ignore = "needs GNU parallel on PATH (none was found when this test was built): apt-get install parallel, then cargo test --test sim shards::"
)]
fn the_gnu_parallel_recipe_gives_the_unsharded_comparison() {
    let tmp = tempfile::tempdir().unwrap();
    let file = matrix();
    let base = [file.to_str().unwrap(), "--variants", "base", "--seeds", "1"];
    let quick = ["--duration", "10m", "--quiet"];
    let whole = tmp.path().join("whole");
    let out = compare(&[&base[..], &quick[..]].concat(), &whole, &[]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let slices = tmp.path().join("slices");
    let status = Command::new("parallel")
        .args(["--will-cite", "-j", "2"])
        .arg(exe())
        .arg("compare")
        .args(base)
        .args(quick)
        .args(["--shard", "{}/4", "--out"])
        .arg(slices.join("{}"))
        .args([":::", "1", "2", "3", "4"])
        .status()
        .unwrap();
    assert!(status.success());
    let mut dirs: Vec<PathBuf> = fs::read_dir(&slices)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 4);
    let mut args = vec!["--merge"];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    args.push("--quiet");
    let merged = tmp.path().join("merged");
    let out = compare(&args, &merged, &[]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    assert_eq!(
        fs::read(whole.join("compare.csv")).unwrap(),
        fs::read(merged.join("compare.csv")).unwrap()
    );
}
