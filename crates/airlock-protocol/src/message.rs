//! Requests (host → agent). A request is one JSON object: `{"id": <u64>, "op": "<name>", ...}`,
//! the operation's fields next to `id` and `op`. Unknown fields and unknown ops are errors, and
//! [`Request::decode`] also checks every bound (non-empty argv, depth ≤ [`MAX_LIST_DEPTH`], …).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;

/// Deepest `list_dir` recursion.
pub const MAX_LIST_DEPTH: u32 = 32;
/// Most entries one `list_dir` returns; a larger listing is an error (code `limit`).
pub const MAX_LIST_ENTRIES: usize = 100_000;
/// Most argv entries (and separately, env entries) an exec may carry.
pub const MAX_EXEC_ITEMS: usize = 4096;
/// Most extended attributes one `set_xattrs` may set.
pub const MAX_XATTRS: usize = 64;
/// Longest extended attribute name (the kernel's `XATTR_NAME_MAX`).
pub const MAX_XATTR_NAME: usize = 255;
/// Longest extended attribute value accepted (the kernel allows 64 KiB; small values only).
pub const MAX_XATTR_VALUE: usize = 4096;
/// The only extended attribute namespace the host may read or set: `user.` (the others are
/// the kernel's, security modules' or privileged).
pub const XATTR_NAMESPACE: &str = "user.";

/// Why a request body was refused. The request is dropped; the connection goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// Not JSON, or not the shape of a request.
    #[error("malformed request: {0}")]
    Malformed(String),
    /// Well-formed but out of bounds.
    #[error("invalid request {id}: {reason}")]
    Invalid { id: u64, reason: String },
}

impl MessageError {
    /// The request id, if the body got far enough to have one.
    pub fn id(&self) -> Option<u64> {
        match self {
            MessageError::Malformed(_) => None,
            MessageError::Invalid { id, .. } => Some(*id),
        }
    }
}

/// A terminal size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TtySize {
    pub rows: u16,
    pub cols: u16,
}

/// Start a process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecRequest {
    /// Program and arguments; `argv[0]` without a `/` is looked up in `env["PATH"]`.
    pub argv: Vec<String>,
    /// The whole environment of the process (nothing is inherited from the agent).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory (absolute); the agent's own when absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Run on a new pseudo-terminal of this size (stdout and stderr merged).
    #[serde(default)]
    pub tty: Option<TtySize>,
    /// Open a stdin channel; otherwise stdin is /dev/null.
    #[serde(default)]
    pub stdin: bool,
    /// Kill the process group after this many milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// A label shown by `list_processes`.
    #[serde(default)]
    pub tag: Option<String>,
    /// Who runs it: the box user, or the box's root (what that is depends on the box: its
    /// receipt's `root` line says). Absent means the box user.
    #[serde(default, skip_serializing_if = "ExecUser::is_box_user")]
    pub user: ExecUser,
}

/// The identity an [`ExecRequest`] runs as.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecUser {
    /// The box's user (uid 1000, `user`).
    #[default]
    User,
    /// The box's root: uid 0 where the box gives one (an agent that cannot refuses the exec
    /// with code `unsupported`).
    Root,
}

impl ExecUser {
    /// True for the default, the box user.
    pub fn is_box_user(&self) -> bool {
        *self == ExecUser::User
    }
}

/// Kinds of file-system change reported by a watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsEventKind {
    Create,
    Write,
    Remove,
    Rename,
    /// Permissions, owner, timestamps or extended attributes changed (inotify's `IN_ATTRIB`).
    Chmod,
    /// The kernel's event queue overflowed: events were lost.
    Overflow,
}

