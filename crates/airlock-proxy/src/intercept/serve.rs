//! One intercepted connection: the box's TLS is terminated with the box CA's certificate for
//! the connection's host (after checking the SNI), and each request is checked, rewritten and
//! forwarded on the verified upstream connection. One event per request names the secrets used.

use super::metered::{Counters, Metered};
use super::rewrite::{self, Refusal};
use super::upstream::{Body, Upstream};
use super::Interceptor;
use crate::audit::AuditLog;
use crate::rules::normalize_host;
use crate::server::event;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;
use tokio::net::TcpStream;

/// The connection being intercepted.
pub(crate) struct InterceptedConn {
    /// The host the box connected to (normalised) and its port.
    pub host: String,
    pub port: u16,
    pub audit: Arc<AuditLog>,
    pub counters: Counters,
}

struct RequestContext {
    interceptor: Arc<Interceptor>,
    upstream: Upstream,
    host: String,
    port: u16,
    audit: Arc<AuditLog>,
}

/// Serves the box's side of an intercepted connection until it ends. `prefix` is what the box
/// sent after its CONNECT head. Returns why it ended early, if it did.
pub(crate) async fn intercept_connection(
    interceptor: Arc<Interceptor>,
    conn: InterceptedConn,
    client: TcpStream,
    prefix: Vec<u8>,
    upstream: Upstream,
) -> Option<String> {
    let start = Instant::now();
    let io = Metered::new(client, prefix, conn.counters.clone());
    let acceptor = tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), io);
    let handshake = match acceptor.await {
        Ok(h) => h,
        Err(_) => return Some("tls-handshake-failed".into()),
    };
    if let Some(sni) = handshake.client_hello().server_name() {
        if normalize_host(sni).ok().as_deref() != Some(conn.host.as_str()) {
            let message = format!(
                "the TLS server name {sni:?} is not {}, the host this connection was opened to; it was closed",
                conn.host
            );
            let mut ev = event(
                "https",
                &conn.host,
                conn.port,
                "deny",
                Some("sni-mismatch"),
                None,
                Some(message),
                start,
            );
            ev.intercepted = true;
            conn.audit.record(ev);
            return Some("sni-mismatch".into());
        }
    }
    let config = match interceptor.ca.server_config(&conn.host, upstream.is_h2()) {
        Ok(c) => c,
        Err(_) => return Some("tls-config-failed".into()),
    };
    let tls = match handshake.into_stream(config).await {
        Ok(t) => t,
        Err(_) => return Some("tls-handshake-failed".into()),
    };
    let ctx = Arc::new(RequestContext {
        interceptor,
        upstream,
        host: conn.host,
        port: conn.port,
        audit: conn.audit,
    });
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let ctx = ctx.clone();
        async move { Ok::<_, Infallible>(ctx.handle(req).await) }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder.http1().writev(true).max_buf_size(1 << 20);
    match builder.serve_connection(TokioIo::new(tls), service).await {
        Ok(()) => None,
        Err(_) => Some("client-gone".into()),
    }
}

impl RequestContext {
    async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        let start = Instant::now();
        let (mut parts, body) = req.into_parts();
        let secrets = self.interceptor.secrets.clone();
        let (host, port) = (self.host.as_str(), self.port);
        let checked = rewrite::check_authority(&parts, host, port)
            .and_then(|()| rewrite::check_head(&parts, &secrets, host, port));
        if let Err(refusal) = checked {
            return self.refuse(refusal, start);
        }
        rewrite::set_headers(&mut parts, &secrets, host, port);
        let mut used = rewrite::rewrite_head(&mut parts, &secrets, host, port);
        let body: Body = if rewrite::wants_body(&secrets, host, port) {
            let whole = match Limited::new(body, rewrite::MAX_REWRITTEN_BODY)
                .collect()
                .await
            {
                Ok(c) => c.to_bytes(),
                Err(_) => return self.refuse(Refusal::BodyTooLarge, start),
            };
            match rewrite::rewrite_body(whole, &secrets, host, port) {
                Ok((data, names)) => {
                    for n in names {
                        if !used.contains(&n) {
                            used.push(n);
                        }
                    }
                    rewrite::set_length(&mut parts, data.len());
                    full(data)
                }
                Err(refusal) => return self.refuse(refusal, start),
            }
        } else {
            body.boxed()
        };
        rewrite::for_upstream(&mut parts, host, port, self.upstream.is_h2());
        let rule = secrets
            .bound(host, port)
            .map(|s| s.rule())
            .collect::<Vec<_>>()
            .join("; ");
        let mut ev = event("https", host, port, "allow", None, Some(rule), None, start);
        ev.intercepted = true;
        ev.secrets = used;
        let response = match self.upstream.send(Request::from_parts(parts, body)).await {
            Ok(r) => r.map(BodyExt::boxed),
            Err(e) => {
                let message = format!("{host}:{port}: the upstream request failed: {e}");
                ev.reason = Some("upstream-failed".into());
                ev.message = Some(message.clone());
                self.audit.record(ev);
                return text(StatusCode::BAD_GATEWAY, &message);
            }
        };
        ev.duration_ms = start.elapsed().as_secs_f64() * 1000.0;
        self.audit.record(ev);
        response
    }

    /// Answers a refused request and records why.
    fn refuse(&self, refusal: Refusal, start: Instant) -> Response<Body> {
        let (host, port) = (self.host.as_str(), self.port);
        let (status, reason, rule, message) = match refusal {
            Refusal::Misdirected(m) => (
                StatusCode::MISDIRECTED_REQUEST,
                "misdirected-request",
                None,
                m,
            ),
            Refusal::Leak(leak) => (
                StatusCode::FORBIDDEN,
                "secret-not-bound",
                Some(leak.rule.clone()),
                leak.message(host, port),
            ),
            Refusal::BodyTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "body-too-large",
                None,
                format!(
                    "the body is larger than {} bytes, the most the proxy rewrites for a secret",
                    rewrite::MAX_REWRITTEN_BODY
                ),
            ),
        };
        let mut ev = event(
            "https",
            host,
            port,
            "deny",
            Some(reason),
            rule,
            Some(message.clone()),
            start,
        );
        ev.intercepted = true;
        self.audit.record(ev);
        text(status, &format!("airlock: {message}\n"))
    }
}

fn full(data: Bytes) -> Body {
    Full::new(data).map_err(|never| match never {}).boxed()
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    let mut r = Response::new(full(Bytes::from(message.to_string())));
    *r.status_mut() = status;
    r
}
