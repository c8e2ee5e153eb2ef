//! What a box's root filesystem is made of.

use airlock_policy::BackendKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The root filesystem a box starts from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Template {
    /// The host's `/usr`, `/bin`, `/lib*`, `/sbin` and selected `/etc` files, read-only (the
    /// bubblewrap-style OS sandbox, the default of `airlock run`).
    #[default]
    Host,
    /// A read-only root filesystem from the template store (built from a spec or imported from
    /// an OCI image). Every box gets a writable layer of its own on top, thrown away with it.
    Image(ImageTemplate),
}

/// One stored template, as a backend needs it: where its root is and what commands start with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageTemplate {
    /// The name it was stored under (`code-interpreter`).
    pub name: String,
    /// The content digest of the root tree and metadata (`sha256:…`), named in receipts.
    pub digest: String,
    /// The root filesystem: a directory that no box may write (shared by every box of this
    /// template; backends mount it read-only under a per-box writable layer).
    pub rootfs: PathBuf,
    /// The defaults the template came with.
    pub defaults: TemplateDefaults,
}

/// What a template says commands start with, and which backend it prefers.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TemplateDefaults {
    /// Environment every command starts with (the policy's env allowlist still applies on top).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory inside the box, absolute.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The user the image names (`User` of an OCI config); boxes still run unprivileged.
    #[serde(default)]
    pub user: Option<String>,
    /// The default command (`Cmd`).
    #[serde(default)]
    pub cmd: Vec<String>,
    /// The backend a box of this template uses unless the request names one.
    #[serde(default)]
    pub backend: Option<BackendKind>,
}

impl Template {
    /// The name receipts and errors use.
    pub fn name(&self) -> &str {
        match self {
            Template::Host => "host",
            Template::Image(t) => &t.name,
        }
    }

    /// The content digest, for templates that have one (`host` is whatever the host has).
    pub fn digest(&self) -> Option<&str> {
        match self {
            Template::Host => None,
            Template::Image(t) => Some(&t.digest),
        }
    }
}