/// An operation, tagged by `"op"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Reply: [`crate::ExecReply`]; later Data/Eof on its channels and an `exit` event.
    Exec(ExecRequest),
    /// Send `signal` to the process group of `pid`. Reply: `{}`.
    Signal { pid: i32, signal: i32 },
    /// Resize the terminal of a tty process. Reply: `{}`.
    Resize { pid: i32, rows: u16, cols: u16 },
    /// Reply: [`crate::ProcessList`].
    ListProcesses,
    /// New output channels for a running process. With `replay`, the buffered recent output
    /// (up to 1 MiB per stream) is sent first. Reply: [`crate::ExecReply`] without stdin.
    Attach {
        pid: i32,
        #[serde(default)]
        replay: bool,
    },
    /// Reply: [`crate::ReadFileReply`], then the content as Data on its channel, then Eof.
    ReadFile { path: String },
    /// The client streams Data on `channel` (even) then Eof. Reply (at Eof): [`crate::WriteFileReply`].
    WriteFile {
        path: String,
        #[serde(default)]
        mode: Option<u32>,
        channel: u32,
    },
    /// Reply: [`crate::ListDirReply`]. `depth` 1 lists the directory's own entries.
    ListDir {
        path: String,
        #[serde(default = "one")]
        depth: u32,
    },
    /// Reply: [`crate::Entry`] (a symlink is described, not followed).
    Stat { path: String },
    /// Sets extended attributes of a path (a symlink itself, never its target); every name
    /// is in the `user.` namespace ([`XATTR_NAMESPACE`]). Reply: `{}`.
    SetXattrs {
        path: String,
        xattrs: BTreeMap<String, String>,
    },
    /// Reply: `{}`.
    MakeDir {
        path: String,
        #[serde(default)]
        parents: bool,
    },
    /// Reply: `{}`.
    Rename { from: String, to: String },
    /// Reply: `{}`.
    Remove {
        path: String,
        #[serde(default)]
        recursive: bool,
    },
    /// Reply: [`crate::WatchReply`]; then `fs` events.
    Watch {
        path: String,
        #[serde(default)]
        recursive: bool,
    },
    /// Reply: `{}`.
    Unwatch { watch: u32 },
    /// Reply: `{}`.
    Ping,
    /// Opens a TCP connection to `port` on the box's own loopback (`127.0.0.1`, else `::1`),
    /// from inside the box. Reply: [`crate::TunnelReply`]; then the connection's bytes flow
    /// both ways as Data on its channel: the agent's Data and Eof are what the box's end sent
    /// (Eof: it closed its side), the host's Data goes to it, and the host's Eof closes the
    /// connection.
    Tunnel { port: u16 },
}

fn one() -> u32 {
    1
}

/// A request: an id chosen by the host (echoed in the reply) and an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub id: u64,
    pub op: Op,
}

impl Request {
    /// Parses and validates a request body.
    pub fn decode(body: &[u8]) -> Result<Request, MessageError> {
        let request: Request =
            serde_json::from_slice(body).map_err(|e| MessageError::Malformed(e.to_string()))?;
        request
            .op
            .validate()
            .map_err(|reason| MessageError::Invalid {
                id: request.id,
                reason,
            })?;
        Ok(request)
    }

    /// The JSON body.
    pub fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut value = serde_json::to_value(&self.op).map_err(serde::ser::Error::custom)?;
        if let serde_json::Value::Object(map) = &mut value {
            map.insert("id".to_string(), self.id.into());
        }
        value.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Request, D::Error> {
        let mut map = serde_json::Map::deserialize(d)?;
        let id = map
            .remove("id")
            .ok_or_else(|| D::Error::missing_field("id"))?;
        let id = id
            .as_u64()
            .ok_or_else(|| D::Error::custom("`id` must be an unsigned integer"))?;
        let keys: Vec<String> = map.keys().cloned().collect();
        let op = Op::deserialize(serde_json::Value::Object(map)).map_err(D::Error::custom)?;
        // serde does not deny unknown fields on unit variants (`ping`, `list_processes`): every
        // field of an op serialises, so any input key missing from the re-serialised op is unknown.
        let known = serde_json::to_value(&op).map_err(D::Error::custom)?;
        if let Some(unknown) = keys.iter().find(|k| known.get(k.as_str()).is_none()) {
            return Err(D::Error::unknown_field(unknown, &[]));
        }
        Ok(Request { id, op })
    }
}

fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() || path.contains('\0') {
        return Err("paths must be non-empty and free of NUL bytes".into());
    }
    Ok(())
}

