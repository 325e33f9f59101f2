//! TLS for both ends of a live run, with rustls on the `ring` provider (plain C and Rust, builds
//! with only a C compiler): the client's configuration for `https://` targets (the webpki
//! roots, plus a CA file for a test server), the server's for `serve --tls-cert --tls-key`, and
//! a handshake error told in words a user can act on.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// Only HTTP/1.1 is spoken, and both ends say so in ALPN.
const ALPN_HTTP1: &[u8] = b"http/1.1";

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of a PEM file, or what is wrong with it (`what` names the flag).
fn certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{what} {shown}: cannot read it ({e})"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what} {shown}: not a PEM file ({e})"))?;
    if certs.is_empty() {
        return Err(format!(
            "{what} {shown}: no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)"
        ));
    }
    Ok(certs)
}

/// What the client trusts: the Mozilla roots that `webpki-roots` carries (so no system store
/// is needed), and every certificate of `ca_file` (a test server's own CA, or its
/// self-signed certificate).
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_file {
        for cert in certificates(path, "--ca-file")? {
            roots.add(cert).map_err(|e| {
                format!(
                    "--ca-file {}: a certificate in it cannot be a trust root ({e})",
                    path.display()
                )
            })?;
        }
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    Ok(Arc::new(config))
}

/// `serve --tls-cert CERT --tls-key KEY`: the certificate chain (the server's first) and its
/// private key, both PEM.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let chain = certificates(cert, "--tls-cert")?;
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        format!(
            "--tls-key {}: no private key read from it ({e}); expected PEM: -----BEGIN PRIVATE \
             KEY----- (PKCS#8), RSA or EC",
            key.display()
        )
    })?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| {
            format!(
                "--tls-cert {} with --tls-key {}: {e} (is the key the certificate's?)",
                cert.display(),
                key.display()
            )
        })?;
    config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
    Ok(Arc::new(config))
}

/// The name the server's certificate must carry: the URL's host, a DNS name or an IP address.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.trim_matches(['[', ']']).to_string())
        .map_err(|e| format!("`{host}` cannot be checked against a certificate ({e})"))
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

/// A failed handshake with `authority`, said so a user knows what to do.
pub fn explain(authority: &str, e: &rustls::Error) -> String {
    use rustls::{CertificateError, Error};
    let hint = match e {
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
    };
    format!("TLS handshake with {authority} failed: {e}: {hint}")
}
