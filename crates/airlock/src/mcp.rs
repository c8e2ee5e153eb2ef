//! `airlock mcp` and `airlock wrap`: the CLI side of airlock-mcp.

use crate::cli::{McpArgs, PolicyArgs, WrapArgs};
use crate::commands::resolve_policy;
use airlock_mcp::wrap::{relay, AuditSink, Gate, WrappedServer};
use airlock_mcp::{SessionSettings, ToolFilter};
use airlock_policy::{parse_duration, ChangesMode, NetworkMode, Profile};
use anyhow::{Context, Result};
use std::sync::Arc;

fn warn_full_access(profile: Profile) {
    if profile == Profile::FullAccess {
        eprintln!("airlock: warning: --profile full-access: no filesystem or network isolation (limits and timeout still apply)");
    }
}

/// Refuses `--secret NAME=@-` before anything reads stdin: it is the MCP client's channel.
fn no_secret_from_stdin(policy: &PolicyArgs, command: &str) -> Result<()> {
    match policy.secret.iter().find(|s| s.ends_with("=@-")) {
        Some(s) => anyhow::bail!("--secret {s}: airlock {command}'s stdin is the MCP client's channel, so a secret's value cannot be read from it; give NAME (its value taken from airlock's environment) or NAME=@FILE"),
        None => Ok(()),
    }
}

/// Refuses approval settings `airlock wrap` cannot honour, before anything starts: asking
/// for the network (`on-request`, `untrusted`) without an approver program (the wrapped
/// server's box has nobody else to ask about its held connections; the person is asked
/// through MCP elicitation only before tool calls, under `untrusted`).
fn check_wrap_approval(policy: &airlock_policy::ResolvedPolicy, what: &str) -> Result<()> {
    let approval = &policy.egress.approval;
    if approval.mode.asks_for_network() && approval.approver.is_none() {
        anyhow::bail!("--approval {} needs someone to ask about the wrapped server's held connections, and airlock {what} asks the person (through MCP elicitation) only before tool calls: give --approver CMD (a program on the host that answers each request; see docs/approvals.md)", approval.mode);
    }
    Ok(())
}

pub fn cmd_mcp(args: McpArgs) -> Result<i32> {
    no_secret_from_stdin(&args.policy, "mcp")?;
    let policy = resolve_policy(&args.policy, ChangesMode::Direct)?;
    if policy.changes != ChangesMode::Direct {
        anyhow::bail!("airlock mcp keeps one box across tool calls and the host reads its workspace between them, so it writes the workspace directly: use --changes direct (or drop changes from the policy)");
    }
    warn_full_access(policy.profile);
    let filter = ToolFilter::from_flags(&args.tools.tools, &args.tools.deny_tools)?;
    let idle = parse_duration(&args.idle_timeout).context("--idle-timeout")?;
    if idle.is_zero() {
        anyhow::bail!(
            "--idle-timeout 0 would end the box between calls; give a duration such as 15m"
        );
    }
    let writable = airlock_native::box_writable_roots(&policy);
    let mut settings = SessionSettings::new(policy, filter);
    if let Some(path) = &args.audit {
        // Opened (and a symlink in what the box can write refused) before anything starts; the
        // boxes' proxies open the same path for their own lines.
        let sink = AuditSink::open(Some(path), &writable)?;
        let path = std::path::absolute(path).context("--audit")?;
        settings = settings.with_audit(Arc::new(sink), path);
    }
    if settings.tool_names().is_empty() {
        anyhow::bail!(
            "--tools/--deny-tools leave no tool for this profile; airlock mcp would offer nothing"
        );
    }
    let exe = std::env::current_exe()
        .context("cannot find airlock's own executable to start sandbox hosts")?;
    airlock_mcp::serve_stdio(exe, settings, idle)?;
    Ok(0)
}

pub fn cmd_wrap(args: WrapArgs) -> Result<i32> {
    no_secret_from_stdin(&args.policy, "wrap")?;
    // Resolve here first, so a bad flag fails before anything starts. A wrapped server lives as
    // long as the client's session and the host reads what it writes meanwhile: direct unless
    // asked otherwise.
    let policy = resolve_policy(&args.policy, ChangesMode::Direct)?;
    check_wrap_approval(&policy, "wrap")?;
    if policy.backend == airlock_policy::BackendKind::Wasm {
        anyhow::bail!("airlock wrap runs an MCP server program, and a wasm box has no processes: use --backend native (or gvisor/microvm where built)");
    }
    warn_full_access(policy.profile);
    let filter = ToolFilter::from_flags(&args.tools.tools, &args.tools.deny_tools)?;
    let audit = Arc::new(AuditSink::open(
        args.audit.as_deref(),
        &airlock_native::box_writable_roots(&policy),
    )?);
    let net_audit = args.audit.is_some() && policy.network == NetworkMode::Proxy;
    let mut child_args = vec!["run".to_string()];
    child_args.extend(policy_flags(&args.policy));
    if args.policy.changes.is_none() {
        // `airlock run` would default to apply: pass what was resolved here.
        child_args.push(format!("--changes={}", policy.changes));
    }
    if net_audit {
        child_args.extend(["--audit".to_string(), "/dev/fd/3".to_string()]);
    }
    child_args.push("--".into());
    child_args.extend(args.command.iter().cloned());
    let program =
        std::env::current_exe().context("cannot find airlock's own executable to start the box")?;
    let server = WrappedServer {
        program,
        args: child_args,
        net_audit_fd3: net_audit,
    };
    let mut gate = Gate::new(filter);
    let approval = &policy.egress.approval;
    if approval.mode == airlock_policy::ApprovalMode::Untrusted {
        gate = gate.asking_before_calls(std::time::Duration::from_millis(approval.timeout_ms));
    }
    Ok(relay(&server, gate, audit)?)
}

