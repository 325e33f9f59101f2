//! TLS: `client` against a TLS `serve` whose certificate the test makes
//! with rcgen, signed by a CA of its own; the clear error of an untrusted or misnamed
//! certificate; bad TLS files and flags.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use crate::common;
use common::{Running, exe, serve, summary, write};

/// PEM files in `dir`: a CA (`ca.pem`), a server certificate it signed for `names`
/// (`cert.pem`, `key.pem`), and a second CA that signed nothing here (`other-ca.pem`).
struct Pki {
    ca: PathBuf,
    other_ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn make_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let key = KeyPair::generate().unwrap();
    let pem = params.self_signed(&key).unwrap().pem();
    (pem, Issuer::new(params, key))
}

fn pki(dir: &Path, names: &[&str]) -> Pki {
    let (ca_pem, ca) = make_ca("throttle-sim test CA");
    let (other_pem, _) = make_ca("another CA");
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let cert = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    Pki {
        ca: write(dir, "ca.pem", &ca_pem),
        other_ca: write(dir, "other-ca.pem", &other_pem),
        cert: write(dir, "cert.pem", &cert.pem()),
        key: write(dir, "key.pem", &key.serialize_pem()),
    }
}

fn tls_serve(pki: &Pki, extra: &[&str]) -> (Running, String) {
    let mut args = vec![
        "--tls-cert",
        pki.cert.to_str().unwrap(),
        "--tls-key",
        pki.key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    serve(&args)
}

/// `client` against `url`, with `args`, its results in `out`: exit code and stderr.
fn client(url: &str, args: &[&str], out: &Path) -> (Option<i32>, String) {
    let output = Command::new(exe())
        .args(["client", "--target", url, "--quiet", "--out"])
        .arg(out)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

/// `GET /_stats` over TLS, trusting `ca`: the server's counters as JSON.
fn stats(addr: &str, ca: &Path) -> serde_json::Value {
    let config = throttle_sim::engine::live::tls::client_config(Some(ca)).unwrap();
    let name = "127.0.0.1".try_into().unwrap();
    let conn = rustls::ClientConnection::new(Arc::clone(&config), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, TcpStream::connect(addr).unwrap());
    write!(
        tls,
        "GET /_stats HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    // A peer that closes without close_notify still gave the whole body.
    let _ = tls.read_to_string(&mut text);
    let body = text.split("\r\n\r\n").nth(1).expect("a body");
    serde_json::from_str(body).unwrap()
}

#[cfg(unix)]
#[test]
fn client_runs_against_a_tls_serve_trusting_its_ca() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = pki(tmp.path(), &["127.0.0.1", "localhost"]);
    let (_serve, addr) = tls_serve(&pki, &["--limit", "5", "--period", "1m"]);
    let out = tmp.path().join("run");
    let (code, err) = client(
        &format!("https://{addr}/api"),
        &[
            "--ca-file",
            pki.ca.to_str().unwrap(),
            "--algorithm",
            "fixed",
            "--set",
            "clients.*.sleep=100ms",
            "--threads",
            "2",
            "--duration",
            "2s",
        ],
        &out,
    );
    assert_eq!(code, Some(0), "{err}");
    let s = summary(&out);
    // Five tokens, then 429s, all over TLS.
    assert_eq!(s["ok"], 5, "{s}");
    assert!(s["limited"].as_u64().unwrap() >= 10, "{s}");
    assert_eq!(s["errors"], 0, "{s}");
    // Keep-alive: one connection per thread for the whole run, plus the check of the
    // handshake before it and this request for the counters.
    let st = stats(&addr, &pki.ca);
    let requests = st["keys"]["default"]["requests"].as_u64().unwrap();
    assert_eq!(requests, s["requests"].as_u64().unwrap(), "{st}");
    assert!(st["connections"].as_u64().unwrap() <= 4, "{st}");
}

#[cfg(unix)]
#[test]
fn an_untrusted_or_misnamed_certificate_is_named_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = pki(tmp.path(), &["127.0.0.1"]);
    let (_serve, addr) = tls_serve(&pki, &[]);
    let url = format!("https://{addr}/");
    let run = ["--duration", "1s"];

    let (code, err) = client(&url, &run, &tmp.path().join("a"));
    assert_eq!(code, Some(4), "{err}");
    assert!(
        err.contains(&format!("TLS handshake with {addr} failed"))
            && err.contains("not signed by a trusted root")
            && err.contains("--ca-file"),
        "{err}"
    );
    // Nothing was run, so nothing was written.
    assert!(!tmp.path().join("a").exists());

    let other = [
        "--ca-file",
        pki.other_ca.to_str().unwrap(),
        "--duration",
        "1s",
    ];
    let (code, err) = client(&url, &other, &tmp.path().join("b"));
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("not signed by a trusted root"), "{err}");

    // The certificate names 127.0.0.1, not localhost.
    let port = addr.rsplit(':').next().unwrap();
    let ca = ["--ca-file", pki.ca.to_str().unwrap(), "--duration", "1s"];
    let (code, err) = client(
        &format!("https://localhost:{port}/"),
        &ca,
        &tmp.path().join("c"),
    );
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("does not name the host"), "{err}");

    // A plain-HTTP client against the TLS server gets no HTTP answer: every request fails.
    let (code, _) = client(&format!("http://{addr}/"), &run, &tmp.path().join("d"));
    assert_eq!(code, Some(4));
}

#[test]
fn bad_tls_files_and_flags_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = pki(tmp.path(), &["127.0.0.1"]);
    let text = write(tmp.path(), "notes.txt", "not a certificate\n");
    let bad = |args: &[&str], expected: &str| {
        let output = Command::new(exe()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&output.stderr).to_string();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    };
    let p = |p: &Path| p.to_str().unwrap().to_string();
    let client = |extra: &[&str]| {
        let mut a = vec!["client", "--target", "https://127.0.0.1:9/"];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>, expected: &str| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        bad(&args, expected);
    };
    run(
        client(&["--ca-file", "/nonexistent/ca.pem"]),
        "--ca-file /nonexistent/ca.pem: cannot read it",
    );
    run(client(&["--ca-file", &p(&text)]), "no certificate in it");
    bad(
        &[
            "client",
            "--target",
            "http://127.0.0.1:9/",
            "--ca-file",
            &p(&pki.ca),
        ],
        "only an https:// --target uses it",
    );
    bad(
        &["client", "--target", "ftp://h/"],
        "expected an http:// or https:// URL",
    );
    let serve = ["serve", "--addr", "127.0.0.1:0"];
    bad(
        &[&serve[..], &["--tls-cert", &p(&pki.cert)]].concat(),
        "--tls-key",
    );
    bad(
        &[
            &serve[..],
            &["--tls-cert", &p(&text), "--tls-key", &p(&pki.key)],
        ]
        .concat(),
        "--tls-cert",
    );
    bad(
        &[
            &serve[..],
            &["--tls-cert", &p(&pki.cert), "--tls-key", &p(&text)],
        ]
        .concat(),
        "--tls-key",
    );
    // A key that is not the certificate's.
    let stranger = write(
        tmp.path(),
        "stranger.pem",
        &KeyPair::generate().unwrap().serialize_pem(),
    );
    bad(
        &[
            &serve[..],
            &["--tls-cert", &p(&pki.cert), "--tls-key", &p(&stranger)],
        ]
        .concat(),
        "is the key the certificate's?",
    );
}
