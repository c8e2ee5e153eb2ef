//! The control channel of a running box: JSON lines read from a descriptor the caller passes
//! (`airlock run --control-fd N`), so another program (the server, a test, an orchestrator) can
//! change a running box's network policy without restarting it.
//!
//! One message per line:
//! `{"network": {"allow_domain": ["a.example"], "deny_domain": [], "allow_ip": [], "map_host": []}}`
//! replaces the egress allowlist of a proxied box; later connections are decided by it.

use airlock_proxy::rules::EgressRules;
use serde::Deserialize;

/// Longest accepted control line; longer input is discarded up to the next newline.
const MAX_LINE: usize = 1 << 20;

/// A control message.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlMessage {
    /// Replace the egress allowlist.
    SetNetwork(EgressRules),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    network: Option<NetworkWire>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NetworkWire {
    #[serde(default)]
    allow_domain: Vec<String>,
    #[serde(default)]
    deny_domain: Vec<String>,
    #[serde(default)]
    allow_ip: Vec<String>,
    #[serde(default)]
    deny_ip: Vec<String>,
    #[serde(default)]
    map_host: Vec<String>,
}

/// Accumulates bytes from the control descriptor and yields complete messages.
#[derive(Default)]
pub struct ControlReader {
    buf: Vec<u8>,
    discarding: bool,
}

impl ControlReader {
    /// Adds bytes; returns the messages (or errors, one line each) completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Result<ControlMessage, String>> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                if self.discarding {
                    self.discarding = false;
                    out.push(Err(format!(
                        "control line longer than {MAX_LINE} bytes ignored"
                    )));
                } else if !self.buf.iter().all(u8::is_ascii_whitespace) {
                    out.push(parse(&self.buf));
                }
                self.buf.clear();
            } else if !self.discarding {
                if self.buf.len() >= MAX_LINE {
                    self.discarding = true;
                    self.buf.clear();
                } else {
                    self.buf.push(b);
                }
            }
        }
        out
    }
}

fn parse(line: &[u8]) -> Result<ControlMessage, String> {
    let wire: Wire =
        serde_json::from_slice(line).map_err(|e| format!("bad control message: {e}"))?;
    let Some(n) = wire.network else {
        return Err("control message has nothing to do: expected {\"network\": {...}}".into());
    };
    EgressRules::parse(&n.allow_domain, &n.deny_domain, &n.allow_ip, &n.map_host)
        .and_then(|r| r.with_deny_ips(&n.deny_ip))
        .map(ControlMessage::SetNetwork)
        .map_err(|e| format!("bad network policy in control message: {e}"))
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;