/// Checks a set of extended attributes: at most [`MAX_XATTRS`], names in the `user.`
/// namespace with something after it and at most [`MAX_XATTR_NAME`] bytes, values at most
/// [`MAX_XATTR_VALUE`] bytes, no NUL anywhere.
pub fn check_xattrs(xattrs: &BTreeMap<String, String>) -> Result<(), String> {
    if xattrs.len() > MAX_XATTRS {
        return Err(format!("at most {MAX_XATTRS} extended attributes at once"));
    }
    for (name, value) in xattrs {
        let rest = name.strip_prefix(XATTR_NAMESPACE).unwrap_or("");
        if rest.is_empty() || name.len() > MAX_XATTR_NAME || name.contains('\0') {
            return Err(format!(
                "extended attribute name {name:?} must be `{XATTR_NAMESPACE}` and a name, \
                 at most {MAX_XATTR_NAME} bytes, without NUL"
            ));
        }
        if value.len() > MAX_XATTR_VALUE || value.contains('\0') {
            return Err(format!(
                "extended attribute {name:?}: the value must be at most {MAX_XATTR_VALUE} \
                 bytes, without NUL"
            ));
        }
    }
    Ok(())
}

fn check_tty(rows: u16, cols: u16) -> Result<(), String> {
    if rows == 0 || cols == 0 {
        return Err("terminal rows and cols must be at least 1".into());
    }
    Ok(())
}

impl Op {
    /// Checks bounds that the JSON shape cannot express.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Op::Exec(e) => e.validate(),
            Op::Resize { rows, cols, .. } => check_tty(*rows, *cols),
            Op::Signal { pid, signal } if *pid <= 0 || *signal < 0 || *signal > 64 => {
                Err("signal needs a positive pid and a signal number in 0..=64".into())
            }
            Op::Attach { pid, .. } if *pid <= 0 => Err("attach needs a positive pid".into()),
            Op::Tunnel { port: 0 } => Err("tunnel needs a port from 1 to 65535".into()),
            Op::ReadFile { path } | Op::Stat { path } | Op::MakeDir { path, .. } => {
                check_path(path)
            }
            Op::Remove { path, .. } | Op::Watch { path, .. } => check_path(path),
            Op::WriteFile {
                path,
                channel,
                mode,
            } => {
                check_path(path)?;
                if !crate::is_client_channel(*channel) {
                    return Err(format!(
                        "write_file channel {channel} must be even and non-zero"
                    ));
                }
                match mode {
                    Some(m) if *m > 0o7777 => Err(format!("mode {m:o} has bits beyond 0o7777")),
                    _ => Ok(()),
                }
            }
            Op::ListDir { path, depth } => {
                check_path(path)?;
                if *depth == 0 || *depth > MAX_LIST_DEPTH {
                    return Err(format!("list_dir depth must be in 1..={MAX_LIST_DEPTH}"));
                }
                Ok(())
            }
            Op::Rename { from, to } => check_path(from).and_then(|()| check_path(to)),
            Op::SetXattrs { path, xattrs } => {
                check_path(path)?;
                check_xattrs(xattrs)
            }
            _ => Ok(()),
        }
    }
}

impl ExecRequest {
    fn validate(&self) -> Result<(), String> {
        if self.argv.is_empty() {
            return Err("exec argv must not be empty".into());
        }
        if self.argv.len() > MAX_EXEC_ITEMS || self.env.len() > MAX_EXEC_ITEMS {
            return Err(format!(
                "exec takes at most {MAX_EXEC_ITEMS} argv and env entries"
            ));
        }
        if self.argv.first().is_some_and(|a| a.is_empty()) {
            return Err("exec argv[0] must not be empty".into());
        }
        if self.argv.iter().any(|a| a.contains('\0')) {
            return Err("exec argv entries must not contain NUL bytes".into());
        }
        for (k, v) in &self.env {
            if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                return Err(format!(
                    "environment variable {k:?} is not a valid name=value pair"
                ));
            }
        }
        if let Some(cwd) = &self.cwd {
            check_path(cwd)?;
        }
        if let Some(t) = self.tty {
            check_tty(t.rows, t.cols)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
