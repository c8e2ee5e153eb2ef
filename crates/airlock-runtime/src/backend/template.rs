//! What a box's root filesystem is made of.

use airlock_policy::{BackendKind, ResolvedPolicy};
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
    /// The template a resolved policy names (`ResolvedPolicy::template`, filled in by whoever
    /// owns the template store), for a box started again from its stored policy alone (the
    /// server's sessions, MCP). Its defaults are empty: applying a template to a policy already
    /// merged them into the policy's environment and working directory.
    pub fn of_policy(policy: &ResolvedPolicy) -> Template {
        match &policy.template {
            None => Template::Host,
            Some(t) => Template::Image(ImageTemplate {
                name: t.name.clone(),
                digest: t.digest.clone(),
                rootfs: t.rootfs.clone(),
                defaults: TemplateDefaults::default(),
            }),
        }
    }

    /// Whether this is the template `policy` names (same root tree and digest), and if not, a
    /// sentence saying how they differ. A backend that reads the root from the policy checks
    /// this first, so the two can never silently disagree.
    pub fn agrees_with(&self, policy: &ResolvedPolicy) -> Result<(), String> {
        match (self, &policy.template) {
            (Template::Host, None) => Ok(()),
            (Template::Image(t), Some(r)) if t.rootfs == r.rootfs && t.digest == r.digest => Ok(()),
            (_, named) => Err(format!(
                "the box was asked to start on the template {:?} but its policy names {:?}",
                self.name(),
                named.as_ref().map_or("host", |r| r.name.as_str())
            )),
        }
    }

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
