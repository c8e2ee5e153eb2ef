//! Flags and subcommands. The names here are a contract: scripts and other tools rely on them.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Run untrusted code in a disposable, kernel-enforced sandbox.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// The runsc binary gVisor boxes (--backend gvisor) run under; default: runsc on PATH.
    #[arg(long, global = true, value_name = "PATH")]
    pub runsc: Option<PathBuf>,
    /// The gVisor platform: ptrace, systrap or kvm; default: systrap where runsc has it, else
    /// ptrace.
    #[arg(long, global = true, value_name = "NAME")]
    pub gvisor_platform: Option<String>,
}

/// `defer`: a subcommand's own flags are defined only when it is the one invoked (clap built
/// every subcommand's ~40 flags on each start, a fifth of a millisecond of `airlock run`).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Run one command in a box. Exit status: the command's own; 128+N if killed by signal N;
    /// 124 on timeout; 125 when airlock itself fails; 126/127 when the command cannot be run.
    Run(RunArgs),
    /// Print what a box with these flags would enforce, layer by layer, without running anything.
    Receipt(ReceiptArgs),
    /// Print what this host can enforce, layer by layer (starts a trivial box to find out).
    Check(CheckArgs),
    /// Internal: the supervisor process of one long-lived sandbox, driven over descriptor 3 by
    /// the program that started it (the server). Not for direct use.
    #[command(hide = true)]
    SandboxHost {
        /// Be the one cleanup sentinel the program's box hosts join instead.
        #[arg(long)]
        sentinel_service: bool,
    },
    /// Internal: the host process of one gVisor box (runsc and everything around it), driven
    /// over descriptor 3 like sandbox-host. Not for direct use.
    #[command(hide = true)]
    GvisorHost(GvisorHostArgs),
    /// Internal: serve the agent protocol on descriptor N, a connected stream socket to the host
    /// (the init of a box that another backend made). Not for direct use.
    #[command(hide = true)]
    Agent(AgentArgs),
    /// Serve the HTTP API: sandboxes created, used and killed over REST (JSON, streamed exec
    /// output and files). Prints the API key on the first start with a data dir, then
    /// `listening on http://ADDR`. SIGTERM or SIGINT kills every box and stops.
    Serve(ServeArgs),
    /// Create, list, use and kill sandboxes on a running `airlock serve`. Server errors exit 125.
    Sandbox(SandboxArgs),
    /// Run code in a persistent interpreter context of a sandbox on a running `airlock serve`
    /// (without --sandbox: in a new sandbox, deleted afterwards). The code is CODE, else stdin; with
    /// a terminal on stdin and no CODE, an interactive prompt runs snippet after snippet.
    /// Output and results go to stdout; errors, tracebacks and rich data summaries to stderr.
    /// Exit status: 0 ok, 1 error, 130 interrupted (timeout), 125 client or server failure.
    Code(CodeArgs),
    /// Serve code execution as MCP tools over stdio (run_code, run_command, read_file,
    /// write_file, list_files, sandbox_info), for Claude Desktop-style clients. One box per
    /// session, started on the first tool call, ended when stdin closes or after --idle-timeout.
    /// The profile decides which tools exist: read-only offers none that writes or runs code.
    Mcp(McpArgs),
    /// Run a stdio MCP server inside a box and relay its JSON-RPC between this process's stdio
    /// and the server: tools/list is filtered by --tools/--deny-tools, calls to filtered tools are
    /// refused without reaching the server, and every call goes to --audit FILE.
    Wrap(WrapArgs),
    /// Manage templates: read-only root filesystems boxes start from (`--template NAME`),
    /// imported from OCI images and stored once under the data directory.
    #[command(subcommand)]
    Template(TemplateCommand),
}

#[derive(Debug, Subcommand)]
pub enum TemplateCommand {
    /// Build a template from a spec (TOML): a Debian suite and packages (mmdebstrap, from the
    /// mirror the host's apt uses), then pip and npm packages, files and commands, run inside a
    /// box that reaches only the package indexes the host is configured with. An unchanged spec
    /// is answered from the store at once.
    Build(TemplateBuildArgs),
    /// Import an OCI image layout directory or a `docker save` / `podman save` tarball.
    Import(TemplateImportArgs),
    /// List the stored templates.
    Ls(TemplateStoreArgs),
    /// Print one template's record (digest, source, defaults, size) as JSON.
    Inspect(TemplateNameArgs),
    /// Remove a template (refused while a running box uses it).
    Rm(TemplateNameArgs),
}

