//! One client thread's HTTP connection: keep-alive HTTP/1.1 over hyper's connection API, on
//! plain TCP or TLS (`https://`, `tls.rs`), opened on first use and again after any failure.
//! Every failure — refused, reset, timed out, a malformed answer, a failed TLS handshake —
//! comes back as `Status::Error` with the time it took, never as a panic.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{AUTHORIZATION, HOST, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::ScaledClock;
use super::headers::{classify_answer, read_response};
use super::server::SENT_AT;
use super::tls::{self, HandshakeError, TlsError};
use crate::exchange::{RawFields, Response, Status};
use crate::record::Failure;
use crate::redact::shown_url;

/// Where requests go and what they carry.
#[derive(Clone, Debug)]
pub struct Target {
    /// `host:port` to connect to.
    authority: String,
    /// The request target: path and query.
    path: String,
    headers: HeaderMap,
    /// `client --method` (GET by default) and `--body` / `--body-file` (empty by default).
    method: Method,
    body: Bytes,
    /// For `https://`: the name the certificate must carry and what the client trusts.
    tls: Option<Tls>,
}

/// The largest request body `client --body-file` sends: one copy is held per worker process.
pub const MAX_REQUEST_BODY: u64 = 16 << 20;

#[derive(Clone, Debug)]
struct Tls {
    name: ServerName<'static>,
    config: Arc<ClientConfig>,
}

/// What is wrong with a target: its URL, an extra header or the CA file. Each names the part
/// at fault (the URL, the header's name, the file); the command that took them adds its flag.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("not a URL ({0})")]
    NotAUrl(hyper::http::uri::InvalidUri),
    #[error("expected an http:// or https:// URL such as http://127.0.0.1:9292/")]
    NotHttp,
    #[error("the URL has no host")]
    NoHost,
    #[error("bad host")]
    BadHost,
    /// A port that is not one a connection can be made to: the URL parser leaves such a port
    /// out, and the scheme's default (80 or 443) would silently take its place.
    #[error("`{port}` is not a port: a port is a whole number from 1 to 65535")]
    BadPort { port: String },
    /// An `https://` host no certificate can be checked against.
    #[error("{0}")]
    ServerName(TlsError),
    /// The CA file does not give what the client is to trust.
    #[error("{0}")]
    CaFile(TlsError),
    /// A CA file with an `http://` URL, which would not use it.
    #[error("only an https:// --target uses it, not {url}")]
    CaFileWithoutTls { ca_file: PathBuf, url: String },
    #[error("not a header name")]
    HeaderName { name: String },
    #[error("not a header value")]
    HeaderValue { name: String },
    #[error("not an HTTP method (a token such as GET, POST, PUT, PATCH or DELETE)")]
    Method { method: String },
    #[error("cannot read it: {reason}")]
    BodyFile { path: PathBuf, reason: String },
    #[error("is {size} bytes; a request body may be at most {MAX_REQUEST_BODY} bytes")]
    BodyTooLarge { path: PathBuf, size: u64 },
}

/// The bytes of `client --body-file PATH`, at most [`MAX_REQUEST_BODY`] of them, from a
/// regular file only (`infile`).
pub fn read_body_file(path: &Path) -> Result<Bytes, TargetError> {
    use crate::infile::{InFileError, read_capped};
    match read_capped(path, MAX_REQUEST_BODY) {
        Ok(bytes) => Ok(Bytes::from(bytes)),
        Err(InFileError::TooLarge { .. }) => Err(TargetError::BodyTooLarge {
            path: path.to_path_buf(),
            size: std::fs::metadata(path).map_or(MAX_REQUEST_BODY + 1, |m| m.len()),
        }),
        Err(e) => Err(TargetError::BodyFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }),
    }
}

