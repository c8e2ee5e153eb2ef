//! What each subcommand does.

use crate::cli::{
    CheckArgs, Cli, CodeArgs, Command, PolicyArgs, ReceiptArgs, RunArgs, SandboxArgs,
    SandboxCommand, ServeArgs,
};
use crate::client;
use airlock_native::{BoxPlan, RunOptions, StdinMode};
use airlock_policy::{
    parse_duration, parse_size, BackendKind, ChangesMode, DurationValue, PolicyFile, Profile,
    ResolveContext, ResolvedPolicy, SizeValue,
};
use airlock_runtime::backend::Template;
use airlock_runtime::backend::{Availability, Backend, Backends};
use airlock_runtime::{HostReport, RealHost, RunResult};
use anyhow::{anyhow, Context, Result};
use clap::Parser;
use std::collections::BTreeMap;
use std::sync::Arc;

/// airlock's own failure.
const FAILED: i32 = 125;

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { FAILED } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    if let Some(p) = &cli.runsc {
        // Single-threaded still: every entry point (and the box host processes) reads it.
        std::env::set_var(airlock_backends::RUNSC_ENV, p);
    }
    if let Some(name) = &cli.gvisor_platform {
        if let Err(e) = airlock_gvisor::Platform::parse(name) {
            eprintln!("airlock: {e}");
            return FAILED;
        }
        std::env::set_var(airlock_backends::GVISOR_PLATFORM_ENV, name);
    }
    let res = match cli.command {
        Command::Run(args) => cmd_run(args),
        Command::Receipt(args) => cmd_receipt(args),
        Command::Check(args) => cmd_check(args),
        Command::SandboxHost { sentinel_service } => cmd_sandbox_host(sentinel_service),
        Command::GvisorHost(args) => cmd_gvisor_host(&args.resolved),
        Command::Agent(args) => cmd_agent(&args),
        Command::Serve(args) => cmd_serve(args),
        Command::Sandbox(args) => cmd_sandbox(args),
        Command::Code(args) => cmd_code(args),
        Command::Mcp(args) => crate::mcp::cmd_mcp(args),
        Command::Wrap(args) => crate::mcp::cmd_wrap(args),
        Command::Template(cmd) => crate::templates::cmd_template(cmd),
    };
    res.unwrap_or_else(|e| {
        eprintln!("airlock: {e:#}");
        FAILED
    })
}

fn policy_file(args: &PolicyArgs) -> Result<PolicyFile> {
    let base = match &args.policy {
        Some(path) => PolicyFile::load(path)?,
        None => PolicyFile::default(),
    };
    let mut f = PolicyFile {
        profile: args
            .profile
            .as_deref()
            .map(str::parse::<Profile>)
            .transpose()
            .map_err(|e| anyhow!("--profile: {e}"))?,
        workspace: args.workspace.clone(),
        template: args.template.clone(),
        backend: args
            .backend
            .as_deref()
            .map(str::parse::<BackendKind>)
            .transpose()
            .map_err(|e| anyhow!("--backend: {e}"))?,
        ..Default::default()
    };
    f.filesystem.read = args.read.clone();
    f.filesystem.write = args.write.clone();
    f.filesystem.deny = args.deny.clone();
    f.filesystem.changes = args
        .changes
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| anyhow!("--changes: {e}"))?;
    f.network.allow_domain = args.allow_domain.clone();
    f.network.deny_domain = args.deny_domain.clone();
    f.network.allow_ip = args.allow_ip.clone();
    f.network.map_host = args.map_host.clone();
    f.network.max_connections = args.max_connections;
    f.network.mode = args
        .net
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| anyhow!("--net: {e}"))?;
    let size = |v: &Option<String>, flag: &str| -> Result<Option<SizeValue>> {
        v.as_deref()
            .map(|s| {
                parse_size(s)
                    .map(SizeValue)
                    .with_context(|| flag.to_string())
            })
            .transpose()
    };
    f.limits.memory = size(&args.memory, "--memory")?;
    f.limits.disk = size(&args.disk, "--disk")?;
    f.limits.output_limit = size(&args.output_limit, "--output-limit")?;
    f.network.byte_budget = size(&args.byte_budget, "--byte-budget")?;
    f.network.approval = args
        .approval
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| anyhow!("--approval: {e}"))?;
    f.network.approver = args.approver.clone();
    f.network.approval_timeout = args
        .approval_timeout
        .as_deref()
        .map(|t| parse_duration(t).map(DurationValue))
        .transpose()
        .context("--approval-timeout")?;
    f.limits.pids = args.pids;
    f.limits.cpus = args.cpus;
    f.limits.timeout = args
        .timeout
        .as_deref()
        .map(|s| parse_duration(s).map(DurationValue).context("--timeout"))
        .transpose()?;
    for e in &args.env {
        match e.split_once('=') {
            Some((k, v)) => {
                f.env.set.insert(k.to_string(), v.to_string());
            }
            None => f.env.pass.push(e.clone()),
        }
    }
    if args.fail_if_unavailable {
        f.fail_if_unavailable = Some(true);
    }
    f.secrets = crate::secret_flags::secrets(&args.secret, &args.secret_host, &base)?;
    Ok(base.merge(f))
}

