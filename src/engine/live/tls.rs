//! TLS for both ends of a live run, with rustls on the `ring` provider (plain C and Rust, builds
//! with only a C compiler): the client's configuration for `https://` targets (the webpki
//! roots, plus a CA file for a test server), the server's for `serve --tls-cert --tls-key`, and
//! a handshake error told in words a user can act on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::{Error as PemError, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::infile::{InFileError, read_capped};

/// The largest PEM file read (a CA bundle, a certificate chain, a key): the system's whole
/// bundle of public roots is about 200 KiB; a bound keeps `/dev/zero`-sized files out.
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// Only HTTP/1.1 is spoken, and both ends say so in ALPN.
const ALPN_HTTP1: &[u8] = b"http/1.1";

/// What is wrong with a PEM file or the TLS setup. The file is named by its path; the command
/// that took it adds its flag (`--ca-file`, `--tls-cert`, `--tls-key`).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate file (a CA to trust, or the server's chain) that gives no certificate.
    #[error("{problem}")]
    Certificates { path: PathBuf, problem: PemProblem },
    /// A CA file's certificate that cannot be a trust root.
    #[error("a certificate in it cannot be a trust root ({source})")]
    TrustRoot {
        path: PathBuf,
        source: rustls::Error,
    },
    /// The server's key file cannot be read (not a regular file, too large, unreadable).
    #[error("cannot read it ({source})")]
    KeyFile { path: PathBuf, source: InFileError },
    /// The server's key file gives no private key.
    #[error(
        "no private key read from it ({source}); expected PEM: -----BEGIN PRIVATE KEY----- \
         (PKCS#8), RSA or EC"
    )]
    PrivateKey { path: PathBuf, source: PemError },
    /// The server's certificate and key do not go together.
    #[error("{source} (is the key the certificate's?)")]
    KeyMismatch { source: rustls::Error },
    /// rustls refused its own settings (not expected with the `ring` provider).
    #[error("TLS setup: {0}")]
    Setup(rustls::Error),
    /// A target host no certificate can be checked against.
    #[error("`{host}` cannot be checked against a certificate ({source})")]
    ServerName {
        host: String,
        source: rustls::pki_types::InvalidDnsNameError,
    },
}

/// Why a PEM file gives no certificate.
#[derive(Debug, thiserror::Error)]
pub enum PemProblem {
    /// Not a regular file, too large, or not readable at all (`infile`).
    #[error("cannot read it ({0})")]
    Unreadable(InFileError),
    #[error("not a PEM file ({0})")]
    NotPem(PemError),
    #[error("no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)")]
    NoCertificate,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of a PEM file, or what is wrong with it.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    certificates_in(path, &pem_bytes(path)?)
}

/// The bytes of a certificate file, bounded ([`MAX_PEM_BYTES`]).
fn pem_bytes(path: &Path) -> Result<Vec<u8>, TlsError> {
    read_capped(path, MAX_PEM_BYTES).map_err(|e| TlsError::Certificates {
        path: path.to_path_buf(),
        problem: PemProblem::Unreadable(e),
    })
}

/// The certificates of the PEM text `bytes`, read from `path`.
fn certificates_in(path: &Path, bytes: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |problem| TlsError::Certificates {
        path: path.to_path_buf(),
        problem,
    };
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(PemProblem::NotPem(e)))?;
    if certs.is_empty() {
        return Err(bad(PemProblem::NoCertificate));
    }
    Ok(certs)
}

/// What the client trusts: the Mozilla roots that `webpki-roots` carries (so no system store
/// is needed), and every certificate of `ca_file` (a test server's own CA, or its
/// self-signed certificate).
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_file {
        for cert in certificates(path)? {
            roots.add(cert).map_err(|source| TlsError::TrustRoot {
                path: path.to_path_buf(),
                source,
            })?;
        }
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Setup)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    Ok(Arc::new(config))
}

/// `serve --tls-cert CERT --tls-key KEY`: the certificate chain (the server's first) and its
/// private key, both PEM.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    // Both files are read (each a regular file, bounded) before either is parsed.
    let cert_bytes = pem_bytes(cert)?;
    let key_bytes = read_capped(key, MAX_PEM_BYTES).map_err(|source| TlsError::KeyFile {
        path: key.to_path_buf(),
        source,
    })?;
    let chain = certificates_in(cert, &cert_bytes)?;
    let key_der =
        PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|source| TlsError::PrivateKey {
            path: key.to_path_buf(),
            source,
        })?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Setup)?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|source| TlsError::KeyMismatch { source })?;
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    Ok(Arc::new(config))
}

/// The name the server's certificate must carry: the URL's host, a DNS name or an IP address.
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    ServerName::try_from(host.trim_matches(['[', ']']).to_string()).map_err(|source| {
        TlsError::ServerName {
            host: host.to_string(),
            source,
        }
    })
}

/// The rustls error somewhere in a transport error's chain, if it is one.
pub fn tls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(t) = c.downcast_ref::<rustls::Error>() {
            return Some(t);
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && let Some(t) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
        {
            return Some(t);
        }
        cause = c.source();
    }
    None
}

/// A connection (and for `https://` its TLS handshake) with a target that failed, found
/// before the run: nothing could be sent.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The TLS layer refused: said with what a user can do about it.
    #[error("TLS handshake with {authority} failed: {source}: {}", hint(source))]
    Refused {
        authority: String,
        source: rustls::Error,
    },
    /// The connection failed during the handshake for another reason.
    #[error("TLS handshake with {authority} failed: {source}")]
    Broken {
        authority: String,
        source: std::io::Error,
    },
    /// No answer within the time allowed.
    #[error("TLS handshake with {authority} did not finish within {} s", within.as_secs())]
    TimedOut { authority: String, within: Duration },
    /// The target took no connection (`http://` or `https://`): every request would fail
    /// alike, so the run does not start.
    #[error(
        "cannot connect to {authority}: {source}; no request could be sent (is the server \
         up, and is this its address and port?)"
    )]
    Unreachable {
        authority: String,
        source: std::io::Error,
    },
    /// The connection itself did not open within the time allowed.
    #[error(
        "cannot connect to {authority}: no connection within {} s; no request could be sent",
        within.as_secs()
    )]
    ConnectTimedOut { authority: String, within: Duration },
}

/// What to do about a refused handshake.
fn hint(e: &rustls::Error) -> &'static str {
    use rustls::{CertificateError, Error};
    match e {
        Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "the server's certificate is not signed by a trusted root; for a test server, pass \
             the CA (or the self-signed certificate) that signed it with --ca-file FILE (PEM)"
        }
        Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "the certificate does not name the host of --target; use the name it was issued for",
        Error::InvalidCertificate(
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. },
        ) => "the certificate is outside its validity period (or this machine's clock is off)",
        // webpki's reason is not a rustls variant; its name is in the text.
        Error::InvalidCertificate(c) if format!("{c:?}").contains("CaUsedAsEndEntity") => {
            "the server presents a CA certificate as its own (e.g. openssl req -x509 without \
             -addext basicConstraints=critical,CA:FALSE); serve one that is not a CA"
        }
        Error::InvalidCertificate(_) => "the server's certificate was rejected",
        _ => "the TLS handshake failed (is it a TLS server? does it speak TLS 1.2 or 1.3?)",
    }
}
