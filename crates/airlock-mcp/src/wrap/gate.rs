//! The relay's decisions, line by line (pure: no I/O). Client requests are remembered until the
//! server answers them; `tools/list` answers are filtered; `tools/call` to a filtered tool is
//! answered by airlock itself (a tool result saying what was refused and why) and never reaches
//! the server; JSON-RPC batches are refused whole (fail closed: a batch could hide a call).
//! Every line, either way, is read strictly (see `strict`) and what goes on is the object the
//! gate checked, re-serialised: a line another parser could read differently is refused.

use super::audit::{ApprovalRecord, CallRecord, InvalidRecord, Record};
use super::strict::{canonical_line, check_keys, parse_strict, Malformed};
use crate::catalogue::Unlisted;
use crate::denial::Denial;
use crate::pattern::{ToolFilter, ToolVerdict};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The ids of airlock's own questions to the client (`elicitation/create` under
/// `--approval untrusted`). The wrapped server may not use them for requests of its own.
const ASK_PREFIX: &str = "airlock-wrap-ask-";
/// Longest part of a call's arguments shown in the question.
const MAX_SHOWN: usize = 2000;

/// JSON-RPC "internal error", used when the server ended before answering.
const SERVER_ENDED: i64 = -32603;
/// JSON-RPC "internal error", used when airlock refused the server's answer.
const BAD_ANSWER: i64 = -32603;
/// JSON-RPC "invalid request".
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "parse error".
const PARSE_ERROR: i64 = -32700;

/// Keys of a JSON-RPC message (request, notification or response).
const ENVELOPE_KEYS: &[&str] = &["jsonrpc", "id", "method", "params", "result", "error"];
/// Keys of a request's `params` that the gate reads, or that sit beside them.
const PARAMS_KEYS: &[&str] = &["name", "arguments", "_meta"];
/// Keys of a `tools/list` or `tools/call` result that the gate reads, or that sit beside them.
const RESULT_KEYS: &[&str] = &["tools", "nextCursor", "content", "isError", "_meta"];
/// Keys of one tool in a `tools/list` result that the gate reads.
const TOOL_KEYS: &[&str] = &["name"];

/// What to do with a line from the client.
#[derive(Debug, PartialEq)]
pub enum FromClient {
    /// Send this line to the server: the client's message as the gate read it, re-serialised.
    Forward(Vec<u8>),
    /// Answer the client with this line; the server never sees the request.
    Answer(Vec<u8>, Option<Record>),
    /// Send this line to the server (a call the person allowed), and audit the answer.
    Approved(Vec<u8>, Record),
    /// Drop it (a notification the server cannot take any more).
    Drop,
}

struct Pending {
    method: String,
    tool: Option<(String, String)>,
    since: Instant,
    time_ms: u128,
}

/// A tool call held while the person is asked about it (`--approval untrusted`).
struct Question {
    /// The call as the client sent it (checked), to forward on a yes.
    call: Value,
    client_id: Value,
    tool: String,
    /// What the question showed: the tool and its arguments (cut).
    subject: String,
    arguments_sha256: String,
    deadline: Instant,
}

/// The relay's state: the filter and the requests in flight.
pub struct Gate {
    filter: ToolFilter,
    pending: HashMap<String, Pending>,
    /// Why the server is gone, once it is.
    ended: Option<String>,
    /// `--approval untrusted`: every tool call is asked about first, for up to this long.
    untrusted: Option<Duration>,
    /// The client declared form elicitation in its `initialize`.
    client_elicits: bool,
    /// Calls held for an answer, by the id of airlock's question.
    questions: HashMap<String, Question>,
    asked: u64,
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
    canonical_line(v)
}

fn error_line(id: &Value, code: i64, message: &str) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

/// The `id`s a refused line may carry, read leniently (last key wins), so that the requests
/// they name get an answer: a lone message's `id`, or those of a batch's members.
fn lenient_ids(raw: &[u8]) -> Vec<Value> {
    let id = |m: &Value| {
        m.get("id")
            .filter(|id| id.is_string() || id.is_number())
            .cloned()
    };
    match serde_json::from_slice::<Value>(raw) {
        Ok(Value::Array(items)) => items.iter().filter_map(id).collect(),
        Ok(m) => id(&m).into_iter().collect(),
        Err(_) => Vec::new(),
    }
}

fn invalid_record(from: &'static str, raw: &[u8], why: &Malformed) -> Record {
    Record::Invalid(InvalidRecord {
        kind: "invalid_message",
        time_ms: now_ms(),
        from,
        reason: why.to_string(),
        line_sha256: Sha256::digest(raw)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    })
}

