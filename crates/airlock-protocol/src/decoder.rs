//! A streaming frame decoder for untrusted input.
//!
//! Guarantees: a frame's header is validated as soon as its 9 bytes are in (so an oversize or
//! unknown frame is rejected before its body arrives), a body buffer is never larger than
//! [`MAX_BODY`], and after the first error the decoder stays failed (framing is lost, the
//! connection must be closed). The decoder keeps only the bytes it was fed and has not yet
//! returned: a caller that drains [`FrameDecoder::next`] after each `feed` of at most N bytes
//! holds at most one partial frame plus N bytes.

use crate::frame::{
    check_header, Frame, FrameKind, ProtocolError, HEADER_LEN, MAX_BODY, MAX_FRAME_LEN,
};

/// Decodes frames from a byte stream fed in arbitrary pieces.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    start: usize,
    failed: Option<ProtocolError>,
}

struct Header {
    kind: FrameKind,
    channel: u32,
    body_len: usize,
}

impl FrameDecoder {
    /// An empty decoder.
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// Appends received bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame, `Ok(None)` if more bytes are needed, or the framing error (again
    /// on every later call).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Frame>, ProtocolError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        match self.try_next() {
            Err(e) => {
                self.failed = Some(e.clone());
                self.buf = Vec::new();
                self.start = 0;
                Err(e)
            }
            ok => ok,
        }
    }

    /// Bytes still needed to complete the frame in progress (at least 1).
    pub fn wanted(&self) -> usize {
        let have = self.pending();
        match self.header() {
            Ok(Some(h)) => (HEADER_LEN + h.body_len).saturating_sub(have).max(1),
            _ => HEADER_LEN.saturating_sub(have).max(1),
        }
    }

    /// Bytes fed but not yet returned as frames.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Whether the decoder hit a framing error.
    pub fn is_failed(&self) -> bool {
        self.failed.is_some()
    }

    fn try_next(&mut self) -> Result<Option<Frame>, ProtocolError> {
        let Some(h) = self.header()? else {
            return Ok(None);
        };
        let end = self.start + HEADER_LEN + h.body_len;
        let Some(body) = self.buf.get(self.start + HEADER_LEN..end) else {
            return Ok(None);
        };
        let frame = Frame {
            kind: h.kind,
            channel: h.channel,
            body: body.to_vec(),
        };
        self.start = end;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        Ok(Some(frame))
    }

    /// Validates as much of the header as is in: the length as soon as its 4 bytes arrive, the
    /// kind with the 5th, the channel with the 9th. `None` until the header is complete.
    fn header(&self) -> Result<Option<Header>, ProtocolError> {
        let raw = self.buf.get(self.start..).unwrap_or_default();
        let Some(len_bytes) = raw.get(0..4).and_then(|b| <[u8; 4]>::try_from(b).ok()) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes(len_bytes);
        if len < 5 {
            return Err(ProtocolError::Truncated(len));
        }
        let len_usize = usize::try_from(len).map_err(|_| ProtocolError::Oversize(len))?;
        if len_usize > MAX_FRAME_LEN {
            return Err(ProtocolError::Oversize(len));
        }
        let Some(&kind_byte) = raw.get(4) else {
            return Ok(None);
        };
        let kind = FrameKind::from_byte(kind_byte).ok_or(ProtocolError::UnknownKind(kind_byte))?;
        let Some(chan_bytes) = raw.get(5..9).and_then(|b| <[u8; 4]>::try_from(b).ok()) else {
            return Ok(None);
        };
        let channel = u32::from_be_bytes(chan_bytes);
        check_header(kind, channel)?;
        let body_len = len_usize - 5;
        debug_assert!(body_len <= MAX_BODY);
        if kind == FrameKind::Eof && body_len != 0 {
            return Err(ProtocolError::EofWithBody(channel));
        }
        Ok(Some(Header {
            kind,
            channel,
            body_len,
        }))
    }
}

#[cfg(test)]
#[path = "decoder_tests.rs"]
mod tests;
