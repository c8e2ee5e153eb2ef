//! The accept loop: takes connections off the listener, admits them under the connection caps
//! and the descriptor reserve, refuses the rest at once with a 503, and backs off instead of
//! spinning when the process is out of descriptors. Stops accepting when `shutdown` resolves
//! and returns once every connection has ended.

use crate::admission::{Admissions, Refusal};
use crate::connection::serve_connection;
use crate::limits::{ConnectionLimits, DescriptorBudget};
use axum::Router;
use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

/// The first pause after an accept fails for lack of resources; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// Refused connections kept open at once so that their 503 reaches the client: closing a socket
/// with its request unread resets the connection, and the client loses the answer.
const MAX_LINGERING: usize = 64;
/// How long a refused connection is kept for its request to arrive and be discarded.
const LINGER: Duration = Duration::from_millis(250);

/// Serves `app` on `listener` until `shutdown` resolves, then lets the requests in flight end.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    budget: DescriptorBudget,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let admissions = Admissions::new(
        budget.fit(limits.max_connections),
        limits.max_connections_per_peer,
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let (running_tx, running_rx) = watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    let lingering = Arc::new(Semaphore::new(MAX_LINGERING));
    let mut pause = FIRST_PAUSE;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.as_mut() => break,
        };
        let (tcp, peer) = match accepted {
            Ok(conn) => conn,
            Err(e) if is_client_error(&e) => continue,
            Err(_) => {
                // Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): wait for
                // connections to end rather than spin on the error.
                if pause_or_stop(&mut pause, shutdown.as_mut()).await {
                    break;
                }
                continue;
            }
        };
        // Descriptors are numbered lowest free first: one at or above the ceiling means fewer
        // than the reserve are left.
        let pressed = u64::try_from(tcp.as_raw_fd()).map_or(true, |fd| fd >= budget.ceiling);
        match admissions.admit(peer.ip(), pressed) {
            Ok(admitted) => {
                pause = FIRST_PAUSE;
                // Small writes (the lines of a streamed exec) go out at once, not after Nagle.
                let _ = tcp.set_nodelay(true);
                tokio::spawn(serve_connection(
                    tcp,
                    admitted,
                    app.clone(),
                    (limits.header_timeout, limits.idle_timeout),
                    stop_rx.clone(),
                    running_rx.clone(),
                ));
            }
            Err(why) => {
                refuse(tcp, why, !pressed, &lingering);
                if pressed && pause_or_stop(&mut pause, shutdown.as_mut()).await {
                    break;
                }
            }
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(running_rx);
    running_tx.closed().await;
}

/// Sleeps the current pause (doubling it for next time); true if `shutdown` came first.
async fn pause_or_stop(
    pause: &mut Duration,
    shutdown: std::pin::Pin<&mut (impl Future<Output = ()> + Send)>,
) -> bool {
    let wait = *pause;
    *pause = (*pause * 2).min(MAX_PAUSE);
    tokio::select! {
        _ = tokio::time::sleep(wait) => false,
        _ = shutdown => true,
    }
}

/// Errors of one connection that went away before it was accepted.
fn is_client_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Answers 503 and closes the connection. With `linger` and a free place, the connection is
/// kept up to [`LINGER`] to read and discard the request, so the close does not reset it and
/// the client sees the answer; otherwise it is closed at once.
fn refuse(tcp: TcpStream, why: Refusal, linger: bool, lingering: &Arc<Semaphore>) {
    let message = match why {
        Refusal::PeerFull => {
            "this address holds as many connections as airlock serve allows one peer \
             (--max-connections-per-peer); close some or retry later"
        }
        Refusal::ServerFull => {
            "airlock serve holds as many connections as it allows, all busy \
             (--max-connections); retry later"
        }
    };
    let body = format!(r#"{{"error":{{"code":"unavailable","message":"{message}"}}}}"#);
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // A new socket's send buffer is empty: the short answer fits without waiting.
    let _ = tcp.try_write(answer.as_bytes());
    let permit = match Arc::clone(lingering).try_acquire_owned() {
        Ok(permit) if linger => permit,
        _ => return,
    };
    tokio::spawn(async move {
        let _permit = permit;
        let mut tcp = tcp;
        let _ = tcp.shutdown().await;
        let mut sink = [0u8; 4096];
        let drain = async { while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {} };
        let _ = tokio::time::timeout(LINGER, drain).await;
    });
}
