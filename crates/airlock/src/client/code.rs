//! `airlock code`: `POST /v1/sandboxes/{id}/code` (in a sandbox created for the occasion when
//! none is named), its NDJSON events written to the terminal as they arrive.

use super::api::{segment, Api};
use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, ErrorKind, IsTerminal, Read, Write};

use crate::cli::CodeArgs;

/// Exit status when the code raised an error.
const ERROR: i32 = 1;
/// Exit status when the execution was interrupted (its timeout).
const INTERRUPTED: i32 = 130;
/// Exit status when the end of the execution is unknown (the client's or the server's failure).
const FAILED: i32 = 125;
/// Exit status of a process killed by SIGPIPE: what we return when our stdout is closed.
const BROKEN_PIPE: i32 = 128 + libc::SIGPIPE;

/// Runs the code; returns the exit status.
pub fn code(api: &Api, args: &CodeArgs) -> Result<i32> {
    if args.code.is_none() && std::io::stdin().is_terminal() {
        return repl(api, args);
    }
    let snippet = match &args.code {
        Some(c) => c.clone(),
        None => stdin_code()?,
    };
    let body = request_body(args, &snippet);
    if let Some(id) = &args.sandbox {
        return run(api, id, &body);
    }
    let id = create(api)?;
    let ran = run(api, &id, &body);
    let deleted = api.json("DELETE", &format!("/v1/sandboxes/{}", segment(&id)), None);
    let status = ran?;
    deleted.with_context(|| format!("the code ran, but its sandbox {id} could not be deleted; kill it with `airlock sandbox kill {id}`"))?;
    Ok(status)
}

fn request_body(args: &CodeArgs, snippet: &str) -> Value {
    let mut body = json!({ "code": snippet });
    if let Some(lang) = &args.lang {
        body["language"] = json!(lang);
    }
    if let Some(ctx) = &args.context {
        body["context"] = json!(ctx);
    }
    if let Some(t) = args.timeout {
        body["timeout"] = json!(t);
    }
    body
}