/// runsc's version and platform, as the gVisor backend would use them.
fn gvisor_details() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let config = airlock_backends::BackendConfig::new(exe.clone());
    airlock_gvisor::GvisorBackend::new(exe, config.gvisor)
        .describe()
        .ok()
}

/// The backends this airlock can start boxes with.
pub(crate) fn backends() -> Result<Backends> {
    let exe = std::env::current_exe()
        .context("cannot find airlock's own executable to start sandbox hosts")?;
    Ok(airlock_backends::built_in(
        &airlock_backends::BackendConfig::new(exe),
    ))
}

/// What the policy flags (over `--policy FILE`) resolve to: the policy, the template its box
/// runs on, and the backend that starts it.
pub(crate) struct Resolved {
    pub policy: ResolvedPolicy,
    pub template: Template,
    pub backend: Arc<dyn Backend>,
}

/// Resolves the policy flags; `changes` is this command's own default for how the workspace's
/// writes reach the host, used when neither the flags nor the file say — for the native box
/// only: every other kind writes the workspace directly unless told otherwise (and refuses
/// `apply` with a sentence when told). The backend is the flags' or the file's, else the
/// template's own, else native; one this airlock does not have is refused here, before
/// anything starts.
pub(crate) fn resolve(args: &PolicyArgs, changes: ChangesMode) -> Result<Resolved> {
    let mut file = policy_file(args)?;
    let template = template_of(args, &file)?;
    let backend_kind = match (file.backend, &template) {
        (Some(kind), _) => kind,
        (None, Template::Image(t)) => t.defaults.backend.unwrap_or_default(),
        (None, Template::Host) => BackendKind::default(),
    };
    let changes = match backend_kind {
        BackendKind::Native => changes,
        _ => ChangesMode::Direct,
    };
    file.filesystem.changes.get_or_insert(changes);
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let ctx = ResolveContext {
        cwd,
        env: &env,
        host: &RealHost,
    };
    let mut policy = airlock_policy::resolve(&file, &ctx)?;
    policy.backend = backend_kind;
    airlock_template::apply_template(&mut policy, &template)?;
    let backend = backends()?.select(policy.backend)?;
    for (what, raw, real) in airlock_policy::redirected_grants(&file, &ctx) {
        eprintln!(
            "airlock: note: {what} {raw} leads through a symlink to {}: that is what the box gets, at that path (a symlink there may have been left by a box)",
            real.display()
        );
    }
    Ok(Resolved {
        policy,
        template,
        backend,
    })
}

/// [`resolve`], for commands that start their boxes later from the policy alone (it names the
/// template: [`Template::of_policy`]).
pub(crate) fn resolve_policy(args: &PolicyArgs, changes: ChangesMode) -> Result<ResolvedPolicy> {
    Ok(resolve(args, changes)?.policy)
}

/// The template the flags or the policy file name (`--template`, `template = "…"`), from the
/// store in `--data-dir` (else the default data dir); `host` when neither names one.
pub(crate) fn template_of(args: &PolicyArgs, file: &PolicyFile) -> Result<Template> {
    match &file.template {
        None => Ok(Template::Host),
        Some(name) => {
            let store =
                airlock_template::TemplateStore::existing(&data_dir(args.data_dir.clone())?);
            Ok(store.get(name)?)
        }
    }
}

