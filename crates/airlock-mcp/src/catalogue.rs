//! The tools `airlock mcp` offers, what each may do, and which exist for a given box: the
//! profile decides first (a read-only box lists no tool that writes or runs code), then
//! `--tools` / `--deny-tools` narrow further. Descriptions tell the model what the box can and
//! cannot reach.

use crate::pattern::{ToolFilter, ToolVerdict};
use crate::roots::Roots;
use airlock_policy::{NetworkMode, Profile, ResolvedPolicy};
use serde_json::{json, Value};

/// A tool of `airlock mcp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName {
    RunCode,
    RunCommand,
    ReadFile,
    WriteFile,
    ListFiles,
    SandboxInfo,
    /// Offered only when approvals are on (`--approval on-request|untrusted` with `--net proxy`).
    RequestNetworkGrant,
    /// Offered with [`ToolName::RequestNetworkGrant`].
    RequestFilesystemGrant,
}

/// What a tool does to the box, which decides whether a profile offers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolEffect {
    /// Only looks.
    Reads,
    /// Changes files.
    Writes,
    /// Runs arbitrary code or commands.
    Runs,
    /// Asks a person (or the approver program) for something; changes nothing by itself.
    Asks,
}

impl ToolName {
    /// Every tool, in listing order.
    pub const ALL: [ToolName; 8] = [
        ToolName::RunCode,
        ToolName::RunCommand,
        ToolName::ReadFile,
        ToolName::WriteFile,
        ToolName::ListFiles,
        ToolName::SandboxInfo,
        ToolName::RequestNetworkGrant,
        ToolName::RequestFilesystemGrant,
    ];

    /// The tool's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::RunCode => "run_code",
            ToolName::RunCommand => "run_command",
            ToolName::ReadFile => "read_file",
            ToolName::WriteFile => "write_file",
            ToolName::ListFiles => "list_files",
            ToolName::SandboxInfo => "sandbox_info",
            ToolName::RequestNetworkGrant => "request_network_grant",
            ToolName::RequestFilesystemGrant => "request_filesystem_grant",
        }
    }

    /// The tool called `name`, if airlock has one.
    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// What the tool does to the box.
    pub fn effect(self) -> ToolEffect {
        match self {
            ToolName::RunCode | ToolName::RunCommand => ToolEffect::Runs,
            ToolName::WriteFile => ToolEffect::Writes,
            ToolName::ReadFile | ToolName::ListFiles | ToolName::SandboxInfo => ToolEffect::Reads,
            ToolName::RequestNetworkGrant | ToolName::RequestFilesystemGrant => ToolEffect::Asks,
        }
    }
}

/// Why a tool is not offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unlisted {
    /// The profile does not offer it.
    Profile(Profile),
    /// `--tools` / `--deny-tools` filtered it.
    Filter(ToolVerdict),
    /// airlock has no such tool.
    Unknown,
    /// Only offered when approvals are on.
    NoApprovals,
}

/// The tools one box offers.
#[derive(Debug, Clone)]
pub struct Catalogue {
    profile: Profile,
    filter: ToolFilter,
    /// Approvals are on for a proxied box: the model may ask for network grants.
    grants: bool,
}

impl Catalogue {
    /// The catalogue of a box with `profile`, narrowed by `filter`.
    pub fn new(profile: Profile, filter: ToolFilter) -> Catalogue {
        Catalogue {
            profile,
            filter,
            grants: false,
        }
    }

    /// The same catalogue, offering `request_network_grant` and `request_filesystem_grant`
    /// when `asks` (approvals are on for a proxied box).
    pub fn with_grant_requests(mut self, asks: bool) -> Catalogue {
        self.grants = asks;
        self
    }

    /// Whether `name` is offered, and if not, why.
    pub fn check(&self, name: &str) -> Result<ToolName, Unlisted> {
        let tool = ToolName::parse(name).ok_or(Unlisted::Unknown)?;
        if tool.effect() == ToolEffect::Asks && !self.grants {
            return Err(Unlisted::NoApprovals);
        }
        let reads = matches!(tool.effect(), ToolEffect::Reads | ToolEffect::Asks);
        if self.profile == Profile::ReadOnly && !reads {
            return Err(Unlisted::Profile(self.profile));
        }
        match self.filter.verdict(name) {
            ToolVerdict::Allowed => Ok(tool),
            other => Err(Unlisted::Filter(other)),
        }
    }

    /// The tools offered, in order.
    pub fn offered(&self) -> Vec<ToolName> {
        ToolName::ALL
            .into_iter()
            .filter(|t| self.check(t.as_str()).is_ok())
            .collect()
    }
}

