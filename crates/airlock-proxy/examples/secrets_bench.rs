//! Loopback benchmark of the secrets interception against a plain CONNECT tunnel to the same
//! HTTPS origin, in the same run (driven by `benches/secrets.sh`). The origin, both proxies and
//! the client are in this process on 127.0.0.1; the name resolves through a fixed table.
//!
//! secrets_bench latency N        N requests on one keep-alive connection, and N new
//!                                connections (CONNECT + TLS + one request), of each kind,
//!                                interleaved; medians
//! secrets_bench throughput BYTES ROUNDS
//!                                one GET of BYTES per round through each kind, interleaved;
//!                                ratio of the medians
//!
//! Both kinds speak HTTP/1.1 over TLS 1.3 to the origin; the intercepted one carries a
//! placeholder in `Authorization` that the proxy replaces, the plain one the value itself.

use airlock_policy::{SecretBinding, SecretValue};
use airlock_proxy::decision::Resolver;
use airlock_proxy::intercept::{Interceptor, UpstreamTrust};
use airlock_proxy::rules::EgressRules;
use airlock_proxy::secrets::BoxSecrets;
use airlock_proxy::server::{start_with_resolver, ProxyConfig, ProxyHandle};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const SVC: &str = "svc.test";
const PLACEHOLDER: &str = "airlock-secret-API_KEY-00112233445566778899aabbccddeeff";
const VALUE: &str = "sk-bench-value";

type Error = Box<dyn std::error::Error + Send + Sync>;

struct TableResolver;

impl Resolver for TableResolver {
    fn resolve(&self, name: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
        match name {
            SVC => Ok(vec![LOCALHOST]),
            _ => Err(io::Error::new(io::ErrorKind::NotFound, "not in the table")),
        }
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The origin: HTTP/1.1 over TLS; `/big/N` streams N bytes, anything else a short answer.
fn origin() -> Result<(u16, String), Error> {
    let mut ca_params = rcgen::CertificateParams::default();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_key = rcgen::KeyPair::generate()?;
    let ca = ca_params.self_signed(&ca_key)?;
    let leaf_key = rcgen::KeyPair::generate()?;
    let leaf =
        rcgen::CertificateParams::new(vec![SVC.to_string()])?.signed_by(&leaf_key, &ca, &ca_key)?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind((LOCALHOST, 0))?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let Ok(rt) = rt else { return };
        rt.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            while let Ok((tcp, _)) = listener.accept().await {
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let svc = hyper::service::service_fn(|req: hyper::Request<_>| async move {
                        let n: u64 = req
                            .uri()
                            .path()
                            .strip_prefix("/big/")
                            .and_then(|n| n.parse().ok())
                            .unwrap_or(2);
                        let chunk = Bytes::from(vec![b'x'; 64 << 10]);
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Big {
                            left: n,
                            chunk,
                        }))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
    });
    Ok((port, ca.pem()))
}

/// A body of `left` bytes, sent as frames of (up to) `chunk`.
struct Big {
    left: u64,
    chunk: Bytes,
}

impl hyper::body::Body for Big {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.left == 0 {
            return std::task::Poll::Ready(None);
        }
        let n = self.left.min(self.chunk.len() as u64);
        self.left -= n;
        std::task::Poll::Ready(Some(Ok(Frame::data(self.chunk.slice(..n as usize)))))
    }
}

fn proxy(port: u16, intercept: Option<Arc<Interceptor>>) -> Result<ProxyHandle, Error> {
    let rules = EgressRules::parse(&[format!("{SVC}:{port}")], &[], &["127.0.0.1".into()], &[])?;
    let config = ProxyConfig {
        rules,
        max_connections: 4096,
        byte_budget: None,
        connect_timeout: Duration::from_secs(5),
        audit: None,
        on_event: None,
        intercept,
        approval: None,
        peer_names: None,
    };
    Ok(start_with_resolver(
        TcpListener::bind((LOCALHOST, 0))?,
        config,
        Arc::new(TableResolver),
    )?)
}

fn interceptor(port: u16, origin_ca: &str) -> Result<Arc<Interceptor>, Error> {
    let binding = SecretBinding {
        name: "API_KEY".into(),
        hosts: vec![format!("{SVC}:{port}")],
        placeholder: PLACEHOLDER.into(),
        body: false,
        set_headers: Vec::new(),
        value: Some(SecretValue::new(VALUE.as_bytes().to_vec())),
    };
    let secrets = BoxSecrets::from_bindings(&[binding])?;
    let trust = UpstreamTrust::host().with_extra_roots_pem(origin_ca.as_bytes())?;
    Ok(Arc::new(Interceptor::new(secrets, &trust)?))
}

/// A client's connection through `proxy`: CONNECT, TLS trusting `ca_pem`, HTTP/1.1.
struct Conn {
    sender: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    token: &'static str,
    authority: String,
}

async fn connect(
    proxy: SocketAddr,
    port: u16,
    ca_pem: &str,
    token: &'static str,
) -> Result<Conn, Error> {
    let mut tcp = tokio::net::TcpStream::connect(proxy).await?;
    tcp.set_nodelay(true)?;
    tcp.write_all(
        format!("CONNECT {SVC}:{port} HTTP/1.1\r\nHost: {SVC}:{port}\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        if tcp.read(&mut b).await? == 0 {
            return Err("the proxy closed the CONNECT".into());
        }
        head.push(b[0]);
    }
    if !head.starts_with(b"HTTP/1.1 200") {
        return Err(format!("CONNECT refused: {}", String::from_utf8_lossy(&head)).into());
    }
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from(SVC)?, tcp)
        .await?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    Ok(Conn {
        sender,
        token,
        authority: format!("{SVC}:{port}"),
    })
}

