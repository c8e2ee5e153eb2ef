//! The policy file (TOML) and its merge with command-line flags.

use crate::{
    BackendKind, ChangesMode, DurationValue, NetworkMode, PolicyError, Profile, SecretEntry,
    SizeValue,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// A policy as written in a file or assembled from flags. Every field is optional: an absent field
/// keeps the profile's default. Unknown keys are an error.
///
/// ```toml
/// profile = "workspace-write"
/// backend = "native"  # native | gvisor | microvm | wasm
/// workspace = "/src/app:/workspace"
/// [filesystem]
/// read = ["/opt/data"]
/// write = ["/tmp/out"]
/// deny = ["/src/app/secrets"]
/// changes = "apply"  # or "direct"
/// [network]
/// mode = "proxy"
/// allow_domain = ["pypi.example", "*.files.example", "api.example:443"]
/// deny_domain = ["evil.api.example"]
/// allow_ip = ["10.0.0.0/8"]
/// map_host = ["svc.test=127.0.0.1"]
/// max_connections = 512
/// byte_budget = "1G"
/// public_internet = false  # true: any public destination by name (not private/loopback/metadata)
/// approval = "on-request"  # or "never" (default), "untrusted": ask before refusing
/// approver = "./approve.py"  # a host program answering one JSON line per request
/// approval_timeout = "30s"  # no answer by then: refused
/// [limits]
/// memory = "512M"
/// pids = 128
/// cpus = 1.0
/// timeout = "30s"
/// disk = "1G"
/// output_limit = "10M"
/// [env]
/// pass = ["GITHUB_ACTIONS"]
/// set = { RUST_LOG = "debug" }
/// [secrets]  # held by the egress proxy; the box sees a placeholder
/// OPENAI_API_KEY = { hosts = ["api.openai.example"], from = "env:OPENAI_API_KEY" }
/// GH_TOKEN = { hosts = ["api.github.example"], from = "file:/run/keys/gh", body = false }
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    pub profile: Option<Profile>,
    /// The kind of box that enforces the policy (default: native).
    pub backend: Option<BackendKind>,
    /// The template the box's root comes from (default: `host`, the host's system dirs).
    pub template: Option<String>,
    /// `DIR[:PATH_INSIDE]`; DIR relative to the current directory.
    pub workspace: Option<String>,
    /// Refuse to start when a layer cannot be enforced on this host (instead of falling back and
    /// saying so in the receipt).
    pub fail_if_unavailable: Option<bool>,
    #[serde(default)]
    pub filesystem: FilesystemSection,
    #[serde(default)]
    pub network: NetworkSection,
    #[serde(default)]
    pub limits: LimitsSection,
    #[serde(default)]
    pub env: EnvSection,
    /// Secrets the proxy adds to requests to their hosts; the variable `NAME` in the box holds
    /// a placeholder. Needs `network.mode = "proxy"`.
    #[serde(default)]
    pub secrets: BTreeMap<String, SecretEntry>,
}

/// Extra host paths.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesystemSection {
    /// Host paths visible read-only, at the same path inside.
    #[serde(default)]
    pub read: Vec<String>,
    /// Host paths visible and writable, at the same path inside.
    #[serde(default)]
    pub write: Vec<String>,
    /// Paths hidden even though a grant above would expose them.
    #[serde(default)]
    pub deny: Vec<String>,
    /// How the workspace's writes reach the host (`apply` or `direct`); the command decides
    /// when absent (`airlock run`: apply).
    pub changes: Option<ChangesMode>,
}

