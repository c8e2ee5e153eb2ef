//! Both directions of one forwarded request, the refusals the proxy writes itself, and a clean
//! close.

use super::body::{drop_until_eof, forward_body};
use super::error::ExchangeError;
use super::response::forward_response;
use crate::http::{self, Answering, BodyFraming, HttpVersion};
use crate::relay::{half_close, write_all, Meter};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::TcpStream;

/// How long the client may keep sending after its response is complete before the proxy
/// closes anyway. Reading until then, instead of closing at once, keeps the kernel from
/// answering unread bytes with a reset that could destroy the response before the client
/// has read it.
const LINGER: Duration = Duration::from_secs(2);

/// What the request needs to know about itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request {
    pub(crate) framing: BodyFraming,
    pub(crate) head_request: bool,
    pub(crate) version: HttpVersion,
}

/// How an exchange ended.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Why it ended early, if it did (the event's `reason`).
    pub(crate) reason: Option<String>,
    /// Bytes the client sent that were dropped: after its request, or after the response.
    pub(crate) dropped: u64,
}

/// Forwards one request whose head the upstream has already received: its body (starting with
/// `early`, the bytes that arrived with the head) and the response, then closes the client's
/// side cleanly. `up` and `down` count the two directions.
pub(crate) async fn forward_one(
    client: &TcpStream,
    upstream: &TcpStream,
    request: Request,
    early: &[u8],
    up: Meter<'_>,
    down: Meter<'_>,
) -> Outcome {
    let _ = client.set_nodelay(true);
    let started = AtomicBool::new(false);
    let dropped = AtomicU64::new(0);
    let answering = Answering {
        head_request: request.head_request,
        version: request.version,
    };
    let result = {
        let body = forward_body(client, upstream, request.framing, early, &up, &dropped);
        let response = forward_response(upstream, client, answering, &down, &started);
        tokio::pin!(body, response);
        let mut body_done = false;
        loop {
            tokio::select! {
                r = &mut response => break r,
                r = &mut body, if !body_done => match r {
                    Ok(()) => body_done = true,
                    Err(e) => break Err(e),
                },
            }
        }
    };
    if let Err(e) = &result {
        if let (false, Some(status)) = (started.load(Ordering::Relaxed), e.status()) {
            let _ = write_all(client, &http::error_response(status, &e.to_string())).await;
        }
    }
    // The response is over: the client sees end of file, and anything it still sends is read
    // and dropped for a moment, so that closing does not reset the connection.
    half_close(client);
    let _ = tokio::time::timeout(LINGER, drop_until_eof(client, &dropped)).await;
    Outcome {
        reason: result.err().map(|e: ExchangeError| e.reason()),
        dropped: dropped.load(Ordering::Relaxed),
    }
}
