//! The tower layer (`src/tower.rs`) around hyper-util's client, against a real hyper server on
//! loopback: a 429's `Retry-After` holds the next request back, no more requests are in flight
//! than the law has threads, and a transport error is returned and reaches the law.

use std::convert::Infallible;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fair_share::Params;
use fair_share::tower::{FairShareLayer, FairShareService};
use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, Error};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tower::{Layer, Service};

/// What the test server does and saw.
#[derive(Default)]
struct Server {
    /// When each request came.
    arrivals: Mutex<Vec<Instant>>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    /// How long each answer takes.
    hold: Duration,
    /// The first request is refused with this `Retry-After`.
    refuse_first: Option<&'static str>,
}

impl Server {
    async fn answer(&self) -> Response<Empty<Bytes>> {
        let first = {
            let mut arrivals = self.arrivals.lock().unwrap();
            arrivals.push(Instant::now());
            arrivals.len() == 1
        };
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(self.hold).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let answer = Response::builder().header("RateLimit-Policy", "1000;w=1");
        match self.refuse_first.filter(|_| first) {
            Some(retry_after) => answer
                .status(StatusCode::TOO_MANY_REQUESTS)
                .header("RateLimit", "limit=1000, remaining=0, reset=1")
                .header("Retry-After", retry_after),
            None => answer.header("RateLimit", "limit=1000, remaining=999, reset=1"),
        }
        .body(Empty::new())
        .unwrap()
    }
}

/// Serves on a free loopback port until the test's runtime ends.
async fn serve(server: Server) -> (SocketAddr, Arc<Server>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Arc::new(server);
    let serving = server.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let server = serving.clone();
            tokio::spawn(async move {
                let answer = hyper::service::service_fn(move |_: Request<Incoming>| {
                    let server = server.clone();
                    async move { Ok::<_, Infallible>(server.answer().await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), answer)
                    .await;
            });
        }
    });
    (addr, server)
}

type Layered = FairShareService<Client<HttpConnector, Empty<Bytes>>>;

/// hyper-util's client through a law of `threads` threads on a quota far above what a test
/// sends (a thousand a second), with no jitter: its own pacing delays a request by a
/// millisecond at most, so a longer delay is one an answer asked for.
fn client(threads: usize, tune: impl FnOnce(&mut Params)) -> Layered {
    let mut params = Params {
        quota: Some(1000.0),
        period: Some(Duration::from_secs(1)),
        jitter: 0.0,
        retry_jitter: 0.0,
        ..Params::default()
    };
    tune(&mut params);
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(threads)
        .build_http();
    FairShareLayer::new(threads, params).layer(client)
}

/// One GET through the layer, its body read.
async fn get(service: &mut Layered, addr: SocketAddr) -> Result<StatusCode, Error> {
    poll_fn(|cx| service.poll_ready(cx)).await?;
    let request = Request::get(format!("http://{addr}/"))
        .body(Empty::new())
        .unwrap();
    let response = service.call(request).await?;
    let status = response.status();
    response.into_body().collect().await.unwrap();
    Ok(status)
}

#[tokio::test]
async fn a_retry_after_holds_the_next_request_back() {
    let (addr, server) = serve(Server {
        refuse_first: Some("1"),
        ..Server::default()
    })
    .await;
    let mut service = client(1, |_| {});
    assert_eq!(get(&mut service, addr).await.unwrap(), 429);
    assert_eq!(get(&mut service, addr).await.unwrap(), 200);
    let arrivals = server.arrivals.lock().unwrap();
    let gap = arrivals[1] - arrivals[0];
    assert!(
        gap >= Duration::from_millis(950) && gap <= Duration::from_millis(1500),
        "the second request came {gap:?} after the refused one, not the second Retry-After asked"
    );
}

#[tokio::test]
async fn no_more_requests_are_in_flight_than_the_law_has_threads() {
    let (addr, server) = serve(Server {
        hold: Duration::from_millis(40),
        ..Server::default()
    })
    .await;
    let (threads, tasks, each) = (3, 12, 3);
    let service = client(threads, |_| {});
    let running: Vec<_> = (0..tasks)
        .map(|_| {
            let mut service = service.clone();
            tokio::spawn(async move {
                for _ in 0..each {
                    assert_eq!(get(&mut service, addr).await.unwrap(), 200);
                }
            })
        })
        .collect();
    for task in running {
        task.await.unwrap();
    }
    assert_eq!(server.arrivals.lock().unwrap().len(), tasks * each);
    assert_eq!(
        server.most_in_flight.load(Ordering::SeqCst),
        threads,
        "requests in flight at once, of {tasks} tasks through a law of {threads} threads"
    );
}

#[tokio::test]
async fn a_transport_error_is_returned_and_reaches_the_law() {
    // A port that was free a moment ago: nothing listens on it.
    let gone = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let mut service = client(1, |p| p.error_backoff = Duration::from_millis(400));
    let error = get(&mut service, gone).await.unwrap_err();
    assert!(
        error.is_connect(),
        "expected a refused connection: {error:?}"
    );

    // The law holds the thread back for its error backoff before the next request.
    let (addr, _server) = serve(Server::default()).await;
    let began = Instant::now();
    assert_eq!(get(&mut service, addr).await.unwrap(), 200);
    let took = began.elapsed();
    assert!(
        took >= Duration::from_millis(380) && took <= Duration::from_secs(1),
        "the next request took {took:?}, not the 0.4 s backoff"
    );
}

#[tokio::test]
async fn a_dropped_request_ends_its_wait_unsent_and_frees_its_slot() {
    let (addr, server) = serve(Server {
        refuse_first: Some("30"),
        ..Server::default()
    })
    .await;
    let mut service = client(1, |_| {});
    assert_eq!(get(&mut service, addr).await.unwrap(), 429);
    let waiting = tokio::time::timeout(Duration::from_millis(100), get(&mut service, addr)).await;
    assert!(waiting.is_err(), "the request was answered: {waiting:?}");
    // Its slot is free again: another request takes it, and waits the Retry-After out too.
    let again = tokio::time::timeout(Duration::from_millis(100), get(&mut service, addr)).await;
    assert!(again.is_err(), "the request was answered: {again:?}");
    assert_eq!(server.arrivals.lock().unwrap().len(), 1);
}
