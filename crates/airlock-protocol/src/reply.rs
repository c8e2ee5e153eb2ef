//! Replies and events (agent → host).
//!
//! A reply is `{"id": n, "ok": <body>}` or `{"id": n, "error": {"code": "...", "message": "..."}}`.
//! The body's type follows from the request's op (see [`crate::Op`]); decode it with
//! [`Reply::body`]. Events are tagged by `"event"`.

use crate::message::{FsEventKind, MessageError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Stable error codes. Hosts match on these, never on messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    NotFound,
    PermissionDenied,
    Exists,
    /// The request or frame is malformed or out of bounds.
    Invalid,
    /// The target is in use (e.g. a channel id already open).
    Busy,
    /// A bound was hit (entries, watches, queued stdin).
    Limit,
    /// Data or Eof on a channel that is not open.
    UnknownChannel,
    /// The operation does not apply (e.g. resize of a process without a tty).
    Unsupported,
    /// Any other I/O failure.
    Io,
    /// A code from a newer peer.
    #[serde(other)]
    Other,
}

/// The error of a failed request, or of an error event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
}

impl ErrorBody {
    /// An error body.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            code,
            message: message.into(),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyWire {
    id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ok: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorBody>,
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The request's id.
    pub id: u64,
    /// The body on success.
    pub result: Result<serde_json::Value, ErrorBody>,
}

impl Reply {
    /// A success reply with a typed body.
    pub fn ok<T: Serialize>(id: u64, body: &T) -> Reply {
        let result = serde_json::to_value(body)
            .map_err(|e| ErrorBody::new(ErrorCode::Io, format!("could not encode the reply: {e}")));
        Reply { id, result }
    }

    /// An error reply.
    pub fn error(id: u64, code: ErrorCode, message: impl Into<String>) -> Reply {
        Reply {
            id,
            result: Err(ErrorBody::new(code, message)),
        }
    }

    /// Parses a reply body; exactly one of `ok` and `error` must be present.
    pub fn decode(body: &[u8]) -> Result<Reply, MessageError> {
        let wire: ReplyWire =
            serde_json::from_slice(body).map_err(|e| MessageError::Malformed(e.to_string()))?;
        let result = match (wire.ok, wire.error) {
            (Some(ok), None) => Ok(ok),
            (None, Some(err)) => Err(err),
            _ => {
                return Err(MessageError::Malformed(
                    "a reply needs exactly one of `ok` and `error`".into(),
                ))
            }
        };
        Ok(Reply {
            id: wire.id,
            result,
        })
    }

    /// The JSON body.
    pub fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        let (ok, error) = match &self.result {
            Ok(v) => (Some(v.clone()), None),
            Err(e) => (None, Some(e.clone())),
        };
        serde_json::to_vec(&ReplyWire {
            id: self.id,
            ok,
            error,
        })
    }

    /// The success body as `T`, or the error.
    pub fn body<T: DeserializeOwned>(&self) -> Result<T, ErrorBody> {
        match &self.result {
            Ok(v) => {
                T::deserialize(v).map_err(|e| ErrorBody::new(ErrorCode::Invalid, e.to_string()))
            }
            Err(e) => Err(e.clone()),
        }
    }
}

/// The empty success body `{}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// Channels of a started (or attached) process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecReply {
    pub pid: i32,
    /// Standard output (with a tty: the terminal's output).
    pub stdout: u32,
    /// Standard error; absent with a tty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<u32>,
    /// Where to send Data for the process's stdin, if it was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<u32>,
}

/// One entry of `list_processes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessInfo {
    pub pid: i32,
    pub tag: Option<String>,
    pub argv: Vec<String>,
    pub running: bool,
}

/// Reply to `list_processes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessList {
    pub processes: Vec<ProcessInfo>,
}

/// Reply to `read_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadFileReply {
    /// Size when opened; the stream ends at Eof, whatever the size then.
    pub size: u64,
    pub channel: u32,
}

/// Reply to `write_file`, once the file is complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFileReply {
    pub size: u64,
}

/// What a directory entry is (symlinks are not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// A file's metadata (reply to `stat`, element of `list_dir`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Full path.
    pub path: String,
    /// Last path component.
    pub name: String,
    pub kind: EntryKind,
    pub size: u64,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
    /// Owner and group ids, as the box sees them.
    #[serde(default)]
    pub uid: u32,
    #[serde(default)]
    pub gid: u32,
    /// Where a symlink points (not resolved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The entry's extended attributes in the `user.` namespace (full names), those whose
    /// value is UTF-8; empty for a symlink or where the file system keeps none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub xattrs: std::collections::BTreeMap<String, String>,
}

/// Reply to `list_dir`, entries sorted by path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListDirReply {
    pub entries: Vec<Entry>,
}

/// Reply to `watch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchReply {
    pub watch: u32,
}

/// Reply to `tunnel`: the channel the connection's bytes flow on, both ways.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelReply {
    pub channel: u32,
}

/// Something that happened, not tied to a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum Event {
    /// A process started by `exec` ended; sent after the Eof of its output channels.
    Exit {
        pid: i32,
        code: Option<i32>,
        signal: Option<i32>,
        timed_out: bool,
    },
    /// A change under a watch. For `rename`, `path` is the new path and `from` the old one when
    /// both are under the watch.
    Fs {
        watch: u32,
        kind: FsEventKind,
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<String>,
    },
    /// A frame was refused without a request id to answer (malformed request, Data on an unknown
    /// channel, …), or the connection is about to be closed.
    Error {
        code: ErrorCode,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        channel: Option<u32>,
    },
}

impl Event {
    /// Parses an event body.
    pub fn decode(body: &[u8]) -> Result<Event, MessageError> {
        serde_json::from_slice(body).map_err(|e| MessageError::Malformed(e.to_string()))
    }
}

#[cfg(test)]
#[path = "reply_tests.rs"]
mod tests;
