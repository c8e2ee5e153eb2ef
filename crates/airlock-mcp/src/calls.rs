//! What each tool does, against the session's box. Blocking: called off the async threads.
//! Every path argument is checked against the box's roots first; every refusal and failure is a
//! readable tool result, never a protocol error.

use crate::boxes::{BoxSlot, LiveBox};
use crate::catalogue::ToolName;
use crate::denial::Denial;
use crate::roots::Roots;
use airlock_runtime::{CodeEvent, Language, SandboxError};
use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Default time a run_code or run_command call may take.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest time a call may ask for, in seconds.
const MAX_TIMEOUT_S: f64 = 600.0;
/// Bytes of each output stream (and of a file read) returned to the model.
const OUTPUT_CAP: usize = 1 << 20;
/// Deepest listing.
const MAX_DEPTH: u64 = 5;

/// What a call returned.
#[derive(Debug, Default)]
pub struct ToolOutput {
    pub content: Vec<ContentBlock>,
    pub is_error: bool,
}

impl ToolOutput {
    fn text(text: impl Into<String>, is_error: bool) -> ToolOutput {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            is_error,
        }
    }

    fn denied(d: &Denial) -> ToolOutput {
        ToolOutput::text(d.text(), true)
    }

    /// The MCP result.
    pub fn into_result(self) -> CallToolResult {
        if self.is_error {
            CallToolResult::error(self.content)
        } else {
            CallToolResult::success(self.content)
        }
    }
}

/// What every call needs besides the box.
pub struct CallEnv {
    pub roots: Roots,
    /// The box's receipt and reach, as shown by `sandbox_info`.
    pub info: String,
}

fn arg_str<'a>(args: &'a JsonObject, key: &str) -> Result<Option<&'a str>, ToolOutput> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolOutput::text(
            format!("bad arguments: {key} must be a string"),
            true,
        )),
    }
}

fn required<'a>(args: &'a JsonObject, key: &str) -> Result<&'a str, ToolOutput> {
    arg_str(args, key)?
        .ok_or_else(|| ToolOutput::text(format!("bad arguments: {key} is required"), true))
}

fn timeout(args: &JsonObject) -> Result<Duration, ToolOutput> {
    match args.get("timeout") {
        None | Some(Value::Null) => Ok(DEFAULT_TIMEOUT),
        Some(v) => match v.as_f64() {
            Some(t) if t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_S => {
                Ok(Duration::from_secs_f64(t))
            }
            _ => Err(ToolOutput::text(
                format!("bad arguments: timeout must be seconds between 0 and {MAX_TIMEOUT_S}"),
                true,
            )),
        },
    }
}

/// Runs `tool` with `args` in the session's box.
pub fn call(tool: ToolName, args: &JsonObject, env: &CallEnv, slot: &mut BoxSlot) -> ToolOutput {
    // Filesystem grants made in this session widen the roots, and sandbox_info says so.
    let widened;
    let env = if slot.path_grants().is_empty() {
        env
    } else {
        widened = CallEnv {
            roots: Roots::of(slot.policy()),
            info: format!(
                "{}
Granted in this session (a person said yes): {}",
                env.info,
                slot.path_grants().join(", ")
            ),
        };
        &widened
    };
    let out = match tool {
        ToolName::SandboxInfo => Ok(ToolOutput::text(env.info.clone(), false)),
        ToolName::RunCode => run_code(args, slot),
        ToolName::RunCommand => run_command(args, slot),
        ToolName::ReadFile => read_file(args, env, slot),
        ToolName::WriteFile => write_file(args, env, slot),
        ToolName::ListFiles => list_files(args, env, slot),
        // Asks the person first: answered by the session (server.rs), never here.
        ToolName::RequestNetworkGrant | ToolName::RequestFilesystemGrant => Ok(ToolOutput::text(
            format!(
                "{} is answered by the session, which asks the user",
                tool.as_str()
            ),
            true,
        )),
    };
    let mut out = out.unwrap_or_else(|e| e);
    if let Some(live) = slot.live_mut() {
        for line in live.new_denials() {
            out.content.push(ContentBlock::text(line));
        }
    }
    out
}

/// The box, or a result saying why there is none.
fn live(slot: &mut BoxSlot) -> Result<&mut LiveBox, ToolOutput> {
    slot.get()
        .map_err(|e| ToolOutput::text(format!("airlock could not start the sandbox: {e}"), true))
}

/// A failure of the box itself: the box is ended so that the next call starts a fresh one.
fn box_failed(slot: &mut BoxSlot, e: &SandboxError) -> ToolOutput {
    slot.end();
    ToolOutput::text(format!("the sandbox failed ({e}); it was ended, and the next call starts a fresh one (files and variables are gone)"), true)
}