impl Conn {
    /// One GET; returns the body's length.
    async fn get(&mut self, path: &str) -> Result<u64, Error> {
        self.sender.ready().await?;
        let req = hyper::Request::get(path)
            .header("host", &self.authority)
            .header("authorization", format!("Bearer {}", self.token))
            .body(Empty::new())?;
        let resp = self.sender.send_request(req).await?;
        if !resp.status().is_success() {
            return Err(format!("status {}", resp.status()).into());
        }
        let mut body = resp.into_body();
        let mut n = 0u64;
        while let Some(frame) = body.frame().await {
            if let Some(d) = frame?.data_ref() {
                n += d.len() as u64;
            }
        }
        Ok(n)
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

struct Kinds {
    plain: SocketAddr,
    intercepted: SocketAddr,
    port: u16,
    origin_ca: String,
    box_ca: String,
}

async fn latency(k: &Kinds, n: usize) -> Result<(), Error> {
    let mut plain = connect(k.plain, k.port, &k.origin_ca, VALUE).await?;
    let mut inter = connect(k.intercepted, k.port, &k.box_ca, PLACEHOLDER).await?;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let t = Instant::now();
        plain.get("/small").await?;
        a.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        inter.get("/small").await?;
        b.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (ma, mb) = (median(&mut a), median(&mut b));
    println!("request on an open connection (median of {n}): plain tunnel {ma:.3} ms, intercepted {mb:.3} ms, added {:.3} ms", mb - ma);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let t = Instant::now();
        connect(k.plain, k.port, &k.origin_ca, VALUE)
            .await?
            .get("/small")
            .await?;
        a.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        connect(k.intercepted, k.port, &k.box_ca, PLACEHOLDER)
            .await?
            .get("/small")
            .await?;
        b.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (ma, mb) = (median(&mut a), median(&mut b));
    println!("new connection + request (median of {n}): plain tunnel {ma:.3} ms, intercepted {mb:.3} ms, added {:.3} ms", mb - ma);
    Ok(())
}

async fn throughput(k: &Kinds, bytes: u64, rounds: usize) -> Result<(), Error> {
    let path = format!("/big/{bytes}");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut cpu_a, mut cpu_b) = (Vec::new(), Vec::new());
    let (mut busy_a, mut busy_b) = (Vec::new(), Vec::new());
    for round in 0..=rounds {
        let mut plain = connect(k.plain, k.port, &k.origin_ca, VALUE).await?;
        let (t, c) = (Instant::now(), cpu_seconds());
        let got = plain.get(&path).await?;
        let (wa, ca) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
        let mut inter = connect(k.intercepted, k.port, &k.box_ca, PLACEHOLDER).await?;
        let (t, c) = (Instant::now(), cpu_seconds());
        let got2 = inter.get(&path).await?;
        let (wb, cb) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
        if got != bytes || got2 != bytes {
            return Err(format!("short body: {got} / {got2} of {bytes}").into());
        }
        if round > 0 {
            a.push(got as f64 / wa);
            b.push(got2 as f64 / wb);
            cpu_a.push(ca);
            cpu_b.push(cb);
            busy_a.push(ca / wa);
            busy_b.push(cb / wb);
        }
    }
    let (ma, mb) = (median(&mut a), median(&mut b));
    let gib = (1u64 << 30) as f64;
    println!(
        "{bytes} bytes over HTTPS (median of {rounds}, after one warm-up): plain tunnel {:.2} GiB/s, intercepted {:.2} GiB/s, ratio {:.2}x",
        ma / gib,
        mb / gib,
        mb / ma
    );
    // Everything (origin, proxies, client) is this process: its CPU time is the whole cost.
    let per_gib = |cpu: &mut [f64]| median(cpu) / (bytes as f64 / gib);
    let (pa, pb) = (per_gib(&mut cpu_a), per_gib(&mut cpu_b));
    let (ua, ub) = (median(&mut busy_a), median(&mut busy_b));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    // The intercepted path moves at most `cpus / pb` GiB/s; the plain one moved `ua / pa`.
    println!(
        "CPU per GiB (origin + proxy + client, medians): plain tunnel {pa:.3} s, intercepted {pb:.3} s ({:.2}x); CPUs busy: plain {ua:.2}, intercepted {ub:.2} of {cpus}; so even with all {cpus} CPUs busy the intercepted path could reach at most {:.2}x the plain one here",
        pb / pa,
        (pa / pb) * (cpus / ua)
    );
    Ok(())
}

/// CPU time (user + system) this process has used so far, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    let (port, origin_ca) = origin()?;
    let plain = proxy(port, None)?;
    let icpt = interceptor(port, &origin_ca)?;
    let box_ca = icpt.ca_pem().to_string();
    let intercepted = proxy(port, Some(icpt))?;
    let kinds = Kinds {
        plain: plain.local_addr(),
        intercepted: intercepted.local_addr(),
        port,
        origin_ca,
        box_ca,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let num = |i: usize, d: u64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    match args.get(1).map(String::as_str) {
        Some("latency") => rt.block_on(latency(&kinds, num(2, 500) as usize)),
        Some("throughput") => {
            rt.block_on(throughput(&kinds, num(2, 256 << 20), num(3, 9) as usize))
        }
        _ => Err("usage: secrets_bench latency N | throughput BYTES ROUNDS".into()),
    }
}
