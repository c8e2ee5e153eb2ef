//! Loopback origins for the secrets tests: a test CA of their own, HTTPS servers (HTTP/1.1 and
//! HTTP/2 by ALPN) whose certificates it issues, and a plain-HTTP server. Each records every
//! request it receives (headers, protocol, which connection), so a test can assert what
//! actually arrived — the real value, or nothing at all.

#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A CA made for one test run.
pub struct TestCa {
    pub pem: String,
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("CA certificate");
        TestCa {
            pem: cert.pem(),
            cert,
            key,
        }
    }

    fn issue(&self, host: &str) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let params = CertificateParams::new(vec![host.to_string()]).expect("leaf params");
        let key = KeyPair::generate().expect("leaf key");
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("leaf certificate");
        (
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    }
}

/// One request as the origin received it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Which connection (counted from 1) carried it.
    pub connection: u64,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A server on 127.0.0.1 that records what it receives. Dropped, it stops.
pub struct Origin {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    connections: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Origin {
    /// HTTPS (HTTP/2 or HTTP/1.1, by ALPN) for `host` with a certificate from `ca`.
    pub fn https(ca: &TestCa, host: &str) -> Origin {
        Origin::https_with(ca, host, &[b"h2", b"http/1.1"])
    }

    /// HTTPS that speaks HTTP/1.1 only.
    pub fn https_h1(ca: &TestCa, host: &str) -> Origin {
        Origin::https_with(ca, host, &[b"http/1.1"])
    }

    fn https_with(ca: &TestCa, host: &str, alpn: &[&[u8]]) -> Origin {
        let (chain, key) = ca.issue(host);
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server certificate");
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Origin::start(Some(Arc::new(config)))
    }

    /// Plain HTTP.
    pub fn plain() -> Origin {
        Origin::start(None)
    }

    fn start(tls: Option<Arc<rustls::ServerConfig>>) -> Origin {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind origin");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicU64::new(0));
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let (seen2, conns2) = (seen.clone(), connections.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    tokio::select! {
                        _ = &mut rx => return,
                        accepted = listener.accept() => {
                            let Ok((tcp, _)) = accepted else { continue };
                            let conn = conns2.fetch_add(1, Ordering::SeqCst) + 1;
                            let seen = seen2.clone();
                            let tls = tls.clone();
                            tokio::spawn(async move { serve(tcp, tls, seen, conn).await });
                        }
                    }
                }
            });
        });
        Origin {
            port,
            seen,
            connections,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }

    /// Connections accepted so far (TLS handshakes attempted or not).
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(
    tcp: tokio::net::TcpStream,
    tls: Option<Arc<rustls::ServerConfig>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    conn: u64,
) {
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let seen = seen.clone();
        async move {
            let version = format!("{:?}", req.version());
            let path = req.uri().path().to_string();
            let headers = req
                .headers()
                .iter()
                .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                .collect();
            let body = req
                .into_body()
                .collect()
                .await
                .map(|c| c.to_bytes().to_vec())
                .unwrap_or_default();
            seen.lock().expect("seen").push(Seen {
                version: version.clone(),
                path: path.clone(),
                headers,
                body,
                connection: conn,
            });
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(format!(
                "ok {version} {path}\n"
            )))))
        }
    });
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    match tls {
        Some(config) => {
            let Ok(stream) = tokio_rustls::TlsAcceptor::from(config).accept(tcp).await else {
                return;
            };
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        }
        None => {
            let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
        }
    }
}

/// Every file under `dir`, read.
pub fn contents(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(contents(&p));
        } else if let Ok(data) = std::fs::read(&p) {
            out.push((p, data));
        }
    }
    out
}
