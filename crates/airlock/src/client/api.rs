//! The connection to `airlock serve`: where it is, the API key, and what its answers mean.
//! A refusal (`{"error": {"code", "message"}}`) becomes an error reading `<message> (<code>)`.

use crate::cli::ServerArgs;
use anyhow::{anyhow, bail, Result};
use std::io::Read;
use std::time::Duration;

/// Where the server listens when neither --server nor AIRLOCK_SERVER says otherwise.
const DEFAULT_SERVER: &str = "http://127.0.0.1:7777";
/// How long connecting may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of an error body that is read (error bodies are small JSON documents).
const MAX_ERROR_BODY: u64 = 64 * 1024;

/// A server and the API key to use with it.
pub struct Api {
    base: String,
    key: String,
    agent: ureq::Agent,
}

fn from_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Api {
    /// The server named by the flags, else the environment, else the default address; fails
    /// when no API key is given either way.
    pub fn new(args: &ServerArgs) -> Result<Api> {
        let base = args
            .server
            .clone()
            .or_else(|| from_env("AIRLOCK_SERVER"))
            .unwrap_or_else(|| DEFAULT_SERVER.to_string());
        let base = base.trim().trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!("the server address {base:?} is not an http:// URL; give --server (or AIRLOCK_SERVER) as e.g. {DEFAULT_SERVER}");
        }
        let key = args.api_key.clone().or_else(|| from_env("AIRLOCK_API_KEY")).ok_or_else(|| {
            anyhow!("no API key: pass --api-key KEY or set AIRLOCK_API_KEY to the key `airlock serve` printed on its first start")
        })?;
        // No redirects: following one would send the API key to wherever it points.
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(CONNECT_TIMEOUT)
            .redirects(0)
            .build();
        Ok(Api {
            base,
            key: key.trim().to_string(),
            agent,
        })
    }

    /// A request to `path` (already encoded) with the API key.
    pub fn request(&self, method: &str, path: &str) -> ureq::Request {
        self.agent
            .request(method, &format!("{}{path}", self.base))
            .set("Authorization", &format!("Bearer {}", self.key))
    }

    /// The response to a request, or what went wrong as a message for the user.
    pub fn answer(&self, sent: Result<ureq::Response, ureq::Error>) -> Result<ureq::Response> {
        match sent {
            Ok(resp) => Ok(resp),
            Err(ureq::Error::Status(status, resp)) => Err(refusal(status, resp)),
            Err(ureq::Error::Transport(t)) => Err(match t.kind() {
                ureq::ErrorKind::ConnectionFailed | ureq::ErrorKind::Dns => anyhow!(
                    "the airlock server is not reachable at {}; start one with `airlock serve` (it prints the API key on its first start), or point --server or AIRLOCK_SERVER at a running one",
                    self.base
                ),
                _ => anyhow::Error::new(t).context(format!("the exchange with the airlock server at {} failed; check the server's log and retry", self.base)),
            }),
        }
    }

    /// Sends `body` as JSON (or nothing) and returns the JSON answer.
    pub fn json(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<serde_json::Value> {
        let req = self.request(method, path);
        let sent = match body {
            Some(b) => req
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => req.call(),
        };
        let resp = self.answer(sent)?;
        let text = resp
            .into_string()
            .map_err(|e| anyhow::Error::new(e).context("the server's answer broke off; retry"))?;
        serde_json::from_str(&text).map_err(|_| {
            anyhow!(
                "the server at {} did not answer with JSON; check that it is `airlock serve`",
                self.base
            )
        })
    }
}

/// A refusal as `<message> (<code>)`, or the HTTP status when the body is not airlock's.
fn refusal(status: u16, resp: ureq::Response) -> anyhow::Error {
    let mut text = String::new();
    let _ = resp
        .into_reader()
        .take(MAX_ERROR_BODY)
        .read_to_string(&mut text);
    error_message(status, &text)
}

/// The error an HTTP error answer stands for.
pub(super) fn error_message(status: u16, body: &str) -> anyhow::Error {
    let doc: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let err = doc.as_ref().map(|d| &d["error"]);
    match err.and_then(|e| Some((e["message"].as_str()?, e["code"].as_str()?))) {
        Some((message, code)) => anyhow!("{message} ({code})"),
        None => anyhow!("the server answered HTTP {status} without an airlock error body; check that --server points at `airlock serve`"),
    }
}

/// `s` as one URL path segment (sandbox ids are plain, but an id typed by hand may not be).
pub fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
#[path = "api_tests.rs"]
mod tests;
