//! The request body, client → upstream: exactly what the checked framing declares, then every
//! further byte from the client is read and dropped until the client ends its side.

use super::error::ExchangeError;
use crate::http::{BodyFraming, ChunkedBody};
use crate::relay::{half_close, pump_exact, read_metered, write_all, Meter, RelayError};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::net::TcpStream;

const BUF: usize = 64 * 1024;

/// How a body ended.
enum BodyEnd {
    /// Complete; this many bytes after it were already read (they are dropped).
    Complete { read_after: usize },
    /// The client ended its side before the body was complete.
    ClientEnded,
}

/// Forwards the body that `framing` declares, starting with `early` (the bytes that arrived
/// with the head), then drops what the client sends after it, counting it in `dropped`. When
/// the client ends its side, half-closes the upstream and returns.
pub(super) async fn forward_body(
    client: &TcpStream,
    upstream: &TcpStream,
    framing: BodyFraming,
    early: &[u8],
    meter: &Meter<'_>,
    dropped: &AtomicU64,
) -> Result<(), ExchangeError> {
    let end = match framing {
        BodyFraming::None => BodyEnd::Complete {
            read_after: early.len(),
        },
        BodyFraming::Length(len) => forward_length(client, upstream, len, early, meter).await?,
        BodyFraming::Chunked => forward_chunked(client, upstream, early, meter).await?,
    };
    if let BodyEnd::Complete { read_after } = end {
        dropped.fetch_add(read_after as u64, Ordering::Relaxed);
        drop_until_eof(client, dropped).await?;
    }
    // The request is complete (or the client gave up on it): pass the half-close on.
    half_close(upstream);
    Ok(())
}

/// `len` bytes, `early` first.
async fn forward_length(
    client: &TcpStream,
    upstream: &TcpStream,
    len: u64,
    early: &[u8],
    meter: &Meter<'_>,
) -> Result<BodyEnd, ExchangeError> {
    let first = usize::try_from(len).unwrap_or(usize::MAX).min(early.len());
    write_all(upstream, &early[..first]).await?;
    meter.passed_unmetered(first);
    let left = len - first as u64;
    if left > 0 && pump_exact(client, upstream, meter, left).await? < left {
        return Ok(BodyEnd::ClientEnded);
    }
    Ok(BodyEnd::Complete {
        read_after: early.len() - first,
    })
}

/// Chunks up to the last one and its trailer section, re-encoded, `early` first.
async fn forward_chunked(
    client: &TcpStream,
    upstream: &TcpStream,
    early: &[u8],
    meter: &Meter<'_>,
) -> Result<BodyEnd, ExchangeError> {
    let mut body = ChunkedBody::new();
    let mut out = Vec::with_capacity(BUF + 32);
    let fed = body.feed(early, &mut out).map_err(ExchangeError::Body)?;
    write_all(upstream, &out).await?;
    meter.passed_unmetered(out.len());
    if fed.done {
        return Ok(BodyEnd::Complete {
            read_after: early.len() - fed.consumed,
        });
    }
    let mut buf = vec![0u8; BUF];
    loop {
        let n = read_metered(client, meter, &mut buf).await?;
        if n == 0 {
            return Ok(BodyEnd::ClientEnded);
        }
        out.clear();
        let fed = body
            .feed(&buf[..n], &mut out)
            .map_err(ExchangeError::Body)?;
        write_all(upstream, &out).await?;
        meter.forwarded(out.len());
        if fed.done {
            return Ok(BodyEnd::Complete {
                read_after: n - fed.consumed,
            });
        }
    }
}

/// Reads and drops everything the client sends until it ends its side.
pub(super) async fn drop_until_eof(
    client: &TcpStream,
    dropped: &AtomicU64,
) -> Result<(), ExchangeError> {
    let mut buf = vec![0u8; BUF];
    loop {
        client.readable().await.map_err(RelayError::Read)?;
        match client.try_read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                dropped.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(RelayError::Read(e).into()),
        }
    }
}
