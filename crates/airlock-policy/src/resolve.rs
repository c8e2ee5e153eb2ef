//! Turning a [`PolicyFile`] (profile + file + flags) into the [`ResolvedPolicy`] a backend enforces.

use crate::{
    BackendKind, ChangesMode, NetworkMode, PolicyError, PolicyFile, Profile, SecretBinding,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// The uid the box's code runs as, inside the box.
pub const INSIDE_UID: u32 = 1000;
/// The gid the box's code runs as, inside the box.
pub const INSIDE_GID: u32 = 1000;
/// The user name inside the box.
pub const INSIDE_USER: &str = "user";
/// The home directory inside the box (a size-capped tmpfs).
pub const INSIDE_HOME: &str = "/home/user";
/// `PATH` inside an isolated box.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const DEFAULT_MEMORY: u64 = 4 << 30;
const DEFAULT_PIDS: u64 = 1024;
/// The most processes a box may be given: the kernel's own ceiling (`PID_MAX_LIMIT` on 64-bit),
/// which a cgroup's `pids.max` cannot exceed.
pub const MAX_PIDS: u64 = 4 << 20;
const DEFAULT_DISK: u64 = 1 << 30;
const DEFAULT_OUTPUT: u64 = 1 << 30;
const DEFAULT_OPEN_FILES: u64 = 4096;
/// Variables passed from the caller's environment when set (besides `--env` names).
const PASSED_ENV: &[&str] = &["LANG", "TERM", "TZ"];
/// Inside paths that the box synthesizes itself; nothing may be mounted there.
const RESERVED_INSIDE: &[&str] = &["/proc", "/dev", "/sys"];

/// The few facts about the host that resolution needs; the runtime passes the real host.
pub trait HostView {
    /// The path with every symlink resolved, or an error if it does not exist.
    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf>;
    /// Whether the path is a directory (following symlinks).
    fn is_dir(&self, path: &Path) -> bool;
    /// The content of a secret's file (`from = "file:PATH"`). Hosts that cannot read files
    /// refuse, so such a secret is an error rather than an empty value.
    fn read_secret(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!("{} cannot be read here", path.display()),
        ))
    }
}

/// Inputs of [`resolve`] that come from the caller rather than the policy.
pub struct ResolveContext<'a> {
    /// The caller's current directory (absolute).
    pub cwd: PathBuf,
    /// The caller's environment; only allowlisted names are read from it.
    pub env: &'a BTreeMap<String, String>,
    pub host: &'a dyn HostView,
}

/// Read-only or writable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

/// A host path made visible inside the box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// Canonical host path (symlinks resolved, so a grant cannot be redirected later).
    pub host: PathBuf,
    /// Where it appears inside the box.
    pub inside: PathBuf,
    pub access: Access,
    /// Whether the protected paths (git hooks, shell rc files, …) under it stay read-only.
    pub protect: bool,
}

/// What the box sees of the host's filesystem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FilesystemPolicy {
    /// A fresh root: system directories read-only, the workspace and the grants, nothing else.
    Isolated {
        workspace: Option<Mount>,
        grants: Vec<Mount>,
        /// Inside paths hidden even though a grant exposes them.
        deny: Vec<PathBuf>,
    },
    /// The host's filesystem as it is (profile `full-access`).
    Host,
}

/// Resource caps. `None` means not capped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub memory: Option<u64>,
    pub pids: Option<u64>,
    pub cpus: Option<f64>,
    pub timeout: Option<Duration>,
    /// Size cap shared by every tmpfs of the box (/tmp, home, /dev/shm).
    pub disk: u64,
    pub output: Option<u64>,
    pub open_files: u64,
    /// Largest file the box may write (RLIMIT_FSIZE); defaults to `disk`.
    pub file_size: u64,
}

