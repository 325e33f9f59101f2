//! What the tests of every real limiter share: a free loopback port, a limiter started as a
//! child process and waited for until it answers, killed when the test is done with it (or
//! dies), one raw HTTP exchange, and `throttle-sim` run to its end with its results read back
//! (`requests.csv`, `fit --json`).
//!
//! A limiter is asked whether it is up at `/ready`, which each configuration routes around its
//! limit (nginx's `return`, an exempt route in the Python and Node.js servers), so that the
//! wait spends none of the allowance the tests measure.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a limiter may take from its start to its first answer: a Python or Node.js
/// server takes under a second here, more on a loaded machine.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A port chosen free can be taken by another process before the limiter binds it; the
/// limiter then exits at once, and is started again on another port, this many times in all.
const START_ATTEMPTS: usize = 3;

/// The checkout's root, from which the servers' programs and the captured headers are found.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A loopback port nothing listened on a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("the kernel gives a free loopback port")
}

/// How to start one limiter, given its port and its own folder.
pub struct Launch {
    pub command: Command,
    /// Whether it prints a line of JSON, `{"port": …, "versions": {…}}`, once it listens: the
    /// servers in `tests/real/` do; nginx says nothing, and its version is asked apart.
    pub announces: bool,
}

/// A limiter running as a child process, on `127.0.0.1:port`.
///
/// Dropped, it is killed and reaped. Its stdin stays open for as long as it runs: the Python
/// and Node.js servers exit when it closes, so a test process that dies without dropping it
/// leaves none behind; on Linux the kernel also kills each limiter (nginx included) when the
/// thread that started it ends.
pub struct Limiter {
    child: Child,
    _stdin: Option<ChildStdin>,
    port: u16,
    versions: String,
    dir: tempfile::TempDir,
}

impl Drop for Limiter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Limiter {
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of its limited resource.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// `name version` of each package under test, as the server printed them.
    pub fn versions(&self) -> &str {
        &self.versions
    }

    /// Set what `versions` says, for a limiter that does not announce them.
    pub fn set_versions(&mut self, versions: String) {
        self.versions = versions;
    }

    /// What it wrote to stderr so far, for a failure's message.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(STDERR)).unwrap_or_default()
    }
}

/// The file in a limiter's folder that takes its stderr.
const STDERR: &str = "stderr.log";

/// Start the limiter `launch` describes, on a free port in a new folder, and wait until it
/// answers `GET /ready`; panics with its stderr if it never does.
pub fn start(what: &str, launch: impl Fn(u16, &Path) -> Launch) -> Limiter {
    let dir = tempfile::Builder::new()
        .prefix("throttle-sim-real-")
        .tempdir()
        .expect("a temporary folder for the limiter");
    let mut failures = Vec::new();
    for _ in 0..START_ATTEMPTS {
        let port = free_port();
        let Launch {
            mut command,
            announces,
        } = launch(port, dir.path());
        match spawn_and_wait(&mut command, port, announces, dir.path()) {
            Ok((child, stdin, versions)) => {
                return Limiter {
                    child,
                    _stdin: stdin,
                    port,
                    versions,
                    dir,
                };
            }
            Err(why) => failures.push(format!("on port {port}: {why}")),
        }
    }
    panic!("{what} did not start:\n{}", failures.join("\n"));
}