#[derive(Debug, Args)]
pub struct TemplateStoreArgs {
    /// Where templates are stored (default: $XDG_DATA_HOME/airlock or ~/.local/share/airlock).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TemplateNameArgs {
    #[command(flatten)]
    pub store: TemplateStoreArgs,
    /// The template's name.
    pub name: String,
}

#[derive(Debug, Args)]
pub struct TemplateBuildArgs {
    #[command(flatten)]
    pub store: TemplateStoreArgs,
    /// Store it under this name (default: the spec's `name`).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Build even if the store holds this spec's result.
    #[arg(long)]
    pub force: bool,
    /// The spec file.
    pub spec: PathBuf,
}

#[derive(Debug, Args)]
pub struct TemplateImportArgs {
    #[command(flatten)]
    pub store: TemplateStoreArgs,
    /// The name to store it under (default: the image's tag, else the file's name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The most the image may unpack to, over all layers: a larger one (or a decompression
    /// bomb) is refused.
    #[arg(long, value_name = "SIZE", default_value = "16G")]
    pub max_size: String,
    /// The image: an OCI layout directory or a tarball.
    pub path: PathBuf,
}

#[derive(Debug, Args)]
pub struct GvisorHostArgs {
    /// The runsc the backend found (JSON: path, platform, version).
    #[arg(long, value_name = "JSON")]
    pub resolved: String,
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The descriptor of the connection to the host.
    #[arg(long, value_name = "N")]
    pub fd: i32,
    /// Install airlock's seccomp allowlist in every command before it starts (`unix`: local
    /// sockets only; `inet`: also TCP/UDP), as the native box does.
    #[arg(long, value_name = "unix|inet")]
    pub seccomp: Option<String>,
    /// Give the box a root (E2B's `user="root"`): each root command makes a user namespace of
    /// its own, nested in the agent's, where uid 0 is the agent's user and holds no capability
    /// (for a box whose kernel cannot join one shared namespace: gVisor's). Without it, a root
    /// command is refused as unsupported.
    #[arg(long)]
    pub root_per_command: bool,
}