/// The egress allowlist of a proxied box.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Egress {
    pub allow_domain: Vec<String>,
    pub deny_domain: Vec<String>,
    pub allow_ip: Vec<String>,
    /// Address ranges never reached (see the policy file's `deny_ip`).
    #[serde(default)]
    pub deny_ip: Vec<String>,
    pub map_host: Vec<String>,
    pub max_connections: u32,
    pub byte_budget: Option<u64>,
    /// Any public destination by name (see the policy file's `public_internet`).
    #[serde(default)]
    pub public_internet: bool,
    /// Whether refused connections are held and asked about, and who answers.
    #[serde(default)]
    pub approval: crate::ApprovalPolicy,
}

const DEFAULT_MAX_CONNECTIONS: u32 = 1024;

fn resolve_egress(file: &PolicyFile, network: NetworkMode) -> Result<Egress, PolicyError> {
    let n = &file.network;
    if network != NetworkMode::Proxy {
        // Every egress setting is enforced by the proxy: without it, refuse rather than drop it.
        for (flag, set) in [
            ("--allow-domain", !n.allow_domain.is_empty()),
            ("--deny-domain", !n.deny_domain.is_empty()),
            ("--allow-ip", !n.allow_ip.is_empty()),
            ("deny_ip", !n.deny_ip.is_empty()),
            ("--map-host", !n.map_host.is_empty()),
            ("--max-connections", n.max_connections.is_some()),
            ("--byte-budget", n.byte_budget.is_some()),
            ("public_internet", n.public_internet == Some(true)),
            (
                "--approval",
                n.approval.is_some_and(|m| m.asks_for_network()),
            ),
            ("--approver", n.approver.is_some()),
            ("approval_timeout", n.approval_timeout.is_some()),
        ] {
            if set {
                return Err(PolicyError::NeedsProxy { flag });
            }
        }
        return Ok(Egress::default());
    }
    let max_connections = n.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
    if !(1..=65536).contains(&max_connections) {
        return Err(PolicyError::OutOfRange {
            what: "max_connections",
            rule: "between 1 and 65536",
            value: max_connections.to_string(),
        });
    }
    Ok(Egress {
        allow_domain: n.allow_domain.clone(),
        deny_domain: n.deny_domain.clone(),
        allow_ip: n.allow_ip.clone(),
        deny_ip: n.deny_ip.clone(),
        map_host: n.map_host.clone(),
        max_connections,
        byte_budget: n.byte_budget.map(|b| b.0),
        public_internet: n.public_internet.unwrap_or(false),
        approval: resolve_approval(n)?,
    })
}

/// Longest an approval may be waited for: a held connection keeps a slot and the box waiting.
const MAX_APPROVAL_TIMEOUT_MS: u64 = 3_600_000;

fn resolve_approval(n: &crate::NetworkSection) -> Result<crate::ApprovalPolicy, PolicyError> {
    let mode = n.approval.unwrap_or_default();
    for (flag, set) in [
        ("--approver", n.approver.is_some()),
        ("--approval-timeout", n.approval_timeout.is_some()),
    ] {
        if set && !mode.asks_for_network() {
            return Err(PolicyError::Conflict(format!(
                "{flag} is for approval requests, which --approval never does not make; add --approval on-request (or remove {flag})"
            )));
        }
    }
    if let Some(cmd) = &n.approver {
        if cmd.trim().is_empty() {
            return Err(PolicyError::Conflict(
                "--approver is empty: give the command that answers approval requests".into(),
            ));
        }
    }
    let timeout_ms = match n.approval_timeout {
        Some(d) => u64::try_from(d.0.as_millis()).unwrap_or(u64::MAX),
        None => crate::DEFAULT_APPROVAL_TIMEOUT_MS,
    };
    if !(1..=MAX_APPROVAL_TIMEOUT_MS).contains(&timeout_ms) {
        return Err(PolicyError::OutOfRange {
            what: "approval_timeout",
            rule: "between 1ms and 1h",
            value: format!("{timeout_ms}ms"),
        });
    }
    Ok(crate::ApprovalPolicy {
        mode,
        approver: n.approver.clone(),
        timeout_ms,
    })
}