fn language(name: Option<&str>) -> Result<(Language, &'static str), ToolOutput> {
    match name.unwrap_or("python") {
        "python" => Ok((Language::Python, "python")),
        "javascript" | "js" => Ok((Language::JavaScript, "javascript")),
        "bash" => Ok((Language::Bash, "bash")),
        other => Err(ToolOutput::text(
            format!("bad arguments: unknown language {other:?}; use python, javascript or bash"),
            true,
        )),
    }
}

fn run_code(args: &JsonObject, slot: &mut BoxSlot) -> Result<ToolOutput, ToolOutput> {
    let code = required(args, "code")?;
    let (lang, lang_name) = language(arg_str(args, "language")?)?;
    let ctx_name = arg_str(args, "context")?.unwrap_or(lang_name).to_string();
    let limit = timeout(args)?;
    let live = live(slot)?;
    if let Some(ctx) = live.contexts.get(&ctx_name) {
        if ctx.language != lang {
            return Err(ToolOutput::text(format!("bad arguments: context {ctx_name:?} runs {:?}, not {lang_name}; pick another context", ctx.language), true));
        }
    } else {
        let created = live.sandbox.channel().create_context(lang, None);
        match created {
            Ok(ctx) => {
                live.contexts.insert(ctx_name.clone(), ctx);
            }
            Err(e) => return Err(box_failed(slot, &e)),
        }
    }
    let mut collected = Collected::default();
    let ran = {
        let LiveBox {
            sandbox, contexts, ..
        } = &mut *live;
        let Some(ctx) = contexts.get_mut(&ctx_name) else {
            return Err(ToolOutput::text(
                "the interpreter context vanished; retry",
                true,
            ));
        };
        sandbox
            .channel()
            .run_code(ctx, code, &BTreeMap::new(), Some(limit), |e| {
                collected.add(e)
            })
    };
    match ran {
        Ok(end) => {
            let status = end.status.clone();
            let mut out = collected.finish();
            match status.as_str() {
                "ok" => {}
                "interrupted" => {
                    out.is_error = true;
                    out.content.push(ContentBlock::text(format!(
                        "interrupted after the {} s timeout; the context keeps its state",
                        limit.as_secs_f64()
                    )));
                }
                _ => out.is_error = true,
            }
            Ok(out)
        }
        Err(SandboxError::Setup { stage, message }) if stage == "interpreter" => {
            live.contexts.remove(&ctx_name);
            let mut out = collected.finish();
            out.is_error = true;
            out.content.push(ContentBlock::text(message));
            Ok(out)
        }
        Err(e) => Err(box_failed(slot, &e)),
    }
}

/// Output of one execution, gathered for the result.
#[derive(Default)]
struct Collected {
    text: String,
    blocks: Vec<ContentBlock>,
    failed: bool,
}

impl Collected {
    fn push_text(&mut self, s: &str) {
        if self.text.len() < OUTPUT_CAP {
            self.text.push_str(s);
        }
    }

    fn flush(&mut self) {
        if !self.text.is_empty() {
            self.blocks
                .push(ContentBlock::text(std::mem::take(&mut self.text)));
        }
    }

    fn add(&mut self, e: &CodeEvent) {
        match e {
            CodeEvent::Stdout { text, .. } | CodeEvent::Stderr { text, .. } => self.push_text(text),
            CodeEvent::Display(data) | CodeEvent::Result(data) => {
                if let Some(png) = data.get("image/png").and_then(Value::as_str) {
                    self.flush();
                    self.blocks
                        .push(ContentBlock::image(png.to_string(), "image/png"));
                } else if let Some(text) = data.get("text/plain").and_then(Value::as_str) {
                    self.push_text(text);
                    self.push_text("\n");
                }
            }
            CodeEvent::Error {
                name,
                value,
                traceback,
            } => {
                self.failed = true;
                if traceback.is_empty() {
                    self.push_text(&format!("{name}: {value}\n"));
                } else {
                    self.push_text(&traceback.join("\n"));
                    self.push_text("\n");
                }
            }
        }
    }

    fn finish(mut self) -> ToolOutput {
        self.flush();
        if self.blocks.is_empty() {
            self.blocks.push(ContentBlock::text("(no output)"));
        }
        ToolOutput {
            content: self.blocks,
            is_error: self.failed,
        }
    }
}