fn cmd_run(args: RunArgs) -> Result<i32> {
    let Resolved {
        policy,
        template,
        backend,
    } = resolve(&args.policy, ChangesMode::Apply)?;
    if policy.profile == Profile::FullAccess {
        eprintln!("airlock: warning: --profile full-access: no filesystem or network isolation (limits and timeout still apply)");
    }
    if args.audit.is_some() && policy.network != airlock_policy::NetworkMode::Proxy {
        anyhow::bail!("--audit records the egress proxy's decisions, so it needs --net proxy; add --net proxy (and --allow-domain for what the box may reach)");
    }
    let mut opts = RunOptions {
        stdin: if args.no_stdin {
            StdinMode::Null
        } else {
            StdinMode::Auto
        },
        audit: args.audit.clone(),
        control_fd: args.control_fd,
        ask_on_terminal: terminal_approval(&policy, &args.policy),
        asker: None,
        root_at: None,
    };
    if policy.backend != BackendKind::Native {
        // The native box asks on the terminal itself; the others' proxies ask through the seam.
        opts.asker = airlock_native::OwnerTerminal::for_run(&policy, &opts)?
            .map(|t| -> Arc<dyn airlock_runtime::attached::AttachedAsker> { t });
    }
    if let Some(fd) = args.control_fd {
        // SAFETY: fcntl only inspects the descriptor number.
        if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            anyhow::bail!("--control-fd {fd} is not an open descriptor: open it for reading first, e.g. `3< fifo`");
        }
    }
    // Opened before the box starts and written through this descriptor: the box cannot make
    // the path lead somewhere else (see airlock_native::open_output).
    let mut result_file = match &args.result {
        Some(path) => Some(
            airlock_native::open_output(
                path,
                airlock_native::OutputMode::Truncate,
                &airlock_native::box_writable_roots(&policy),
            )
            .with_context(|| format!("cannot write --result {}", path.display()))?,
        ),
        None => None,
    };
    let outcome = backend.run_attached(&policy, &template, &args.command, &opts);
    let result = match outcome {
        Ok(r) => r,
        Err(e) => {
            let msg = format!("{e}");
            eprintln!("airlock: {msg}");
            if args.json || args.result.is_some() {
                let doc = serde_json::json!({ "exit_code": FAILED, "error": msg });
                emit(&args, result_file.as_mut(), &doc.to_string())?;
            }
            return Ok(FAILED);
        }
    };
    if let Some(err) = &result.error {
        eprintln!("airlock: {err}");
    }
    if let Some(changes) = &result.changes {
        for i in &changes.skipped {
            eprintln!("airlock: change not applied: {}: {}", i.path, i.reason);
        }
        for i in &changes.failed {
            eprintln!("airlock: change FAILED to apply: {}: {}", i.path, i.reason);
        }
    }
    for hit in &result.limits_hit {
        eprintln!(
            "airlock: limit reached: {}",
            serde_json::to_value(hit)
                .map(|v| v.as_str().unwrap_or("").to_string())
                .unwrap_or_default()
        );
    }
    if args.json || args.result.is_some() {
        emit(
            &args,
            result_file.as_mut(),
            &serde_json::to_string_pretty(&result)?,
        )?;
    }
    Ok(result.exit_code)
}

/// Whether `airlock run` asks about held connections on its controlling terminal: under
/// `--approval on-request|untrusted` with no `--approver`, on every backend that has a network.
fn terminal_approval(
    policy: &ResolvedPolicy,
    args: &PolicyArgs,
) -> Option<airlock_native::TerminalAsk> {
    let approval = &policy.egress.approval;
    if policy.network != airlock_policy::NetworkMode::Proxy
        || !approval.mode.asks_for_network()
        || approval.approver.is_some()
    {
        return None;
    }
    Some(airlock_native::TerminalAsk {
        policy_file: args.policy.clone(),
    })
}

fn emit(args: &RunArgs, file: Option<&mut std::fs::File>, doc: &str) -> Result<()> {
    use std::io::Write;
    match (file, &args.result) {
        (Some(f), Some(path)) => {
            f.write_all(format!("{doc}\n").as_bytes())
                .with_context(|| format!("cannot write --result {}", path.display()))?;
            if !still_at(f, path) {
                // The box replaced the file during the run (it can write there): what was written
                // went to the file airlock opened, which the path no longer names. Hide nothing
                // from the user: say so and print the document here too.
                eprintln!("airlock: {} was replaced during the run (by the box?); the result document follows on stderr", path.display());
                eprintln!("{doc}");
            }
            Ok(())
        }
        _ => {
            eprintln!("{doc}");
            Ok(())
        }
    }
}

