//! The hello exchange: each side sends a [`Hello`] as its first frame and checks the peer's.

use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks. Peers with another version are refused.
pub const PROTOCOL_VERSION: u32 = 1;

/// Which end of the connection a peer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The runtime outside the box.
    Host,
    /// `airlock-agent` inside the box.
    Agent,
}

/// The body of a hello frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// The sender's [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The sender's role.
    pub role: Role,
}

/// Why a peer's hello was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelloError {
    /// The body is not a hello.
    #[error("the peer's hello is malformed: {0}")]
    Malformed(String),
    /// The peer speaks another version.
    #[error("the peer speaks protocol version {theirs}, this side speaks version {ours}; upgrade the older side")]
    VersionMismatch { ours: u32, theirs: u32 },
    /// The peer claims the wrong role (e.g. two hosts).
    #[error("the peer says it is the {theirs:?}, expected the {expected:?}")]
    WrongRole { expected: Role, theirs: Role },
}

impl Hello {
    /// This side's hello.
    pub fn new(role: Role) -> Hello {
        Hello {
            version: PROTOCOL_VERSION,
            role,
        }
    }

    /// Parses and checks a peer's hello body: same version, expected role.
    pub fn accept(body: &[u8], expected: Role) -> Result<Hello, HelloError> {
        let hello: Hello =
            serde_json::from_slice(body).map_err(|e| HelloError::Malformed(e.to_string()))?;
        if hello.version != PROTOCOL_VERSION {
            return Err(HelloError::VersionMismatch {
                ours: PROTOCOL_VERSION,
                theirs: hello.version,
            });
        }
        if hello.role != expected {
            return Err(HelloError::WrongRole {
                expected,
                theirs: hello.role,
            });
        }
        Ok(hello)
    }
}
