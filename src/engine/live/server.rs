//! The mock rate-limited API as a real hyper 1.x HTTP/1.1 server.
//!
//! Every request goes through the very `Limiter` the sim uses, behind one mutex, told the time
//! by a [`ScaledClock`]. Keys are the `Authorization` header (or `?key=`), mapped to the dense
//! indices limiters expect; requests without either share the default key. The answer waits
//! out the scenario's latency (in real time) after the decision, as in the sim, and the limiter
//! hears `release` when it is sent.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use serde::Serialize;
use tokio::net::TcpListener;

use super::SharedGcra;
use super::headers::{PolicyHeaders, Waits, write_decision};
use super::{ScaledClock, timer};
use crate::exchange::{DEFAULT_KEY, Status};
use crate::limiter::{
    Decision, FaultConfig, Headers, Latency, LatencySampler, Limiter, LimiterConfig,
};
use crate::rng::{SimRng, Stream, stream};
use crate::time::Nanos;

/// Distinct keys the server tracks; past this, new keys share one overflow bucket, so a
/// client inventing keys cannot grow the server's memory without bound.
pub const MAX_KEYS: usize = 100_000;
const OVERFLOW_KEY: &str = "<overflow>";

/// The header our own clients send so limiters that tell clients apart (`admit_from`) see the
/// same client indices as in the sim.
pub const CLIENT_ID: &str = "x-client-id";

/// The header our own clients stamp each request with: the run's virtual time (nanoseconds)
/// as it was written. The scenario's latency is the whole trip; the loopback's own trip,
/// tens of microseconds, is multiplied by the time scale into milliseconds of virtual time,
/// so the server holds the answer for the latency less the trip (taken as the trip here,
/// measured, twice: there and back), keeping the trip the client measures the scenario's
/// (docs/live-timing.md).
pub const SENT_AT: &str = "x-sim-sent-at";

/// What the server is built from.
#[derive(Clone, Debug)]
pub struct ServerSettings {
    pub limiter: LimiterConfig,
    /// Outages and random errors on top of the rule, as in the sim.
    pub faults: FaultConfig,
    pub latency: Latency,
    /// Which rate-limit fields the answers carry.
    pub headers: Headers,
    /// Seeds the latency draws.
    pub seed: u64,
    /// Keys registered up front, in this order (a live run passes its layout's keys, so the
    /// indices match the sim's).
    pub keys: Vec<String>,
    /// How long a connection may take to send a request's headers before it is closed.
    pub header_read_timeout: Duration,
    /// How long shutdown waits for requests in flight.
    pub shutdown_grace: Duration,
    /// `serve --store`: the GCRA kept in Redis, shared with every instance that uses the same
    /// namespace; `limiter` then only gives the rate for the policy headers.
    pub shared_limit: Option<SharedGcra>,
    /// `serve --record`: told of every answered request (`src/recording/`).
    pub observer: Option<Arc<dyn Observer>>,
    /// `serve --tls-cert --tls-key`: answer HTTPS (HTTP/1.1 over TLS) instead of HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// One answered request, as `serve --record` sees it from the server's side.
#[derive(Clone, Copy, Debug)]
pub struct Seen<'a> {
    /// The `X-Client-Id` header, when sent and readable.
    pub client_id: Option<&'a str>,
    /// The request's key (`Authorization` or `?key=`), when it had one.
    pub key: Option<&'a str>,
    /// The TCP peer's address.
    pub peer: IpAddr,
    pub status: Status,
    /// The `RateLimit-Remaining` the answer carries, if it carries one.
    pub remaining: Option<u64>,
    /// Virtual time the answer waits before it is sent (every answer, as in the sim).
    pub latency: Nanos,
}