fn cmd_receipt(args: ReceiptArgs) -> Result<i32> {
    let Resolved {
        policy,
        template,
        backend,
    } = resolve(&args.policy, ChangesMode::Apply)?;
    let argv = if args.command.is_empty() {
        vec!["true".to_string()]
    } else {
        args.command.clone()
    };
    if policy.backend != BackendKind::Native {
        let receipt = backend.plan(&policy, &template)?;
        if args.json {
            let doc = serde_json::json!({ "policy": policy, "receipt": receipt });
            println!("{}", serde_json::to_string_pretty(&doc)?);
        } else {
            println!(
                "backend {} · profile {} · network {}",
                policy.backend, policy.profile, policy.network
            );
            print!("{receipt}");
        }
        return Ok(0);
    }
    let plan = BoxPlan::new(&policy, &argv, &[])?;
    if args.json {
        let doc = serde_json::json!({ "policy": policy, "receipt": plan.receipt, "rootfs": plan.spec.rootfs });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("profile {} · network {}", policy.profile, policy.network);
        print!("{}", plan.receipt);
    }
    Ok(0)
}

fn cmd_check(args: CheckArgs) -> Result<i32> {
    let file = PolicyFile {
        workspace: Some("none".into()),
        ..Default::default()
    };
    let env = BTreeMap::new();
    let policy = airlock_policy::resolve(
        &file,
        &ResolveContext {
            cwd: "/".into(),
            env: &env,
            host: &RealHost,
        },
    )?;
    let all = backends()?;
    let native = all.select(BackendKind::Native)?;
    let res: std::result::Result<RunResult, _> = native.run_attached(
        &policy,
        &Template::Host,
        &["true".to_string()],
        &RunOptions {
            stdin: StdinMode::Null,
            audit: None,
            control_fd: None,
            ask_on_terminal: None,
            asker: None,
            root_at: None,
        },
    );
    let (receipt, can_run, error) = match res {
        Ok(r) => (r.receipt.clone(), r.exit_code == 0, r.error.clone()),
        Err(e) => (
            BoxPlan::new(&policy, &["true".into()], &[])
                .map(|p| p.receipt)
                .unwrap_or_default(),
            false,
            Some(e.to_string()),
        ),
    };
    let report = HostReport {
        receipt,
        can_run,
        // The box above was the native probe; the other kinds are probed here.
        backends: all.report_with(|kind| {
            (kind == BackendKind::Native).then(|| match (&error, can_run) {
                (_, true) => Ok(()),
                (Some(e), false) => Err(e.clone()),
                (None, false) => Err("a trivial box did not run to its end".into()),
            })
        }),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.receipt);
        match (&error, can_run) {
            (_, true) => println!("ok: a box started on this host with the layers above"),
            (Some(e), _) => println!("FAILED: a box could not start here: {e}"),
            (None, false) => println!("FAILED: a box could not start here"),
        }
        println!("backends (--backend):");
        for b in &report.backends {
            let status = match &b.availability {
                Availability::Available if b.backend == BackendKind::Gvisor => {
                    match gvisor_details() {
                        Some(d) => format!("available ({d})"),
                        None => "available".to_string(),
                    }
                }
                Availability::Available => "available".to_string(),
                Availability::Unavailable(why) => format!("cannot run here: {why}"),
                Availability::NotBuilt => "not built yet in this airlock".to_string(),
            };
            println!("  {:<8} {status}", b.backend.as_str());
        }
    }
    Ok(if can_run { 0 } else { FAILED })
}

fn cmd_sandbox_host(sentinel_service: bool) -> Result<i32> {
    use std::os::fd::FromRawFd;
    // SAFETY: fcntl only inspects the descriptor number.
    if unsafe { libc::fcntl(3, libc::F_GETFD) } == -1 {
        anyhow::bail!(
            "sandbox-host is started by airlock itself, with its control socket at descriptor 3"
        );
    }
    // SAFETY: descriptor 3 is the control socket our parent set up for us; we own it from here.
    let control = unsafe { std::os::fd::OwnedFd::from_raw_fd(3) };
    if sentinel_service {
        return Ok(airlock_native::sentinel_service_main(control));
    }
    Ok(airlock_native::sandbox_host_main(control))
}

/// Confines each command the agent starts with airlock's seccomp allowlist.
struct SeccompHooks(airlock_jail::seccomp::SeccompProgram);

impl airlock_agent::AgentHooks for SeccompHooks {
    fn pre_exec(&self) -> std::io::Result<()> {
        self.0.install().map_err(std::io::Error::other)
    }
}