/// A policy with every default filled in and every path checked: what a backend enforces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedPolicy {
    pub profile: Profile,
    /// The kind of box that enforces it (records written before backends existed read as
    /// native).
    #[serde(default)]
    pub backend: BackendKind,
    pub filesystem: FilesystemPolicy,
    pub network: NetworkMode,
    /// The egress allowlist (only with `NetworkMode::Proxy`), as written; the proxy parses it.
    pub egress: Egress,
    pub limits: Limits,
    /// The complete environment inside the box, in order.
    pub env: Vec<(String, String)>,
    /// The working directory inside the box.
    pub cwd: PathBuf,
    pub fail_if_unavailable: bool,
    /// How a writable workspace's changes reach the host.
    #[serde(default = "direct")]
    pub changes: ChangesMode,
    /// Secrets the box's proxy adds to requests to their hosts (only with
    /// `NetworkMode::Proxy`); each one's variable is in `env` with its placeholder.
    #[serde(default)]
    pub secrets: Vec<SecretBinding>,
    /// The template the box's root is made from; `None` is the host's system dirs. The policy
    /// only names it (`template = "…"`); whoever owns the template store fills in where it is.
    #[serde(default)]
    pub template: Option<RootTemplate>,
}

/// A stored template a box's root is made from: its read-only tree goes under a per-box
/// writable layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootTemplate {
    pub name: String,
    /// `sha256:…`, named in receipts.
    pub digest: String,
    /// The template's root directory (never written by a box).
    pub rootfs: PathBuf,
    /// Template builds only: a host directory that keeps the box's root layer (its `upper`
    /// and `work`), so the build's changes outlive the box. `None`: the layer is on the box's
    /// tmpfs and goes with it.
    #[serde(default)]
    pub keep_layer: Option<PathBuf>,
}

fn direct() -> ChangesMode {
    ChangesMode::Direct
}

/// Resolves a merged policy against the caller's context. Fails with a message naming the bad
/// entry and how to fix it; never silently drops a grant or a limit.
pub fn resolve(file: &PolicyFile, ctx: &ResolveContext<'_>) -> Result<ResolvedPolicy, PolicyError> {
    let profile = file.profile.unwrap_or_default();
    let network = match (file.network.mode, profile) {
        (Some(mode), _) => mode,
        (None, Profile::FullAccess) => NetworkMode::Host,
        (None, _) => NetworkMode::None,
    };
    let mut egress = resolve_egress(file, network)?;
    let secrets = crate::secrets::resolve_secrets(file, network, ctx)?;
    for binding in &secrets {
        // Binding a secret allows its hosts (on their ports only).
        egress.allow_domain.extend(binding.hosts.iter().cloned());
    }
    let limits = resolve_limits(file)?;
    let (filesystem, cwd) = match profile {
        Profile::FullAccess => {
            let fs = &file.filesystem;
            if file.workspace.is_some()
                || !fs.read.is_empty()
                || !fs.write.is_empty()
                || !fs.deny.is_empty()
            {
                return Err(PolicyError::Conflict(
                    "--profile full-access shows the whole host filesystem, so --workspace, --read, --write and --deny mean nothing there: drop them, or use --profile workspace-write with those grants".into(),
                ));
            }
            (FilesystemPolicy::Host, ctx.cwd.clone())
        }
        Profile::ReadOnly | Profile::WorkspaceWrite => resolve_isolated(file, profile, ctx)?,
    };
    let mut env = resolve_env(file, profile, ctx)?;
    for binding in &secrets {
        if env.iter().any(|(k, _)| *k == binding.name) {
            return Err(PolicyError::Secret {
                name: binding.name.clone(),
                reason: "the variable is also set or passed with --env; drop one of them".into(),
            });
        }
        env.push((binding.name.clone(), binding.placeholder.clone()));
    }
    env.sort();
    Ok(ResolvedPolicy {
        profile,
        backend: file.backend.unwrap_or_default(),
        filesystem,
        network,
        egress,
        limits,
        env,
        cwd,
        fail_if_unavailable: file.fail_if_unavailable.unwrap_or(false),
        // Callers that say nothing (long-lived sandboxes, the server) write the workspace
        // directly; `airlock run` asks for `apply` unless told otherwise.
        changes: file.filesystem.changes.unwrap_or(ChangesMode::Direct),
        template: None,
        secrets,
    })
}