/// The object at `v` (when it is one) passes [`check_keys`].
fn check_object(v: Option<&Value>, at: &str, known: &[&'static str]) -> Result<(), Malformed> {
    match v {
        Some(Value::Object(obj)) => check_keys(obj, at, known),
        _ => Ok(()),
    }
}

/// A JSON-RPC message as the gate reads it: one object whose envelope (and `params`) no parser
/// could read differently, with a string `method` and a string, number or null `id` if present.
fn envelope(msg: &Value) -> Result<&Map<String, Value>, Malformed> {
    let Value::Object(obj) = msg else {
        return Err(Malformed::NotAnObject);
    };
    check_keys(obj, "the message", ENVELOPE_KEYS)?;
    check_object(obj.get("params"), "params", PARAMS_KEYS)?;
    if obj.get("method").is_some_and(|m| !m.is_string()) {
        return Err(Malformed::BadField("method", "a string"));
    }
    if obj
        .get("id")
        .is_some_and(|id| !(id.is_string() || id.is_number() || id.is_null()))
    {
        return Err(Malformed::BadField("id", "a string or a number"));
    }
    Ok(obj)
}

/// The parts of an answer to `method` that the gate reads pass [`check_keys`].
fn answer_shape(method: &str, obj: &Map<String, Value>) -> Result<(), Malformed> {
    if method != "tools/list" && method != "tools/call" {
        return Ok(());
    }
    let result = obj.get("result");
    check_object(result, "result", RESULT_KEYS)?;
    if method == "tools/list" {
        let tools = result
            .and_then(|r| r.get("tools"))
            .and_then(Value::as_array);
        for (i, tool) in tools.into_iter().flatten().enumerate() {
            check_object(Some(tool), &format!("result.tools[{i}]"), TOOL_KEYS)?;
        }
    }
    Ok(())
}

/// A refused line from the client: answered with an error naming what was wrong (for the id
/// it carries, if any), audited, and not forwarded.
fn refuse_client(raw: &[u8], why: &Malformed) -> FromClient {
    let code = if *why == Malformed::NotJson {
        PARSE_ERROR
    } else {
        INVALID_REQUEST
    };
    let message = format!("airlock wrap refused the message: {why}");
    let answers: Vec<Vec<u8>> = match lenient_ids(raw).as_slice() {
        [] => vec![error_line(&Value::Null, code, &message)],
        ids => ids
            .iter()
            .map(|id| error_line(id, code, &message))
            .collect(),
    };
    FromClient::Answer(answers.concat(), Some(invalid_record("client", raw, why)))
}

impl Gate {
    /// A gate that lets through the tools `filter` allows.
    pub fn new(filter: ToolFilter) -> Gate {
        Gate {
            filter,
            pending: HashMap::new(),
            ended: None,
            untrusted: None,
            client_elicits: false,
            questions: HashMap::new(),
            asked: 0,
        }
    }

    /// The same gate asking the person at the client before every tool call goes to the
    /// server (`--approval untrusted`), through MCP elicitation; no answer within `deadline`
    /// is a no, and so is a client that did not declare elicitation.
    pub fn asking_before_calls(mut self, deadline: Duration) -> Gate {
        self.untrusted = Some(deadline);
        self
    }

    /// The held calls whose question went unanswered past its deadline, refused: the
    /// answers for the client and their audit records.
    pub fn expire_questions(&mut self, now: Instant) -> Vec<(Vec<u8>, Record)> {
        let late: Vec<String> = self
            .questions
            .iter()
            .filter(|(_, q)| q.deadline <= now)
            .map(|(k, _)| k.clone())
            .collect();
        late.into_iter()
            .filter_map(|k| self.questions.remove(&k))
            .map(|q| {
                let secs = self.untrusted.map_or(0, |d| d.as_secs());
                let why = format!("nobody answered within {secs} s");
                refuse_call(&q, "timed-out", &why)
            })
            .collect()
    }

    /// A tool call under `untrusted`: the question to send the client (the call is held), or
    /// the refusal when the client cannot be asked.
    fn ask_about(&mut self, msg: &Value, id: &Value, tool: String, args: String) -> FromClient {
        let shown: String = msg
            .pointer("/params/arguments")
            .map(Value::to_string)
            .unwrap_or_else(|| "{}".into())
            .chars()
            .take(MAX_SHOWN)
            .collect();
        let subject = format!("{tool} {shown}");
        let text = format!(
            "The model wants to call the wrapped MCP server's tool {tool} (in the airlock sandbox) with these arguments:\n\n{shown}\n\nRun it?"
        );
        let question = Question {
            call: msg.clone(),
            client_id: id.clone(),
            tool,
            subject,
            arguments_sha256: args,
            deadline: Instant::now() + self.untrusted.unwrap_or_default(),
        };
        if !self.client_elicits {
            let (line, record) = refuse_call(
                &question,
                "cannot-ask",
                "the MCP client did not declare elicitation, and --approval untrusted asks the user before each tool call (run airlock wrap with --approval on-request and --approver CMD to call tools unasked)",
            );
            return FromClient::Answer(line, Some(record));
        }
        self.asked += 1;
        let ask_id = format!("{ASK_PREFIX}{}", self.asked);
        self.questions.insert(ask_id.clone(), question);
        FromClient::Answer(
            line(
                &json!({"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create",
                "params": {"mode": "form", "message": text,
                           "requestedSchema": {"type": "object", "properties": {}}}}),
            ),
            None,
        )
    }

    /// The client's answer to airlock's question `key`: the held call goes to the server on
    /// an accept, and is refused otherwise.
    fn answered(&mut self, key: &str, msg: &Value) -> FromClient {
        let Some(q) = self.questions.remove(key) else {
            return FromClient::Drop;
        };
        if let Some(why) = &self.ended {
            let out = error_line(&q.client_id, SERVER_ENDED, why);
            return FromClient::Answer(out, Some(approval_record(&q, "denied", Some(why.clone()))));
        }
        let action = msg.pointer("/result/action").and_then(Value::as_str);
        let (answer, why) = match action {
            Some("accept") => {
                let record = approval_record(&q, "allowed", None);
                let Some(id) = q.call.get("id") else {
                    return FromClient::Drop;
                };
                self.pending.insert(
                    id.to_string(),
                    Pending {
                        method: "tools/call".into(),
                        tool: Some((q.tool.clone(), q.arguments_sha256.clone())),
                        since: Instant::now(),
                        time_ms: now_ms(),
                    },
                );
                return FromClient::Approved(line(&q.call), record);
            }
            Some("decline") => ("denied", "the user declined".to_string()),
            Some(_) => ("denied", "the user dismissed the question".to_string()),
            None if msg.get("error").is_some() => (
                "cannot-ask",
                "asking through MCP elicitation failed".to_string(),
            ),
            None => ("denied", "the client's answer had no action".to_string()),
        };
        let (line, record) = refuse_call(&q, answer, &why);
        FromClient::Answer(line, Some(record))
    }

    /// Decides about one line (without its newline) from the client.
    pub fn from_client(&mut self, raw: &[u8]) -> FromClient {
        let msg = match parse_strict(raw) {
            Ok(v) => v,
            Err(why) => return refuse_client(raw, &why),
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
        let obj = match envelope(&msg) {
            Ok(obj) => obj,
            Err(why) => return refuse_client(raw, &why),
        };
        let method = obj.get("method").and_then(Value::as_str);
        let id = obj.get("id").filter(|id| !id.is_null());
        if method == Some("tools/call") && id.is_none() {
            return refuse_client(raw, &Malformed::CallWithoutId);
        }
        if method == Some("initialize") {
            self.client_elicits = declares_form_elicitation(&msg);
        }
        if method.is_none() {
            // An answer to one of airlock's questions (the server may not use those ids): a
            // late or repeated one is nobody's.
            if let Some(key) = id
                .and_then(Value::as_str)
                .filter(|k| k.starts_with(ASK_PREFIX))
            {
                let key = key.to_string();
                return self.answered(&key, &msg);
            }
        }
        let (Some(method), Some(id)) = (method, id) else {
            // A notification or a response to the server's own request.
            return if self.ended.is_some() {
                FromClient::Drop
            } else {
                FromClient::Forward(line(&msg))
            };
        };
        let mut tool = None;
        if method == "tools/call" {
            let params = obj.get("params");
            let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
                return refuse_client(raw, &Malformed::CallWithoutName);
            };
            let name = name.to_string();
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
                    return FromClient::Answer(answer, Some(Record::Call(record)));
                }
            }
        }
        if let Some(why) = &self.ended {
            let record = tool.map(|(tool, arguments_sha256)| {
                Record::Call(CallRecord {
                    kind: "tool_call",
                    time_ms: now_ms(),
                    tool,
                    arguments_sha256,
                    duration_ms: 0.0,
                    status: "server_ended",
                })
            });
            return FromClient::Answer(error_line(id, SERVER_ENDED, why), record);
        }
        if let (Some((tool, args)), Some(_)) = (tool.clone(), self.untrusted) {
            return self.ask_about(&msg, id, tool, args);
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
        FromClient::Forward(line(&msg))
    }

    /// Decides about one line (without its newline) from the server: returns what to send the
    /// client (zero or more lines) and the audit records. Every message goes on re-serialised; a
    /// `tools/list` answer loses its filtered tools. A line the gate cannot read unambiguously
    /// goes nowhere: the requests it names are answered with an error instead.
    pub fn from_server(&mut self, raw: &[u8]) -> (Vec<u8>, Vec<Record>) {
        let msg = match parse_strict(raw) {
            Ok(v) => v,
            Err(why) => return self.refuse_server(raw, &why),
        };
        if msg.is_array() {
            return self.refuse_server(raw, &Malformed::Batch);
        }
        let obj = match envelope(&msg) {
            Ok(obj) => obj,
            Err(why) => return self.refuse_server(raw, &why),
        };
        if obj.contains_key("method") {
            // The server's own request or notification. One that takes an id of airlock's
            // questions could have its answer taken for the person's yes to a held call.
            if obj
                .get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| id.starts_with(ASK_PREFIX))
            {
                return self.refuse_server(
                    raw,
                    &Malformed::BadField(
                        "id",
                        "an id that is not airlock's own (airlock-wrap-ask-…)",
                    ),
                );
            }
            return (line(&msg), Vec::new());
        }
        let Some(key) = obj.get("id").map(Value::to_string) else {
            return (line(&msg), Vec::new());
        };
        let Some(method) = self.pending.get(&key).map(|p| p.method.clone()) else {
            return (line(&msg), Vec::new());
        };
        if let Err(why) = answer_shape(&method, obj) {
            return self.refuse_server(raw, &why);
        }
        let Some(pending) = self.pending.remove(&key) else {
            return (line(&msg), Vec::new());
        };
        let mut msg = msg;
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
                }
                (line(&msg), Vec::new())
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
                let record = CallRecord {
                    kind: "tool_call",
                    time_ms: pending.time_ms,
                    tool,
                    arguments_sha256,
                    duration_ms,
                    status,
                };
                (line(&msg), vec![Record::Call(record)])
            }
            _ => (line(&msg), Vec::new()),
        }
    }

    /// A refused line from the server: audited; the requests in flight it names are answered
    /// with an error (and their calls audited as `invalid_answer`).
    fn refuse_server(&mut self, raw: &[u8], why: &Malformed) -> (Vec<u8>, Vec<Record>) {
        let mut out = Vec::new();
        let mut records = vec![invalid_record("server", raw, why)];
        let message = format!("airlock wrap refused the wrapped server's answer: {why}");
        for id in lenient_ids(raw) {
            let Some(p) = self.pending.remove(&id.to_string()) else {
                continue;
            };
            out.extend(error_line(&id, BAD_ANSWER, &message));
            if let Some((tool, arguments_sha256)) = p.tool {
                records.push(Record::Call(CallRecord {
                    kind: "tool_call",
                    time_ms: p.time_ms,
                    tool,
                    arguments_sha256,
                    duration_ms: p.since.elapsed().as_secs_f64() * 1000.0,
                    status: "invalid_answer",
                }));
            }
        }
        (out, records)
    }

    /// The server ended (`why` says how): every request in flight is answered with an error,
    /// and so is every later request.
    pub fn server_ended(&mut self, why: String) -> Vec<(Vec<u8>, Option<CallRecord>)> {
        let mut out = Vec::new();
        // Calls still waiting for the person: they can no longer run.
        for (_, q) in self.questions.drain() {
            out.push((error_line(&q.client_id, SERVER_ENDED, &why), None));
        }
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

/// Whether an `initialize` request declares form elicitation: `capabilities.elicitation`
/// present, with `form` (or empty, as before modes existed).
fn declares_form_elicitation(msg: &Value) -> bool {
    match msg.pointer("/params/capabilities/elicitation") {
        Some(Value::Object(modes)) => modes.is_empty() || modes.contains_key("form"),
        _ => false,
    }
}

fn approval_record(q: &Question, answer: &'static str, detail: Option<String>) -> Record {
    Record::Approval(ApprovalRecord {
        kind: "approval",
        time_ms: now_ms(),
        tool: q.tool.clone(),
        subject: q.subject.clone(),
        reason: None,
        answer,
        by: "mcp-client",
        detail,
    })
}

/// A held call refused (`answer`, `why`): its tool result for the client and the audit record.
fn refuse_call(q: &Question, answer: &'static str, why: &str) -> (Vec<u8>, Record) {
    let text = format!("airlock did not run it: {why}. The wrapped server was not called.");
    let out = line(&json!({"jsonrpc": "2.0", "id": q.client_id,
        "result": {"content": [{"type": "text", "text": text}], "isError": true}}));
    (out, approval_record(q, answer, Some(why.to_string())))
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