fn cmd_agent(args: &crate::cli::AgentArgs) -> Result<i32> {
    use airlock_agent::standalone::{serve_fd_with, AlreadyConfined, WithOwnRoot};
    use airlock_jail::seccomp::{SeccompProfile, SeccompProgram, SocketPolicy};
    if args.seccomp.is_none() && !args.root_per_command {
        return Ok(airlock_agent::standalone::main_with_args(&[
            "--fd".into(),
            args.fd.to_string(),
        ]));
    }
    let seccomp = match args.seccomp.as_deref() {
        None => None,
        Some("unix") => Some(SocketPolicy::UnixOnly),
        Some("inet") => Some(SocketPolicy::UnixAndInet),
        Some(other) => anyhow::bail!("--seccomp {other:?}: use unix or inet"),
    }
    .map(|sockets| SeccompProgram::build(&SeccompProfile { sockets }))
    .transpose()?;
    let own_root = || {
        // SAFETY: getuid and getgid cannot fail.
        airlock_jail::box_root::OwnRoot::new(unsafe { libc::getuid() }, unsafe { libc::getgid() })
    };
    let served = match (seccomp, args.root_per_command) {
        (Some(program), true) => serve_fd_with(
            args.fd,
            &WithOwnRoot {
                hooks: SeccompHooks(program),
                root: own_root(),
            },
        ),
        (Some(program), false) => serve_fd_with(args.fd, &SeccompHooks(program)),
        (None, _) => serve_fd_with(
            args.fd,
            &WithOwnRoot {
                hooks: AlreadyConfined,
                root: own_root(),
            },
        ),
    };
    match served {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("airlock agent: {e}");
            Ok(1)
        }
    }
}

fn cmd_gvisor_host(resolved: &str) -> Result<i32> {
    use std::os::fd::FromRawFd;
    // SAFETY: fcntl only inspects the descriptor number.
    if unsafe { libc::fcntl(3, libc::F_GETFD) } == -1 {
        anyhow::bail!(
            "gvisor-host is started by airlock itself, with its control socket at descriptor 3"
        );
    }
    // SAFETY: descriptor 3 is the control socket our parent set up for us; we own it from here.
    let control = unsafe { std::os::fd::OwnedFd::from_raw_fd(3) };
    let runsc = serde_json::from_str::<airlock_gvisor::Runsc>(resolved)
        .map_err(|e| format!("bad --resolved for gvisor-host: {e}"));
    Ok(airlock_gvisor::gvisor_host_main(control, runsc))
}

/// `--data-dir`, else `$XDG_DATA_HOME/airlock`, else `~/.local/share/airlock`.
pub(crate) fn data_dir(flag: Option<std::path::PathBuf>) -> Result<std::path::PathBuf> {
    Ok(match flag {
        Some(dir) => dir,
        None => match (
            std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()),
            std::env::var_os("HOME").filter(|v| !v.is_empty()),
        ) {
            (Some(xdg), _) => std::path::PathBuf::from(xdg).join("airlock"),
            (None, Some(home)) => std::path::PathBuf::from(home).join(".local/share/airlock"),
            (None, None) => {
                anyhow::bail!("neither XDG_DATA_HOME nor HOME is set; pass --data-dir DIR")
            }
        },
    })
}