impl Target {
    /// An `http://` or `https://` URL and extra headers (`Name: value`); `ca_file` (PEM) is
    /// trusted beside the usual roots for `https://`, and refused for `http://`.
    pub fn parse(
        url: &str,
        headers: &[(String, String)],
        ca_file: Option<&Path>,
    ) -> Result<Target, TargetError> {
        let uri: Uri = url.parse().map_err(TargetError::NotAUrl)?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(TargetError::NotHttp),
        };
        let host = uri.host().ok_or(TargetError::NoHost)?;
        let port = port_of(&uri)?.unwrap_or(if https { 443 } else { 80 });
        let tls = match (https, ca_file) {
            (true, ca_file) => Some(Tls {
                name: tls::server_name(host).map_err(TargetError::ServerName)?,
                config: tls::client_config(ca_file).map_err(TargetError::CaFile)?,
            }),
            (false, Some(ca)) => {
                return Err(TargetError::CaFileWithoutTls {
                    ca_file: ca.to_path_buf(),
                    url: shown_url(url),
                });
            }
            (false, None) => None,
        };
        let mut map = HeaderMap::new();
        let host_value = match uri.port_u16() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        map.insert(
            HOST,
            HeaderValue::from_str(&host_value).map_err(|_| TargetError::BadHost)?,
        );
        for (name, value) in headers {
            let n = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| TargetError::HeaderName { name: name.clone() })?;
            let v = HeaderValue::from_str(value.trim())
                .map_err(|_| TargetError::HeaderValue { name: name.clone() })?;
            if n == HOST {
                // The user's Host replaces the URL's: two would be sent otherwise.
                map.insert(n, v);
            } else {
                map.append(n, v);
            }
        }
        if let Some(basic) = basic_auth(&uri)
            && !map.contains_key(AUTHORIZATION)
        {
            map.insert(AUTHORIZATION, basic);
        }
        let authority = if host.contains(':') {
            format!("[{}]:{port}", host.trim_matches(['[', ']']))
        } else {
            format!("{host}:{port}")
        };
        Ok(Target {
            authority,
            path: uri
                .path_and_query()
                .map_or("/".to_string(), |p| p.as_str().to_string()),
            headers: map,
            method: Method::GET,
            body: Bytes::new(),
            tls,
        })
    }

    /// Send `method` (as typed: `POST`, `put`, …; an extension method too) with `body`
    /// instead of an empty GET.
    pub fn with_request(mut self, method: &str, body: Bytes) -> Result<Target, TargetError> {
        let upper = method.trim().to_ascii_uppercase();
        self.method = Method::from_bytes(upper.as_bytes()).map_err(|_| TargetError::Method {
            method: method.to_string(),
        })?;
        self.body = body;
        Ok(self)
    }

    /// `host:port`, as errors name it.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// Connect and, for `https://`, complete the TLS handshake, without sending a request:
    /// the one error that says most about a target nothing can be sent to (`client` checks
    /// this before it starts its processes). A target that takes no connection is one too:
    /// a run against it would only count refusals for its whole duration.
    pub async fn check_reachable(&self) -> Result<(), HandshakeError> {
        let stream = TcpStream::connect(&self.authority)
            .await
            .map_err(|source| HandshakeError::Unreachable {
                authority: self.authority.clone(),
                source,
            })?;
        let Some(tls) = &self.tls else {
            return Ok(());
        };
        match TlsConnector::from(tls.config.clone())
            .connect(tls.name.clone(), stream)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => Err(match tls::tls_error(&e) {
                Some(t) => HandshakeError::Refused {
                    authority: self.authority.clone(),
                    source: t.clone(),
                },
                None => HandshakeError::Broken {
                    authority: self.authority.clone(),
                    source: e,
                },
            }),
        }
    }

    /// Whether requests go over TLS (`https://`).
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Add a header to every request (the run's key, the client id).
    pub fn with_header(mut self, name: &'static str, value: &str) -> Self {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.insert(HeaderName::from_static(name), v);
        }
        self
    }

    /// Add a header unless the user's `--header` already set it.
    pub fn with_header_unless_set(mut self, name: &'static str, value: &str) -> Self {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers
                .entry(HeaderName::from_static(name))
                .or_insert(v);
        }
        self
    }
}

