//! The real connection to a bound host: TLS verified against the host's trust store (name =
//! the host the box asked for), then an HTTP/2 or HTTP/1.1 client on it, as the server chose.

use super::InterceptError;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

/// The body of a forwarded request or response.
pub(crate) type Body = BoxBody<Bytes, hyper::Error>;

/// Sends requests to the upstream server.
pub(crate) enum Upstream {
    /// HTTP/1.1: one request at a time on the connection.
    H1(Mutex<http1::SendRequest<Body>>),
    /// HTTP/2: requests multiplexed.
    H2(http2::SendRequest<Body>),
}

impl Upstream {
    /// Whether the server chose HTTP/2.
    pub(crate) fn is_h2(&self) -> bool {
        matches!(self, Upstream::H2(_))
    }

    /// Sends one request and waits for the response head.
    pub(crate) async fn send(
        &self,
        req: hyper::Request<Body>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, hyper::Error> {
        match self {
            Upstream::H1(sender) => {
                let mut sender = sender.lock().await;
                sender.ready().await?;
                sender.send_request(req).await
            }
            Upstream::H2(sender) => {
                let mut sender = sender.clone();
                sender.ready().await?;
                sender.send_request(req).await
            }
        }
    }
}

/// Makes the TLS connection to `host` over `tcp` and starts the HTTP client. The connection's
/// driver runs as its own task and ends when the `Upstream` is dropped.
pub(crate) async fn connect(
    tcp: TcpStream,
    host: &str,
    port: u16,
    config: Arc<rustls::ClientConfig>,
) -> Result<Upstream, InterceptError> {
    let fail = |reason: String| InterceptError::Upstream {
        host: host.to_string(),
        port,
        reason,
    };
    let name = ServerName::try_from(host.to_string()).map_err(|_| InterceptError::BadName {
        host: host.to_string(),
    })?;
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let io = TokioIo::new(tls);
    if h2 {
        let (sender, conn) = http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| fail(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Upstream::H2(sender))
    } else {
        let (sender, conn) = http1::handshake(io)
            .await
            .map_err(|e| fail(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Upstream::H1(Mutex::new(sender)))
    }
}