/// One paragraph on what the box can and cannot reach, for tool descriptions.
pub fn reach(policy: &ResolvedPolicy, roots: &Roots) -> String {
    let files = if roots.list().is_empty() {
        "the host's whole filesystem (profile full-access)".to_string()
    } else {
        roots
            .list()
            .iter()
            .map(|r| {
                format!(
                    "{} ({})",
                    r.path.display(),
                    if r.writable {
                        "read-write"
                    } else {
                        "read-only"
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let net = match policy.network {
        NetworkMode::None => "no network at all (loopback only; DNS does not resolve)".to_string(),
        NetworkMode::Host => "the host's network, unfiltered".to_string(),
        NetworkMode::Proxy
            if policy.egress.allow_domain.is_empty() && policy.egress.allow_ip.is_empty() =>
        {
            "an egress proxy that allows nothing (every connection is refused)".to_string()
        }
        NetworkMode::Proxy => {
            let mut allowed: Vec<String> = policy.egress.allow_domain.clone();
            allowed.extend(policy.egress.allow_ip.iter().cloned());
            format!(
                "HTTP(S)/SOCKS through airlock's egress proxy to these destinations only: {}",
                allowed.join(", ")
            )
        }
    };
    format!(
        "The sandbox (a disposable Linux box, {} profile) sees these directories: {files}; nothing else of the host exists inside. Network: {net}. Anything else is refused by the kernel, and a refusal is explained in the result.",
        policy.profile
    )
}

/// The tool's description for the model.
pub fn description(tool: ToolName, reach: &str) -> String {
    let what = match tool {
        ToolName::RunCode => "Run code in a persistent interpreter (python, javascript or bash): variables, imports and the working directory persist across calls in the same context. Returns stdout/stderr, the value of the last expression, and matplotlib figures as PNG images.",
        ToolName::RunCommand => "Run a shell command (sh -c) in the sandbox and return its stdout, stderr and exit code. Files persist across calls.",
        ToolName::ReadFile => "Read a text file from the sandbox (UTF-8; binary files come back base64-encoded).",
        ToolName::WriteFile => "Write a text file in the sandbox (created or replaced; missing parent directories are created).",
        ToolName::ListFiles => "List a directory in the sandbox (names, kinds, sizes).",
        ToolName::SandboxInfo => "Describe what this sandbox may and may not do: its filesystem grants, network policy and limits, layer by layer (the sandbox's receipt).",
        ToolName::RequestNetworkGrant => "Ask the user for network access to one host and port that the sandbox's policy refuses, with your reason. The user (or the user's approver program) decides; only a yes widens the allowlist, for the rest of this session. Ask only for what the task needs, then retry the connection.",
        ToolName::RequestFilesystemGrant => "Ask the user to let the sandbox see (read) or also change (write) one host directory or file it does not have, by its absolute host path, with your reason. The user (or the user's approver program) decides. A yes applies from the sandbox's next start: the sandbox restarts at your next call (running processes and interpreter variables end; files in the workspace and grants stay), and the path then appears at the same place inside. Ask only for what the task needs.",
    };
    format!("{what} {reach}")
}

/// The tool's JSON input schema.
pub fn input_schema(tool: ToolName) -> Value {
    match tool {
        ToolName::RunCode => json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The code to run."},
                "language": {"type": "string", "enum": ["python", "javascript", "js", "bash"], "description": "Default python."},
                "context": {"type": "string", "description": "A named context to keep state apart (default: one per language)."},
                "timeout": {"type": "number", "description": "Seconds before the execution is interrupted (default 60, at most 600); the context keeps its state."}
            },
            "required": ["code"]
        }),
        ToolName::RunCommand => json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "A shell command line, run with sh -c."},
                "timeout": {"type": "number", "description": "Seconds before the command is killed (default 60, at most 600)."}
            },
            "required": ["command"]
        }),
        ToolName::ReadFile => json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Absolute, or relative to the sandbox's working directory."}},
            "required": ["path"]
        }),
        ToolName::WriteFile => json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Absolute, or relative to the sandbox's working directory."},
                "content": {"type": "string", "description": "The file's new content (UTF-8 text)."}
            },
            "required": ["path", "content"]
        }),
        ToolName::ListFiles => json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "A directory (default: the working directory)."},
                "depth": {"type": "integer", "minimum": 1, "maximum": 5, "description": "Levels to descend (default 1)."}
            }
        }),
        ToolName::SandboxInfo => json!({"type": "object", "properties": {}}),
        ToolName::RequestNetworkGrant => json!({
            "type": "object",
            "properties": {
                "host": {"type": "string", "description": "The host name or IP address, exactly as the refusal named it."},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "The port (443 for https)."},
                "reason": {"type": "string", "description": "Why the task needs it, in one sentence the user will read."}
            },
            "required": ["host", "port", "reason"]
        }),
        ToolName::RequestFilesystemGrant => json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The absolute host path (it appears at the same path in the sandbox)."},
                "access": {"type": "string", "enum": ["read", "write"], "description": "read: see it; write: also change it."},
                "reason": {"type": "string", "description": "Why the task needs it, in one sentence the user will read."}
            },
            "required": ["path", "access", "reason"]
        }),
    }
}

#[cfg(test)]
#[path = "catalogue_tests.rs"]
mod tests;