/// The URL's userinfo (`http://user:pw@host/`) as HTTP Basic authentication, as curl and
/// browsers send it: `user:pw`, percent-decoded, in base64. None without userinfo.
fn basic_auth(uri: &Uri) -> Option<HeaderValue> {
    use base64::Engine;
    let authority = uri.authority()?.as_str();
    let (userinfo, _) = authority.rsplit_once('@')?;
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(userinfo).collect();
    let token = base64::engine::general_purpose::STANDARD.encode(decoded);
    let mut value = HeaderValue::from_str(&format!("Basic {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// The port the URL names, if it names one. The parser keeps a port only when it fits in 16
/// bits, so the authority's text is read here: `:99999`, `:-1` and `:0` are refused, an empty
/// `host:` is the scheme's default as RFC 3986 has it.
fn port_of(uri: &Uri) -> Result<Option<u16>, TargetError> {
    let Some(authority) = uri.authority() else {
        return Ok(None);
    };
    let host_port = authority.as_str().rsplit('@').next().unwrap_or_default();
    // After an IPv6 literal's `]`, else after the host's one `:`.
    let after_host = match host_port.rfind(']') {
        Some(end) => &host_port[end + 1..],
        None => host_port.find(':').map_or("", |i| &host_port[i..]),
    };
    let Some(text) = after_host.strip_prefix(':') else {
        return Ok(None);
    };
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<u16>() {
        Ok(p) if p > 0 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(p)),
        _ => Err(TargetError::BadPort {
            port: text.to_string(),
        }),
    }
}

/// What one request came to, before the throttle's view: the status (none when the transport
/// failed) and the time it took.
pub struct Exchange {
    pub status: Option<u16>,
    pub headers: HeaderMap,
    pub elapsed: std::time::Duration,
    /// Which error it was, when it was one: the transport's, or the answer's status.
    pub failure: Option<Failure>,
}

impl Exchange {
    /// A request abandoned after `elapsed` without an answer.
    pub fn timed_out(elapsed: std::time::Duration) -> Exchange {
        Exchange {
            status: None,
            headers: HeaderMap::new(),
            elapsed,
            failure: Some(Failure::TimedOut),
        }
    }

    /// The answer's rate-limit fields as sent, for requests.csv (none for a transport failure
    /// or an answer without them).
    pub fn raw_fields(&self) -> Option<RawFields> {
        self.status?;
        RawFields::collect(|name| self.headers.get(name).map(|v| v.as_bytes()))
    }

    /// As a throttle sees it; `scale` turns real time into virtual time.
    pub fn response(&self, scale: f64) -> Response {
        let latency = (self.elapsed.as_nanos() as f64 * scale) as u64;
        match self.status {
            Some(s) => read_response(s, &self.headers, latency, scale, SystemTime::now()),
            None => Response {
                latency,
                ..Response::bare(Status::Error)
            },
        }
    }
}

/// One keep-alive connection, reopened when needed.
pub struct HttpClient {
    target: Target,
    timeout: std::time::Duration,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// Set for our own server: stamp each request with the run's time as it goes out
    /// ([`SENT_AT`]).
    stamp: Option<ScaledClock>,
}

impl HttpClient {
    pub fn new(target: Target, timeout: std::time::Duration) -> Self {
        HttpClient {
            target,
            timeout,
            sender: None,
            stamp: None,
        }
    }

    /// With a clock (our own server), stamp every request with its time as it is written, so
    /// the server can take the trip to it out of the latency it holds the answer for.
    pub fn stamped(mut self, clock: Option<ScaledClock>) -> Self {
        self.stamp = clock;
        self
    }

    /// Send one request (a GET unless [`Target::with_request`] said otherwise); a transport failure or the timeout gives an exchange without a status,
    /// and the next call opens a fresh connection.
    pub async fn send(&mut self) -> Exchange {
        let started = Instant::now();
        let result = tokio::time::timeout(self.timeout, self.exchange()).await;
        let elapsed = started.elapsed();
        let failed = |failure| Exchange {
            status: None,
            headers: HeaderMap::new(),
            elapsed,
            failure: Some(failure),
        };
        match result {
            Ok(Ok((status, headers))) => Exchange {
                status: Some(status),
                // A refusal (GitHub's rate-limit 403 included) is no failure.
                failure: match classify_answer(status, &headers) {
                    Status::Ok | Status::Limited => None,
                    _ => Failure::of_http(status),
                },
                headers,
                elapsed,
            },
            Ok(Err(e)) => {
                self.sender = None;
                failed(Failure::of_transport(e.as_ref()))
            }
            Err(_) => {
                self.sender = None;
                failed(Failure::TimedOut)
            }
        }
    }

    async fn exchange(
        &mut self,
    ) -> Result<(u16, HeaderMap), Box<dyn std::error::Error + Send + Sync>> {
        // A connection the server closed while we slept (idle timeout) is replaced before
        // sending, so it does not show up as an error.
        if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
            self.sender = Some(self.connect().await?);
        }
        let sender = self.sender.as_mut().expect("just connected");
        sender.ready().await?;
        let mut req = Request::builder()
            .method(self.target.method.clone())
            .uri(self.target.path.as_str())
            .body(Full::new(self.target.body.clone()))?;
        *req.headers_mut() = self.target.headers.clone();
        if let Some(clock) = &self.stamp {
            req.headers_mut()
                .insert(SENT_AT, HeaderValue::from(clock.now()));
        }
        let resp = sender.send_request(req).await?;
        let status = resp.status().as_u16();
        let (parts, body) = resp.into_parts();
        // Read the body to the end so the connection can carry the next request, keeping
        // none of it: past `MAX_BODY` the rest is not worth reading, and the connection
        // (which still holds it) is dropped instead.
        if !drain(body, MAX_BODY).await? {
            self.sender = None;
        }
        Ok((status, parts.headers))
    }

    async fn connect(
        &self,
    ) -> Result<SendRequest<Full<Bytes>>, Box<dyn std::error::Error + Send + Sync>> {
        let stream = TcpStream::connect(&self.target.authority).await?;
        let _ = stream.set_nodelay(true);
        match &self.target.tls {
            None => handshake(stream).await,
            Some(tls) => {
                let stream = TlsConnector::from(tls.config.clone())
                    .connect(tls.name.clone(), stream)
                    .await?;
                handshake(stream).await
            }
        }
    }
}

/// The most of an answer's body read before its connection is given up instead: the
/// answers a throttle reads are in the headers, so no body is kept, and one this long (or
/// endless) costs a fresh connection rather than the time to read it.
pub const MAX_BODY: u64 = 1 << 20;

/// Read `body` frame by frame and drop each: memory stays one frame whatever the server
/// sends. True when it ended within `limit` bytes, false when it was cut there.
async fn drain<B>(mut body: B, limit: u64) -> Result<bool, B::Error>
where
    B: hyper::body::Body + Unpin,
    B::Data: hyper::body::Buf,
{
    let mut read = 0u64;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            read = read.saturating_add(hyper::body::Buf::remaining(&data) as u64);
            if read > limit {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// HTTP/1.1 over an open connection; the connection is driven by its own task.
async fn handshake<IO>(
    io: IO,
) -> Result<SendRequest<Full<Bytes>>, Box<dyn std::error::Error + Send + Sync>>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that never ends, 64 KiB a frame.
    struct Endless(u64);

    impl hyper::body::Body for Endless {
        type Data = Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
            self.0 += 1;
            let frame = hyper::body::Frame::data(Bytes::from_static(&[b'x'; 65_536]));
            std::task::Poll::Ready(Some(Ok(frame)))
        }
    }

    /// A server's body costs no memory however long it is: an endless body is read only up to
    /// the limit, and nothing of it is kept (whole bodies were once held, an endless one taking
    /// 1.5 GB); a short one is read to its end.
    #[tokio::test]
    async fn an_endless_body_is_cut_at_the_limit() {
        let mut body = Endless(0);
        assert!(!drain(&mut body, MAX_BODY).await.unwrap());
        // 1 MiB is 16 frames: the 17th passes the limit.
        assert_eq!(body.0, 17);
        let short = http_body_util::Full::new(Bytes::from_static(b"hello"));
        assert!(drain(short, MAX_BODY).await.unwrap());
    }

    /// A port past 16 bits, negative or 0 was dropped by the URL parser, and the requests
    /// went to port 80.
    #[test]
    fn a_port_that_is_no_port_is_refused_not_made_80() {
        for (url, port) in [
            ("http://127.0.0.1:99999/", "99999"),
            ("http://127.0.0.1:65536/", "65536"),
            ("http://127.0.0.1:-1/", "-1"),
            ("http://127.0.0.1:0/", "0"),
            ("https://[::1]:70000/", "70000"),
            ("http://u:p@h:123456/", "123456"),
        ] {
            match Target::parse(url, &[], None) {
                Err(TargetError::BadPort { port: p }) => assert_eq!(p, port, "{url}"),
                Err(e) => panic!("{url}: {e}"),
                Ok(t) => panic!("{url} went to {}", t.authority),
            }
        }
        let e = Target::parse("http://h:99999/", &[], None).unwrap_err();
        assert!(e.to_string().contains("`99999` is not a port"), "{e}");
        let t = Target::parse("http://h:65535/", &[], None).unwrap();
        assert_eq!(t.authority, "h:65535");
    }

    /// `http://alice:pw@host/` sent no `Authorization` though the README said the requests
    /// carry the userinfo: they carry it as Basic authentication, as curl does, unless a
    /// `--header Authorization` says otherwise.
    #[test]
    fn userinfo_is_sent_as_basic_authentication() {
        let t = Target::parse("http://alice:p%40ss@h/", &[], None).unwrap();
        // base64("alice:p@ss")
        assert_eq!(t.headers[AUTHORIZATION], "Basic YWxpY2U6cEBzcw==");
        let t = Target::parse("http://token@h/", &[], None).unwrap();
        assert_eq!(t.headers[AUTHORIZATION], "Basic dG9rZW4=");
        let given = [("Authorization".to_string(), "Bearer t".to_string())];
        let t = Target::parse("http://alice:pw@h/", &given, None).unwrap();
        assert_eq!(t.headers.get_all(AUTHORIZATION).iter().count(), 1);
        assert_eq!(t.headers[AUTHORIZATION], "Bearer t");
        let t = Target::parse("http://h/", &[], None).unwrap();
        assert!(!t.headers.contains_key(AUTHORIZATION));
    }

    /// `-H 'Host: example.com'` sent two Host headers, the URL's and the user's.
    #[test]
    fn a_host_header_replaces_the_url_s() {
        let given = [("Host".to_string(), "example.com".to_string())];
        let t = Target::parse("http://127.0.0.1:9292/", &given, None).unwrap();
        let hosts: Vec<_> = t.headers.get_all(HOST).iter().collect();
        assert_eq!(hosts, ["example.com"]);
        assert_eq!(t.authority, "127.0.0.1:9292");
    }

    #[test]
    fn targets_parse_and_refuse_what_cannot_be_served() {
        let t = Target::parse(
            "http://127.0.0.1:9292/v1/things?x=1",
            &[("Authorization".into(), "Bearer abc".into())],
            None,
        )
        .unwrap();
        assert_eq!(t.authority, "127.0.0.1:9292");
        assert_eq!(t.path, "/v1/things?x=1");
        assert_eq!(t.headers["host"], "127.0.0.1:9292");
        assert_eq!(t.headers["authorization"], "Bearer abc");
        let t = Target::parse("http://example.test", &[], None).unwrap();
        assert_eq!(
            (t.authority.as_str(), t.path.as_str()),
            ("example.test:80", "/")
        );
        assert!(t.tls.is_none());
        let t = Target::parse("https://api.example.test/v1", &[], None).unwrap();
        assert_eq!(t.authority, "api.example.test:443");
        assert_eq!(t.headers["host"], "api.example.test");
        assert!(t.tls.is_some());
        let t = Target::parse("https://[::1]:8443/", &[], None).unwrap();
        assert_eq!(t.authority, "[::1]:8443");
        let t = Target::parse("http://h:/", &[], None).unwrap();
        assert_eq!(t.authority, "h:80");
        let e = Target::parse("127.0.0.1:9292", &[], None).unwrap_err();
        assert!(matches!(e, TargetError::NotHttp), "{e}");
        assert!(
            e.to_string().contains("expected an http:// or https://"),
            "{e}"
        );
        let e = Target::parse("http://h/", &[("Bad Name".into(), "x".into())], None).unwrap_err();
        assert!(
            matches!(&e, TargetError::HeaderName { name } if name == "Bad Name"),
            "{e}"
        );
        assert_eq!(e.to_string(), "not a header name");
        let e = Target::parse("http://h/", &[], Some(Path::new("ca.pem"))).unwrap_err();
        assert!(e.to_string().contains("only an https:// --target"), "{e}");
        let e =
            Target::parse("https://h/", &[], Some(Path::new("/nonexistent/ca.pem"))).unwrap_err();
        assert!(
            matches!(
                &e,
                TargetError::CaFile(TlsError::Certificates {
                    path,
                    problem: tls::PemProblem::Unreadable(_),
                }) if path == Path::new("/nonexistent/ca.pem")
            ),
            "{e:?}"
        );
        assert!(e.to_string().starts_with("cannot read it"), "{e}");
    }
}