/// Something that wants to hear of every answered request (`serve --record`). It is called on
/// the serving threads, after the decision and before the latency wait; it reads the time
/// itself, so that what it is told comes in the order it hears it.
pub trait Observer: Send + Sync + std::fmt::Debug {
    fn observe(&self, seen: Seen<'_>);
}

impl ServerSettings {
    pub fn new(limiter: LimiterConfig, latency: Latency, seed: u64) -> Self {
        ServerSettings {
            limiter,
            faults: FaultConfig::default(),
            latency,
            headers: Headers::default(),
            seed,
            keys: Vec::new(),
            header_read_timeout: Duration::from_secs(30),
            shutdown_grace: super::STOP_GRACE,
            shared_limit: None,
            observer: None,
            tls: None,
        }
    }
}

/// Counters of one key, as `GET /_stats` shows them.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct KeyStats {
    pub requests: u64,
    pub ok: u64,
    pub limited: u64,
    pub errors: u64,
}

struct Keyed {
    limiter: Box<dyn Limiter>,
    index: HashMap<String, usize>,
    names: Vec<String>,
    stats: Vec<KeyStats>,
    rng: SimRng,
    /// The index of the shared key of requests without one, found without hashing its name.
    default: usize,
}

thread_local! {
    /// The policy headers of the last limit this thread answered with (limits rarely change
    /// between requests); per thread, so their reference counts are never shared.
    static POLICY: std::cell::RefCell<Option<PolicyHeaders>> = const { std::cell::RefCell::new(None) };
}

impl Keyed {
    /// The index of a request's key, the shared default key without one.
    fn index_of(&mut self, key: Option<&str>) -> usize {
        match key {
            Some(name) => self.key(name),
            None => self.default,
        }
    }

    fn key(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let name = if self.names.len() >= MAX_KEYS {
            OVERFLOW_KEY
        } else {
            name
        };
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        self.stats.push(KeyStats::default());
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }
}

/// The server's shared state; one reference count to clone into every request.
#[derive(Clone)]
pub struct ServerState(Arc<Shared>);

/// What every connection of one server shares.
pub struct Shared {
    keyed: Mutex<Keyed>,
    clock: ScaledClock,
    latency: LatencySampler,
    /// Requests per virtual second one key earns; with a decision's limit it gives the IETF
    /// policy's window.
    rate: f64,
    connections: AtomicU64,
    /// Redis calls that failed (answered 503), for the log.
    store_failures: AtomicU64,
    settings: ServerSettings,
}

impl std::ops::Deref for ServerState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl ServerState {
    pub fn new(settings: ServerSettings, clock: ScaledClock) -> Self {
        // The same rule, faults and fault stream as the sim builds. With a shared limit the
        // faults still come first, in front of Redis.
        let rule = settings.limiter.build();
        let rate = rule.rate_per_sec();
        let rule = match settings.shared_limit {
            Some(_) => Box::new(InFront { rate }),
            None => rule,
        };
        let limiter = settings
            .faults
            .wrap(rule, stream(settings.seed, 0, Stream::Server));
        let mut keyed = Keyed {
            limiter,
            index: HashMap::new(),
            names: Vec::new(),
            stats: Vec::new(),
            rng: stream(settings.seed, u64::MAX, Stream::Network),
            default: 0,
        };
        for k in &settings.keys {
            keyed.key(k);
        }
        keyed.default = keyed.key(DEFAULT_KEY);
        ServerState(Arc::new(Shared {
            rate,
            keyed: Mutex::new(keyed),
            latency: settings.latency.sampler(),
            clock,
            connections: AtomicU64::new(0),
            store_failures: AtomicU64::new(0),
            settings,
        }))
    }

    pub fn clock(&self) -> ScaledClock {
        self.clock
    }

    /// The most 2xx one key could get over `[0, duration]` (for the summary's capacity).
    pub fn capacity(&self, duration: Nanos) -> f64 {
        self.lock().limiter.capacity(duration)
    }

    /// Decide one request of `key` (the default key without one) at the clock's time, and
    /// count it: the decision, the key's index, the time it was decided and the latency to
    /// wait before answering.
    fn decide(&self, key: Option<&str>, client: usize) -> (Decision, usize, Nanos, Nanos) {
        let mut k = self.lock();
        let index = k.index_of(key);
        // Read the clock under the lock, so the limiter is told times in order.
        let now = self.clock.now();
        let d = k.limiter.admit_from(now, index, client);
        let latency = self.latency.sample(&mut k.rng);
        let s = &mut k.stats[index];
        s.requests += 1;
        match d.status {
            Status::Ok => s.ok += 1,
            Status::Limited => s.limited += 1,
            Status::Unavailable | Status::Error => s.errors += 1,
        }
        // Only an admitted request held a place in flight (as in the sim).
        if latency == 0 && d.status == Status::Ok {
            k.limiter.release(now, index);
        }
        (d, index, now, latency)
    }