fn cmd_serve(args: ServeArgs) -> Result<i32> {
    let connections = serve_connection_limits(&args)?;
    let data_dir = data_dir(args.data_dir.clone())?;
    if args.max_running == 0 {
        anyhow::bail!("--max-running 0 would never run a box; give at least 1");
    }
    let airlock_exe = std::env::current_exe()
        .context("cannot find airlock's own executable to start sandbox hosts")?;
    let default_backend = args
        .backend
        .parse::<BackendKind>()
        .map_err(|e| anyhow!("--backend: {e}"))?;
    let e2b_default_network = match (args.e2b_network.as_deref(), default_backend) {
        (Some("none"), _) | (None, BackendKind::Wasm) => airlock_server::E2bDefaultNetwork::None,
        (Some(_), BackendKind::Wasm) => anyhow::bail!(
            "--e2b-network internet needs the egress proxy, and a wasm box has no network: drop it, or serve another --backend"
        ),
        _ => airlock_server::E2bDefaultNetwork::Internet,
    };
    let e2b_domain = args
        .e2b_domain
        .as_deref()
        .map(airlock_server::check_e2b_domain)
        .transpose()
        .map_err(|e| anyhow!("--e2b-domain {e}"))?;
    let mut template_aliases = std::collections::BTreeMap::new();
    for a in &args.template_alias {
        let (alias, name) = a.split_once('=').ok_or_else(|| {
            anyhow!("--template-alias {a:?}: write NAME=TEMPLATE, e.g. base=code-interpreter")
        })?;
        template_aliases.insert(alias.to_string(), name.to_string());
    }
    if !template_aliases.contains_key("code-interpreter-v1") {
        let store = airlock_template::TemplateStore::existing(&data_dir);
        if store.inspect("code-interpreter").is_ok() {
            template_aliases.insert("code-interpreter-v1".into(), "code-interpreter".into());
        }
    }
    let idle_pause = match &args.idle_pause {
        Some(d) => {
            let d = parse_duration(d).context("--idle-pause")?;
            if d.is_zero() {
                anyhow::bail!("--idle-pause 0 would pause every box at once; give a duration like 30m, or leave it out");
            }
            Some(d)
        }
        None => None,
    };
    let pools = args
        .pool
        .iter()
        .map(|p| airlock_server::PoolSpec::parse(p).map_err(|e| anyhow!("--pool {p:?}: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let pool_memory = match &args.pool_memory {
        Some(s) => airlock_policy::parse_size(s).map_err(|e| anyhow!("--pool-memory: {e}"))?,
        None => airlock_server::DEFAULT_POOL_MEMORY,
    };
    let template_upload_max = match &args.template_upload_max {
        Some(s) => {
            airlock_policy::parse_size(s).map_err(|e| anyhow!("--template-upload-max: {e}"))?
        }
        None => airlock_server::DEFAULT_TEMPLATE_UPLOAD_MAX,
    };
    airlock_server::serve(airlock_server::ServerConfig {
        template_upload_max,
        pools,
        pool_memory,
        idle_pause,
        template_aliases,
        default_backend,
        listen: args.listen,
        data_dir,
        max_running: args.max_running,
        airlock_exe,
        new_e2b_key: args.new_e2b_key,
        e2b_default_network,
        e2b_domain,
        e2b_map_host: args.e2b_map_host.clone(),
        connections,
    })?;
    Ok(0)
}

fn serve_connection_limits(args: &ServeArgs) -> Result<airlock_server::ConnectionLimits> {
    if args.max_connections == 0 {
        anyhow::bail!("--max-connections 0 would refuse every connection; give at least 1");
    }
    if args.max_connections_per_peer == 0 {
        anyhow::bail!(
            "--max-connections-per-peer 0 would refuse every connection; give at least 1"
        );
    }
    let header_timeout = parse_duration(&args.header_timeout).context("--header-timeout")?;
    if header_timeout.is_zero() {
        anyhow::bail!("--header-timeout 0 would close every connection at once; give e.g. 10s");
    }
    let idle_timeout = parse_duration(&args.idle_timeout).context("--idle-timeout")?;
    if idle_timeout.is_zero() {
        anyhow::bail!(
            "--idle-timeout 0 would close every kept-alive connection at once; give e.g. 120s"
        );
    }
    Ok(airlock_server::ConnectionLimits {
        max_connections: args.max_connections,
        max_connections_per_peer: args.max_connections_per_peer,
        header_timeout,
        idle_timeout,
    })
}

fn cmd_code(args: CodeArgs) -> Result<i32> {
    let api = client::Api::new(&args.server)?;
    client::code(&api, &args)
}

fn cmd_sandbox(args: SandboxArgs) -> Result<i32> {
    let api = client::Api::new(&args.server)?;
    match args.command {
        SandboxCommand::Create(a) => client::create(&api, &a),
        SandboxCommand::Ls(a) => client::list(&api, &a),
        SandboxCommand::Exec(a) => client::exec(&api, &a),
        SandboxCommand::Cp(a) => client::copy(&api, &a),
        SandboxCommand::Kill(a) => client::kill(&api, &a),
        SandboxCommand::Pause(a) => client::pause(&api, &a),
        SandboxCommand::Resume(a) => client::resume(&api, &a),
        SandboxCommand::Snapshot(a) => client::snapshot(&api, &a),
        SandboxCommand::Fork(a) => client::fork(&api, &a),
    }
}

/// Whether `path` still leads to the file `f` is open on.
fn still_at(f: &std::fs::File, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (f.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}
