use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A starting point for a policy; grants and limits are added on top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// The workspace is visible read-only; nothing of the host is writable.
    ReadOnly,
    /// The workspace is writable, except its protected paths (git hooks, shell rc files, editor config).
    #[default]
    WorkspaceWrite,
    /// No filesystem or network isolation: the host's files and network, still with limits and timeout.
    FullAccess,
}

/// How the box reaches the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// A network namespace with only loopback: no route anywhere, no DNS.
    #[default]
    None,
    /// Egress only through airlock's allowlisting proxy outside the box.
    Proxy,
    /// The host's network, unfiltered.
    Host,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::ReadOnly => "read-only",
            Profile::WorkspaceWrite => "workspace-write",
            Profile::FullAccess => "full-access",
        }
    }
}

impl NetworkMode {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::None => "none",
            NetworkMode::Proxy => "proxy",
            NetworkMode::Host => "host",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for NetworkMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(Profile::ReadOnly),
            "workspace-write" => Ok(Profile::WorkspaceWrite),
            "full-access" => Ok(Profile::FullAccess),
            other => Err(format!(
                "unknown profile {other:?}: use read-only, workspace-write or full-access"
            )),
        }
    }
}

impl FromStr for NetworkMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(NetworkMode::None),
            "proxy" => Ok(NetworkMode::Proxy),
            "host" => Ok(NetworkMode::Host),
            other => Err(format!(
                "unknown network mode {other:?}: use none, proxy or host"
            )),
        }
    }
}