// Which tools an MCP client may see and call. (Plain comments on flattened and payload
// structs: a doc comment there would become the help's description of every subcommand that
// uses them, since `defer` defines their flags after the subcommand's own description.)
#[derive(Debug, Args, Default)]
pub struct ToolArgs {
    /// Only these tools: comma-separated names or globs (`read_*,search`); repeatable.
    #[arg(long, value_name = "PATTERNS")]
    pub tools: Vec<String>,
    /// Never these tools (wins over --tools): comma-separated names or globs; repeatable.
    #[arg(long, value_name = "PATTERNS")]
    pub deny_tools: Vec<String>,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub tools: ToolArgs,
    /// End the session's box after this long without a tool call (the next call starts a fresh
    /// one), e.g. 15m. A fifteenth of it (1 s to 60 s) without a call pauses the box in place
    /// first (CPU given back, its interpreter state kept); the next call resumes it.
    #[arg(long, value_name = "DURATION", default_value = "15m")]
    pub idle_timeout: String,
    /// Append every approval question and its answer (before each command under --approval
    /// untrusted, and each request_network_grant) and, with --net proxy, every network decision
    /// of the session's boxes to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WrapArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub tools: ToolArgs,
    /// Append every tool call (tool, arguments digest, duration, status) and, with --net proxy,
    /// every network decision to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// The MCP server's command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CodeArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// The language: python (default), js or bash.
    #[arg(long, value_name = "LANG", value_parser = ["python", "js", "bash"])]
    pub lang: Option<String>,
    /// The context to run in (default: the language's default context).
    #[arg(long, value_name = "ID")]
    pub context: Option<String>,
    /// The sandbox to run in (default: a new one, deleted afterwards).
    #[arg(long, value_name = "ID")]
    pub sandbox: Option<String>,
    /// Seconds; the execution is interrupted past it (exit 130).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// The code (default: read from stdin).
    #[arg(value_name = "CODE")]
    pub code: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Point a template name clients ask for at a stored template, e.g.
    /// `--template-alias base=code-interpreter` (repeatable). Without one,
    /// `code-interpreter-v1` is the stored `code-interpreter` when there is one; other names
    /// start on the host's system dirs.
    #[arg(long, value_name = "NAME=TEMPLATE")]
    pub template_alias: Vec<String>,
    /// HOST:PORT to listen on (port 0 picks a free port).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7777")]
    pub listen: String,
    /// Where the store (sandboxes, events, audit log, API key hash) lives
    /// (default: $XDG_DATA_HOME/airlock or ~/.local/share/airlock).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Boxes running at once; further creates are queued (FIFO). Paused boxes do not count.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_running: usize,
    /// Keep boxes started ahead of demand (repeatable): `[BACKEND:]size=N[,KEY=VALUE...]`,
    /// keys `name`, `backend`, `template`, `network` (none or proxy), `memory`, `cpus`, `pids`,
    /// `disk`, e.g. `native:size=4` or `template=python,backend=gvisor,size=2`. A create (REST
    /// or E2B) whose box would be made the same way claims a ready box; its env, allowlist,
    /// metadata and timeout are applied at the claim. Ready boxes do not count against
    /// --max-running.
    #[arg(long, value_name = "SPEC")]
    pub pool: Vec<String>,
    /// Host memory the pools' ready boxes may hold, e.g. 2G (default 1G); pools that would
    /// hold more are refused at start.
    #[arg(long, value_name = "SIZE")]
    pub pool_memory: Option<String>,
    /// Pause a sandbox after this long without a request or a running command (keepalives do
    /// not count), e.g. 30m; its next request resumes it. A create request's `idle_pause`
    /// overrides it. Default: never.
    #[arg(long, value_name = "DURATION")]
    pub idle_pause: Option<String>,
    /// Replace the E2B-format API key (for E2B's SDKs) with a new one, printed on start: use it
    /// when the key printed on the first start is lost.
    #[arg(long)]
    pub new_e2b_key: bool,
    /// The largest upload of a template build's files through E2B's Template SDK (its COPY
    /// steps' archive), e.g. 256M (default 1G); larger ones are refused with 413. The server
    /// keeps at most four times this of uploaded files, the least recently used dropped first
    /// (the SDK uploads them again when a build needs them).
    #[arg(long, value_name = "SIZE")]
    pub template_upload_max: Option<String>,
    /// Network of E2B sandboxes whose create request sets none: `internet` (any public
    /// destination by name through the egress proxy; private, loopback and metadata addresses
    /// stay refused) or `none`. Default: `internet`, or `none` with `--backend wasm` (a wasm
    /// box has no network).
    #[arg(long, value_name = "MODE", value_parser = ["internet", "none"])]
    pub e2b_network: Option<String>,
    /// Serve E2B sandboxes' ports under DOMAIN: a request whose Host is
    /// `{port}-{sandboxID}.DOMAIN` goes to that port inside that sandbox (HTTP and WebSocket),
    /// and `sandbox.get_host(port)` returns that name. `*.DOMAIN` must reach this server:
    /// `localhost` works on one machine for clients that resolve `*.localhost` (curl,
    /// browsers). Give the port too (`localhost:7777`) for names clients can use as is.
    /// Default: none (no traffic into boxes' ports).
    #[arg(long, value_name = "DOMAIN")]
    pub e2b_domain: Option<String>,
    /// Resolve NAME to IP in every E2B sandbox's egress proxy, without DNS (like curl
    /// --resolve; repeatable). It grants nothing: the sandbox's own rules (`allowOut`) must
    /// still allow the name, and a private or loopback IP needs `allowOut` to list it too.
    #[arg(long, value_name = "NAME=IP")]
    pub e2b_map_host: Vec<String>,
    /// The kind of box for sandboxes whose create request names none: native, gvisor,
    /// microvm or wasm (`airlock check` says which this host can run).
    #[arg(long, value_name = "KIND", default_value = "native")]
    pub backend: String,
    /// Connections held at once. When full, the connection idle the longest (no request in
    /// flight) is closed for the new one; if none is idle, the new one is answered 503. Lowered
    /// to fit the open-file limit, less descriptors kept for boxes and files.
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_connections: usize,
    /// Connections held at once from one peer (an IPv4 address or an IPv6 /64); more are
    /// answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_connections_per_peer: usize,
    /// Time a connection has to send a request's complete headers, from when it opens or, on a
    /// kept-alive connection, from the first byte of the next request; then it is closed.
    /// Requests and streams under way are not cut by it. E.g. 10s, 500ms.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub header_timeout: String,
    /// How long a kept-alive connection may sit with nothing sent between requests before it is
    /// closed (keep it longer than clients pool connections; when the server is full, the
    /// idlest connection is closed first anyway).
    #[arg(long, value_name = "DURATION", default_value = "120s")]
    pub idle_timeout: String,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print the result document (exit, times, memory, limits hit, receipt, events) as JSON on
    /// stderr, or into --result FILE.
    #[arg(long)]
    pub json: bool,
    /// Write the JSON result document to FILE (implies --json, but not on stderr).
    #[arg(long, value_name = "FILE")]
    pub result: Option<PathBuf>,
    /// Give the box /dev/null as stdin instead of airlock's stdin (or terminal).
    #[arg(long)]
    pub no_stdin: bool,
    /// Append every network decision (proxied boxes) to FILE as JSON lines, as it happens.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Read control messages (JSON lines) from descriptor FD while the box runs, e.g.
    /// {"network": {"allow_domain": ["api.example"]}} to replace a proxied box's allowlist.
    #[arg(long, value_name = "FD")]
    pub control_fd: Option<i32>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ReceiptArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print the receipt as JSON.
    #[arg(long)]
    pub json: bool,
    /// The command (optional; only shown).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

// Policy flags, shared by `run` and `receipt`. They override `--policy FILE`.
#[derive(Debug, Args, Default)]
pub struct PolicyArgs {
    /// The box's root filesystem: `host` (the host's system dirs, read-only; the default) or a
    /// stored template (`airlock template ls`), read-only under the box's own writable layer.
    #[arg(long, value_name = "NAME")]
    pub template: Option<String>,
    /// Where templates are stored (default: $XDG_DATA_HOME/airlock or ~/.local/share/airlock).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The kind of box: native | gvisor | microvm | wasm (default: native; `airlock check` says
    /// which this host can run).
    #[arg(long, value_name = "KIND")]
    pub backend: Option<String>,
    /// read-only | workspace-write | full-access (default: workspace-write).
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,
    /// The workspace: DIR[:PATH_INSIDE] (default: the current directory, at the same path), or
    /// `none`.
    #[arg(long, value_name = "DIR[:PATH_INSIDE]")]
    pub workspace: Option<String>,
    /// An extra host path, visible read-only at the same path.
    #[arg(long, value_name = "PATH")]
    pub read: Vec<String>,
    /// An extra host path, visible and writable at the same path.
    #[arg(long, value_name = "PATH")]
    pub write: Vec<String>,
    /// Hide a path that a grant would expose.
    #[arg(long, value_name = "PATH")]
    pub deny: Vec<String>,
    /// How the workspace's writes reach the host: `apply` (into a change layer on the box's
    /// tmpfs, counted in --disk, applied when the box ends; `airlock run`'s default) or
    /// `direct` (as they happen, no total cap; the default of `mcp` and `wrap`).
    #[arg(long, value_name = "MODE")]
    pub changes: Option<String>,
    /// A TOML policy file; flags override it. Unknown keys are an error.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// none | proxy | host (default: none; host for full-access).
    #[arg(long, value_name = "MODE")]
    pub net: Option<String>,
    /// With --net proxy: allow NAME[:PORT] (exact) or *.NAME[:PORT] (its subdomains).
    #[arg(long, value_name = "PATTERN[:PORT]")]
    pub allow_domain: Vec<String>,
    /// With --net proxy: refuse NAME[:PORT] or *.NAME[:PORT]; deny wins over allow.
    #[arg(long, value_name = "PATTERN[:PORT]")]
    pub deny_domain: Vec<String>,
    /// With --net proxy: allow an IP range, as a literal destination and as the resolved address
    /// of an allowed name (private and loopback addresses are refused without it).
    #[arg(long, value_name = "CIDR[:PORT]")]
    pub allow_ip: Vec<String>,
    /// With --net proxy: resolve NAME to IP in the proxy, without DNS (like curl --resolve).
    #[arg(long, value_name = "NAME=IP")]
    pub map_host: Vec<String>,
    /// With --net proxy: concurrent connections the box may hold (default 1024).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<u32>,
    /// With --net proxy: total bytes the box may move through the proxy (default: unlimited).
    #[arg(long, value_name = "SIZE")]
    pub byte_budget: Option<String>,
    /// With --net proxy: `never` (the default: a refusal is final), `on-request` (a connection
    /// the policy does not allow is held while someone is asked: --approver, else airlock's
    /// terminal for `run`) or `untrusted` (`mcp` also asks the user before each command).
    #[arg(long, value_name = "POLICY")]
    pub approval: Option<String>,
    /// A host program that answers approval requests, run with `sh -c`: one JSON line per
    /// request on its stdin, one JSON answer line on its stdout (see docs/approvals.md).
    /// Without it, `airlock run` asks on its controlling terminal and `airlock mcp` asks the
    /// user through MCP elicitation.
    #[arg(long, value_name = "CMD")]
    pub approver: Option<String>,
    /// How long a held connection waits for an answer before it is refused (default 30s).
    #[arg(long, value_name = "DURATION")]
    pub approval_timeout: Option<String>,
    /// With --net proxy: a secret the egress proxy adds to requests to its hosts
    /// (--secret-host); inside the box the variable NAME holds a placeholder. NAME takes $NAME
    /// from airlock's environment, NAME=@FILE reads a file, NAME=@- reads stdin. A value is
    /// never given on the command line (ps shows it).
    #[arg(long, value_name = "NAME[=@FILE|=@-]")]
    pub secret: Vec<String>,
    /// A destination that receives a secret: [NAME=]PATTERN (NAME[:PORT] or *.NAME[:PORT],
    /// port 443 when none). `NAME=` may be left out when one --secret is given. Binding a
    /// secret also allows its hosts.
    #[arg(long, value_name = "[NAME=]PATTERN")]
    pub secret_host: Vec<String>,
    /// Memory cap, e.g. 512M (default 4G).
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Process cap (default 1024).
    #[arg(long, value_name = "N")]
    pub pids: Option<u64>,
    /// CPU cap in CPUs, e.g. 1 or 0.5 (default: none).
    #[arg(long, value_name = "N")]
    pub cpus: Option<f64>,
    /// Wall-clock limit, e.g. 30s, 5m (default: none). The whole box is killed; exit 124.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Size cap shared by every tmpfs of the box: /tmp, home, /dev/shm (default 1G).
    #[arg(long, value_name = "SIZE")]
    pub disk: Option<String>,
    /// Cap on stdout+stderr bytes; the box is killed past it (default 1G).
    #[arg(long, value_name = "SIZE")]
    pub output_limit: Option<String>,
    /// Pass NAME from airlock's environment, or set NAME=VALUE. Nothing else gets in except
    /// PATH, HOME, USER, LANG, TERM and TZ.
    #[arg(long, value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// Refuse to run when any layer would only be enforced by a fallback or not at all.
    #[arg(long)]
    pub fail_if_unavailable: bool,
}

// `airlock sandbox ...`: the client of `airlock serve`.
#[derive(Debug, Args)]
pub struct SandboxArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: SandboxCommand,
}

