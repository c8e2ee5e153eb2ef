//! The wrap audit log: JSON lines, one per tool call and one per message the relay refused as
//! ambiguous or invalid, interleaved with the egress proxy's network decisions. Each record is written with a single `write` on an append-mode file, so
//! lines from the relay's threads never interleave.

use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One tool call as the audit log records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// Always `tool_call` (network decisions have no `kind`).
    pub kind: &'static str,
    /// Milliseconds since the Unix epoch when the call arrived.
    pub time_ms: u128,
    pub tool: String,
    /// SHA-256 of the call's arguments as the client sent them (JSON), hex.
    pub arguments_sha256: String,
    pub duration_ms: f64,
    /// `ok`, `error` (the tool reported an error), `protocol_error`, `refused` (by airlock),
    /// `invalid_answer` (airlock refused the server's answer) or `server_ended` (the server
    /// ended before answering).
    pub status: &'static str,
}

/// A line the relay refused because it was not JSON-RPC it could read unambiguously: it went
/// nowhere.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InvalidRecord {
    /// Always `invalid_message`.
    pub kind: &'static str,
    /// Milliseconds since the Unix epoch when the line arrived.
    pub time_ms: u128,
    /// `client` or `server`: who sent it.
    pub from: &'static str,
    /// What was wrong, as a sentence (it names the offending key).
    pub reason: String,
    /// SHA-256 of the line as it arrived, hex.
    pub line_sha256: String,
}

/// A question `airlock mcp` asked and its answer: before a command under `--approval
/// untrusted`, or about a grant the model asked for with `request_network_grant`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRecord {
    /// Always `approval`.
    pub kind: &'static str,
    /// Milliseconds since the Unix epoch when the answer came (or the asking failed).
    pub time_ms: u128,
    /// `run_command`, `run_code` or `request_network_grant`.
    pub tool: String,
    /// What was asked about: the command or code as the model sent it (cut at 2000
    /// characters), or the grant (`NAME:PORT`, `IP[:PORT]`).
    pub subject: String,
    /// The model's reason, for a grant.
    pub reason: Option<String>,
    /// `allowed`, `denied`, `timed-out` or `cannot-ask` (nobody could be asked: a no).
    pub answer: &'static str,
    /// Who answered: `mcp-client` (the person, through MCP elicitation) or `approver-program`.
    pub by: &'static str,
    /// Why, in words, when it was not a yes.
    pub detail: Option<String>,
}

/// One audit record of the relay's own.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Record {
    /// A tool call and how it ended.
    Call(CallRecord),
    /// A line that went nowhere.
    Invalid(InvalidRecord),
    /// A question asked and its answer (`airlock mcp`).
    Approval(ApprovalRecord),
}

/// Where audit lines go (nowhere without `--audit`).
pub struct AuditSink {
    file: Option<Mutex<std::fs::File>>,
}

/// Why the audit log cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("cannot open the audit log: {source}")]
pub struct AuditError {
    pub path: String,
    #[source]
    pub source: airlock_native::OutputFileError,
}

impl AuditSink {
    /// Appends to `path` (created if missing), or discards without one. `box_writable` are the
    /// host directories the wrapped server's box can write: a symlink there is not followed.
    pub fn open(path: Option<&Path>, box_writable: &[PathBuf]) -> Result<AuditSink, AuditError> {
        let file = match path {
            Some(p) => Some(Mutex::new(
                airlock_native::open_output(p, airlock_native::OutputMode::Append, box_writable)
                    .map_err(|e| AuditError {
                        path: p.display().to_string(),
                        source: e,
                    })?,
            )),
            None => None,
        };
        Ok(AuditSink { file })
    }

    /// Appends one line (a newline is added).
    pub fn line(&self, text: &[u8]) {
        let Some(file) = &self.file else { return };
        let mut buf = Vec::with_capacity(text.len() + 1);
        buf.extend_from_slice(text);
        buf.push(b'\n');
        if let Ok(mut f) = file.lock() {
            let _ = f.write_all(&buf);
        }
    }

    /// Appends a call record.
    pub fn call(&self, record: &CallRecord) {
        if let Ok(text) = serde_json::to_vec(record) {
            self.line(&text);
        }
    }

    /// Appends a record of either kind.
    pub fn record(&self, record: &Record) {
        if let Ok(text) = serde_json::to_vec(record) {
            self.line(&text);
        }
    }
}