fn resolve_limits(file: &PolicyFile) -> Result<Limits, PolicyError> {
    let l = &file.limits;
    let range = |what: &'static str, rule: &'static str, ok: bool, value: String| {
        if ok {
            Ok(())
        } else {
            Err(PolicyError::OutOfRange { what, rule, value })
        }
    };
    let memory = l.memory.map(|s| s.0).unwrap_or(DEFAULT_MEMORY);
    range(
        "--memory",
        "at least 4M",
        memory >= 4 << 20,
        memory.to_string(),
    )?;
    let pids = l.pids.unwrap_or(DEFAULT_PIDS);
    range(
        "--pids",
        "between 1 and 4194304 (the kernel's limit)",
        (1..=MAX_PIDS).contains(&pids),
        pids.to_string(),
    )?;
    if let Some(cpus) = l.cpus {
        // 0.01 CPU is the smallest quota the kernel takes (1 ms per 100 ms period).
        range(
            "--cpus",
            "at least 0.01 and at most 1024",
            (0.01..=1024.0).contains(&cpus),
            cpus.to_string(),
        )?;
    }
    let timeout = l.timeout.map(|d| d.0);
    if let Some(t) = timeout {
        range("--timeout", "more than 0", !t.is_zero(), format!("{t:?}"))?;
    }
    let disk = l.disk.map(|s| s.0).unwrap_or(DEFAULT_DISK);
    range("--disk", "at least 1M", disk >= 1 << 20, disk.to_string())?;
    let output = l.output_limit.map(|s| s.0).unwrap_or(DEFAULT_OUTPUT);
    let open_files = l.open_files.unwrap_or(DEFAULT_OPEN_FILES);
    range(
        "open_files",
        "between 16 and 1048576",
        (16..=1 << 20).contains(&open_files),
        open_files.to_string(),
    )?;
    let file_size = l.file_size.map(|s| s.0).unwrap_or(disk);
    Ok(Limits {
        memory: Some(memory),
        pids: Some(pids),
        cpus: l.cpus,
        timeout,
        disk,
        output: Some(output),
        open_files,
        file_size,
    })
}

fn resolve_isolated(
    file: &PolicyFile,
    profile: Profile,
    ctx: &ResolveContext<'_>,
) -> Result<(FilesystemPolicy, PathBuf), PolicyError> {
    let ws_access = if profile == Profile::WorkspaceWrite {
        Access::ReadWrite
    } else {
        Access::ReadOnly
    };
    let mut workspace = match file.workspace.as_deref() {
        Some("none") => None,
        Some(spec) => Some(workspace_mount(spec, ws_access, ctx)?),
        None => Some(workspace_mount(&ctx.cwd.to_string_lossy(), ws_access, ctx)?),
    };
    let mut grants: Vec<Mount> = Vec::new();
    for (list, access, what) in [
        (&file.filesystem.read, Access::ReadOnly, "--read"),
        (&file.filesystem.write, Access::ReadWrite, "--write"),
    ] {
        for raw in list {
            let host = grant_path(raw, what, ctx)?;
            let grant = Mount {
                inside: host.clone(),
                protect: access == Access::ReadWrite && ctx.host.is_dir(&host),
                host,
                access,
            };
            // The same path granted twice (also as the workspace, or through a symlink) is one
            // mount; write access wins.
            let same = workspace
                .iter_mut()
                .chain(grants.iter_mut())
                .find(|m| m.host == grant.host && m.inside == grant.inside);
            match same {
                Some(m) => {
                    if grant.access == Access::ReadWrite && m.access != Access::ReadWrite {
                        m.access = Access::ReadWrite;
                        m.protect = ctx.host.is_dir(&m.host);
                    }
                }
                None => grants.push(grant),
            }
        }
    }
    let mut deny = Vec::new();
    for raw in &file.filesystem.deny {
        let abs = absolute(raw, &ctx.cwd);
        let path = ctx
            .host
            .canonicalize(&abs)
            .unwrap_or_else(|_| normalize(&abs));
        if path == Path::new("/") {
            return Err(PolicyError::Path {
                what: "--deny",
                path,
                reason: "hiding / would hide everything; name the directory to hide".into(),
            });
        }
        deny.push(map_to_inside(&path, workspace.as_ref()));
    }
    let cwd = match &workspace {
        Some(ws) => match ctx.cwd.strip_prefix(&ws.host) {
            Ok(rest) => ws.inside.join(rest),
            Err(_) => ws.inside.clone(),
        },
        None => PathBuf::from(INSIDE_HOME),
    };
    Ok((
        FilesystemPolicy::Isolated {
            workspace,
            grants,
            deny,
        },
        cwd,
    ))
}

