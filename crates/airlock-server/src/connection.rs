//! Serving one admitted HTTP/1.1 connection: hyper with a header-read timeout, every request
//! marked in flight until its response body ends, closed at once when evicted and gracefully
//! when the server stops.

use crate::admission::{Activity, Admitted, Busy};
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

/// Serves `tcp` until the client leaves, the header timeout passes, the connection is evicted,
/// or (gracefully) `stop` changes. `_running` is held until the connection is gone, so the
/// server can wait for every connection to end.
pub(crate) async fn serve_connection(
    tcp: TcpStream,
    admitted: Admitted,
    app: Router,
    header_timeout: Duration,
    mut stop: watch::Receiver<bool>,
    _running: watch::Receiver<()>,
) {
    let Admitted {
        slot: _slot,
        mut evicted,
        activity,
    } = admitted;
    let service = Tracked { app, activity };
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let conn = builder.serve_connection(TokioIo::new(tcp), service);
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