// Where the server is and how to authenticate to it.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// The server's base URL (default: $AIRLOCK_SERVER, else http://127.0.0.1:7777).
    #[arg(long, value_name = "URL", global = true)]
    pub server: Option<String>,
    /// The API key `airlock serve` printed on its first start (default: $AIRLOCK_API_KEY).
    #[arg(long, value_name = "KEY", global = true)]
    pub api_key: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Create a sandbox; prints its id, then its access token (or the whole record with --json).
    Create(CreateArgs),
    /// List sandboxes, newest first.
    Ls(LsArgs),
    /// Run a command in a sandbox, streaming its output. Exit status: the command's own; 128+N
    /// if killed by signal N; 124 on timeout; 125 when the client or the server fails. Stdin is
    /// sent to the command when it is not a terminal.
    Exec(ExecArgs),
    /// Copy a file into or out of a sandbox: exactly one side is ID:/absolute/path; `-` as the
    /// local side is stdin or stdout.
    Cp(CpArgs),
    /// Kill sandboxes; prints each id with its final state.
    Kill(KillArgs),
    /// Pause a sandbox: its processes stop where they are and continue on resume (memory kept:
    /// a microVM's or gVisor box's memory is saved and given back, a native box is frozen in
    /// place); a paused sandbox does not count against --max-running. Prints `ID paused`, and
    /// on stderr what was kept.
    Pause(PauseArgs),
    /// Resume a paused sandbox (waits for a slot when --max-running are busy).
    Resume(ResumeArgs),
    /// Take a snapshot of a running sandbox (it runs on); prints its id, kind and size.
    Snapshot(SnapshotArgs),
    /// Start N new sandboxes from one snapshot of a sandbox (a new one, or --snapshot); each
    /// continues from that moment with its own id, token and writable state. Prints `ID TOKEN`
    /// per new sandbox.
    Fork(ForkArgs),
}

