//! `airlock sandbox exec`: `POST /v1/sandboxes/{id}/exec`, its NDJSON events written to the
//! terminal as they arrive, and the command's exit status as airlock's.

use super::api::{segment, Api};
use super::pairs::pairs;
use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, ErrorKind, IsTerminal, Read, Write};

use crate::cli::ExecArgs;

/// Exit status when the end of the command is unknown (airlock's own failure).
const FAILED: i32 = 125;
/// Exit status when the command timed out.
const TIMED_OUT: i32 = 124;
/// Exit status of a process killed by SIGPIPE: what we return when our stdout is closed.
const BROKEN_PIPE: i32 = 128 + libc::SIGPIPE;

/// One line of the exec stream.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Event {
    Start,
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    /// The command ended; airlock's exit status for it.
    End(i32),
    /// The server could not finish running the command.
    Failed(String),
}

/// Runs the command; returns its exit status.
pub fn exec(api: &Api, args: &ExecArgs) -> Result<i32> {
    let mut body = json!({ "cmd": args.command, "env": pairs("--env", &args.env)? });
    if let Some(cwd) = &args.cwd {
        body["cwd"] = json!(cwd);
    }
    if let Some(t) = args.timeout {
        body["timeout"] = json!(t);
    }
    if let Some(input) = stdin_text()? {
        body["stdin"] = json!(input);
    }
    let req = api
        .request("POST", &format!("/v1/sandboxes/{}/exec", segment(&args.id)))
        .set("Content-Type", "application/json");
    let resp = api.answer(req.send_string(&body.to_string()))?;
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    for line in BufReader::new(resp.into_reader()).lines() {
        let line = line.map_err(|e| {
            anyhow::Error::new(e)
                .context("the output stream from the server broke off before the command ended")
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let written = match event(&line)? {
            Event::Start => Ok(()),
            Event::Stdout(data) => out.write_all(&data).and_then(|()| out.flush()),
            Event::Stderr(data) => err.write_all(&data).and_then(|()| err.flush()),
            Event::End(code) => return Ok(code),
            Event::Failed(message) => bail!("{message}"),
        };
        match written {
            // Our reader went away: dropping the stream makes the server kill the command.
            Err(e) if e.kind() == ErrorKind::BrokenPipe => return Ok(BROKEN_PIPE),
            other => other.context("cannot write the command's output")?,
        }
    }
    bail!("the server ended the output stream before the command ended; check the server's log, then retry")
}

/// Stdin as text when it is not a terminal (the server's exec takes stdin as UTF-8 text).
fn stdin_text() -> Result<Option<String>> {
    let mut stdin = std::io::stdin().lock();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    stdin.read_to_end(&mut bytes).context("cannot read stdin")?;
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow!("stdin is not UTF-8 text, and exec sends stdin as text only; copy binary input in with `airlock sandbox cp - ID:/tmp/input` and read it from there")
    })?;
    Ok(Some(text))
}

/// Decodes one NDJSON line of the stream.
pub(super) fn event(line: &str) -> Result<Event> {
    let v: Value = serde_json::from_str(line).map_err(|_| anyhow!("the server sent a line that is not JSON in the exec stream; check that --server points at `airlock serve`"))?;
    let data = || -> Result<Vec<u8>> {
        if let Some(text) = v["data"].as_str() {
            return Ok(text.as_bytes().to_vec());
        }
        let b64 = v["data_b64"].as_str().ok_or_else(|| {
            anyhow!("an output event from the server has neither data nor data_b64")
        })?;
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| anyhow!("an output event from the server has data_b64 that is not base64"))
    };
    Ok(match v["type"].as_str() {
        Some("start") => Event::Start,
        Some("stdout") => Event::Stdout(data()?),
        Some("stderr") => Event::Stderr(data()?),
        Some("end") => Event::End(exit_status(&v)),
        Some("error") => Event::Failed(format!(
            "{} ({})",
            v["message"]
                .as_str()
                .unwrap_or("the command failed on the server"),
            v["code"].as_str().unwrap_or("internal")
        )),
        // Event kinds added later are skipped, so an older client keeps working.
        _ => Event::Start,
    })
}

/// airlock's exit status for an `end` event: 124 on timeout, 128+N for signal N, else the
/// command's code (125 if the server gave none).
fn exit_status(end: &Value) -> i32 {
    if end["timed_out"].as_bool() == Some(true) {
        return TIMED_OUT;
    }
    if let Some(sig) = end["signal"].as_i64() {
        return 128 + i32::try_from(sig).unwrap_or(0);
    }
    end["exit_code"]
        .as_i64()
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(FAILED)
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
