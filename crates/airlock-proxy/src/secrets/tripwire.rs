//! The tripwire: a secret's placeholder, or its value, in bytes on their way to a host the
//! secret is not bound to. Finding one blocks the request; the event names the secret, never
//! the value.

use super::BoxSecrets;

/// What was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeakKind {
    Placeholder,
    Value,
}

/// A secret seen on its way to a host it is not bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    /// The secret's name (never its value).
    pub secret: String,
    pub kind: LeakKind,
    /// The binding, as the user wrote it.
    pub rule: String,
}

impl Leak {
    /// The one-line message for the box and the event.
    pub fn message(&self, host: &str, port: u16) -> String {
        let what = match self.kind {
            LeakKind::Placeholder => "the placeholder of secret",
            LeakKind::Value => "the value of secret",
        };
        format!(
            "{what} {} was on its way to {host}:{port}, which it is not bound to ({}); the request was blocked",
            self.secret, self.rule
        )
    }
}

/// The first secret whose placeholder or value occurs in `data` and that is not bound to
/// `host` (normalised) on `port`. Matching is case-sensitive and exact: placeholders are
/// random, so a match is never an accident.
pub fn find_leak(secrets: &BoxSecrets, data: &[u8], host: &str, port: u16) -> Option<Leak> {
    for s in &secrets.secrets {
        if s.bound_to(host, port) {
            continue;
        }
        let kind = if contains(data, s.placeholder.as_bytes()) {
            LeakKind::Placeholder
        } else if contains(data, s.value()) {
            LeakKind::Value
        } else {
            continue;
        };
        return Some(Leak {
            secret: s.name.clone(),
            kind,
            rule: s.rule(),
        });
    }
    None
}

/// Whether `needle` (non-empty) occurs in `hay`.
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
#[path = "tripwire_tests.rs"]
mod tests;