/// The network mode and, for `proxy`, the egress allowlist (checked by the proxy).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    pub mode: Option<NetworkMode>,
    /// `NAME[:PORT]` or `*.NAME[:PORT]`.
    #[serde(default)]
    pub allow_domain: Vec<String>,
    /// Same syntax; deny wins over allow.
    #[serde(default)]
    pub deny_domain: Vec<String>,
    /// `CIDR[:PORT]`: a literal destination, or the resolved address of an allowed name.
    #[serde(default)]
    pub allow_ip: Vec<String>,
    /// `CIDR[:PORT]` (a single address is a /32 or /128): never reached, whether named as a
    /// literal or resolved from an allowed name; deny wins over allow.
    #[serde(default)]
    pub deny_ip: Vec<String>,
    /// `NAME=IP`: resolve NAME to IP without DNS.
    #[serde(default)]
    pub map_host: Vec<String>,
    /// Concurrent connections through the proxy.
    pub max_connections: Option<u32>,
    /// Bytes (up + down) the box may move through the proxy in total.
    pub byte_budget: Option<SizeValue>,
    /// `true`: every name not denied may be reached, as long as it resolves to a public
    /// address (private, loopback, link-local/metadata addresses and IP literals still need
    /// `allow_ip`). The explicit way to open the public internet; a bare `*` domain is refused.
    pub public_internet: Option<bool>,
    /// `never` (a refusal is final), `on-request` (a refused connection is held while someone
    /// is asked) or `untrusted` (also asks before each MCP command).
    pub approval: Option<crate::ApprovalMode>,
    /// A host program that answers approval requests (one JSON line each way).
    pub approver: Option<String>,
    /// How long a held connection waits for an answer (default 30s).
    pub approval_timeout: Option<crate::DurationValue>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    pub memory: Option<SizeValue>,
    pub pids: Option<u64>,
    pub cpus: Option<f64>,
    pub timeout: Option<DurationValue>,
    pub disk: Option<SizeValue>,
    pub output_limit: Option<SizeValue>,
    pub open_files: Option<u64>,
    pub file_size: Option<SizeValue>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSection {
    /// Names whose value is taken from the caller's environment (absent names are skipped).
    #[serde(default)]
    pub pass: Vec<String>,
    /// Names set to a fixed value.
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

impl PolicyFile {
    /// Parses a policy from TOML text; `origin` names the file in errors.
    pub fn from_toml(text: &str, origin: &Path) -> Result<PolicyFile, PolicyError> {
        toml::from_str(text).map_err(|e| PolicyError::Parse {
            path: origin.to_path_buf(),
            message: e.message().to_string()
                + &e.span()
                    .map(|s| format!(" (at byte {})", s.start))
                    .unwrap_or_default(),
        })
    }

    /// Reads and parses a policy file.
    pub fn load(path: &Path) -> Result<PolicyFile, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        PolicyFile::from_toml(&text, path)
    }

    /// Applies `over` on top of `self`: scalar fields set in `over` win; lists are appended.
    pub fn merge(mut self, over: PolicyFile) -> PolicyFile {
        fn pick<T>(base: &mut Option<T>, over: Option<T>) {
            if over.is_some() {
                *base = over;
            }
        }
        pick(&mut self.profile, over.profile);
        pick(&mut self.backend, over.backend);
        pick(&mut self.template, over.template);
        pick(&mut self.workspace, over.workspace);
        pick(&mut self.fail_if_unavailable, over.fail_if_unavailable);
        self.filesystem.read.extend(over.filesystem.read);
        self.filesystem.write.extend(over.filesystem.write);
        self.filesystem.deny.extend(over.filesystem.deny);
        pick(&mut self.filesystem.changes, over.filesystem.changes);
        pick(&mut self.network.mode, over.network.mode);
        self.network.allow_domain.extend(over.network.allow_domain);
        self.network.deny_domain.extend(over.network.deny_domain);
        self.network.allow_ip.extend(over.network.allow_ip);
        self.network.deny_ip.extend(over.network.deny_ip);
        self.network.map_host.extend(over.network.map_host);
        pick(
            &mut self.network.max_connections,
            over.network.max_connections,
        );
        pick(&mut self.network.byte_budget, over.network.byte_budget);
        pick(
            &mut self.network.public_internet,
            over.network.public_internet,
        );
        pick(&mut self.network.approval, over.network.approval);
        pick(&mut self.network.approver, over.network.approver);
        pick(
            &mut self.network.approval_timeout,
            over.network.approval_timeout,
        );
        let (l, o) = (&mut self.limits, over.limits);
        pick(&mut l.memory, o.memory);
        pick(&mut l.pids, o.pids);
        pick(&mut l.cpus, o.cpus);
        pick(&mut l.timeout, o.timeout);
        pick(&mut l.disk, o.disk);
        pick(&mut l.output_limit, o.output_limit);
        pick(&mut l.open_files, o.open_files);
        pick(&mut l.file_size, o.file_size);
        self.env.pass.extend(over.env.pass);
        self.env.set.extend(over.env.set);
        // A secret named again (e.g. by a flag) replaces the file's entry of that name.
        self.secrets.extend(over.secrets);
        self
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
