//! A refusal as a structured value the agent (and whoever drives it) can act on: what was
//! refused, by which rule, and the grant that would allow it. The same shape appears in the
//! result document, the server's events and sandbox view, and MCP tool results.

use serde::{Deserialize, Serialize};

/// What kind of thing was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DenialKind {
    /// A connection the egress rules refused.
    Network,
    /// A write to a protected path (not applied from the change layer).
    Path,
    /// A limit was reached (time, memory, processes, output, bytes, connections).
    Limit,
}

/// One refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    pub kind: DenialKind,
    /// What was refused: `HOST:PORT` for a connection, the path for a file, the limit's name.
    pub what: String,
    /// Why, in kebab-case (`not-allowed`, `denied-domain`, `forbidden-address`, `protected`,
    /// `timeout`, ...).
    pub reason: String,
    /// The rule that refused it, as the user wrote it, if one did.
    #[serde(default)]
    pub rule: Option<String>,
    /// The grant that would allow it, exactly as an approver is given it and may answer it
    /// (`NAME:PORT`, `IP[:PORT]`); `None`: nothing may allow it (a deny rule, a private or
    /// metadata address, a protected path), or it is a limit.
    #[serde(default)]
    pub grant: Option<String>,
    /// The same grant as the flag that adds it to a policy (`--allow-domain NAME:PORT`,
    /// `--allow-ip IP[:PORT]`), or the flag that raises the limit.
    #[serde(default)]
    pub flag: Option<String>,
}
