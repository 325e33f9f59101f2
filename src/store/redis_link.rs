//! One connection to Redis that synchronous and asynchronous callers share.
//!
//! A dedicated OS thread runs a small current-thread tokio runtime holding a `redis`
//! `ConnectionManager` (one multiplexed connection that reconnects by itself after Redis comes
//! back). Callers hand it jobs over a channel and wait for the answer with a deadline:
//! asynchronous callers (`serve`) await it; synchronous ones (the throttles, called under their
//! process's mutex from the worker's tokio tasks) block on a channel, inside
//! `tokio::task::block_in_place` when on a multi-thread runtime so its other tasks move to
//! another thread meanwhile.
//!
//! Why a runtime of its own: the connection's I/O must never wait for a runtime whose threads
//! are the ones blocked waiting for it. Here nothing the link needs runs on the caller's
//! runtime, so a blocked caller can only wait for Redis itself, and never longer than
//! [`CALL_TIMEOUT`].
//!
//! A call is one attempt: a command that timed out or lost its connection may or may not have
//! run, so it is not sent again (an `INCR` must not count twice). The error goes back to the
//! caller; the manager reconnects in the background for the calls after it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisError, RedisResult};
use tokio::sync::mpsc;

use super::{StoreError, StoreResult};

/// The longest one Redis call may take before it counts as failed (real time).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// Extra time a waiting caller allows for the link thread itself to answer.
const REPLY_GRACE: Duration = Duration::from_millis(500);

type Job = Box<dyn FnOnce(ConnectionManager) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// A handle to the connection thread; cheap to clone. The thread ends when the last handle is
/// dropped.
#[derive(Clone)]
pub struct RedisLink {
    jobs: mpsc::UnboundedSender<Job>,
    url: Arc<str>,
    timeout: Duration,
}

impl std::fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLink").field("url", &self.url).finish()
    }
}

impl RedisLink {
    /// Connect to `url` (checked with `PING`), within [`CALL_TIMEOUT`]. The error names the url.
    pub fn connect(url: &str) -> StoreResult<RedisLink> {
        Self::connect_with_timeout(url, CALL_TIMEOUT)
    }

