//! The subset of the OCI runtime spec (`config.json`) airlock writes for runsc, as typed data.

use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    pub oci_version: &'static str,
    pub process: Process,
    pub root: Root,
    pub hostname: String,
    pub mounts: Vec<Mount>,
    pub linux: Linux,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Process {
    pub terminal: bool,
    pub user: User,
    pub args: Vec<String>,
    pub env: Vec<String>,
    pub cwd: String,
    pub capabilities: Capabilities,
    pub rlimits: Vec<Rlimit>,
    pub no_new_privileges: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub uid: u32,
    pub gid: u32,
    pub additional_gids: Vec<u32>,
}

/// Every set empty: the box's processes hold no capability.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Capabilities {
    pub bounding: Vec<String>,
    pub effective: Vec<String>,
    pub inheritable: Vec<String>,
    pub permitted: Vec<String>,
    pub ambient: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Rlimit {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub hard: u64,
    pub soft: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Root {
    pub path: PathBuf,
    pub readonly: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Mount {
    pub destination: PathBuf,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub source: PathBuf,
    pub options: Vec<String>,
}

impl Mount {
    /// A bind of host `source` at `destination`, read-only unless `writable`.
    pub fn bind(
        source: impl Into<PathBuf>,
        destination: impl Into<PathBuf>,
        writable: bool,
    ) -> Mount {
        let mut options = vec!["rbind".to_string(), "nosuid".into(), "nodev".into()];
        options.push(if writable { "rw" } else { "ro" }.into());
        Mount {
            destination: destination.into(),
            kind: "bind",
            source: source.into(),
            options,
        }
    }

    /// A tmpfs of the Sentry's own memory.
    pub fn tmpfs(destination: impl Into<PathBuf>, read_only: bool) -> Mount {
        let mut options = vec!["nosuid".to_string(), "nodev".into(), "mode=0755".into()];
        if read_only {
            options.push("ro".into());
        }
        Mount {
            destination: destination.into(),
            kind: "tmpfs",
            source: "tmpfs".into(),
            options,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Linux {
    pub namespaces: Vec<Namespace>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Namespace {
    #[serde(rename = "type")]
    pub kind: &'static str,
}