    /// Counters per key, in key order, each key shown as [`shown_key`] says: never the
    /// token itself.
    pub fn stats(&self) -> Vec<(String, KeyStats)> {
        let k = self.lock();
        k.names
            .iter()
            .map(|n| shown_key(n))
            .zip(k.stats.iter().copied())
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Keyed> {
        // A panic while holding the lock cannot leave the counters half-written in a way that
        // matters more than stopping the server would.
        self.keyed.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn handle(
        &self,
        req: Request<Incoming>,
        conn: u64,
        peer: IpAddr,
    ) -> Response<Full<Bytes>> {
        if req.uri().path() == "/_stats" {
            return self.stats_response();
        }
        let key = key_of(&req);
        let own = req
            .headers()
            .get(CLIENT_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let client = own.unwrap_or(conn as usize);
        let sent_at = own.and_then(|_| {
            req.headers()
                .get(SENT_AT)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<Nanos>().ok())
        });
        let seen = |decision: &Decision, latency: Nanos| {
            if let Some(o) = &self.settings.observer {
                self.tell(o.as_ref(), &req, key.as_deref(), peer, decision, latency);
            }
        };
        if let Some(shared) = &self.settings.shared_limit {
            return self
                .handle_shared(shared, key.as_deref(), client, sent_at, seen)
                .await;
        }
        let (decision, index, decided, latency) = self.decide(key.as_deref(), client);
        seen(&decision, latency);
        if latency > 0 {
            // Every answer waits out its latency, as in the sim, on the precise timer
            // (tokio's rounds up to the next millisecond, which the scale multiplies).
            self.answer_at(decided, sent_at, latency).await;
            // Only an admitted request held a place in flight.
            if decision.status == Status::Ok {
                let mut k = self.lock();
                let now = self.clock.now();
                k.limiter.release(now, index);
            }
        }
        self.respond(&decision)
    }

    /// Tell `observer` of an answered request, with what its answer shows.
    fn tell<B>(
        &self,
        observer: &dyn Observer,
        req: &Request<B>,
        key: Option<&str>,
        peer: IpAddr,
        decision: &Decision,
        latency: Nanos,
    ) {
        let shown = self.settings.headers.shown(*decision);
        observer.observe(Seen {
            client_id: req.headers().get(CLIENT_ID).and_then(|v| v.to_str().ok()),
            key,
            peer,
            status: decision.status,
            remaining: shown.has_headers().then_some(shown.remaining),
            latency,
        });
    }

    /// One request against the limit kept in Redis: faults first (here), then one script in
    /// Redis decides. A Redis that does not answer in time gets the client a 503, never an
    /// admission nobody counted.
    async fn handle_shared(
        &self,
        shared: &SharedGcra,
        key: Option<&str>,
        client: usize,
        sent_at: Option<Nanos>,
        seen: impl FnOnce(&Decision, Nanos),
    ) -> Response<Full<Bytes>> {
        let (front, index, name, decided, latency) = {
            let mut k = self.lock();
            let index = k.index_of(key);
            let now = self.clock.now();
            let d = k.limiter.admit_from(now, index, client);
            let latency = self.latency.sample(&mut k.rng);
            (d, index, k.names[index].clone(), now, latency)
        };
        let decision = if front.status == Status::Ok {
            match shared.admit(&name).await {
                Ok(d) => d,
                Err(e) => {
                    let n = self.store_failures.fetch_add(1, Ordering::Relaxed);
                    if n.is_power_of_two() || n == 0 {
                        eprintln!("{e} (answered 503; {} failed calls so far)", n + 1);
                    }
                    Decision {
                        status: Status::Unavailable,
                        remaining: 0,
                        limit: 0,
                        retry_after: None,
                    }
                }
            }
        } else {
            front
        };
        {
            let mut k = self.lock();
            let s = &mut k.stats[index];
            s.requests += 1;
            match decision.status {
                Status::Ok => s.ok += 1,
                Status::Limited => s.limited += 1,
                Status::Unavailable | Status::Error => s.errors += 1,
            }
        }
        seen(&decision, latency);
        if latency > 0 {
            self.answer_at(decided, sent_at, latency).await;
        }
        self.respond(&decision)
    }

    /// Hold an answer decided at `decided` for `latency`, on the precise timer ([`timer`]).
    /// A request stamped with the time it was sent ([`SENT_AT`]) had its trip here already:
    /// the answer then leaves `latency` after the send less the trip back, taken as long as
    /// the trip here, so the client sees the scenario's latency, not it plus the loopback's.
    async fn answer_at(&self, decided: Nanos, sent_at: Option<Nanos>, latency: Nanos) {
        let at = match sent_at {
            // A stamp from the future (a client's clock a little ahead) counts no trip.
            Some(sent) if sent <= decided => {
                let trip = decided - sent;
                sent.saturating_add(latency).saturating_sub(trip)
            }
            _ => decided.saturating_add(latency),
        };
        timer::sleep_until(self.clock.instant_at(at)).await;
    }

    /// The HTTP answer for a decision, with the rate-limit headers the server sends.
    fn respond(&self, decision: &Decision) -> Response<Full<Bytes>> {
        let status = match decision.status {
            Status::Ok => StatusCode::OK,
            Status::Limited => StatusCode::TOO_MANY_REQUESTS,
            Status::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Status::Error => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = match decision.status {
            Status::Ok => "ok\n",
            Status::Limited => "rate limited\n",
            _ => "unavailable\n",
        };
        let retry = decision.retry_after.map(|r| self.clock.to_real(r));
        let mut resp = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *resp.status_mut() = status;
        let mut h = HeaderMap::with_capacity(8);
        h.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        // Injected faults come from no rule: they carry no rate-limit headers.
        if !decision.has_headers() || self.settings.headers == Headers::None {
            *resp.headers_mut() = h;
            return resp;
        }
        POLICY.with_borrow_mut(|cached| {
            if cached.as_ref().is_none_or(|p| p.limit != decision.limit) {
                *cached = Some(PolicyHeaders::new(
                    decision.limit,
                    self.window(decision.limit),
                ));
            }
            let policy = cached.as_ref().expect("just set");
            // Only GitHub's epoch-second reset reads the wall clock; the others skip the call.
            let now = if self.settings.headers == Headers::Github {
                std::time::SystemTime::now()
            } else {
                std::time::SystemTime::UNIX_EPOCH
            };
            let waits = Waits::of(decision, retry, self.until_whole(decision), now);
            write_decision(&mut h, self.settings.headers, decision, policy, waits);
        });
        *resp.headers_mut() = h;
        resp
    }

    /// The real time the key of `decision` takes to earn back what it has used: when its
    /// quota is whole again (the reset of the IETF and GitHub fields).
    fn until_whole(&self, decision: &Decision) -> Duration {
        self.window(decision.limit.saturating_sub(decision.remaining))
    }

    /// The real time one key takes to earn `limit` requests: the IETF policy's window.
    fn window(&self, limit: u64) -> Duration {
        if self.rate > 0.0 {
            self.clock
                .to_real((limit as f64 / self.rate * 1e9) as Nanos)
        } else {
            Duration::ZERO
        }
    }

    fn stats_response(&self) -> Response<Full<Bytes>> {
        #[derive(Serialize)]
        struct Stats {
            uptime_s: f64,
            virtual_s: f64,
            time_scale: f64,
            connections: u64,
            keys: serde_json::Map<String, serde_json::Value>,
        }
        let keys = self
            .stats()
            .into_iter()
            .map(|(k, s)| (k, serde_json::to_value(s).expect("counters serialize")))
            .collect();
        let now = self.clock.now();
        let stats = Stats {
            uptime_s: now as f64 / 1e9 / self.clock.scale(),
            virtual_s: now as f64 / 1e9,
            time_scale: self.clock.scale(),
            connections: self.connections.load(Ordering::Relaxed),
            keys,
        };
        let mut body = serde_json::to_vec_pretty(&stats).expect("stats serialize");
        body.push(b'\n');
        let mut resp = Response::new(Full::new(Bytes::from(body)));
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        resp
    }
}

/// The rule's place when the rule itself is in Redis: whatever the faults let through goes on
/// to Redis.
struct InFront {
    rate: f64,
}

impl Limiter for InFront {
    fn admit(&mut self, _now: Nanos, _key: usize) -> Decision {
        Decision {
            status: Status::Ok,
            remaining: 0,
            limit: 1,
            retry_after: None,
        }
    }

    fn capacity(&self, _duration: Nanos) -> f64 {
        0.0
    }

    fn rate_per_sec(&self) -> f64 {
        self.rate
    }
}

/// A key as `/_stats` and the Ctrl-C summary show it: the shared key of requests without one
/// and the overflow bucket by name, every token by its fingerprint.
pub fn shown_key(name: &str) -> String {
    if name == DEFAULT_KEY || name == OVERFLOW_KEY {
        name.to_string()
    } else {
        crate::fingerprint::fingerprint(name)
    }
}

/// The key of a request: its `Authorization` header, else its `?key=` parameter.
fn key_of<B>(req: &Request<B>) -> Option<std::borrow::Cow<'_, str>> {
    if let Some(v) = req.headers().get(hyper::header::AUTHORIZATION) {
        return Some(String::from_utf8_lossy(v.as_bytes()));
    }
    req.uri().query().and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == "key")
            .map(|(_, v)| v.into())
    })
}