    /// As [`RedisLink::connect`], every call bounded by `timeout`.
    pub fn connect_with_timeout(url: &str, timeout: Duration) -> StoreResult<RedisLink> {
        let unreachable = |e: String| StoreError::new(url, format!("cannot reach it: {e}"));
        super::check_url(url).map_err(|e| StoreError::new(url, e.to_string()))?;
        let client = redis::Client::open(url).map_err(|e| unreachable(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| unreachable(format!("cannot start its I/O runtime: {e}")))?;
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<Result<(), String>>(1);
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_millis(200));
        std::thread::Builder::new()
            .name("redis-link".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let connected = tokio::time::timeout(timeout, async {
                        let mut conn = client.get_connection_manager_with_config(config).await?;
                        redis::cmd("PING").query_async::<String>(&mut conn).await?;
                        Ok::<_, RedisError>(conn)
                    })
                    .await;
                    let conn = match connected {
                        Ok(Ok(conn)) => {
                            let _ = ready_tx.send(Ok(()));
                            conn
                        }
                        Ok(Err(e)) => {
                            let _ = ready_tx.send(Err(describe(&e)));
                            return;
                        }
                        Err(_) => {
                            let _ = ready_tx.send(Err(format!("no answer within {timeout:?}")));
                            return;
                        }
                    };
                    while let Some(job) = queue.recv().await {
                        tokio::spawn(job(conn.clone()));
                    }
                });
            })
            .map_err(|e| unreachable(format!("cannot start its I/O thread: {e}")))?;
        match wait_blocking(|| ready_rx.recv_timeout(timeout + REPLY_GRACE)) {
            Ok(Ok(())) => Ok(RedisLink {
                jobs,
                url: url.into(),
                timeout,
            }),
            Ok(Err(e)) => Err(unreachable(e)),
            Err(_) => Err(unreachable(format!("no answer within {timeout:?}"))),
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Run `op` on the connection and wait for its answer, blocking this thread (at most the
    /// call timeout plus a grace).
    pub fn call_blocking<T, F, Fut>(&self, op: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(ConnectionManager) -> Fut + Send + 'static,
        Fut: Future<Output = RedisResult<T>> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.submit(op, move |r| {
            let _ = tx.send(r);
        })?;
        wait_blocking(|| rx.recv_timeout(self.timeout + REPLY_GRACE))
            .unwrap_or_else(|_| Err(self.error(format!("no answer within {:?}", self.timeout))))
    }

    /// Run `op` on the connection and await its answer (at most the call timeout plus a grace).
    pub async fn call<T, F, Fut>(&self, op: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(ConnectionManager) -> Fut + Send + 'static,
        Fut: Future<Output = RedisResult<T>> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(op, move |r| {
            let _ = tx.send(r);
        })?;
        match tokio::time::timeout(self.timeout + REPLY_GRACE, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(self.error("the connection thread stopped")),
            Err(_) => Err(self.error(format!("no answer within {:?}", self.timeout))),
        }
    }

    fn submit<T, F, Fut>(
        &self,
        op: F,
        reply: impl FnOnce(StoreResult<T>) + Send + 'static,
    ) -> StoreResult<()>
    where
        T: Send + 'static,
        F: FnOnce(ConnectionManager) -> Fut + Send + 'static,
        Fut: Future<Output = RedisResult<T>> + Send + 'static,
    {
        let (url, timeout) = (self.url.clone(), self.timeout);
        let job: Job = Box::new(move |conn| {
            Box::pin(async move {
                let r = match tokio::time::timeout(timeout, op(conn)).await {
                    Ok(Ok(v)) => Ok(v),
                    Ok(Err(e)) => Err(StoreError::new(&url, describe(&e))),
                    Err(_) => Err(StoreError::new(
                        &url,
                        format!("no answer within {timeout:?}"),
                    )),
                };
                reply(r);
            })
        });
        self.jobs
            .send(job)
            .map_err(|_| self.error("the connection thread stopped"))
    }

    fn error(&self, message: impl Into<String>) -> StoreError {
        StoreError::new(&self.url, message)
    }

    /// Delete every key whose name starts with `prefix` (which must hold no glob characters),
    /// returning how many went.
    pub fn delete_prefixed(&self, prefix: &str) -> StoreResult<u64> {
        let pattern = format!("{prefix}*");
        self.call_blocking(move |mut conn| async move {
            let mut cursor: u64 = 0;
            let mut deleted = 0u64;
            loop {
                let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .query_async(&mut conn)
                    .await?;
                if !keys.is_empty() {
                    deleted += redis::cmd("DEL")
                        .arg(&keys)
                        .query_async::<u64>(&mut conn)
                        .await?;
                }
                if next == 0 {
                    return Ok(deleted);
                }
                cursor = next;
            }
        })
    }
}

/// Block this thread on `f`, telling a multi-thread tokio runtime first (if we are on one) so
/// it hands this thread's other tasks to another thread meanwhile.
fn wait_blocking<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// A Redis error in a few words a person can act on.
fn describe(e: &RedisError) -> String {
    if matches!(
        e.kind(),
        redis::ErrorKind::Parse | redis::ErrorKind::UnexpectedReturnType
    ) {
        // An HTTP server (or anything else) on the port answers `PING` with what the
        // parser cannot read; its words ("Unexpected `72`") say nothing to the user.
        "it answered, but not as a Redis server does (is it an HTTP server or another \
         service?)"
            .to_string()
    } else if e.is_connection_refusal() {
        format!("connection refused ({e})")
    } else if e.is_timeout() {
        format!("timed out ({e})")
    } else if e.is_connection_dropped() {
        format!("connection lost ({e})")
    } else {
        e.to_string()
    }
}
