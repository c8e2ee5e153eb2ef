//! A zstd-compressed layer, read as one stream: every frame in turn (`zstd:chunked` images are
//! many frames, with skippable frames of metadata between them), decoded in pure Rust (ruzstd),
//! each frame's window capped at ruzstd's default of 128 MiB so that a hostile header cannot ask
//! for an unbounded buffer. The caller's size budget bounds what comes out; the caller's digests
//! (the blob's and the uncompressed `diff_id`) vouch for the content, so frame checksums are not
//! needed on top.

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
use std::io::{self, BufRead, Read};

/// The zstd frame magic number, as the first bytes of a stream.
pub(crate) const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The decompressed bytes of every frame of `source`.
pub(crate) struct ZstdFrames<R> {
    source: R,
    decoder: FrameDecoder,
    in_frame: bool,
}

impl<R: BufRead> ZstdFrames<R> {
    pub(crate) fn new(source: R) -> ZstdFrames<R> {
        ZstdFrames {
            source,
            decoder: FrameDecoder::new(),
            in_frame: false,
        }
    }

    /// Starts the next data frame, skipping skippable ones. `false` at the end of the stream.
    fn next_frame(&mut self) -> io::Result<bool> {
        loop {
            if self.source.fill_buf()?.is_empty() {
                return Ok(false);
            }
            match self.decoder.reset(&mut self.source) {
                Ok(()) => return Ok(true),
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let want = u64::from(length);
                    let skipped = io::copy(&mut (&mut self.source).take(want), &mut io::sink())?;
                    if skipped != want {
                        return Err(corrupt("a skippable frame is cut short"));
                    }
                }
                Err(e) => return Err(corrupt(e)),
            }
        }
    }
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                while self.decoder.can_collect() == 0 && !self.decoder.is_finished() {
                    self.decoder
                        .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                        .map_err(corrupt)?;
                }
                let n = self.decoder.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                self.in_frame = false;
            }
            if !self.next_frame()? {
                return Ok(0);
            }
            self.in_frame = true;
        }
    }
}

fn corrupt(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the zstd stream is corrupt: {e}"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ruzstd::encoding::{compress_to_vec, CompressionLevel};

    fn unpack(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        ZstdFrames::new(io::BufReader::new(bytes)).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn every_frame_is_read_and_skippable_frames_are_skipped() {
        let one = compress_to_vec(&b"first frame, "[..], CompressionLevel::Fastest);
        let two = compress_to_vec(&[b'x'; 100_000][..], CompressionLevel::Fastest);
        assert!(one.starts_with(&MAGIC));
        // A skippable frame: magic 0x184D2A5?, little-endian length, then that many bytes.
        let mut skippable = vec![0x50, 0x2a, 0x4d, 0x18, 5, 0, 0, 0];
        skippable.extend_from_slice(b"meta!");
        let stream = [one, skippable, two].concat();
        let out = unpack(&stream).unwrap();
        let mut want = b"first frame, ".to_vec();
        want.extend_from_slice(&[b'x'; 100_000]);
        assert_eq!(out, want);
    }

    #[test]
    fn a_cut_or_garbled_stream_is_an_error_not_a_short_layer() {
        let whole = compress_to_vec(&[7u8; 50_000][..], CompressionLevel::Fastest);
        let cut = &whole[..whole.len() / 2];
        let err = unpack(cut).unwrap_err();
        assert!(err.to_string().contains("zstd"), "{err}");
        let mut garbled = whole.clone();
        garbled.extend_from_slice(b"not a frame");
        let err = unpack(&garbled).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        let mut short_skip = vec![0x50, 0x2a, 0x4d, 0x18, 50, 0, 0, 0];
        short_skip.extend_from_slice(b"only 9 b");
        assert!(unpack(&short_skip).is_err());
    }
}