/// Serve connections from `listener` until `shutdown` completes, then stop accepting and give
/// requests in flight the settings' grace to finish.
pub async fn serve(listener: TcpListener, state: ServerState, shutdown: impl Future<Output = ()>) {
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(state.settings.header_read_timeout)
        .keep_alive(true)
        // Answers are small: copying the body after the head costs less than writev(2).
        .writev(false);
    let tls = state
        .settings
        .tls
        .clone()
        .map(tokio_rustls::TlsAcceptor::from);
    let mut shutdown = std::pin::pin!(shutdown);
    // Requests clone this outer reference, whose count only this task's connections touch,
    // instead of the one every thread shares.
    let local = Arc::new(state.clone());
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let peer = peer.ip();
                    let _ = stream.set_nodelay(true);
                    let conn_id = state.connections.fetch_add(1, Ordering::Relaxed);
                    let st = local.clone();
                    let service = service_fn(move |req| {
                        let st = st.clone();
                        async move { Ok::<_, Infallible>(st.handle(req, conn_id, peer).await) }
                    });
                    if let Some(acceptor) = &tls {
                        let (acceptor, builder) = (acceptor.clone(), builder.clone());
                        let watcher = graceful.watcher();
                        let limit = state.settings.header_read_timeout;
                        // As below; a failed handshake, or one that takes longer than a
                        // request's headers may, ends only its connection.
                        tokio::spawn(async move {
                            let Ok(Ok(stream)) =
                                tokio::time::timeout(limit, acceptor.accept(stream)).await
                            else {
                                return;
                            };
                            let conn = builder.serve_connection(TokioIo::new(stream), service);
                            let _ = watcher.watch(conn).await;
                        });
                        continue;
                    }
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    let watched = graceful.watch(conn);
                    // A connection's error (malformed request, reset, timeout) ends only that
                    // connection.
                    tokio::spawn(async move {
                        let _ = watched.await;
                    });
                }
                // Out of file descriptors or a connection reset before accept: wait a moment
                // rather than spin, and keep serving the connections already open.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(state.settings.shutdown_grace, graceful.shutdown()).await;
}