fn run_command(args: &JsonObject, slot: &mut BoxSlot) -> Result<ToolOutput, ToolOutput> {
    let command = required(args, "command")?;
    let limit = timeout(args)?;
    let live = live(slot)?;
    let ran = live.sandbox.channel().exec(
        &["/bin/sh", "-c", command],
        &[],
        None,
        Some(limit),
        OUTPUT_CAP,
    );
    let out = match ran {
        Ok(out) => out,
        Err(e) => return Err(box_failed(slot, &e)),
    };
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.stderr.is_empty() {
        text.push_str(&format!(
            "\n[stderr]\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let status = match (out.timed_out, out.exit_code, out.signal) {
        (true, _, _) => format!("[killed after the {} s timeout]", limit.as_secs_f64()),
        (_, Some(code), _) => format!("[exit code {code}]"),
        (_, _, Some(sig)) => format!("[killed by signal {sig}]"),
        _ => "[ended]".to_string(),
    };
    text.push_str(&format!("\n{status}"));
    Ok(ToolOutput::text(text, out.exit_code != Some(0)))
}

/// A writer that refuses past a cap.
struct Capped(Vec<u8>);

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > OUTPUT_CAP {
            return Err(std::io::Error::other(format!("the file is larger than the {OUTPUT_CAP} bytes a read returns; use run_command to read a part of it")));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn read_file(
    args: &JsonObject,
    env: &CallEnv,
    slot: &mut BoxSlot,
) -> Result<ToolOutput, ToolOutput> {
    let path = required(args, "path")?;
    let full = env
        .roots
        .check(path, false)
        .map_err(|why| ToolOutput::denied(&Denial::path(&format!("read {path}"), &why)))?;
    let full = full.to_string_lossy();
    let live = live(slot)?;
    let mut data = Capped(Vec::new());
    match live.sandbox.channel().read_file_to(&full, &mut data) {
        Ok(_) => {}
        Err(SandboxError::Agent(e)) if !matches!(e, airlock_runtime::AgentError::Closed) => {
            return Ok(ToolOutput::text(format!("cannot read {full}: {e}"), true))
        }
        Err(SandboxError::Io(e)) => {
            return Ok(ToolOutput::text(format!("cannot read {full}: {e}"), true))
        }
        Err(e) => return Err(box_failed(slot, &e)),
    }
    Ok(match String::from_utf8(data.0) {
        Ok(text) => ToolOutput::text(text, false),
        Err(e) => ToolOutput::text(
            format!(
                "(binary file, base64)\n{}",
                base64::engine::general_purpose::STANDARD.encode(e.as_bytes())
            ),
            false,
        ),
    })
}

fn write_file(
    args: &JsonObject,
    env: &CallEnv,
    slot: &mut BoxSlot,
) -> Result<ToolOutput, ToolOutput> {
    let path = required(args, "path")?;
    let content = required(args, "content")?;
    let full = env
        .roots
        .check(path, true)
        .map_err(|why| ToolOutput::denied(&Denial::path(&format!("write {path}"), &why)))?;
    let full = full.to_string_lossy();
    let live = live(slot)?;
    let session = live.sandbox.channel();
    let parent = Path::new(&*full)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Err(e) = session.make_dir(&parent, true) {
        return match e {
            SandboxError::Agent(e) if !matches!(e, airlock_runtime::AgentError::Closed) => Ok(
                ToolOutput::text(format!("cannot create {parent}: {e}"), true),
            ),
            e => Err(box_failed(slot, &e)),
        };
    }
    match session.write_file(&full, content.as_bytes()) {
        Ok(()) => Ok(ToolOutput::text(
            format!("wrote {} bytes to {full}", content.len()),
            false,
        )),
        Err(SandboxError::Agent(e)) if !matches!(e, airlock_runtime::AgentError::Closed) => {
            Ok(ToolOutput::text(format!("cannot write {full}: {e}"), true))
        }
        Err(e) => Err(box_failed(slot, &e)),
    }
}

fn list_files(
    args: &JsonObject,
    env: &CallEnv,
    slot: &mut BoxSlot,
) -> Result<ToolOutput, ToolOutput> {
    let cwd = env.roots.cwd().to_string_lossy().into_owned();
    let path = arg_str(args, "path")?.unwrap_or(&cwd).to_string();
    let depth = match args.get("depth") {
        None | Some(Value::Null) => 1,
        Some(v) => match v.as_u64() {
            Some(d) if (1..=MAX_DEPTH).contains(&d) => d as u32,
            _ => {
                return Err(ToolOutput::text(
                    format!("bad arguments: depth must be an integer from 1 to {MAX_DEPTH}"),
                    true,
                ))
            }
        },
    };
    let full = env
        .roots
        .check(&path, false)
        .map_err(|why| ToolOutput::denied(&Denial::path(&format!("list {path}"), &why)))?;
    let full = full.to_string_lossy();
    let live = live(slot)?;
    match live.sandbox.channel().list_dir(&full, depth) {
        Ok(entries) => {
            let lines: Vec<String> = entries
                .iter()
                .map(|e| {
                    format!(
                        "{:<9} {:>10}  {}",
                        format!("{:?}", e.kind).to_lowercase(),
                        e.size,
                        e.path
                    )
                })
                .collect();
            Ok(ToolOutput::text(
                if lines.is_empty() {
                    format!("{full} is empty")
                } else {
                    lines.join("\n")
                },
                false,
            ))
        }
        Err(SandboxError::Agent(e)) if !matches!(e, airlock_runtime::AgentError::Closed) => {
            Ok(ToolOutput::text(format!("cannot list {full}: {e}"), true))
        }
        Err(e) => Err(box_failed(slot, &e)),
    }
}

#[cfg(test)]
#[path = "calls_tests.rs"]
mod tests;
