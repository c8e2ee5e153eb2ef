//! Serving one admitted HTTP/1.1 connection: hyper, with every request marked in flight until
//! its response body ends, a header-read timeout (from the connection's opening, or from the
//! first byte of a kept-alive connection's next request), a longer idle timeout between
//! requests, closed at once when evicted and gracefully when the server stops.

use crate::admission::{Activity, Admitted, Busy, Phase};
use axum::body::{Body, Bytes, HttpBody};
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tower::ServiceExt;

/// How often a connection's timeouts are looked at: a tenth of the header timeout, between
/// these bounds (thousands of idle connections must not keep the server busy waking up).
const TICK_MIN: Duration = Duration::from_millis(50);
const TICK_MAX: Duration = Duration::from_secs(1);

/// Serves `tcp` until the client leaves, the header or idle timeout passes, the connection is
/// evicted, or (gracefully) `stop` changes. `_running` is held until the connection is gone, so
/// the server can wait for every connection to end.
pub(crate) async fn serve_connection(
    tcp: TcpStream,
    admitted: Admitted,
    app: Router,
    (header_timeout, idle_timeout): (Duration, Duration),
    mut stop: watch::Receiver<bool>,
    _running: watch::Receiver<()>,
) {
    let Admitted {
        slot: _slot,
        mut evicted,
        activity,
    } = admitted;
    let io = Watched {
        tcp,
        activity: Arc::clone(&activity),
    };
    let service = Tracked {
        app,
        activity: Arc::clone(&activity),
    };
    let mut builder = http1::Builder::new();
    // hyper's own header timer also runs between kept-alive requests, where it would close a
    // connection just as a client reuses it; the timeouts are kept here instead.
    builder.timer(TokioTimer::new()).header_read_timeout(None);
    // Upgrades: WebSockets relayed into a box's port (`e2b::ingress_proxy`).
    let conn = builder
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    let mut tick = tokio::time::interval((header_timeout / 10).clamp(TICK_MIN, TICK_MAX));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let over = |limit: Duration, ms: u64| u128::from(ms) >= limit.as_millis();
    let mut conn = std::pin::pin!(conn);
    let mut stopping = *stop.borrow();
    if stopping {
        conn.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            // An error here is the client's doing (gone, malformed, too slow): nothing to report.
            _ = conn.as_mut() => break,
            _ = &mut evicted => break,
            _ = tick.tick() => match activity.phase() {
                Phase::Head(ms) if over(header_timeout, ms) => break,
                Phase::Idle(ms) if over(idle_timeout, ms) => break,
                _ => {}
            },
            changed = stop.changed(), if !stopping => {
                stopping = true;
                if changed.is_err() || *stop.borrow() {
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// The router, with each request marked in flight on its connection.
#[derive(Clone)]
struct Tracked {
    app: Router,
    activity: Arc<Activity>,
}

type Response = axum::http::Response<TrackedBody>;

impl hyper::service::Service<axum::http::Request<Incoming>> for Tracked {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, req: axum::http::Request<Incoming>) -> Self::Future {
        let busy = self.activity.begin();
        let app = self.app.clone();
        Box::pin(async move {
            let res = app.oneshot(req.map(Body::new)).await?;
            Ok(res.map(|inner| TrackedBody { inner, _busy: busy }))
        })
    }
}

/// A response body that keeps its request in flight until it has been sent or dropped, so a
/// long stream is never taken for an idle connection.
struct TrackedBody {
    inner: Body,
    _busy: Busy,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The connection's socket, telling its [`Activity`] when bytes arrive.
struct Watched {
    tcp: TcpStream,
    activity: Arc<Activity>,
}

impl tokio::io::AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.tcp).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.activity.received();
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}
