//! The response, upstream → client: interim heads, the final head rewritten for the client,
//! then exactly the body that head frames. Nothing after it is read from the upstream.

use super::error::ExchangeError;
use crate::http::{
    parse_response_head, Answering, BodyFraming, ChunkedBody, ResponseBody, UpstreamHead,
};
use crate::relay::{pump_exact, read_metered, write_all, Meter};
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::TcpStream;

/// The most interim (1xx) responses passed on before the final one.
pub(super) const MAX_INTERIM: usize = 16;

const BUF: usize = 64 * 1024;

/// Passes the upstream's response for one request to the client; returns once its body is
/// complete. `started` is set before the first byte is written to the client.
pub(super) async fn forward_response(
    upstream: &TcpStream,
    client: &TcpStream,
    answering: Answering,
    meter: &Meter<'_>,
    started: &AtomicBool,
) -> Result<(), ExchangeError> {
    let mut buf = Vec::with_capacity(BUF);
    let mut interim = 0;
    let head = loop {
        let head = read_head(upstream, &mut buf, answering, meter).await?;
        if !head.is_interim() {
            break head;
        }
        interim += 1;
        if interim > MAX_INTERIM {
            return Err(ExchangeError::TooManyInterim);
        }
        send(client, &head.client_head, meter, started).await?;
    };
    send(client, &head.client_head, meter, started).await?;
    match head.body {
        ResponseBody::Framed(BodyFraming::None) => Ok(()),
        ResponseBody::Framed(BodyFraming::Length(len)) => {
            let first = usize::try_from(len).unwrap_or(usize::MAX).min(buf.len());
            send(client, &buf[..first], meter, started).await?;
            let left = len - first as u64;
            if left > 0 && pump_exact(upstream, client, meter, left).await? < left {
                return Err(ExchangeError::Truncated);
            }
            Ok(())
        }
        ResponseBody::Framed(BodyFraming::Chunked) => {
            forward_chunked(upstream, client, &buf, meter).await
        }
        ResponseBody::UntilClose => {
            send(client, &buf, meter, started).await?;
            pump_exact(upstream, client, meter, u64::MAX).await?;
            Ok(())
        }
    }
}

/// Reads until `buf` starts with a complete head; removes it from `buf` and returns it.
async fn read_head(
    upstream: &TcpStream,
    buf: &mut Vec<u8>,
    answering: Answering,
    meter: &Meter<'_>,
) -> Result<UpstreamHead, ExchangeError> {
    let mut chunk = vec![0u8; BUF];
    loop {
        if let Some((head, len)) =
            parse_response_head(buf, answering).map_err(ExchangeError::Upstream)?
        {
            buf.drain(..len);
            return Ok(head);
        }
        let n = read_metered(upstream, meter, &mut chunk).await?;
        if n == 0 {
            return Err(ExchangeError::NoResponse);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A chunked body up to its last chunk, re-encoded; `early` is what was read after the head.
async fn forward_chunked(
    upstream: &TcpStream,
    client: &TcpStream,
    early: &[u8],
    meter: &Meter<'_>,
) -> Result<(), ExchangeError> {
    let mut body = ChunkedBody::new();
    let mut out = Vec::with_capacity(BUF + 32);
    let mut chunk = vec![0u8; BUF];
    chunk_feed(&mut body, early, &mut out)?;
    loop {
        write_all(client, &out).await?;
        meter.forwarded(out.len());
        if body.is_done() {
            return Ok(());
        }
        let n = read_metered(upstream, meter, &mut chunk).await?;
        if n == 0 {
            return Err(ExchangeError::Truncated);
        }
        out.clear();
        chunk_feed(&mut body, &chunk[..n], &mut out)?;
    }
}

fn chunk_feed(
    body: &mut ChunkedBody,
    input: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), ExchangeError> {
    body.feed(input, out).map_err(ExchangeError::ResponseBody)?;
    Ok(())
}

/// Writes `bytes` to the client, marking the response as started.
async fn send(
    client: &TcpStream,
    bytes: &[u8],
    meter: &Meter<'_>,
    started: &AtomicBool,
) -> Result<(), ExchangeError> {
    if bytes.is_empty() {
        return Ok(());
    }
    started.store(true, Ordering::Relaxed);
    write_all(client, bytes).await?;
    meter.forwarded(bytes.len());
    Ok(())
}
