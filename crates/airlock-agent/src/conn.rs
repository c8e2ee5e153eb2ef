//! The host connection: a non-blocking socket, the frame decoder for what comes in, and a queue
//! of encoded frames for what goes out (flushed as the socket drains).

use crate::sys;
use airlock_protocol::{ErrorCode, Event, Frame, FrameDecoder, FrameKind, ProtocolError, Reply};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Bytes read from the socket per `read(2)`.
const READ_CHUNK: usize = 64 * 1024;

/// What a read from the socket found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadOutcome {
    /// Bytes were fed to the decoder (or nothing was ready).
    Open,
    /// The host closed its end.
    Closed,
}

pub(crate) struct Connection {
    fd: OwnedFd,
    decoder: FrameDecoder,
    out: VecDeque<Vec<u8>>,
    /// Bytes of `out.front()` already sent.
    front_sent: usize,
    out_bytes: usize,
    read_buf: Vec<u8>,
}

impl Connection {
    pub(crate) fn new(fd: OwnedFd) -> io::Result<Connection> {
        sys::set_nonblocking(fd.as_raw_fd())?;
        sys::set_cloexec(fd.as_raw_fd())?;
        Ok(Connection {
            fd,
            decoder: FrameDecoder::new(),
            out: VecDeque::new(),
            front_sent: 0,
            out_bytes: 0,
            read_buf: vec![0; READ_CHUNK],
        })
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Bytes queued for the host and not yet sent.
    pub(crate) fn out_pending(&self) -> usize {
        self.out_bytes
    }

    pub(crate) fn queue(&mut self, frame: &Frame) {
        let bytes = frame.encode();
        self.out_bytes += bytes.len();
        self.out.push_back(bytes);
    }

    pub(crate) fn reply(&mut self, reply: &Reply) {
        match reply.encode() {
            Ok(body) if body.len() > airlock_protocol::MAX_BODY => {
                // Dropping it would leave the caller waiting forever: answer, with what to do.
                let too_big = Reply::error(
                    reply.id,
                    ErrorCode::Limit,
                    format!(
                        "the answer would be {} bytes, over the {}-byte limit of one reply: ask for less (a smaller depth, or one sub-directory at a time)",
                        body.len(),
                        airlock_protocol::MAX_BODY
                    ),
                );
                if let Ok(body) = too_big.encode() {
                    self.queue_control(FrameKind::Reply, body);
                }
            }
            Ok(body) => self.queue_control(FrameKind::Reply, body),
            Err(e) => eprintln!("airlock-agent: could not encode a reply: {e}"),
        }
    }

    pub(crate) fn event(&mut self, event: &Event) {
        match serde_json::to_vec(event) {
            Ok(body) => self.queue_control(FrameKind::Event, body),
            Err(e) => eprintln!("airlock-agent: could not encode an event: {e}"),
        }
    }

    pub(crate) fn error_event(
        &mut self,
        code: ErrorCode,
        message: impl Into<String>,
        channel: Option<u32>,
    ) {
        self.event(&Event::Error {
            code,
            message: message.into(),
            channel,
        });
    }

    /// Queues `bytes` as Data frames of at most `MAX_BODY` bytes each.
    pub(crate) fn data(&mut self, channel: u32, bytes: &[u8]) {
        for chunk in bytes.chunks(airlock_protocol::MAX_BODY) {
            if let Ok(frame) = Frame::data(channel, chunk.to_vec()) {
                self.queue(&frame);
            }
        }
    }

    pub(crate) fn eof(&mut self, channel: u32) {
        self.queue(&Frame::eof(channel));
    }

    fn queue_control(&mut self, kind: FrameKind, body: Vec<u8>) {
        match Frame::new(kind, airlock_protocol::CONTROL_CHANNEL, body) {
            Ok(frame) => self.queue(&frame),
            Err(e) => eprintln!("airlock-agent: dropped an outgoing {kind:?} frame: {e}"),
        }
    }

    /// Sends queued bytes until the socket would block. `Err` when the host is gone.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        while let Some(front) = self.out.front() {
            let rest = front.get(self.front_sent..).unwrap_or_default();
            match sys::send(&self.fd, rest) {
                Ok(n) => {
                    self.front_sent += n;
                    self.out_bytes -= n;
                    if self.front_sent >= front.len() {
                        self.out.pop_front();
                        self.front_sent = 0;
                    }
                }
                Err(e) if sys::would_block(&e) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reads once from the socket into the decoder.
    pub(crate) fn read_in(&mut self) -> io::Result<ReadOutcome> {
        match sys::read(&self.fd, &mut self.read_buf) {
            Ok(0) => Ok(ReadOutcome::Closed),
            Ok(n) => {
                self.decoder
                    .feed(self.read_buf.get(..n).unwrap_or_default());
                Ok(ReadOutcome::Open)
            }
            Err(e) if sys::would_block(&e) => Ok(ReadOutcome::Open),
            Err(e) => Err(e),
        }
    }

    /// The next complete frame from the host.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Frame>, ProtocolError> {
        self.decoder.next()
    }

    /// Best effort: sends what is queued, waiting up to `ms` milliseconds for the socket.
    pub(crate) fn drain_for(&mut self, ms: i32) {
        let deadline =
            std::time::Instant::now() + std::time::Duration::from_millis(ms.unsigned_abs().into());
        while self.out_bytes > 0 && std::time::Instant::now() < deadline {
            if self.flush().is_err() {
                return;
            }
            let mut pfd = [libc::pollfd {
                fd: self.raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            }];
            if sys::poll(&mut pfd, 10).is_err() {
                return;
            }
        }
    }
}
