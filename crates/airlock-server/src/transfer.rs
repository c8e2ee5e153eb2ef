//! Files streamed between an HTTP body and a box in bounded memory, shared by the native API's
//! and the E2B gateway's file routes: out of the box into a response body ([`stream_out`]), and
//! from a request body into the box ([`ChunkReader`]).

use axum::body::{Body, Bytes};
use std::io::{Read, Write};
use tokio::sync::mpsc;

/// Chunks buffered between the box and a slow client before the box's sender waits.
const CHUNKS_BUFFERED: usize = 8;

enum Piece<E> {
    Data(Bytes),
    Done(Result<u64, E>),
}

/// Feeds what the box's agent sends into the response body. If the client went away, the rest
/// is read and dropped, so the agent connection stays in step.
struct BodyWriter<E> {
    tx: mpsc::Sender<Piece<E>>,
    gone: bool,
}

impl<E> Write for BodyWriter<E> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.gone
            && self
                .tx
                .blocking_send(Piece::Data(Bytes::copy_from_slice(buf)))
                .is_err()
        {
            self.gone = true;
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `read` (which writes the file into its argument) on a blocking thread and answers the
/// body once the first bytes (or the end) are there: an error before any byte is the caller's
/// error response; an error after some bytes cuts the body short, so the client sees it failed.
/// `lost` makes the error for a reader that ended without a word.
pub(crate) async fn stream_out<E: std::fmt::Display + Send + 'static>(
    read: impl FnOnce(&mut dyn Write) -> Result<u64, E> + Send + 'static,
    lost: impl FnOnce() -> E,
) -> Result<Body, E> {
    let (tx, mut rx) = mpsc::channel::<Piece<E>>(CHUNKS_BUFFERED);
    tokio::task::spawn_blocking(move || {
        let mut out = BodyWriter {
            tx: tx.clone(),
            gone: false,
        };
        let done = read(&mut out);
        let _ = tx.blocking_send(Piece::Done(done));
    });
    let first = match rx.recv().await {
        Some(Piece::Done(Err(e))) => return Err(e),
        Some(Piece::Done(Ok(_))) => return Ok(Body::empty()),
        Some(Piece::Data(b)) => b,
        None => return Err(lost()),
    };
    Ok(Body::from_stream(futures_util::stream::unfold(
        (Some(first), rx),
        |(first, mut rx)| async move {
            if let Some(b) = first {
                return Some((Ok(b), (None, rx)));
            }
            match rx.recv().await {
                Some(Piece::Data(b)) => Some((Ok::<Bytes, std::io::Error>(b), (None, rx))),
                Some(Piece::Done(Err(e))) => {
                    Some((Err(std::io::Error::other(e.to_string())), (None, rx)))
                }
                Some(Piece::Done(Ok(_))) | None => None,
            }
        },
    )))
}

/// Reads, on a blocking thread, the chunks the async side sends (a request body as it arrives).
pub(crate) struct ChunkReader {
    rx: mpsc::Receiver<Result<Bytes, std::io::Error>>,
    cur: Bytes,
}

impl ChunkReader {
    pub(crate) fn new(rx: mpsc::Receiver<Result<Bytes, std::io::Error>>) -> ChunkReader {
        ChunkReader {
            rx,
            cur: Bytes::new(),
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.cur.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(b)) => self.cur = b,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.cur.len());
        buf[..n].copy_from_slice(&self.cur[..n]);
        self.cur = self.cur.slice(n..);
        Ok(n)
    }
}
