//! The box's side of an intercepted connection, counted: bytes read from the box are taken
//! from the box's byte budget before they are read (a read past it fails), bytes written to
//! it are counted. Bytes the box sent before interception began are read first.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Byte counters shared with the connection's record.
#[derive(Clone, Default)]
pub(crate) struct Counters {
    /// Bytes the box moved, every connection (checked against `budget`).
    pub total: Arc<AtomicU64>,
    pub budget: Option<u64>,
    /// From the box.
    pub up: Arc<AtomicU64>,
    /// To the box.
    pub down: Arc<AtomicU64>,
}

/// A counted client stream.
pub(crate) struct Metered {
    inner: TcpStream,
    prefix: Vec<u8>,
    counters: Counters,
}

impl Metered {
    pub(crate) fn new(inner: TcpStream, prefix: Vec<u8>, counters: Counters) -> Metered {
        Metered {
            inner,
            prefix,
            counters,
        }
    }

    fn reserve(&self, want: usize) -> usize {
        let Some(budget) = self.counters.budget else {
            return want;
        };
        let mut granted = 0;
        let _ = self
            .counters
            .total
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                granted = budget.saturating_sub(used).min(want as u64);
                Some(used + granted)
            });
        granted as usize
    }

    /// Returns the unused part of a reservation and counts `used` in `direction`.
    fn settle(&self, reserved: usize, used: usize, direction: &AtomicU64) {
        let used = used.min(reserved) as u64;
        if self.counters.budget.is_some() {
            let unused = reserved as u64 - used;
            self.counters.total.fetch_sub(unused, Ordering::AcqRel);
        } else {
            self.counters.total.fetch_add(used, Ordering::Relaxed);
        }
        direction.fetch_add(used, Ordering::Relaxed);
    }
}

impl AsyncRead for Metered {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.prefix.is_empty() {
            let n = this.prefix.len().min(buf.remaining());
            buf.put_slice(&this.prefix[..n]);
            this.prefix.drain(..n);
            this.counters.up.fetch_add(n as u64, Ordering::Relaxed);
            this.counters.total.fetch_add(n as u64, Ordering::Relaxed);
            return Poll::Ready(Ok(()));
        }
        let want = buf.remaining();
        let granted = this.reserve(want);
        if granted == 0 && want > 0 {
            return Poll::Ready(Err(io::Error::other("byte budget exhausted")));
        }
        let mut limited = buf.take(granted);
        let res = Pin::new(&mut this.inner).poll_read(cx, &mut limited);
        let n = limited.filled().len();
        // SAFETY: `limited` wrote `n` initialised bytes into the unfilled part of `buf`.
        unsafe { buf.assume_init(n) };
        buf.advance(n);
        let up = this.counters.up.clone();
        this.settle(granted, if res.is_ready() { n } else { 0 }, &up);
        res
    }
}

impl AsyncWrite for Metered {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let granted = this.reserve(data.len());
        if granted == 0 && !data.is_empty() {
            return Poll::Ready(Err(io::Error::other("byte budget exhausted")));
        }
        let res = Pin::new(&mut this.inner).poll_write(cx, &data[..granted]);
        let n = match &res {
            Poll::Ready(Ok(n)) => *n,
            _ => 0,
        };
        let down = this.counters.down.clone();
        this.settle(granted, n, &down);
        res
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
