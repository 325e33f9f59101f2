//! A [`tower::Layer`](::tower::Layer) that sends every request of an HTTP client service
//! through one [`FairShare`] (feature `tower`).
//!
//! The law's threads are the layer's slots: a request takes a free one for as long as it is
//! waiting or in flight, so at most the law's thread count are at once, and one beyond that
//! waits for a slot. With a slot it asks the law, sleeps (`tokio::time::sleep`) holding
//! nothing but the slot, and asks again, as a waiting thread must (another answer may have
//! moved the pace); then it sends, and tells the law the answer's status, headers and latency,
//! or a transport error. The slot is freed when the answer's head has come (the body is the
//! caller's to read) or when the request's future is dropped, which also withdraws a request
//! still waiting, unsent and untold.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use fair_share::{Params, tower::FairShareLayer};
//! use http_body_util::Empty;
//! use hyper::body::Bytes;
//! use hyper_util::{client::legacy::Client, rt::TokioExecutor};
//! use tower::{Layer, Service};
//!
//! let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
//! let mut service = FairShareLayer::new(8, Params::default()).layer(client);
//! let request = http::Request::get("http://127.0.0.1:9292/").body(Empty::new())?;
//! let response = service.call(request).await?; // ready at once: see `poll_ready`
//! # Ok(()) }
//! ```

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime};

use ::tower::{Layer, Service};
use http::{Request, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{Answer, FairShare, Params, Status};

/// Wraps services in [`FairShareService`]s that share one law and its slots: make one per
/// process (cloning the layer, or the services it makes, shares them).
#[derive(Clone)]
pub struct FairShareLayer {
    shared: Arc<Shared>,
}

impl FairShareLayer {
    /// A law of `threads` threads, which is also how many requests may be waiting or in
    /// flight at once.
    pub fn new(threads: usize, params: Params) -> FairShareLayer {
        FairShareLayer::with_law(FairShare::new(threads, params))
    }

    /// Around a law of the caller's (one with a fixed draw, say); its thread count is the
    /// number of slots.
    pub fn with_law(law: FairShare) -> FairShareLayer {
        let threads = law.threads();
        FairShareLayer {
            shared: Arc::new(Shared {
                law,
                start: Instant::now(),
                slots: Arc::new(Semaphore::new(threads)),
                free: Mutex::new((0..threads).rev().collect()),
            }),
        }
    }

    /// The law the layer's services share.
    pub fn law(&self) -> &FairShare {
        &self.shared.law
    }
}

impl<S> Layer<S> for FairShareLayer {
    type Service = FairShareService<S>;

    fn layer(&self, inner: S) -> FairShareService<S> {
        FairShareService {
            inner,
            shared: self.shared.clone(),
        }
    }
}

/// The law, its clock's start and its slots.
struct Shared {
    law: FairShare,
    start: Instant,
    /// One permit per free thread of the law.
    slots: Arc<Semaphore>,
    /// The free threads' numbers: a permit held is a number taken from here.
    free: Mutex<Vec<usize>>,
}

impl Shared {
    /// A free thread of the law, waited for.
    async fn slot(self: &Arc<Self>) -> Slot {
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("the layer never closes its semaphore");
        let thread = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .expect("a permit stands for a free thread");
        Slot {
            thread,
            shared: self.clone(),
            _permit: permit,
        }
    }

    /// Until the law lets `thread` send (the send is then booked). The law's lock is held only
    /// inside each `wait`, never across the sleep.
    async fn turn(&self, thread: usize) {
        loop {
            let wait = self.law.wait(thread, self.start.elapsed());
            if wait.is_zero() {
                return;
            }
            tokio::time::sleep(wait).await;
        }
    }
}

/// A thread of the law, in use; it goes back to the free list before its permit is released
/// (fields drop after `drop`), so a permit always finds a number.
struct Slot {
    thread: usize,
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.shared
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(self.thread);
    }
}

/// A service sending through the law (made by [`FairShareLayer`]). Its errors are the inner
/// service's, unchanged.
#[derive(Clone)]
pub struct FairShareService<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> FairShareService<S> {
    /// The law this service shares.
    pub fn law(&self) -> &FairShare {
        &self.shared.law
    }
}

impl<S, B, R> Service<Request<B>> for FairShareService<S>
where
    S: Service<Request<B>, Response = Response<R>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send + 'static,
    B: Send + 'static,
    R: 'static,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<R>, S::Error>> + Send>>;

    /// Always ready: the wait for a slot and for the law is inside each call's future, and the
    /// inner service is asked to be ready there, after that wait, on the clone that then sends
    /// it the request. Asked here, the inner service's readiness would be held through the
    /// law's wait (a `Buffer`'s place, a `ConcurrencyLimit`'s permit, kept asleep) and might
    /// no longer hold when the wait ends.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // A clone per call, which is how a tower service is sent into a future it does not
        // borrow from; `self.inner` itself is never polled ready, so no readiness is lost.
        let mut inner = self.inner.clone();
        let shared = self.shared.clone();
        Box::pin(async move {
            let slot = shared.slot().await;
            shared.turn(slot.thread).await;
            let sent = Instant::now();
            let result = match poll_fn(|cx| inner.poll_ready(cx)).await {
                Ok(()) => inner.call(request).await,
                Err(e) => Err(e),
            };
            let latency = sent.elapsed();
            let answer = match &result {
                Ok(response) => {
                    let headers = response
                        .headers()
                        .iter()
                        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
                    Answer::read(
                        response.status().as_u16(),
                        headers,
                        latency,
                        SystemTime::now(),
                    )
                }
                Err(_) => Answer {
                    latency,
                    ..Answer::bare(Status::Error)
                },
            };
            shared
                .law
                .observe(slot.thread, shared.start.elapsed(), &answer);
            result
        })
    }
}
