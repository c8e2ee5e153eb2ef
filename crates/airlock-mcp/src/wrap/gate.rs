//! The relay's decisions, line by line (pure: no I/O). Client requests are remembered until the
//! server answers them; `tools/list` answers are filtered; `tools/call` to a filtered tool is
//! answered by airlock itself (a tool result saying what was refused and why) and never reaches
//! the server; JSON-RPC batches are refused whole (fail closed: a batch could hide a call).

use super::audit::CallRecord;
use crate::catalogue::Unlisted;
use crate::denial::Denial;
use crate::pattern::{ToolFilter, ToolVerdict};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// JSON-RPC "internal error", used when the server ended before answering.
const SERVER_ENDED: i64 = -32603;
/// JSON-RPC "invalid request".
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "parse error".
const PARSE_ERROR: i64 = -32700;

/// What to do with a line from the client.
#[derive(Debug, PartialEq)]
pub enum FromClient {
    /// Send the line to the server unchanged.
    Forward,
    /// Answer the client with this line; the server never sees the request.
    Answer(Vec<u8>, Option<CallRecord>),
    /// Drop it (a notification the server cannot take any more).
    Drop,
}

struct Pending {
    method: String,
    tool: Option<(String, String)>,
    since: Instant,
    time_ms: u128,
}

/// The relay's state: the filter and the requests in flight.
pub struct Gate {
    filter: ToolFilter,
    pending: HashMap<String, Pending>,
    /// Why the server is gone, once it is.
    ended: Option<String>,
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn digest(v: Option<&Value>) -> String {
    let bytes = v.map(|v| v.to_string()).unwrap_or_default();
    Sha256::digest(bytes.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn line(v: &Value) -> Vec<u8> {
    let mut out = v.to_string().into_bytes();
    out.push(b'\n');
    out
}

fn error_line(id: &Value, code: i64, message: &str) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

impl Gate {
    /// A gate that lets through the tools `filter` allows.
    pub fn new(filter: ToolFilter) -> Gate {
        Gate {
            filter,
            pending: HashMap::new(),
            ended: None,
        }
    }

    /// Decides about one line (without its newline) from the client.
    pub fn from_client(&mut self, raw: &[u8]) -> FromClient {
        let msg: Value = match serde_json::from_slice(raw) {
            Ok(v) => v,
            Err(_) => {
                return FromClient::Answer(
                    error_line(
                        &Value::Null,
                        PARSE_ERROR,
                        "airlock wrap: the line is not JSON",
                    ),
                    None,
                )
            }
        };
        if let Value::Array(items) = &msg {
            let answers: Vec<Value> = items
                .iter()
                .filter_map(|m| m.get("id").filter(|_| m.get("method").is_some()))
                .map(|id| json!({"jsonrpc": "2.0", "id": id, "error": {"code": INVALID_REQUEST, "message": "airlock wrap refuses JSON-RPC batches; send one message per line"}}))
                .collect();
            return if answers.is_empty() {
                FromClient::Drop
            } else {
                FromClient::Answer(line(&Value::Array(answers)), None)
            };
        }
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").filter(|id| !id.is_null());
        let (Some(method), Some(id)) = (method, id) else {
            // A notification or a response to the server's own request.
            return if self.ended.is_some() {
                FromClient::Drop
            } else {
                FromClient::Forward
            };
        };
        let mut tool = None;
        if method == "tools/call" {
            let params = msg.get("params");
            let name = params
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let args = digest(params.and_then(|p| p.get("arguments")));
            match self.filter.verdict(&name) {
                ToolVerdict::Allowed => tool = Some((name, args)),
                verdict => {
                    let text = Denial::tool(&name, &Unlisted::Filter(verdict)).text();
                    let answer = line(
                        &json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}], "isError": true}}),
                    );
                    let record = CallRecord {
                        kind: "tool_call",
                        time_ms: now_ms(),
                        tool: name,
                        arguments_sha256: args,
                        duration_ms: 0.0,
                        status: "refused",
                    };
                    return FromClient::Answer(answer, Some(record));
                }
            }
        }
        if let Some(why) = &self.ended {
            let record = tool.map(|(tool, arguments_sha256)| CallRecord {
                kind: "tool_call",
                time_ms: now_ms(),
                tool,
                arguments_sha256,
                duration_ms: 0.0,
                status: "server_ended",
            });
            return FromClient::Answer(error_line(id, SERVER_ENDED, why), record);
        }
        self.pending.insert(
            id.to_string(),
            Pending {
                method: method.to_string(),
                tool,
                since: Instant::now(),
                time_ms: now_ms(),
            },
        );
        FromClient::Forward
    }

    /// Rewrites one line from the server if needed (a `tools/list` answer loses filtered tools),
    /// and returns the audit record of a call it answers.
    pub fn from_server(&mut self, raw: Vec<u8>) -> (Vec<u8>, Option<CallRecord>) {
        let Ok(mut msg) = serde_json::from_slice::<Value>(&raw) else {
            return (raw, None);
        };
        if msg.get("method").is_some() {
            return (raw, None);
        }
        let Some(pending) = msg
            .get("id")
            .and_then(|id| self.pending.remove(&id.to_string()))
        else {
            return (raw, None);
        };
        match (pending.method.as_str(), pending.tool) {
            ("tools/list", _) => {
                if let Some(tools) = msg
                    .pointer_mut("/result/tools")
                    .and_then(Value::as_array_mut)
                {
                    let filter = &self.filter;
                    tools.retain(|t| {
                        t.get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| filter.verdict(n) == ToolVerdict::Allowed)
                    });
                    let mut out = msg.to_string().into_bytes();
                    out.push(b'\n');
                    return (out, None);
                }
                (raw, None)
            }
            ("tools/call", Some((tool, arguments_sha256))) => {
                let status = if msg.get("error").is_some() {
                    "protocol_error"
                } else if msg.pointer("/result/isError").and_then(Value::as_bool) == Some(true) {
                    "error"
                } else {
                    "ok"
                };
                let duration_ms = pending.since.elapsed().as_secs_f64() * 1000.0;
                (
                    raw,
                    Some(CallRecord {
                        kind: "tool_call",
                        time_ms: pending.time_ms,
                        tool,
                        arguments_sha256,
                        duration_ms,
                        status,
                    }),
                )
            }
            _ => (raw, None),
        }
    }

    /// The server ended (`why` says how): every request in flight is answered with an error,
    /// and so is every later request.
    pub fn server_ended(&mut self, why: String) -> Vec<(Vec<u8>, Option<CallRecord>)> {
        let mut out = Vec::new();
        for (id, p) in self.pending.drain() {
            let id: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
            let record = p.tool.map(|(tool, arguments_sha256)| CallRecord {
                kind: "tool_call",
                time_ms: p.time_ms,
                tool,
                arguments_sha256,
                duration_ms: p.since.elapsed().as_secs_f64() * 1000.0,
                status: "server_ended",
            });
            out.push((error_line(&id, SERVER_ENDED, &why), record));
        }
        self.ended = Some(why);
        out
    }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