#[derive(Debug, Args)]
pub struct PauseArgs {
    /// The sandbox's id.
    pub id: String,
    /// Keep only its files and give its memory back: its processes start anew on resume.
    #[arg(long)]
    pub files_only: bool,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The sandbox's id.
    pub id: String,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// The sandbox's id.
    pub id: String,
    /// A label for it.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The sandbox's id.
    pub id: String,
    /// How many new sandboxes (1 to 16).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub count: u32,
    /// Fork from this snapshot of the sandbox instead of taking a new one.
    #[arg(long, value_name = "SNAPSHOT")]
    pub snapshot: Option<String>,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// base (working directory /tmp) or user (working directory the home).
    #[arg(long, value_name = "NAME", value_parser = ["base", "user"])]
    pub template: Option<String>,
    /// The sandbox's life in seconds (server default 300).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// A label KEY=VALUE, to find the sandbox with `ls --metadata` (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub metadata: Vec<String>,
    /// A variable NAME=VALUE in the sandbox's environment (repeatable).
    #[arg(long, value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// none (loopback only) or proxy (egress through the allowlisting proxy).
    #[arg(long, value_name = "MODE", value_parser = ["none", "proxy"])]
    pub net: Option<String>,
    /// With --net proxy: allow NAME[:PORT] (exact) or *.NAME[:PORT] (its subdomains).
    #[arg(long, value_name = "PATTERN[:PORT]")]
    pub allow_domain: Vec<String>,
    /// Memory cap, e.g. 512M.
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Process cap.
    #[arg(long, value_name = "N")]
    pub pids: Option<u64>,
    /// Print the sandbox's record (token included) as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Only sandboxes in this state: queued, starting, running, paused, resuming, killed, expired,
    /// dead, failed (repeatable).
    #[arg(long, value_name = "STATE")]
    pub state: Vec<String>,
    /// Only sandboxes labelled KEY=VALUE (repeatable; all must match).
    #[arg(long, value_name = "KEY=VALUE")]
    pub metadata: Vec<String>,
    /// Print the records as a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The sandbox's id.
    #[arg(value_name = "ID")]
    pub id: String,
    /// A variable NAME=VALUE for this command (repeatable).
    #[arg(long, value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// The directory the command starts in (inside the sandbox).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Seconds; the command is killed past it (exit 124).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CpArgs {
    /// ID:/path/in/sandbox, a local path, or `-` (stdin).
    #[arg(value_name = "SRC")]
    pub src: String,
    /// ID:/path/in/sandbox, a local path, or `-` (stdout).
    #[arg(value_name = "DST")]
    pub dst: String,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// The sandboxes' ids.
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::Cli;
    use clap::{CommandFactory, Parser};

    #[test]
    fn the_cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn each_subcommands_help_describes_the_subcommand_itself() {
        // With `defer`, a flattened struct's doc comment would replace the subcommand's own
        // description in its --help (it is applied last); the listing would still be right.
        let cli = Cli::command();
        let mut checked = 0;
        for sub in cli.get_subcommands() {
            let name = sub.get_name().to_owned();
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            let help = match Cli::try_parse_from(["airlock", name.as_str(), "--help"]) {
                Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.to_string(),
                other => panic!("{name} --help: {other:?}"),
            };
            let first = help
                .lines()
                .next()
                .unwrap_or_default()
                .trim_end_matches('.');
            assert_eq!(first, about.trim_end_matches('.'), "{name} --help");
            checked += 1;
        }
        assert!(checked >= 10, "only {checked} subcommands");
    }
}