/// A server running on its own threads (see [`serve_per_thread`]).
pub struct Running {
    pub addr: SocketAddr,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Wait until every thread has shut down.
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Serve `addr` on `threads` OS threads, each with its own single-threaded runtime and its own
/// `SO_REUSEPORT` listener on the same address: the kernel spreads connections over them and a
/// request never crosses threads (nginx's worker model; no work stealing, no cross-thread
/// wake-ups). All threads share `state`, so there is still one limiter. They stop, gracefully,
/// once `stop` turns true.
pub fn serve_per_thread(
    addr: SocketAddr,
    state: ServerState,
    threads: usize,
    stop: &'static std::sync::atomic::AtomicBool,
) -> std::io::Result<Running> {
    // Listening sockets are made in a scratch runtime and handed over deregistered.
    let scratch = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let listeners = {
        let _in = scratch.enter();
        let addr = probe_free(addr)?;
        let first = reuseport_listener(addr)?;
        let bound = first.local_addr()?;
        let mut all = vec![first.into_std()?];
        for _ in 1..threads.max(1) {
            all.push(reuseport_listener(bound)?.into_std()?);
        }
        all
    };
    let bound = listeners[0].local_addr()?;
    let mut handles = Vec::with_capacity(listeners.len());
    for (i, std_listener) in listeners.into_iter().enumerate() {
        let state = state.clone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = std::thread::Builder::new()
            .name(format!("serve-{i}"))
            .spawn(move || {
                rt.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(std_listener) else {
                        return;
                    };
                    serve(listener, state, async {
                        while !stop.load(Ordering::Relaxed) {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    })
                    .await;
                });
            })?;
        handles.push(handle);
    }
    Ok(Running {
        addr: bound,
        threads: handles,
    })
}