/// The policy flags as `airlock run` takes them (the wrapped server's box is an `airlock run`).
fn policy_flags(p: &PolicyArgs) -> Vec<String> {
    let mut out = Vec::new();
    let mut one = |flag: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push(format!("--{flag}={v}"));
        }
    };
    one("backend", p.backend.clone());
    one("template", p.template.clone());
    one(
        "data-dir",
        p.data_dir.as_ref().map(|d| d.display().to_string()),
    );
    one("profile", p.profile.clone());
    one("workspace", p.workspace.clone());
    one("changes", p.changes.clone());
    one("policy", p.policy.as_ref().map(|f| f.display().to_string()));
    one("net", p.net.clone());
    one("max-connections", p.max_connections.map(|v| v.to_string()));
    one("byte-budget", p.byte_budget.clone());
    one("approval", p.approval.clone());
    one("approver", p.approver.clone());
    one("approval-timeout", p.approval_timeout.clone());
    one("memory", p.memory.clone());
    one("pids", p.pids.map(|v| v.to_string()));
    one("cpus", p.cpus.map(|v| v.to_string()));
    one("timeout", p.timeout.clone());
    one("disk", p.disk.clone());
    one("output-limit", p.output_limit.clone());
    for (flag, values) in [
        ("read", &p.read),
        ("write", &p.write),
        ("deny", &p.deny),
        ("allow-domain", &p.allow_domain),
        ("deny-domain", &p.deny_domain),
        ("allow-ip", &p.allow_ip),
        ("map-host", &p.map_host),
        ("env", &p.env),
        // By reference only (a name, or @FILE): the wrapped `airlock run` inherits this
        // process's environment, so NAME finds the same value there.
        ("secret", &p.secret),
        ("secret-host", &p.secret_host),
    ] {
        out.extend(values.iter().map(|v| format!("--{flag}={v}")));
    }
    if p.fail_if_unavailable {
        out.push("--fail-if-unavailable".into());
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::{Args, FromArgMatches};

    /// Every policy flag, each with a valid value: the wrapped server's `airlock run` must get
    /// them all. A flag added to `PolicyArgs` and not here fails the count below, and one added
    /// here but not to `policy_flags` fails the round trip.
    const ALL: &[&str] = &[
        "--backend=native",
        "--template=t",
        "--data-dir=/data",
        "--profile=read-only",
        "--workspace=/w",
        "--read=/r",
        "--write=/wr",
        "--deny=/d",
        "--changes=direct",
        "--policy=/p.toml",
        "--net=proxy",
        "--allow-domain=a.example",
        "--deny-domain=b.example",
        "--allow-ip=10.0.0.0/8",
        "--map-host=s.test=127.0.0.1",
        "--max-connections=7",
        "--byte-budget=1M",
        "--approval=on-request",
        "--approver=./approve.py",
        "--approval-timeout=5s",
        "--memory=1G",
        "--pids=9",
        "--cpus=1.5",
        "--timeout=3s",
        "--disk=2G",
        "--output-limit=3M",
        "--env=A=1",
        "--secret=S",
        "--secret-host=S=api.example",
        "--fail-if-unavailable",
    ];

    fn parse(argv: &[String]) -> PolicyArgs {
        let cmd = PolicyArgs::augment_args(clap::Command::new("t").no_binary_name(true));
        PolicyArgs::from_arg_matches(&cmd.try_get_matches_from(argv).unwrap()).unwrap()
    }

    #[test]
    fn a_secret_is_never_read_from_the_mcp_channel() {
        let args = |s: &str| parse(&[format!("--secret={s}")]);
        let err = no_secret_from_stdin(&args("K=@-"), "mcp")
            .unwrap_err()
            .to_string();
        assert!(err.contains("K=@-") && err.contains("NAME=@FILE"), "{err}");
        no_secret_from_stdin(&args("K"), "wrap").unwrap();
        no_secret_from_stdin(&args("K=@/run/key"), "wrap").unwrap();
    }

    #[test]
    fn every_policy_flag_reaches_the_wrapped_servers_box() {
        let cmd = PolicyArgs::augment_args(clap::Command::new("t"));
        let flags = cmd
            .get_arguments()
            .filter(|a| a.get_long().is_some())
            .count();
        assert_eq!(
            flags,
            ALL.len(),
            "PolicyArgs has a flag this test (and maybe policy_flags) does not know"
        );
        let given: Vec<String> = ALL.iter().map(|s| s.to_string()).collect();
        let passed = policy_flags(&parse(&given));
        let mut a = passed.clone();
        let mut b = given.clone();
        a.sort();
        b.sort();
        assert_eq!(a, b, "policy_flags must pass every flag on unchanged");
    }
}