/// A host path under the workspace is hidden at its inside location.
fn map_to_inside(host: &Path, workspace: Option<&Mount>) -> PathBuf {
    if let Some(ws) = workspace {
        if let Ok(rest) = host.strip_prefix(&ws.host) {
            return ws.inside.join(rest);
        }
    }
    host.to_path_buf()
}

fn workspace_mount(
    spec: &str,
    access: Access,
    ctx: &ResolveContext<'_>,
) -> Result<Mount, PolicyError> {
    // DIR[:PATH_INSIDE]: the inside path is absolute, so split at the last ":/".
    let (dir, inside) = match spec.rfind(":/") {
        Some(i) if i > 0 => (&spec[..i], Some(&spec[i + 1..])),
        _ => (spec, None),
    };
    let host = grant_path(dir, "--workspace", ctx)?;
    if !ctx.host.is_dir(&host) {
        return Err(PolicyError::Path {
            what: "--workspace",
            path: host,
            reason:
                "is not a directory; name a directory (or use --read/--write for a single file)"
                    .into(),
        });
    }
    let inside = match inside {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.components()
                .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
            {
                return Err(PolicyError::Path {
                    what: "--workspace inside path",
                    path: p,
                    reason: "must be absolute without '.' or '..'".into(),
                });
            }
            p
        }
        None => host.clone(),
    };
    check_inside(&inside, "--workspace inside path")?;
    Ok(Mount {
        host,
        inside,
        access,
        protect: access == Access::ReadWrite,
    })
}

fn check_inside(inside: &Path, what: &'static str) -> Result<(), PolicyError> {
    if inside == Path::new("/") {
        return Err(PolicyError::Path {
            what,
            path: inside.to_path_buf(),
            reason: "cannot be / (the box's root is its own); pick a directory such as /workspace"
                .into(),
        });
    }
    if let Some(r) = RESERVED_INSIDE.iter().find(|r| inside.starts_with(r)) {
        return Err(PolicyError::Path {
            what,
            path: inside.to_path_buf(),
            reason: format!(
                "is under {r}, which the box makes itself; pick another path such as /workspace"
            ),
        });
    }
    Ok(())
}

fn grant_path(
    raw: &str,
    what: &'static str,
    ctx: &ResolveContext<'_>,
) -> Result<PathBuf, PolicyError> {
    if raw.is_empty() {
        return Err(PolicyError::Path {
            what,
            path: PathBuf::new(),
            reason: "is empty; name a path".into(),
        });
    }
    let abs = absolute(raw, &ctx.cwd);
    let host = ctx.host.canonicalize(&abs).map_err(|e| PolicyError::Path {
        what,
        path: abs.clone(),
        reason: format!("cannot be granted: {e}; create it first or fix the path"),
    })?;
    if host == Path::new("/") {
        return Err(PolicyError::Path {
            what,
            path: host,
            reason: "would expose the whole host; grant the directories the command needs, or use --profile full-access if you mean it".into(),
        });
    }
    check_inside(&host, what)?;
    Ok(host)
}

