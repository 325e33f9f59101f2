//! A real client built on the `fair-share` library crate (`crates/fair-share/`): P OS processes
//! of T tokio tasks each send GET requests to a URL, every process sharing one `FairShare`
//! among its tasks, and ask it how long to wait before each request. It speaks the same
//! command line as the ports' drivers (`ports/README.md`), so `tests/ports/` holds it to the
//! simulator the same way:
//!
//!     cargo run --release --example fair_share_client -- \
//!         --url http://127.0.0.1:9292/ --processes 2 --threads 4 --seconds 30
//!
//! It prints one JSON line with its counts. Plain `http://` only: TLS is the HTTP client's
//! business, not the law's.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use clap::Parser;
use fair_share::{Answer, FairShare, Params, Status};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

#[derive(Parser, Debug)]
struct Args {
    /// `http://host:port/path` to send GET requests to.
    #[arg(long)]
    url: String,
    #[arg(long, default_value_t = 1)]
    processes: u32,
    #[arg(long, default_value_t = 1)]
    threads: u32,
    /// Wall time to send for.
    #[arg(long)]
    seconds: f64,
    /// Requests per `--period` seconds, when the server states no policy.
    #[arg(long, requires = "period")]
    quota: Option<f64>,
    #[arg(long, requires = "quota")]
    period: Option<f64>,
    /// The group in `X-Client-Id: GROUP/pP/tT`.
    #[arg(long, default_value = "rust")]
    group: String,
    /// Any parameter of the law, `name=value` (durations in seconds).
    #[arg(long = "param")]
    params: Vec<String>,
    /// Internal: run as process K of the fleet and print its counts.
    #[arg(long, hide = true)]
    child: Option<u32>,
}

#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    ok: AtomicU64,
    limited: AtomicU64,
    errors: AtomicU64,
    transport_errors: AtomicU64,
}

const FIELDS: [&str; 5] = ["requests", "ok", "limited", "errors", "transport_errors"];

fn main() {
    let args = Args::parse();
    let result = match args.child {
        Some(k) => child(&args, k),
        None => parent(&args),
    };
    if let Err(e) = result {
        eprintln!("fair_share_client: {e}");
        std::process::exit(1);
    }
}

/// Starts the processes, sums what each printed, and prints the fleet's counts.
fn parent(args: &Args) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let children: Vec<_> = (0..args.processes)
        .map(|k| {
            Command::new(&exe)
                .args(std::env::args_os().skip(1))
                .args(["--child", &k.to_string()])
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start process {k}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let mut totals = [0u64; 5];
    for (k, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().map_err(|e| e.to_string())?;
        let line: serde_json::Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("process {k} printed no counts: {e}"))?;
        for (t, f) in totals.iter_mut().zip(FIELDS) {
            *t += line[f].as_u64().unwrap_or(0);
        }
    }
    let mut line = serde_json::json!({
        "port": "rust", "follows": fair_share::VERSION, "processes": args.processes, "threads": args.threads,
    });
    for (t, f) in totals.iter().zip(FIELDS) {
        line[f] = (*t).into();
    }
    println!("{line}");
    if totals[0] == 0 {
        return Err("no request was answered".into());
    }
    Ok(())
}

