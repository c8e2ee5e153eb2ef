//! Relaying a request for a sandbox's port ([`super::ingress`]) to the server in the box: over
//! a tunnel the box's agent opens to the port from inside the box (never by opening the
//! box's network to the host), spoken to as an HTTP/1.1 client, so what reaches the box is
//! one well-formed request; a WebSocket (any `101 Switching Protocols`) then carries bytes
//! both ways until either side closes.

use super::boxio::with_box;
use super::error::E2bError;
use super::ingress::{IngressRule, PortHost, TRAFFIC_TOKEN_HEADER};
use crate::state::AppState;
use airlock_runtime::tunnel::{TunnelReader, TunnelWriter};
use airlock_runtime::AgentError;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// Bytes buffered between the tunnel's threads and the HTTP client, each way.
const BRIDGE_BUFFER: usize = 256 * 1024;

/// E2B's edge's answer for a port nothing listens on (the SDKs' users see this text).
const PORT_CLOSED: &str = "The sandbox is running but port is not open";
/// How long the box's agent has to answer a connection request (it connects to its own
/// loopback: an answer takes microseconds unless the box is starved or hostile).
const TUNNEL_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves `req` (already known to be for `target`) from the box.
pub async fn relay(state: AppState, target: PortHost, req: Request) -> Response {
    match relay_inner(state, &target, req).await {
        Ok(res) => res,
        Err(e) => refusal(&target, &e),
    }
}

/// E2B's edge's error shape: `{"sandboxId", "message", "port", "code"}`.
fn refusal(target: &PortHost, e: &E2bError) -> Response {
    let status = match e {
        E2bError::Unauthenticated(_) => StatusCode::FORBIDDEN,
        E2bError::SandboxGone(_) | E2bError::NotFound(_) => StatusCode::BAD_GATEWAY,
        E2bError::ResourceExhausted(_) => StatusCode::SERVICE_UNAVAILABLE,
        other => other.http_status(),
    };
    let body = serde_json::json!({
        "sandboxId": target.sandbox,
        "port": target.port,
        "code": status.as_u16(),
        "message": e.to_string(),
    });
    (status, axum::Json(body)).into_response()
}

async fn relay_inner(
    state: AppState,
    target: &PortHost,
    mut req: Request,
) -> Result<Response, E2bError> {
    let id = target.sandbox.clone();
    let for_box = id.clone();
    let port = target.port;
    let token = req
        .headers()
        .get(TRAFFIC_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let e2b = std::sync::Arc::clone(&state.e2b);
    // Under the lent handle only briefly: the sandbox is running, its rule and token are
    // current, and a port of its agent connection is taken; the agent's answer is awaited
    // after the handle is given back, so a slow box holds up nothing else of its own.
    let (agent, rule) = with_box(&state, &id, move |h| {
        let rule: IngressRule = e2b
            .box_state(&for_box)
            .ingress
            .get()
            .cloned()
            .unwrap_or_default();
        rule.admits(token.as_deref(), e2b.token_of(&for_box).as_deref())?;
        Ok((h.sandbox().agent_port(), rule))
    })
    .await?;
    prepare(&mut req, port, &rule);
    let (reader, writer) = tokio::task::spawn_blocking(move || {
        airlock_runtime::tunnel::open(agent, port, TUNNEL_WAIT).map_err(|e| match e {
            airlock_runtime::SandboxError::Agent(AgentError::Refused { code, message })
                if code == "notfound" =>
            {
                E2bError::NotFound(format!("{PORT_CLOSED} ({message})"))
            }
            airlock_runtime::SandboxError::Agent(AgentError::Protocol(why)) => {
                E2bError::SandboxGone(format!("{PORT_CLOSED}: {why}"))
            }
            other => E2bError::from(other),
        })
    })
    .await
    .map_err(|_| E2bError::Internal("the port's worker failed; retry".into()))??;
    let io = bridge(reader, writer)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| E2bError::SandboxGone(format!("the box's port {port} did not answer: {e}")))?;
    tokio::spawn(async move {
        // Ends when either side closes; the error is the box server's or the client's doing.
        let _ = conn.with_upgrades().await;
    });
    let client_upgrade = hyper::upgrade::on(&mut req);
    let mut res = sender
        .send_request(req)
        .await
        .map_err(|e| E2bError::SandboxGone(format!("the box's port {port} did not answer: {e}")))?;
    if res.status() == StatusCode::SWITCHING_PROTOCOLS {
        let box_upgrade = hyper::upgrade::on(&mut res);
        tokio::spawn(async move {
            if let (Ok(client), Ok(boxed)) = (client_upgrade.await, box_upgrade.await) {
                let mut client = TokioIo::new(client);
                let mut boxed = TokioIo::new(boxed);
                let _ = tokio::io::copy_bidirectional(&mut client, &mut boxed).await;
            }
        });
    }
    Ok(res.map(Body::new))
}

/// What the box's server gets: the path and query only (origin form), its `Host` (the
/// public name, or `maskRequestHost`), and none of the gateway's own credentials.
fn prepare(req: &mut Request, port: u16, rule: &IngressRule) {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    if let Ok(uri) = path.parse::<Uri>() {
        *req.uri_mut() = uri;
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let seen = rule.host_seen(port, &host);
    let headers = req.headers_mut();
    headers.remove(TRAFFIC_TOKEN_HEADER);
    if let Ok(v) = HeaderValue::from_str(&seen) {
        headers.insert(header::HOST, v);
    }
}

/// An async byte stream over the tunnel's two blocking halves: one thread forwards what the
/// box sends, another what the client sends; each ends when its source does, and the
/// writer's end closes the box's connection.
fn bridge(mut reader: TunnelReader, writer: TunnelWriter) -> Result<DuplexStream, E2bError> {
    let (ours, theirs) = tokio::io::duplex(BRIDGE_BUFFER);
    let (mut from_client, mut to_client) = tokio::io::split(theirs);
    let rt = tokio::runtime::Handle::current();
    let rt2 = rt.clone();
    let spawn_failed =
        |e: std::io::Error| E2bError::Internal(format!("no thread for the port's relay: {e}"));
    std::thread::Builder::new()
        .name("airlock-port-in".into())
        .spawn(move || {
            while let Some(bytes) = reader.recv() {
                if rt.block_on(to_client.write_all(&bytes)).is_err() {
                    break;
                }
            }
            let _ = rt.block_on(to_client.shutdown());
        })
        .map_err(spawn_failed)?;
    std::thread::Builder::new()
        .name("airlock-port-out".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match rt2.block_on(from_client.read(&mut buf)) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if writer.send(buf.get(..n).unwrap_or_default()).is_err() {
                            break;
                        }
                    }
                }
            }
            // Dropping the writer closes the box's end of the connection.
            drop(writer);
        })
        .map_err(spawn_failed)?;
    Ok(ours)
}