/// `SO_REUSEPORT` would let this serve share a port another serve (or any program with the
/// option) already listens on, halving each one's limit unnoticed (issue 11). So first bind
/// the address plainly, which fails with `AddrInUse` while anything holds it, and hand the
/// port it got (port 0: a free one) to the listeners that share it among themselves. Another
/// program binding the port in the moment between the two is not prevented.
fn probe_free(addr: SocketAddr) -> std::io::Result<SocketAddr> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // Connections of an earlier serve still in TIME_WAIT do not make the port busy.
    socket.set_reuseaddr(true)?;
    socket.bind(addr).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            std::io::Error::new(
                e.kind(),
                "the port is already in use (another serve, or another program); stop it or \
                 choose another --addr (port 0 picks a free one)",
            )
        } else {
            e
        }
    })?;
    socket.local_addr()
}

fn reuseport_listener(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(true)?;
    socket.bind(addr)?;
    // Room for a burst of thousands of connections arriving at once.
    socket.listen(4096)
}

/// Bind `addr` (port 0 picks a free one) and report the address actually bound.
pub async fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_authorization_header_else_the_key_parameter() {
        let r = Request::builder().uri("/x?a=1&key=k1").body(()).unwrap();
        assert_eq!(key_of(&r).as_deref(), Some("k1"));
        let r = Request::builder()
            .uri("/x?key=k1")
            .header("Authorization", "Bearer t")
            .body(())
            .unwrap();
        assert_eq!(key_of(&r).as_deref(), Some("Bearer t"));
        let r = Request::builder().uri("/x?keys=no").body(()).unwrap();
        assert_eq!(key_of(&r), None);
    }

    #[test]
    fn registered_keys_keep_their_indices_and_new_keys_stop_at_the_cap() {
        let mut settings = ServerSettings::new(LimiterConfig::default(), Latency::default(), 1);
        settings.keys = vec!["a".into(), "b".into()];
        let state = ServerState::new(settings, ScaledClock::starting_now(1.0));
        let mut k = state.lock();
        assert_eq!((k.key("a"), k.key("b")), (0, 1));
        assert_eq!(k.key(DEFAULT_KEY), 2);
        assert_eq!(k.index_of(None), 2);
        for i in 0..MAX_KEYS {
            k.key(&format!("client-{i}"));
        }
        // Past the cap every new key lands in one shared bucket.
        let overflow = k.key("one-more");
        assert_eq!(k.key("and-another"), overflow);
        assert_eq!(k.names.len(), MAX_KEYS + 1);
        assert_eq!(k.names[overflow], OVERFLOW_KEY);
    }
}
