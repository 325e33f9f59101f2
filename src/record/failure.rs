//! Which error a failed request met, for `requests.csv`'s `error` column: as one count, the
//! errors of an overloaded live run (refused, reset, timed out, 5xx) cannot be told apart.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::exchange::Status;

/// Why a request got neither a 2xx nor a 429.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// Nothing listened: the connection was refused.
    Refused,
    /// The connection was reset or closed before the answer was whole.
    Reset,
    /// No answer within the client's `--timeout`.
    TimedOut,
    /// An answer HTTP/1.1 cannot read: not HTTP at all, or a bad status line or header (a
    /// `Content-Length` that is no number).
    Malformed,
    /// The TLS handshake failed (a certificate not trusted, not for this host, expired) or
    /// the TLS layer broke off.
    Tls,
    /// Any other transport failure (a name that does not resolve, no route, …).
    Transport,
    /// An answer with this status (5xx, or another code that is neither 2xx nor 429).
    Http(u16),
}

impl Failure {
    /// The failure a sim's status stands for: its server answers 503 in an outage and 500 for
    /// a random error, and never fails in transport.
    pub fn of_status(status: Status) -> Option<Failure> {
        match status {
            Status::Ok | Status::Limited => None,
            Status::Unavailable => Some(Failure::Http(503)),
            Status::Error => Some(Failure::Http(500)),
        }
    }

    /// The failure an HTTP status is, if it is one (not 2xx, not 429).
    pub fn of_http(code: u16) -> Option<Failure> {
        match code {
            200..=299 | 429 => None,
            _ => Some(Failure::Http(code)),
        }
    }

    /// A transport error as the live client met it.
    pub fn of_transport(e: &(dyn std::error::Error + 'static)) -> Failure {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(c) = cause {
            if c.is::<rustls::Error>() {
                return Failure::Tls;
            }
            if let Some(io) = c.downcast_ref::<std::io::Error>() {
                use std::io::ErrorKind::*;
                // tokio-rustls hands a failed handshake over as an I/O error around rustls's.
                if io.get_ref().is_some_and(|i| i.is::<rustls::Error>()) {
                    return Failure::Tls;
                }
                return match io.kind() {
                    ConnectionRefused => Failure::Refused,
                    ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                        Failure::Reset
                    }
                    TimedOut => Failure::TimedOut,
                    _ => Failure::Transport,
                };
            }
            if let Some(h) = c.downcast_ref::<hyper::Error>() {
                if h.is_parse() || h.is_parse_status() {
                    return Failure::Malformed;
                }
                if h.is_incomplete_message() || h.is_canceled() || h.is_closed() {
                    // An I/O cause below, if any, says more.
                    if std::error::Error::source(h).is_none() {
                        return Failure::Reset;
                    }
                }
                if h.is_timeout() {
                    return Failure::TimedOut;
                }
            }
            cause = c.source();
        }
        Failure::Transport
    }
}

impl Failure {
    /// As a sentence counts it: "3 refused", "12 answered 301".
    pub fn in_words(&self) -> String {
        match self {
            Failure::Refused => "refused".into(),
            Failure::Reset => "reset".into(),
            Failure::TimedOut => "timed out".into(),
            Failure::Malformed => {
                "malformed (an answer HTTP/1.1 cannot read: its status line or a header such as \
                 Content-Length)"
                    .into()
            }
            Failure::Tls => "failed in TLS".into(),
            Failure::Transport => "failed in transport".into(),
            Failure::Http(code) => format!("answered {code}"),
        }
    }
}

impl fmt::Display for Failure {
    /// `refused`, `reset`, `timed_out`, `malformed`, `tls`, `transport`, `http_503`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Refused => f.write_str("refused"),
            Failure::Reset => f.write_str("reset"),
            Failure::TimedOut => f.write_str("timed_out"),
            Failure::Malformed => f.write_str("malformed"),
            Failure::Tls => f.write_str("tls"),
            Failure::Transport => f.write_str("transport"),
            Failure::Http(code) => write!(f, "http_{code}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_kind_of_failure() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(Failure::of_transport(&refused), Failure::Refused);
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(Failure::of_transport(&reset), Failure::Reset);
        assert_eq!(Failure::of_http(503).unwrap().to_string(), "http_503");
        assert_eq!(Failure::of_http(200), None);
        assert_eq!(Failure::of_http(429), None);
        assert_eq!(Failure::of_status(Status::Error), Some(Failure::Http(500)));
        assert_eq!(Failure::TimedOut.to_string(), "timed_out");
        let untrusted = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        assert_eq!(Failure::of_transport(&untrusted), Failure::Tls);
        assert_eq!(Failure::Tls.to_string(), "tls");
        let json = serde_json::to_string(&Failure::Http(502)).unwrap();
        assert_eq!(
            serde_json::from_str::<Failure>(&json).unwrap(),
            Failure::Http(502)
        );
    }
}
