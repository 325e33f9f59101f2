//! Where a server listens: one accept loop per thread, each on its own `SO_REUSEPORT`
//! listener, connections served by hyper (over TLS when asked) and shut down gracefully.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use super::ServerState;

/// After a failed accept (out of file descriptors, a connection reset before it was taken):
/// a pause rather than a spin, the open connections still served.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(5);

/// How often each serving thread looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);

/// Connections the kernel queues before they are accepted: room for a burst of thousands
/// arriving at once.
const BACKLOG: u32 = 4096;

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
                Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
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
                            tokio::time::sleep(STOP_POLL).await;
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
/// option) already listens on, halving each one's limit unnoticed. So first bind
/// the address plainly, which fails with `AddrInUse` while anything holds it, and hand the
/// port it got (port 0: a free one) to the listeners that share it among themselves. Another
/// program binding the port in the moment between the two is not prevented.
fn probe_free(addr: SocketAddr) -> std::io::Result<SocketAddr> {
    let socket = tcp_socket(addr)?;
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

/// A TCP socket of `addr`'s family that may bind a port whose earlier connections are still
/// in TIME_WAIT (they do not make the port busy).
fn tcp_socket(addr: SocketAddr) -> std::io::Result<tokio::net::TcpSocket> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    Ok(socket)
}

fn reuseport_listener(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = tcp_socket(addr)?;
    socket.set_reuseport(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Bind `addr` (port 0 picks a free one) and report the address actually bound.
pub async fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}
