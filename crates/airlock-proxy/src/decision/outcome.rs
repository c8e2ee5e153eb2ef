//! The result of a decision, as the proxy acts on it and the audit log records it.

use std::net::SocketAddr;

use serde::Serialize;

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DenyReason {
    /// The host or port is malformed (port 0, `@`, `/`, whitespace, an invalid name, ...).
    BadHost,
    /// A `--deny-domain` rule matches.
    DeniedDomain,
    /// A `deny_ip` rule matches the address (a literal, or every address the name resolved
    /// to).
    DeniedAddress,
    /// No `--allow-domain` rule matches the name.
    NotAllowed,
    /// A rule matches the name or address, but only for other ports.
    PortNotAllowed,
    /// An IP literal destination that no `--allow-ip` grant covers.
    IpLiteralNotGranted,
    /// Every address the name resolved to is special-purpose (loopback, private, link-local,
    /// ...) or the host's own, and not granted by `--allow-ip`.
    ForbiddenAddress,
    /// The name could not be resolved.
    ResolveFailed,
}

/// The decision for one connection request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "kebab-case")]
pub enum EgressDecision {
    /// Connect to exactly these addresses (in order), which were checked: no re-resolution
    /// later.
    Allow {
        /// The normalised name, or the canonical IP address.
        host: String,
        /// The destination port.
        port: u16,
        /// The checked addresses, never empty.
        addrs: Vec<SocketAddr>,
        /// The rules that granted, as the user wrote them, e.g. `--allow-domain *.example.com`
        /// (followed by `, --allow-ip ...` when a non-public address needed a grant).
        rule: String,
    },
    /// Do not connect.
    Deny {
        /// The normalised name or canonical IP; for [`DenyReason::BadHost`] the request's host
        /// with unprintable characters escaped.
        host: String,
        /// The destination port.
        port: u16,
        /// Why.
        reason: DenyReason,
        /// The user's rule that refused or limited the request, if one did; `None` when the
        /// default deny or a built-in guard refused it.
        rule: Option<String>,
        /// One line: what refused the request and which flag would grant it.
        message: String,
    },
}

impl EgressDecision {
    /// True if the connection may be made.
    pub fn is_allowed(&self) -> bool {
        matches!(self, EgressDecision::Allow { .. })
    }

    /// The reason for a refusal; `None` if allowed.
    pub fn deny_reason(&self) -> Option<DenyReason> {
        match self {
            EgressDecision::Allow { .. } => None,
            EgressDecision::Deny { reason, .. } => Some(*reason),
        }
    }

    /// The one-line message of a refusal; `None` if allowed.
    pub fn message(&self) -> Option<&str> {
        match self {
            EgressDecision::Allow { .. } => None,
            EgressDecision::Deny { message, .. } => Some(message),
        }
    }
}