fn create(api: &Api) -> Result<String> {
    let created = api.json("POST", "/v1/sandboxes", Some(&json!({})))?;
    created["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("the server's answer to creating a sandbox has no id; check that --server points at `airlock serve`"))
}

/// The interactive mode (stdin is a terminal and no code was given): read a snippet, run it in
/// the same context, print its events, repeat until end of input (Ctrl-D). A line ending in `:`
/// (or `{` for JavaScript) opens a block that continues until an empty line.
fn repl(api: &Api, args: &CodeArgs) -> Result<i32> {
    let (id, owned) = match &args.sandbox {
        Some(id) => (id.clone(), false),
        None => (create(api)?, true),
    };
    let lang = args.lang.as_deref().unwrap_or("python");
    let prompt = if lang == "bash" { "$ " } else { ">>> " };
    eprintln!("airlock code: {lang} in sandbox {id}; Ctrl-D to leave");
    let stdin = std::io::stdin();
    let mut last = 0;
    loop {
        eprint!("{prompt}");
        let mut snippet = String::new();
        if stdin
            .lock()
            .read_line(&mut snippet)
            .context("cannot read from the terminal")?
            == 0
        {
            eprintln!();
            break;
        }
        let opens_block = |l: &str| {
            let t = l.trim_end();
            t.ends_with(':') || (lang == "js" && t.ends_with('{'))
        };
        if opens_block(&snippet) {
            loop {
                eprint!("... ");
                let mut line = String::new();
                if stdin
                    .lock()
                    .read_line(&mut line)
                    .context("cannot read from the terminal")?
                    == 0
                    || line.trim().is_empty()
                {
                    break;
                }
                snippet.push_str(&line);
            }
        }
        if snippet.trim().is_empty() {
            continue;
        }
        last = match run(api, &id, &request_body(args, &snippet)) {
            Ok(status) => status,
            Err(e) => {
                eprintln!("airlock: {e:#}");
                FAILED
            }
        };
    }
    if owned {
        api.json("DELETE", &format!("/v1/sandboxes/{}", segment(&id)), None)
            .with_context(|| format!("its sandbox {id} could not be deleted; kill it with `airlock sandbox kill {id}`"))?;
    }
    Ok(last)
}

/// The code from stdin (a terminal on stdin means the interactive mode, handled above).
fn stdin_code() -> Result<String> {
    let mut stdin = std::io::stdin().lock();
    if stdin.is_terminal() {
        bail!(
            "no code given: pass it as an argument (airlock code 'print(1)') or pipe it on stdin"
        );
    }
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .context("cannot read the code from stdin (it must be UTF-8 text)")?;
    Ok(text)
}

fn run(api: &Api, id: &str, body: &Value) -> Result<i32> {
    let req = api
        .request("POST", &format!("/v1/sandboxes/{}/code", segment(id)))
        .set("Content-Type", "application/json");
    let resp = api.answer(req.send_string(&body.to_string()))?;
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    for line in BufReader::new(resp.into_reader()).lines() {
        let line = line.map_err(|e| {
            anyhow::Error::new(e)
                .context("the event stream from the server broke off before the execution ended")
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).map_err(|_| anyhow!("the server sent a line that is not JSON in the code stream; check that --server points at `airlock serve`"))?;
        let (to_out, to_err) = render(&v);
        let written = out
            .write_all(to_out.as_bytes())
            .and_then(|()| out.flush())
            .and_then(|()| err.write_all(to_err.as_bytes()))
            .and_then(|()| err.flush());
        match written {
            // Our reader went away: dropping the stream makes the server interrupt the code.
            Err(e) if e.kind() == ErrorKind::BrokenPipe => return Ok(BROKEN_PIPE),
            other => other.context("cannot write the code's output")?,
        }
        if v["type"] == "end" {
            return Ok(match v["status"].as_str() {
                Some("ok") => 0,
                Some("error") => ERROR,
                Some("interrupted") => INTERRUPTED,
                _ => FAILED,
            });
        }
    }
    bail!("the server ended the event stream before the execution ended; check the server's log, then retry")
}

/// What one event prints: (stdout text, stderr text).
pub(super) fn render(v: &Value) -> (String, String) {
    let text = |k: &str| v[k].as_str().unwrap_or("").to_string();
    match v["type"].as_str() {
        Some("stdout") => (text("text"), String::new()),
        Some("stderr") => (String::new(), text("text")),
        Some(kind @ ("display" | "result")) => {
            let mut out = String::new();
            let mut err = String::new();
            let data = v["data"].as_object();
            let rich: Vec<(&String, &Value)> = data
                .map(|d| {
                    d.iter()
                        .filter(|(m, _)| m.as_str() != "text/plain")
                        .collect()
                })
                .unwrap_or_default();
            if let Some(plain) = v["data"]["text/plain"].as_str() {
                // A display that is only text shows as text; a rich one is summarized.
                if kind == "result" || rich.is_empty() {
                    out.push_str(plain);
                    out.push('\n');
                }
            }
            for (mime, content) in rich {
                err.push_str(&format!(
                    "[{kind}: {mime}, {} bytes]\n",
                    size_of(mime, content)
                ));
            }
            (out, err)
        }
        Some("error") => {
            let lines: Vec<&str> = v["traceback"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut err = String::new();
            if lines.is_empty() {
                err.push_str(&format!("{}: {}\n", text("name"), text("value")));
            }
            for l in lines {
                err.push_str(l);
                if !l.ends_with('\n') {
                    err.push('\n');
                }
            }
            (String::new(), err)
        }
        _ => (String::new(), String::new()),
    }
}

/// The size of one rich output: decoded bytes for base64 images, else the text's length.
fn size_of(mime: &str, content: &Value) -> usize {
    match content.as_str() {
        Some(s) if mime.starts_with("image/") && mime != "image/svg+xml" => {
            base64::engine::general_purpose::STANDARD
                .decode(s.trim())
                .map(|b| b.len())
                .unwrap_or(s.len())
        }
        Some(s) => s.len(),
        None => content.to_string().len(),
    }
}

#[cfg(test)]
#[path = "code_tests.rs"]
mod tests;
