//! Test support shared by the test binaries (`tests/sim`, `tests/live`, `tests/ports`,
//! `tests/live_agreement.rs`): the binary, a child that is killed when a test fails, `serve`
//! on a free port (and `serve --record`), a page's DOM from a headless Chromium, a hostile
//! server whose answers a test scripts (`hostile.rs`), what a live run is held to against
//! the sim (`agreement.rs`), and the Go port's driver, built (`go.rs`).

#![allow(dead_code)] // each test crate uses its own part of this module

pub mod agreement;
pub mod go;
pub mod hostile;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

pub fn kill(pid: u32, sig: Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).unwrap();
}

/// A JSON file the tool wrote (`summary.json`, `compare.json`, `check --json`'s output).
pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The names of a comparison's variants (`compare.json`, `compare --json`), in its order.
pub fn variant_names(c: &serde_json::Value) -> Vec<&str> {
    c["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect()
}

/// A results folder's `summary.json`.
pub fn summary(dir: &Path) -> serde_json::Value {
    json(&dir.join("summary.json"))
}

/// Write `text` to `dir/name` (a scenario file, usually) and give its path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The summary of a sim run of the bundled `scenarios/<file>` with `sets` (`path=value`
/// overrides) on top. The bundled scenarios name their seeds.
pub fn bundled(file: &str, sets: &[&str]) -> throttle_sim::record::Summary {
    let overrides: Vec<throttle_sim::scenario::Override> =
        sets.iter().map(|s| s.parse().unwrap()).collect();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(file);
    let scenario = throttle_sim::scenario::read_scenario(&path, &overrides, 0).unwrap();
    throttle_sim::engine::sim::summarize(&scenario)
}

/// A scenario given inline, seeded with 1 when it names no seed.
pub fn inline(text: &str) -> throttle_sim::scenario::Scenario {
    throttle_sim::scenario::parse_scenario(text, "inline.toml", "inline", &[], 1).unwrap()
}

pub fn exe() -> PathBuf {
    assert_cmd::cargo::cargo_bin!("throttle-sim").to_path_buf()
}

/// A child process that is killed if the test fails before it ends.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    pub fn signal(&self, sig: Signal) {
        kill(self.pid(), sig);
    }

    /// Wait for the exit code, failing the test past `limit`.
    pub fn wait(&mut self, limit: Duration) -> Option<i32> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "still running after {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Start `serve` on a free port with `args`; the address it printed.
pub fn serve(args: &[&str]) -> (Running, String) {
    let mut child = Command::new(exe())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let running = Running(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("serve prints its address");
    (running, address_in(&line))
}

/// Start `serve --record` on a free port with `args`; the child, its address, and a thread
/// collecting the rest of its stdout (what it says when it stops).
pub fn serve_recording(args: &[&str]) -> (Running, String, std::thread::JoinHandle<String>) {
    let mut child = Command::new(exe())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let running = Running(child);
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = address_in(&line);
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    (running, addr, rest)
}

/// The `host:port` of the URL in `serve`'s first line (`… on http://127.0.0.1:PORT/`).
pub fn address_in(line: &str) -> String {
    line.split("://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string()
}

/// One HTTP/1.1 GET on a fresh connection, waiting at most `timeout` for the answer: the
/// status and the whole answer in lower case.
pub fn http_get(addr: &str, target: &str, extra: &str, timeout: Duration) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    (status, text.to_lowercase())
}

/// The page's DOM after its script ran for `budget_ms` of the browser's virtual time (its
/// polls and fetches included), from a fresh headless Chromium with its network features off,
/// in a window `width` pixels wide. The tests that call it are ignored where `no_chromium`.
pub fn dom_after_scripts(url: &str, budget_ms: u32, width: u32) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .arg(format!("--window-size={width},1200"))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("chromium starts");
    assert!(out.status.success(), "chromium failed: {:?}", out.status);
    String::from_utf8(out.stdout).unwrap()
}