/// One start: the child, its stdin and the versions it announced, or why it did not answer.
fn spawn_and_wait(
    command: &mut Command,
    port: u16,
    announces: bool,
    dir: &Path,
) -> Result<(Child, Option<ChildStdin>, String), String> {
    let stderr = File::create(dir.join(STDERR)).map_err(|e| format!("{STDERR}: {e}"))?;
    command
        .stdin(Stdio::piped())
        .stdout(if announces {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(stderr);
    die_with_this_thread(command);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    let stdin = child.stdin.take();
    let first_line = child.stdout.take().map(|out| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(out).read_line(&mut line);
            let _ = tx.send(line);
        });
        rx
    });
    let said = || std::fs::read_to_string(dir.join(STDERR)).unwrap_or_default();
    let deadline = Instant::now() + START_TIMEOUT;
    while !answers_ready(port) {
        let gone = child.try_wait().ok().flatten();
        if gone.is_some() || Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let why = gone.map_or(format!("no answer in {START_TIMEOUT:?}"), |s| {
                format!("exited ({s}) before answering")
            });
            return Err(format!("{why}; stderr: {}", said()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let versions = match first_line {
        Some(rx) => match rx
            .recv_timeout(Duration::from_secs(5))
            .map(|l| announced(&l))
        {
            Ok(Some(v)) => v,
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no line of versions on stdout; stderr: {}", said()));
            }
        },
        None => String::new(),
    };
    Ok((child, stdin, versions))
}

/// The versions of a server's first line, `{"port": …, "versions": {"name": "1.2.3", …}}`, as
/// `name 1.2.3, …`.
fn announced(line: &str) -> Option<String> {
    let said: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    let versions = said["versions"].as_object()?;
    Some(
        versions
            .iter()
            .map(|(name, v)| format!("{name} {}", v.as_str().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// On Linux, the child gets SIGKILL when the thread that spawned it ends, so that a test that
/// panics or is killed leaves no limiter holding a port (nginx does not watch its stdin).
#[cfg(target_os = "linux")]
fn die_with_this_thread(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure makes one system call (prctl) and touches no
    // lock or allocation.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_this_thread(_command: &mut Command) {}

fn answers_ready(port: u16) -> bool {
    get(port, "/ready", Duration::from_secs(2)).is_ok_and(|a| (200..300).contains(&a.status))
}

/// One HTTP answer: its status line as sent, the status, and its header lines in order.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status_line: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

/// One `GET path` on a fresh connection to `127.0.0.1:port`, read to its end (the request
/// says `Connection: close`) within `timeout`.
pub fn get(port: u16, path: &str, timeout: Duration) -> std::io::Result<Answer> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    // No half-close: nginx takes the end of a request's stream for a client gone away and drops
    // a request it is delaying (limit_req without nodelay).
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    parse_answer(&String::from_utf8_lossy(&raw))
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP answer"))
}

fn parse_answer(text: &str) -> Option<Answer> {
    let head = text.split("\r\n\r\n").next()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?.to_string();
    let status = status_line.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.to_string(), v.trim().to_string()))
        .collect();
    Some(Answer {
        status_line,
        status,
        headers,
    })
}

/// How a command run to its end went.
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Run `command` to its end, killing it past `limit`; its stdout and stderr go through files
/// in `dir`, so that a chatty child never blocks on a full pipe.
pub fn run_to_end(command: &mut Command, limit: Duration, dir: &Path, tag: &str) -> Ran {
    let (out, err) = (
        dir.join(format!("{tag}.stdout")),
        dir.join(format!("{tag}.stderr")),
    );
    let create = |p: &PathBuf| File::create(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(create(&out))
        .stderr(create(&err))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", command.get_program()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("a child's status") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{tag} still running after {limit:?}: {command:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    Ran {
        status,
        stdout: read(&out),
        stderr: read(&err),
    }
}

/// The `throttle-sim` this test binary was built with.
pub fn throttle_sim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_throttle-sim"))
}

/// `throttle-sim client --target url args… --log-requests --quiet --out out` for `seconds`,
/// which must exit 0.
pub fn client(url: &str, seconds: f64, args: &[String], out: &Path) {
    let parent = out
        .parent()
        .expect("a results folder inside the test's folder");
    let mut command = throttle_sim();
    command
        .args(["client", "--target", url])
        .args(["--duration", &format!("{seconds}s")])
        .args(args)
        .args(["--log-requests", "--quiet", "--out"])
        .arg(out);
    let tag = out.file_name().and_then(|n| n.to_str()).unwrap_or("client");
    let limit = Duration::from_secs_f64(seconds + 30.0);
    let ran = run_to_end(&mut command, limit, parent, tag);
    assert!(
        ran.status.success(),
        "{command:?} failed ({}): {}",
        ran.status,
        ran.stderr
    );
}

/// `throttle-sim fit dir --json`: the `fit` object it prints.
pub fn fit(dir: &Path) -> serde_json::Value {
    let parent = dir
        .parent()
        .expect("a results folder inside the test's folder");
    let mut command = throttle_sim();
    // Only the rule is held here: the fitted scenario's own runs (its [expect]) are
    // tests/sim/fit.rs's.
    command.arg("fit").arg(dir).args(["--json", "--no-expect"]);
    let ran = run_to_end(&mut command, Duration::from_secs(60), parent, "fit");
    // 5: the trace cannot tell the rule (the JSON says why).
    assert!(
        matches!(ran.status.code(), Some(0 | 5)),
        "fit {} failed ({}): {}",
        dir.display(),
        ran.status,
        ran.stderr
    );
    let said: serde_json::Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("fit --json printed no JSON ({e}): {}", ran.stdout));
    said["fit"].clone()
}

/// One row of a results folder's `requests.csv`: when it was sent (seconds from the run's
/// start), by which process, how it was answered (`ok`, `limited`, or an error's name) and how
/// long the answer took (seconds).
#[derive(Clone, Debug)]
pub struct Sent {
    pub t: f64,
    pub process: usize,
    pub status: String,
    pub latency: f64,
}

/// The text of `dir/requests.csv` (the run had `--log-requests`).
pub fn requests_csv(dir: &Path) -> String {
    let path = dir.join("requests.csv");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every request of a `requests.csv`'s text, a live run's or a sim's (the same columns).
pub fn requests(csv_text: &str) -> Vec<Sent> {
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header = reader.headers().expect("requests.csv has a header").clone();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("requests.csv has no `{name}` column"))
    };
    let (t, process, status, latency) = (
        column("t"),
        column("process"),
        column("status"),
        column("latency"),
    );
    reader
        .records()
        .map(|row| {
            let row = row.expect("a row of requests.csv");
            Sent {
                t: row[t].parse().expect("t is seconds"),
                process: row[process].parse().expect("process is a number"),
                status: row[status].to_string(),
                latency: row[latency].parse().unwrap_or(0.0),
            }
        })
        .collect()
}
