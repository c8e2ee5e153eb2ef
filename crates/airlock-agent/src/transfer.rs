//! Streamed file transfers. A download reads one chunk at a time, only while the socket's
//! outgoing queue is short, so a file of any size never sits in memory; an upload writes each
//! Data chunk to the file as it arrives.

use crate::conn::Connection;
use crate::files::{absolute, FileError};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

/// Bytes read from a file per Data frame.
pub(crate) const DOWNLOAD_CHUNK: usize = 256 * 1024;

pub(crate) struct Download {
    file: File,
    pub(crate) channel: u32,
}

/// Opens a regular file for download; returns it with its size.
pub(crate) fn open_download(path: &str, channel: u32) -> Result<(Download, u64), FileError> {
    let p = absolute(path)?;
    let wrap = |source| FileError::Io {
        op: "read",
        path: path.to_string(),
        source,
    };
    let file = File::open(p).map_err(wrap)?;
    let meta = file.metadata().map_err(wrap)?;
    if !meta.is_file() {
        return Err(wrap(io::Error::from_raw_os_error(libc::EISDIR)));
    }
    Ok((Download { file, channel }, meta.len()))
}

impl Download {
    /// Sends the next chunk; `true` once the Eof is queued (or the read failed, then after an
    /// error event).
    pub(crate) fn pump(&mut self, conn: &mut Connection, buf: &mut [u8]) -> bool {
        let chunk = buf.len().min(DOWNLOAD_CHUNK);
        let buf = buf.get_mut(..chunk).unwrap_or_default();
        match self.file.read(buf) {
            Ok(0) => {
                conn.eof(self.channel);
                true
            }
            Ok(n) => {
                conn.data(self.channel, buf.get(..n).unwrap_or_default());
                false
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => false,
            Err(e) => {
                conn.error_event(
                    crate::error::code_of(&e),
                    format!("reading the file failed: {e}"),
                    Some(self.channel),
                );
                conn.eof(self.channel);
                true
            }
        }
    }
}

pub(crate) struct Upload {
    pub(crate) request_id: u64,
    file: Option<File>,
    written: u64,
}

/// Creates (or truncates) the target of an upload.
pub(crate) fn open_upload(
    request_id: u64,
    path: &str,
    mode: Option<u32>,
) -> Result<Upload, FileError> {
    let p = absolute(path)?;
    let wrap = |source| FileError::Io {
        op: "write",
        path: path.to_string(),
        source,
    };
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode.unwrap_or(0o644))
        .open(p)
        .map_err(wrap)?;
    if let Some(mode) = mode {
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(wrap)?;
    }
    Ok(Upload {
        request_id,
        file: Some(file),
        written: 0,
    })
}

impl Upload {
    /// Writes a chunk. After a failure the upload discards data until the Eof.
    pub(crate) fn write(&mut self, data: &[u8]) -> io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        if let Err(e) = file.write_all(data) {
            self.file = None;
            return Err(e);
        }
        self.written += data.len() as u64;
        Ok(())
    }

    /// A failed upload, kept only to swallow the rest of its data.
    pub(crate) fn failed(request_id: u64) -> Upload {
        Upload {
            request_id,
            file: None,
            written: 0,
        }
    }

    pub(crate) fn is_failed(&self) -> bool {
        self.file.is_none()
    }

    pub(crate) fn written(&self) -> u64 {
        self.written
    }
}
