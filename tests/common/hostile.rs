//! A hostile server for tests: a loopback HTTP/1.1 listener whose every answer the test
//! scripts — any status, any header set (names and values as raw bytes, however odd), a body
//! of any size or without end, a stall before the answer — and which counts what it served,
//! so a test can tell how much of an answer the client read.
//!
//! It speaks just enough HTTP/1.1 for a client: it reads a request's head (bounded), writes
//! the scripted answer, and keeps the connection for the next request until the client
//! closes it. Each connection has its own thread; the server stops when dropped.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What the body of an answer is.
#[derive(Clone, Debug)]
pub enum Body {
    /// `content-length: N` and N bytes.
    Bytes(u64),
    /// Chunked, never ending: the client must stop reading by itself.
    Endless,
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    /// Written as given, one `name: value` line each.
    pub headers: Vec<(String, String)>,
    pub body: Body,
    /// Wait this long after the request before answering (`None`: answer at once); the
    /// server gives up the wait when it is dropped.
    pub stall: Option<Duration>,
}

impl Answer {
    /// `status` with an empty body and no other header.
    pub fn status(status: u16) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body: Body::Bytes(0),
            stall: None,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn body(mut self, body: Body) -> Answer {
        self.body = body;
        self
    }

    /// Never answer (within any test's time).
    pub fn stalled(mut self) -> Answer {
        self.stall = Some(Duration::from_secs(3600));
        self
    }
}

type Script = dyn Fn(u64) -> Answer + Send + Sync;

/// The running server; stops when dropped.
pub struct HostileServer {
    pub addr: SocketAddr,
    requests: Arc<AtomicU64>,
    body_bytes: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl HostileServer {
    /// Answer every request with `script(n)`, `n` counting requests from 0.
    pub fn start(script: impl Fn(u64) -> Answer + Send + Sync + 'static) -> HostileServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = HostileServer {
            addr,
            requests: Arc::default(),
            body_bytes: Arc::default(),
            stop: Arc::default(),
        };
        let script: Arc<Script> = Arc::new(script);
        let (requests, body_bytes, stop) = (
            server.requests.clone(),
            server.body_bytes.clone(),
            server.stop.clone(),
        );
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (script, requests, body_bytes, stop) = (
                    script.clone(),
                    requests.clone(),
                    body_bytes.clone(),
                    stop.clone(),
                );
                std::thread::spawn(move || {
                    serve_connection(conn, &*script, &requests, &body_bytes, &stop)
                });
            }
        });
        server
    }

    /// The same answer to every request.
    pub fn always(answer: Answer) -> HostileServer {
        HostileServer::start(move |_| answer.clone())
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Requests whose head was read.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Body bytes the client took (written into the socket, so at most a socket buffer more
    /// than it read).
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes.load(Ordering::Relaxed)
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// The longest request head read: a client that sends more is not one to answer.
const MAX_HEAD: usize = 64 * 1024;

fn serve_connection(
    mut conn: TcpStream,
    script: &Script,
    requests: &AtomicU64,
    body_bytes: &AtomicU64,
    stop: &AtomicBool,
) {
    let mut buf = Vec::new();
    loop {
        // Read up to the end of a request head.
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if buf.len() > MAX_HEAD {
                return;
            }
            // What is not HTTP (a Redis client's `PING`) gets the 400 a real HTTP server
            // answers at once, rather than a wait for a head that never ends.
            if let Some(eol) = buf.windows(2).position(|w| w == b"\r\n")
                && !buf[..eol].ends_with(b" HTTP/1.1")
                && !buf[..eol].ends_with(b" HTTP/1.0")
            {
                let _ = conn.write_all(
                    b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
                return;
            }
            let mut chunk = [0u8; 4096];
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        buf.drain(..head_end);
        let n = requests.fetch_add(1, Ordering::Relaxed);
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let answer = script(n);
        if let Some(stall) = answer.stall {
            let until = std::time::Instant::now() + stall;
            while std::time::Instant::now() < until {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let mut head = format!("HTTP/1.1 {} Scripted\r\n", answer.status);
        for (name, value) in &answer.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        match answer.body {
            Body::Bytes(len) => head.push_str(&format!("content-length: {len}\r\n\r\n")),
            Body::Endless => head.push_str("transfer-encoding: chunked\r\n\r\n"),
        }
        if conn.write_all(head.as_bytes()).is_err() {
            return;
        }
        const CHUNK: usize = 64 * 1024;
        let block = vec![b'x'; CHUNK];
        match answer.body {
            Body::Bytes(mut left) => {
                while left > 0 {
                    let n = left.min(CHUNK as u64) as usize;
                    if stop.load(Ordering::Relaxed) || conn.write_all(&block[..n]).is_err() {
                        return;
                    }
                    body_bytes.fetch_add(n as u64, Ordering::Relaxed);
                    left -= n as u64;
                }
            }
            Body::Endless => {
                let size = format!("{CHUNK:x}\r\n");
                loop {
                    if stop.load(Ordering::Relaxed)
                        || conn.write_all(size.as_bytes()).is_err()
                        || conn.write_all(&block).is_err()
                        || conn.write_all(b"\r\n").is_err()
                    {
                        return;
                    }
                    body_bytes.fetch_add(CHUNK as u64, Ordering::Relaxed);
                }
            }
        }
    }
}
