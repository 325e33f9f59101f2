//! A client that sends through [`FairShareLayer`] around hyper-util's client: P OS processes of
//! T tokio tasks each send GET requests to a URL, every process with one layer (one law, T
//! slots) shared by its tasks. It speaks the command line of the ports' drivers
//! (ports/README.md), so `tests/ports/` holds it to the simulator as it holds them:
//!
//!     cargo run -p fair-share --features tower --example tower_client -- \
//!         --url http://127.0.0.1:9292/ --processes 2 --threads 4 --seconds 30
//!
//! It prints one JSON line of its counts, `"port":"rust-tower"`.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use fair_share::tower::FairShareLayer;
use fair_share::{Params, Status};
use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tower::{Layer, Service};

#[derive(Parser, Debug)]
struct Args {
    /// `http://host:port/path` to send GET requests to.
    #[arg(long)]
    url: String,
    #[arg(long, default_value_t = 1)]
    processes: u32,
    #[arg(long, default_value_t = 1)]
    threads: u32,
    /// Wall time to send for, from the parent's start.
    #[arg(long)]
    seconds: f64,
    /// Requests per `--period` seconds, when the server states no policy.
    #[arg(long, requires = "period")]
    quota: Option<f64>,
    #[arg(long, requires = "quota")]
    period: Option<f64>,
    /// The group in `X-Client-Id: GROUP/pP/tT`.
    #[arg(long, default_value = "rust-tower")]
    group: String,
    /// Any parameter of the law, `name=value` (durations in seconds).
    #[arg(long = "param")]
    params: Vec<String>,
    /// Internal: run as process K of the fleet, sending until the parent's start + seconds
    /// (wall clock, Unix nanoseconds).
    #[arg(long, hide = true, requires = "until")]
    child: Option<u32>,
    #[arg(long, hide = true)]
    until: Option<u128>,
}

const FIELDS: [&str; 5] = ["requests", "ok", "limited", "errors", "transport_errors"];

type Failure = Box<dyn std::error::Error + Send + Sync>;

fn main() {
    let args = Args::parse();
    let result = match args.child {
        Some(k) => child(&args, k),
        None => parent(&args),
    };
    if let Err(e) = result {
        eprintln!("tower_client: {e}");
        std::process::exit(1);
    }
}

fn unix_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos()
}

/// Starts the processes, sums what each printed, and prints the fleet's counts.
fn parent(args: &Args) -> Result<(), String> {
    let seconds = Duration::try_from_secs_f64(args.seconds)
        .map_err(|_| format!("--seconds {}: not a number of seconds", args.seconds))?;
    let until = unix_ns() + seconds.as_nanos();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let children: Vec<_> = (0..args.processes)
        .map(|k| {
            Command::new(&exe)
                .args(std::env::args_os().skip(1))
                .args(["--child", &k.to_string(), "--until", &until.to_string()])
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
        "port": "rust-tower", "follows": fair_share::VERSION, "processes": args.processes, "threads": args.threads,
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

/// One process: its tasks share one layered client until the time is up.
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
    let uri: http::Uri = args
        .url
        .parse()
        .map_err(|e| format!("--url {}: {e}", args.url))?;
    // The parent's deadline on this process's monotonic clock.
    let left = args.until.unwrap_or(0).saturating_sub(unix_ns());
    let end = Instant::now() + Duration::from_nanos(left.try_into().unwrap_or(u64::MAX));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let counts = runtime.block_on(async {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(args.threads as usize)
            .build(connector);
        let service = FairShareLayer::new(args.threads as usize, params).layer(Gate { client });
        let counts = Arc::new(Counts::default());
        let tasks: Vec<_> = (0..args.threads)
            .map(|t| {
                let id = format!("{}/p{process}/t{t}", args.group);
                let (service, counts, uri) = (service.clone(), counts.clone(), uri.clone());
                tokio::spawn(task(service, id, uri, counts, end))
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        counts
    });
    let values = [
        &counts.requests,
        &counts.ok,
        &counts.limited,
        &counts.errors,
        &counts.transport_errors,
    ];
    let mut line = serde_json::json!({});
    for (v, f) in values.iter().zip(FIELDS) {
        line[f] = v.load(Ordering::Relaxed).into();
    }
    println!("{line}");
    Ok(())
}

#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    ok: AtomicU64,
    limited: AtomicU64,
    errors: AtomicU64,
    transport_errors: AtomicU64,
}

type Layered = fair_share::tower::FairShareService<Gate>;

/// One task: requests one after another through the shared service until `end`. A request
/// still waiting for its turn at `end` is withdrawn unsent; one already handed to the client
/// is finished, so that what is counted here is what the server counted.
async fn task(mut service: Layered, id: String, uri: http::Uri, counts: Arc<Counts>, end: Instant) {
    while Instant::now() < end {
        let handed = Arc::new(Handed::default());
        let request = http::Request::get(uri.clone())
            .header("x-client-id", id.as_str())
            .extension(handed.clone())
            .body(Empty::<Bytes>::new())
            .expect("a GET of a parsed URI");
        // Ready at once (the layer waits inside the call), but asked, as tower's contract says.
        if std::future::poll_fn(|cx| service.poll_ready(cx))
            .await
            .is_err()
        {
            return;
        }
        let answer = service.call(request);
        tokio::pin!(answer);
        let result = tokio::select! {
            result = &mut answer => result,
            _ = tokio::time::sleep_until(end.into()) => {
                if handed.withdraw() {
                    return;
                }
                answer.await
            }
        };
        match result {
            Ok(response) => {
                let pairs = response
                    .headers()
                    .iter()
                    .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)));
                let counter = match Status::read(response.status().as_u16(), pairs) {
                    Status::Ok => &counts.ok,
                    Status::Limited => &counts.limited,
                    _ => &counts.errors,
                };
                counts.requests.fetch_add(1, Ordering::Relaxed);
                counter.fetch_add(1, Ordering::Relaxed);
                let _ = http_body_util::Limited::new(response.into_body(), 1 << 20)
                    .collect()
                    .await;
            }
            Err(_) => {
                counts.transport_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Whether a request reached the client (1) or was withdrawn before it did (2): the first of
/// the two wins.
#[derive(Default)]
struct Handed(AtomicU8);

impl Handed {
    fn hand(&self) -> bool {
        self.0
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn withdraw(&self) -> bool {
        self.0
            .compare_exchange(0, 2, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// hyper-util's client under the layer, handing on only a request not withdrawn, and giving
/// each exchange 10 s (the law's wait is not in it).
#[derive(Clone)]
struct Gate {
    client: Client<HttpConnector, Empty<Bytes>>,
}

impl Service<http::Request<Empty<Bytes>>> for Gate {
    type Response = http::Response<Incoming>;
    type Error = Failure;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<http::Response<Incoming>, Failure>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Failure>> {
        self.client.poll_ready(cx).map_err(Failure::from)
    }

    fn call(&mut self, request: http::Request<Empty<Bytes>>) -> Self::Future {
        let handed = request
            .extensions()
            .get::<Arc<Handed>>()
            .is_none_or(|h| h.hand());
        if !handed {
            return Box::pin(std::future::ready(Err(
                "withdrawn at the end of the run".into()
            )));
        }
        let exchange = self.client.call(request);
        Box::pin(async move { Ok(tokio::time::timeout(Duration::from_secs(10), exchange).await??) })
    }
}