/// One process: its tasks share one law until the time is up.
fn child(args: &Args, process: u32) -> Result<(), String> {
    let seconds = |flag: &str, v: f64| {
        Duration::try_from_secs_f64(v).map_err(|_| format!("--{flag} {v}: not a number of seconds"))
    };
    let mut params = Params {
        quota: args.quota,
        period: args.period.map(|p| seconds("period", p)).transpose()?,
        ..Params::default()
    };
    for p in &args.params {
        let (name, value) = p
            .split_once('=')
            .ok_or(format!("--param {p}: not name=value"))?;
        let value: f64 = value
            .parse()
            .map_err(|_| format!("--param {p}: not a number"))?;
        params.set(name, value)?;
    }
    if let Some((name, why)) = params.problems().into_iter().next() {
        return Err(format!("--param {name}: {why}"));
    }
    let target = Target::parse(&args.url)?;
    let law = Arc::new(FairShare::new(args.threads as usize, params));
    let counts = Arc::new(Counts::default());
    let start = Instant::now();
    let end = start + seconds("seconds", args.seconds)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let tasks: Vec<_> = (0..args.threads)
            .map(|t| {
                let id = format!("{}/p{process}/t{t}", args.group);
                let (law, counts, target) = (law.clone(), counts.clone(), target.clone());
                tokio::spawn(thread(t as usize, id, law, counts, target, start, end))
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    let c = &counts;
    let values = [
        &c.requests,
        &c.ok,
        &c.limited,
        &c.errors,
        &c.transport_errors,
    ];
    let mut line = serde_json::json!({});
    for (v, f) in values.iter().zip(FIELDS) {
        line[f] = v.load(Ordering::Relaxed).into();
    }
    println!("{line}");
    Ok(())
}

/// One thread of the law: wait, send, observe, until `end`.
async fn thread(
    i: usize,
    id: String,
    law: Arc<FairShare>,
    counts: Arc<Counts>,
    target: Target,
    start: Instant,
    end: Instant,
) {
    let mut conn: Option<SendRequest<Empty<Bytes>>> = None;
    loop {
        loop {
            let wait = law.wait(i, start.elapsed());
            if wait.is_zero() {
                break;
            }
            if Instant::now() + wait >= end {
                return;
            }
            tokio::time::sleep(wait).await;
        }
        let sent = Instant::now();
        let answer = match target.get(&mut conn, &id).await {
            Ok((status, headers)) => {
                let pairs = headers
                    .iter()
                    .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)));
                counts.requests.fetch_add(1, Ordering::Relaxed);
                let answer = Answer::read(status, pairs, sent.elapsed(), SystemTime::now());
                let counter = match answer.status {
                    Status::Ok => &counts.ok,
                    Status::Limited => &counts.limited,
                    _ => &counts.errors,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                answer
            }
            Err(_) => {
                conn = None;
                counts.transport_errors.fetch_add(1, Ordering::Relaxed);
                Answer::bare(Status::Error)
            }
        };
        law.observe(i, start.elapsed(), &answer);
        if Instant::now() >= end {
            return;
        }
    }
}

/// Where the requests go.
#[derive(Clone)]
struct Target {
    authority: String,
    path: String,
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

impl Target {
    fn parse(url: &str) -> Result<Target, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or(format!("--url {url}: only http:// URLs"))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        Ok(Target {
            authority: authority.to_string(),
            path: path.to_string(),
        })
    }

    /// One GET on the thread's keep-alive connection (opened again when closed); the body is
    /// read and dropped, at most 1 MiB of it.
    async fn get(
        &self,
        conn: &mut Option<SendRequest<Empty<Bytes>>>,
        id: &str,
    ) -> Result<(u16, hyper::HeaderMap), Failure> {
        let exchange = async {
            if conn.as_ref().is_none_or(|c| c.is_closed()) {
                let stream = TcpStream::connect(&self.authority).await?;
                let _ = stream.set_nodelay(true);
                let (sender, driver) = http1::handshake(TokioIo::new(stream)).await?;
                tokio::spawn(driver);
                *conn = Some(sender);
            }
            let sender = conn.as_mut().expect("connected above");
            sender.ready().await?;
            let req = hyper::Request::get(self.path.as_str())
                .header(hyper::header::HOST, self.authority.as_str())
                .header("x-client-id", id)
                .body(Empty::new())?;
            let (parts, body) = sender.send_request(req).await?.into_parts();
            let body = http_body_util::Limited::new(body, 1 << 20).collect().await;
            if body.is_err() {
                *conn = None;
            }
            Ok::<_, Failure>((parts.status.as_u16(), parts.headers))
        };
        tokio::time::timeout(Duration::from_secs(10), exchange).await?
    }
}