/// A grant made while boxes run (a person said yes to the model's request): `raw` checked as a
/// `--read` or `--write` path is (absolute or from `ctx.cwd`, symlinks resolved, never `/`,
/// `/proc`, `/dev` or `/sys`), as the mount it becomes.
pub fn grant_mount(
    raw: &str,
    access: Access,
    ctx: &ResolveContext<'_>,
) -> Result<Mount, PolicyError> {
    let what = match access {
        Access::ReadOnly => "--read",
        Access::ReadWrite => "--write",
    };
    let host = grant_path(raw, what, ctx)?;
    Ok(Mount {
        inside: host.clone(),
        protect: access == Access::ReadWrite && ctx.host.is_dir(&host),
        host,
        access,
    })
}

/// Adds `grant` to an isolated policy's grants: `Ok(false)` if the workspace or a grant already
/// gives that path with that access (a write grant upgrades a read one). An error says why it
/// cannot be added (the policy is not isolated, or it denies the path).
pub fn add_grant(policy: &mut ResolvedPolicy, grant: Mount) -> Result<bool, String> {
    let FilesystemPolicy::Isolated {
        workspace,
        grants,
        deny,
    } = &mut policy.filesystem
    else {
        return Err("the box already sees the whole host filesystem (profile full-access)".into());
    };
    if let Some(d) = deny.iter().find(|d| grant.inside.starts_with(d)) {
        return Err(format!(
            "the policy hides {} from the box (a deny rule), and a grant does not undo it",
            d.display()
        ));
    }
    let same = workspace
        .iter_mut()
        .chain(grants.iter_mut())
        .find(|m| m.host == grant.host && m.inside == grant.inside);
    match same {
        Some(m) if m.access == Access::ReadWrite || grant.access == Access::ReadOnly => Ok(false),
        Some(m) => {
            m.access = Access::ReadWrite;
            m.protect = grant.protect;
            Ok(true)
        }
        None => {
            grants.push(grant);
            Ok(true)
        }
    }
}

/// The `--read`/`--write` grants of `file` whose path leads through a symlink somewhere other
/// than the path as written: (flag, the path as written, where it really is). The box gets the
/// real place; a caller may want to say so, since the symlink may have been left by a box.
pub fn redirected_grants(
    file: &PolicyFile,
    ctx: &ResolveContext<'_>,
) -> Vec<(&'static str, String, PathBuf)> {
    let reads = file.filesystem.read.iter().map(|r| ("--read", r));
    let writes = file.filesystem.write.iter().map(|r| ("--write", r));
    reads
        .chain(writes)
        .filter_map(|(what, raw)| {
            let written = normalize(&absolute(raw, &ctx.cwd));
            let real = ctx.host.canonicalize(&written).ok()?;
            (real != written).then(|| (what, raw.clone(), real))
        })
        .collect()
}

fn absolute(raw: &str, cwd: &Path) -> PathBuf {
    let p = Path::new(raw);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// Lexical normalisation for paths that do not exist (no symlinks to follow).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn resolve_env(
    file: &PolicyFile,
    profile: Profile,
    ctx: &ResolveContext<'_>,
) -> Result<Vec<(String, String)>, PolicyError> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let caller = |name: &str| ctx.env.get(name).cloned();
    if profile == Profile::FullAccess {
        for name in ["PATH", "HOME", "USER"] {
            if let Some(v) = caller(name) {
                env.insert(name.into(), v);
            }
        }
    } else {
        env.insert("PATH".into(), DEFAULT_PATH.into());
        env.insert("HOME".into(), INSIDE_HOME.into());
        env.insert("USER".into(), INSIDE_USER.into());
    }
    for name in PASSED_ENV {
        if let Some(v) = caller(name) {
            env.insert((*name).into(), v);
        }
    }
    for name in &file.env.pass {
        check_env_name(name, name)?;
        if let Some(v) = caller(name) {
            env.insert(name.clone(), v);
        }
    }
    for (name, value) in &file.env.set {
        check_env_name(name, &format!("{name}={value}"))?;
        env.insert(name.clone(), value.clone());
    }
    Ok(env.into_iter().collect())
}

pub(crate) fn check_env_name(name: &str, shown: &str) -> Result<(), PolicyError> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(PolicyError::EnvName {
            value: shown.to_string(),
        })
    }
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
