//! A bounded byte buffer that keeps the most recent output of a process.
//!
//! Output is kept whether or not the host is reading, so a background process never blocks on a
//! full pipe and `attach` (with `replay`) can show what it printed recently. When the cap is
//! reached the oldest bytes are dropped.

use std::collections::VecDeque;

/// Recent output kept per stream of a process (stdout and stderr each: 1 MiB per process).
pub const OUTPUT_RING_CAP: usize = 512 * 1024;

#[derive(Debug)]
pub(crate) struct OutputRing {
    bytes: VecDeque<u8>,
    cap: usize,
    dropped: u64,
}

impl OutputRing {
    pub(crate) fn new(cap: usize) -> OutputRing {
        OutputRing {
            bytes: VecDeque::new(),
            cap,
            dropped: 0,
        }
    }

    pub(crate) fn push(&mut self, data: &[u8]) {
        let data = if data.len() > self.cap {
            let skip = data.len() - self.cap;
            self.dropped += skip as u64;
            data.get(skip..).unwrap_or_default()
        } else {
            data
        };
        let overflow = (self.bytes.len() + data.len()).saturating_sub(self.cap);
        if overflow > 0 {
            self.bytes.drain(..overflow);
            self.dropped += overflow as u64;
        }
        self.bytes.extend(data);
    }

    /// The buffered bytes, oldest first.
    pub(crate) fn contents(&self) -> Vec<u8> {
        self.bytes.iter().copied().collect()
    }

    #[cfg(test)]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_bytes() {
        let mut r = OutputRing::new(4);
        r.push(b"ab");
        r.push(b"cde");
        assert_eq!(r.contents(), b"bcde");
        r.push(b"0123456");
        assert_eq!(r.contents(), b"3456");
        assert_eq!(r.dropped(), 1 + 3 + 4);
    }
}
