//! Frames: `len:u32 BE | kind:u8 | channel:u32 BE | body`, where `len` counts the bytes after
//! itself (kind + channel + body). Control kinds travel on channel 0, data kinds on any other.

use serde::Serialize;
use std::io::{Read, Write};

/// Largest body a frame may carry (1 MiB). Larger lengths are a framing violation.
pub const MAX_BODY: usize = 1 << 20;
/// Bytes before the body: length (4), kind (1), channel (4).
pub const HEADER_LEN: usize = 9;
/// Largest value of the length field: kind + channel + `MAX_BODY`.
pub const MAX_FRAME_LEN: usize = 5 + MAX_BODY;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameKind {
    /// JSON [`crate::Hello`], the first frame each side sends.
    Hello = 1,
    /// JSON [`crate::Request`], host → agent.
    Request = 2,
    /// JSON [`crate::Reply`], agent → host.
    Reply = 3,
    /// Raw bytes on a channel.
    Data = 4,
    /// The channel is closed by the sender; empty body.
    Eof = 5,
    /// JSON [`crate::Event`], agent → host.
    Event = 6,
}

impl FrameKind {
    /// Parses a kind byte; `None` for unknown kinds.
    pub fn from_byte(b: u8) -> Option<FrameKind> {
        Some(match b {
            1 => FrameKind::Hello,
            2 => FrameKind::Request,
            3 => FrameKind::Reply,
            4 => FrameKind::Data,
            5 => FrameKind::Eof,
            6 => FrameKind::Event,
            _ => return None,
        })
    }

    /// Whether this kind travels on the control channel (0) and carries JSON.
    pub fn is_control(self) -> bool {
        !matches!(self, FrameKind::Data | FrameKind::Eof)
    }
}

/// Errors of the framing layer. Every one of them means the byte stream can no longer be
/// trusted: the connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The length field is below the 5 bytes of kind + channel.
    #[error("frame length {0} is shorter than the 5-byte frame header")]
    Truncated(u32),
    /// The length field exceeds [`MAX_FRAME_LEN`].
    #[error("frame length {0} exceeds the {MAX_FRAME_LEN}-byte limit")]
    Oversize(u32),
    /// The kind byte is not a known [`FrameKind`].
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    /// A control frame on a data channel, or a data frame on the control channel.
    #[error("frame kind {kind:?} is not allowed on channel {channel}")]
    WrongChannel { kind: FrameKind, channel: u32 },
    /// An Eof frame with a body.
    #[error("eof frame on channel {0} carries a body")]
    EofWithBody(u32),
    /// The stream ended in the middle of a frame.
    #[error("the connection ended in the middle of a frame")]
    UnexpectedEnd,
    /// The body to encode is larger than [`MAX_BODY`].
    #[error("a frame body of {0} bytes exceeds the 1 MiB limit")]
    BodyTooLarge(usize),
    /// Serialising a JSON body failed.
    #[error("could not serialise a frame body: {0}")]
    Json(String),
    /// The underlying reader or writer failed.
    #[error("frame I/O failed ({0:?})")]
    Io(std::io::ErrorKind),
}

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// What the frame carries.
    pub kind: FrameKind,
    /// 0 for control frames, the channel id for data frames.
    pub channel: u32,
    /// At most [`MAX_BODY`] bytes.
    pub body: Vec<u8>,
}

impl Frame {
    /// A control frame with a JSON body.
    pub fn json<T: Serialize>(kind: FrameKind, value: &T) -> Result<Frame, ProtocolError> {
        let body = serde_json::to_vec(value).map_err(|e| ProtocolError::Json(e.to_string()))?;
        Frame::new(kind, crate::CONTROL_CHANNEL, body)
    }

    /// A data frame; `body` must be at most [`MAX_BODY`] bytes.
    pub fn data(channel: u32, body: Vec<u8>) -> Result<Frame, ProtocolError> {
        Frame::new(FrameKind::Data, channel, body)
    }

    /// The end of a channel.
    pub fn eof(channel: u32) -> Frame {
        Frame {
            kind: FrameKind::Eof,
            channel,
            body: Vec::new(),
        }
    }

    /// A frame, checked against every rule the decoder enforces.
    pub fn new(kind: FrameKind, channel: u32, body: Vec<u8>) -> Result<Frame, ProtocolError> {
        check_header(kind, channel)?;
        if body.len() > MAX_BODY {
            return Err(ProtocolError::BodyTooLarge(body.len()));
        }
        if kind == FrameKind::Eof && !body.is_empty() {
            return Err(ProtocolError::EofWithBody(channel));
        }
        Ok(Frame {
            kind,
            channel,
            body,
        })
    }

    /// The wire form: header then body.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.body.len());
        self.encode_into(&mut out);
        out
    }

    /// Appends the wire form to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        encode_header(out, self.kind, self.channel, self.body.len());
        out.extend_from_slice(&self.body);
    }
}

/// Appends a header for a body of `body_len` bytes. The caller guarantees
/// `body_len <= MAX_BODY` (checked by [`Frame::new`]).
pub fn encode_header(out: &mut Vec<u8>, kind: FrameKind, channel: u32, body_len: usize) {
    // body_len <= MAX_BODY, so the sum fits a u32; saturate rather than wrap just in case.
    let len = u32::try_from(body_len + 5).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.push(kind as u8);
    out.extend_from_slice(&channel.to_be_bytes());
}

/// Checks that `kind` may travel on `channel`.
pub(crate) fn check_header(kind: FrameKind, channel: u32) -> Result<(), ProtocolError> {
    if kind.is_control() == (channel == crate::CONTROL_CHANNEL) {
        Ok(())
    } else {
        Err(ProtocolError::WrongChannel { kind, channel })
    }
}

/// Writes one frame (blocking).
pub fn write_frame<W: Write>(w: &mut W, frame: &Frame) -> Result<(), ProtocolError> {
    w.write_all(&frame.encode())
        .map_err(|e| ProtocolError::Io(e.kind()))
}

/// Reads one frame (blocking). `Ok(None)` on a clean end of stream between frames.
pub fn read_frame<R: Read>(r: &mut R) -> Result<Option<Frame>, ProtocolError> {
    let mut decoder = crate::FrameDecoder::new();
    let mut header = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        let n = read_some(r, header.get_mut(got..).unwrap_or_default())?;
        if n == 0 {
            return if got == 0 {
                Ok(None)
            } else {
                Err(ProtocolError::UnexpectedEnd)
            };
        }
        got += n;
    }
    decoder.feed(&header);
    if let Some(frame) = decoder.next()? {
        return Ok(Some(frame));
    }
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let want = decoder.wanted().min(chunk.len());
        let n = read_some(r, chunk.get_mut(..want).unwrap_or_default())?;
        if n == 0 {
            return Err(ProtocolError::UnexpectedEnd);
        }
        decoder.feed(chunk.get(..n).unwrap_or_default());
        if let Some(frame) = decoder.next()? {
            return Ok(Some(frame));
        }
    }
}

fn read_some<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<usize, ProtocolError> {
    loop {
        match r.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ProtocolError::Io(e.kind())),
        }
    }
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
