//! The chunked transfer coding of a body the proxy passes on: parsed strictly, then written
//! again in canonical form, so the receiver sees exactly the chunks the proxy counted and the
//! body ends where the proxy says it ends.

use super::headers::parse_header_line;

/// The longest chunk size line accepted (size, extensions, CRLF).
pub const MAX_CHUNK_LINE: usize = 4096;
/// The largest trailer section accepted (all trailer lines and the final empty line).
pub const MAX_TRAILERS: usize = 16 * 1024;

/// A chunked body that is refused. Messages are fixed sentences (no body bytes echoed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkedError {
    /// The size line is not `HEXDIG+ [;extension] CRLF`.
    #[error("a chunk size line is not hexadecimal digits optionally followed by `;extension`")]
    SizeLine,
    /// More than 16 hex digits (leading zeros included): refused rather than risk an overflow
    /// that another parser would read differently.
    #[error("a chunk size has more than 16 hexadecimal digits")]
    SizeTooLarge,
    /// The size line did not end within [`MAX_CHUNK_LINE`] bytes.
    #[error("a chunk size line is longer than {MAX_CHUNK_LINE} bytes")]
    LineTooLong,
    /// A line of the chunked framing ends with a bare LF, or contains a bare CR.
    #[error("a line of the chunked body does not end with CRLF")]
    LineEnd,
    /// The chunk's data is not followed by CRLF (the data is longer than its size says).
    #[error("chunk data is not followed by CRLF: the chunk is longer than its size")]
    DataEnd,
    /// The trailer section is larger than [`MAX_TRAILERS`].
    #[error("the trailer section of the chunked body is larger than {MAX_TRAILERS} bytes")]
    TrailersTooLarge,
    /// A trailer line is not a valid header field line.
    #[error("a trailer field of the chunked body is malformed")]
    Trailer,
}

/// How far one call to [`ChunkedBody::feed`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fed {
    /// Bytes of the input that belong to the body; the rest (only when `done`) is not part of it.
    pub consumed: usize,
    /// Whether the body is complete (last chunk and trailer section read).
    pub done: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Reading a chunk size line into `line`.
    Size,
    /// Inside a chunk's data, this many bytes left.
    Data(u64),
    /// After a chunk's data: the CR, then the LF.
    DataCr,
    DataLf,
    /// Reading trailer lines into `line` after the last chunk.
    Trailers,
    Done,
}

/// A chunked body read incrementally: feed it the bytes after the head as they arrive; it
/// writes the canonical re-encoding (`{size:x}\r\n`, data, `\r\n`, …, `0\r\n\r\n`) to `out`.
/// Chunk extensions and trailer fields are checked, then dropped.
#[derive(Debug, Clone)]
pub struct ChunkedBody {
    state: State,
    line: Vec<u8>,
    trailer_bytes: usize,
}

impl Default for ChunkedBody {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkedBody {
    /// A body whose first byte is the first byte of the first chunk size line.
    pub fn new() -> ChunkedBody {
        ChunkedBody {
            state: State::Size,
            line: Vec::new(),
            trailer_bytes: 0,
        }
    }

    /// Whether the body is complete.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Reads `input`, appending what it completes to `out`. Never reads past the end of the
    /// body. After an error the body is refused for good (feed it no more).
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Fed, ChunkedError> {
        let mut i = 0;
        while i < input.len() && self.state != State::Done {
            match self.state {
                State::Size | State::Trailers => {
                    let Some(lf) = input[i..].iter().position(|&b| b == b'\n') else {
                        self.take_partial_line(&input[i..])?;
                        i = input.len();
                        break;
                    };
                    self.take_partial_line(&input[i..i + lf + 1])?;
                    i += lf + 1;
                    let line = std::mem::take(&mut self.line);
                    let line = line.strip_suffix(b"\r\n").ok_or(ChunkedError::LineEnd)?;
                    if line.contains(&b'\r') {
                        return Err(ChunkedError::LineEnd);
                    }
                    if self.state == State::Size {
                        self.size_line(line, out)?;
                    } else {
                        self.trailer_line(line, out)?;
                    }
                }
                State::Data(left) => {
                    let n = usize::try_from(left)
                        .unwrap_or(usize::MAX)
                        .min(input.len() - i);
                    out.extend_from_slice(&input[i..i + n]);
                    i += n;
                    let left = left - n as u64;
                    self.state = if left == 0 {
                        State::DataCr
                    } else {
                        State::Data(left)
                    };
                }
                State::DataCr | State::DataLf => {
                    let want = if self.state == State::DataCr {
                        b'\r'
                    } else {
                        b'\n'
                    };
                    if input[i] != want {
                        return Err(ChunkedError::DataEnd);
                    }
                    i += 1;
                    if self.state == State::DataCr {
                        self.state = State::DataLf;
                    } else {
                        out.extend_from_slice(b"\r\n");
                        self.state = State::Size;
                    }
                }
                State::Done => break,
            }
        }
        Ok(Fed {
            consumed: i,
            done: self.is_done(),
        })
    }

    /// Adds part of a line (up to and including its LF, if present) to `line`, within bounds.
    fn take_partial_line(&mut self, part: &[u8]) -> Result<(), ChunkedError> {
        match self.state {
            State::Size if self.line.len() + part.len() > MAX_CHUNK_LINE => {
                return Err(ChunkedError::LineTooLong)
            }
            State::Trailers => {
                self.trailer_bytes += part.len();
                if self.trailer_bytes > MAX_TRAILERS {
                    return Err(ChunkedError::TrailersTooLarge);
                }
            }
            _ => {}
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    /// `HEXDIG+ [ BWS ";" extension ]`, the line end removed.
    fn size_line(&mut self, line: &[u8], out: &mut Vec<u8>) -> Result<(), ChunkedError> {
        let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits == 0 {
            return Err(ChunkedError::SizeLine);
        }
        if digits > 16 {
            return Err(ChunkedError::SizeTooLarge);
        }
        let rest = &line[digits..];
        let extension = rest.iter().position(|&b| b != b' ' && b != b'\t');
        if let Some(at) = extension {
            let ext = &rest[at..];
            let bad = |b: &u8| (*b < 0x20 && *b != b'\t') || *b == 0x7f;
            if ext[0] != b';' || ext.iter().any(bad) {
                return Err(ChunkedError::SizeLine);
            }
        } else if !rest.is_empty() {
            // Whitespace after the size with no extension after it.
            return Err(ChunkedError::SizeLine);
        }
        let text = std::str::from_utf8(&line[..digits]).map_err(|_| ChunkedError::SizeLine)?;
        let size = u64::from_str_radix(text, 16).map_err(|_| ChunkedError::SizeTooLarge)?;
        if size == 0 {
            self.state = State::Trailers;
        } else {
            out.extend_from_slice(format!("{size:x}\r\n").as_bytes());
            self.state = State::Data(size);
        }
        Ok(())
    }

    /// One trailer field line, or the empty line that ends the body.
    fn trailer_line(&mut self, line: &[u8], out: &mut Vec<u8>) -> Result<(), ChunkedError> {
        if line.is_empty() {
            out.extend_from_slice(b"0\r\n\r\n");
            self.state = State::Done;
            return Ok(());
        }
        parse_header_line(line).map_err(|_| ChunkedError::Trailer)?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "chunked_tests.rs"]
mod tests;
