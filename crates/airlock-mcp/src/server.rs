//! The MCP server of `airlock mcp`: one handler per MCP session (one conversation), owning that
//! session's box slot. Tools are listed per the session's catalogue (schema-level filtering) and
//! every call is checked again at dispatch, so a call to an unlisted tool is refused even if a
//! client sends it.

use crate::boxes::{BoxSlot, StartBox};
use crate::calls::{call, CallEnv};
use crate::catalogue::{description, input_schema, reach, Catalogue, ToolEffect, ToolName};
use crate::consent::{self, Consent};
use crate::denial::Denial;
use crate::fs_grant::FsGrantAsk;
use crate::grant_program::GrantProgram;
use crate::grant_request::GrantAsk;
use crate::held::HeldAsker;
use crate::pattern::ToolFilter;
use crate::roots::Roots;
use crate::wrap::{ApprovalRecord, AuditSink, Record};
use airlock_policy::{ApprovalMode, ApprovalPolicy, NetworkMode, ResolvedPolicy};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::Peer;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

/// How long a session's box runs without a call before it is paused in place: a fifteenth of
/// the idle timeout, between 1 s and 60 s (60 s with the default 15 min).
pub fn pause_after(idle: Duration) -> Duration {
    (idle / 15).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// What the sessions of one `airlock mcp` (or one `/mcp` profile) share.
pub struct SessionSettings {
    /// The policy boxes start under (with no approver program, nobody in the box's host
    /// process can be asked: its refusals are final there, and the model asks through
    /// `request_network_grant`).
    policy: ResolvedPolicy,
    /// The approval policy as given: `untrusted` asks before each command; its deadline.
    approval: ApprovalPolicy,
    catalogue: Catalogue,
    env: Arc<CallEnv>,
    tools: Vec<Tool>,
    reach: String,
    /// Where questions and answers are recorded, and the file the boxes' proxies append their
    /// network decisions to (`--audit`).
    audit: Option<(Arc<AuditSink>, PathBuf)>,
}

impl SessionSettings {
    /// Settings for boxes under `policy`, offering the tools its profile and `filter` allow.
    pub fn new(mut policy: ResolvedPolicy, filter: ToolFilter) -> SessionSettings {
        let approval = policy.egress.approval.clone();
        if approval.approver.is_none() {
            policy.egress.approval.mode = ApprovalMode::Never;
        }
        let roots = Roots::of(&policy);
        let reach = reach(&policy, &roots);
        let asks = policy.network == NetworkMode::Proxy && approval.mode.asks_for_network();
        let catalogue = Catalogue::new(policy.profile, filter).with_grant_requests(asks);
        let tools = catalogue
            .offered()
            .into_iter()
            .map(|t| {
                let schema = match input_schema(t) {
                    serde_json::Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                };
                let hints = ToolAnnotations::new()
                    .read_only(t.effect() == ToolEffect::Reads)
                    .destructive(t.effect() == ToolEffect::Writes);
                Tool::new(t.as_str(), description(t, &reach), schema).with_annotations(hints)
            })
            .collect();
        let receipt = airlock_native::BoxPlan::new(&policy, &["true".to_string()], &[])
            .map(|p| p.receipt.to_string())
            .unwrap_or_else(|e| format!("(the receipt cannot be computed: {e})"));
        let info = format!(
            "{reach}\n\nprofile {} · network {}\n{receipt}",
            policy.profile, policy.network
        );
        SessionSettings {
            policy,
            approval,
            catalogue,
            env: Arc::new(CallEnv { roots, info }),
            tools,
            reach,
            audit: None,
        }
    }

    /// The same, recording every question and its answer in `sink` (the log at `path`), and
    /// with `--net proxy` every network decision of the boxes, appended to the same file.
    pub fn with_audit(mut self, sink: Arc<AuditSink>, path: PathBuf) -> SessionSettings {
        self.audit = Some((sink, path));
        self
    }

    fn audit_sink(&self) -> Option<&AuditSink> {
        self.audit.as_ref().map(|(s, _)| s.as_ref())
    }

    /// The tools offered.
    pub fn tool_names(&self) -> Vec<ToolName> {
        self.catalogue.offered()
    }
}

/// Builds a session's settings from the query string of its first request (or says why not).
pub type SettingsBuilder = Arc<dyn Fn(&str) -> Result<SessionSettings, String> + Send + Sync>;

/// Where a session's settings come from: fixed (stdio), or chosen by the first HTTP request.
pub enum SettingsSource {
    Fixed(Arc<SessionSettings>),
    /// Built from the query string of the session's first request (`profile`, `tools`, `deny_tools`).
    FromQuery(SettingsBuilder),
}

/// One MCP session.
pub struct McpSession {
    source: Arc<SettingsSource>,
    settings: OnceLock<Result<Arc<SessionSettings>, String>>,
    starter: Arc<dyn StartBox>,
    slot: OnceLock<Arc<Mutex<BoxSlot>>>,
    /// The approver program asked about the model's grant requests (`--approver`), started
    /// with the first one.
    grant_program: OnceLock<Result<Arc<GrantProgram>, String>>,
    idle: Duration,
    reaper: AtomicBool,
}

impl McpSession {
    /// A session whose box (once started) ends after `idle` without calls.
    pub fn new(
        source: Arc<SettingsSource>,
        starter: Arc<dyn StartBox>,
        idle: Duration,
    ) -> McpSession {
        McpSession {
            source,
            settings: OnceLock::new(),
            starter,
            slot: OnceLock::new(),
            grant_program: OnceLock::new(),
            idle,
            reaper: AtomicBool::new(false),
        }
    }

    fn settings(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Arc<SessionSettings>, ErrorData> {
        let got = self.settings.get_or_init(|| match &*self.source {
            SettingsSource::Fixed(s) => Ok(Arc::clone(s)),
            SettingsSource::FromQuery(build) => {
                let query = ctx
                    .extensions
                    .get::<http::request::Parts>()
                    .and_then(|p| p.uri.query().map(str::to_string))
                    .unwrap_or_default();
                build(&query).map(Arc::new)
            }
        });
        got.clone().map_err(|e| ErrorData::invalid_params(e, None))
    }

    /// The session's box slot, made on the first call: with no approver program, its boxes
    /// ask `peer` about held connections if it can be asked (else their refusals are final).
    fn slot(&self, settings: &SessionSettings, peer: &Peer<RoleServer>) -> Arc<Mutex<BoxSlot>> {
        Arc::clone(self.slot.get_or_init(|| {
            let audit_file = (settings.policy.network == NetworkMode::Proxy)
                .then(|| settings.audit.as_ref().map(|(_, p)| p.clone()))
                .flatten();
            let approval = &settings.approval;
            let asks = settings.policy.network == NetworkMode::Proxy
                && approval.mode.asks_for_network()
                && approval.approver.is_none();
            let mut policy = settings.policy.clone();
            let held = (asks && HeldAsker::can_ask(peer)).then(|| {
                policy.egress.approval.mode = approval.mode;
                Arc::new(HeldAsker::new(
                    peer.clone(),
                    tokio::runtime::Handle::current(),
                    settings.audit.as_ref().map(|(s, _)| Arc::clone(s)),
                ))
            });
            Arc::new(Mutex::new(
                BoxSlot::new(policy, Arc::clone(&self.starter))
                    .with_audit_file(audit_file)
                    .with_held_asker(held),
            ))
        }))
    }

    /// Pauses the box after [`pause_after`]`(idle)` without calls (the next call resumes it
    /// with its state) and ends it after `idle` (checked a few times per period).
    fn start_reaper(&self, slot: &Arc<Mutex<BoxSlot>>) {
        if self.reaper.swap(true, Ordering::Relaxed) {
            return;
        }
        let weak: Weak<Mutex<BoxSlot>> = Arc::downgrade(slot);
        let idle = self.idle;
        let pause = pause_after(idle);
        let every = (pause / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
        tokio::spawn(async move {
            // The last failure said on stderr, so a pause that keeps failing is said once.
            let mut said: Option<String> = None;
            loop {
                tokio::time::sleep(every).await;
                let Some(slot) = weak.upgrade() else { return };
                let failed = tokio::task::spawn_blocking(move || {
                    let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
                    if slot.end_if_idle(idle) {
                        return None;
                    }
                    slot.pause_if_idle(pause).err().map(|e| e.to_string())
                })
                .await
                .unwrap_or_else(|e| Some(format!("the idle check failed: {e}")));
                if let Some(why) = &failed {
                    if said.as_ref() != Some(why) {
                        eprintln!(
                            "airlock mcp: could not pause the idle box (it keeps running; \
                             tried again in {} ms): {why}",
                            every.as_millis()
                        );
                    }
                }
                said = failed;
            }
        });
    }
}

impl ServerHandler for McpSession {
    fn get_info(&self) -> ServerConfig {
        let instructions = match self.settings.get() {
            Some(Ok(s)) => s.reach.clone(),
            _ => "Run code and commands in an airlock sandbox: a disposable Linux box that the kernel holds shut. Call sandbox_info to see what it may reach.".into(),
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("airlock", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let settings = self.settings(&ctx)?;
        Ok(ListToolsResult::with_all_items(settings.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let settings = self.settings(&ctx)?;
        let tool = match settings.catalogue.check(&request.name) {
            Ok(t) => t,
            Err(why) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    Denial::tool(&request.name, &why).text(),
                )])
                .into())
            }
        };
        let slot = self.slot(&settings, &ctx.peer);
        self.start_reaper(&slot);
        let args = request.arguments.unwrap_or_default();
        let deadline = Duration::from_millis(settings.approval.timeout_ms);
        if tool.effect() == ToolEffect::Asks {
            let program = settings.approval.approver.as_deref().map(|cmd| {
                self.grant_program
                    .get_or_init(|| GrantProgram::spawn(cmd).map(Arc::new))
                    .clone()
            });
            let who = match program {
                None => GrantAsker::Person(&ctx.peer),
                Some(Ok(p)) => GrantAsker::Program(p),
                Some(Err(e)) => {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "airlock cannot ask its approver program: {e}"
                    ))])
                    .into())
                }
            };
            if tool == ToolName::RequestFilesystemGrant {
                let off_limits: Vec<PathBuf> =
                    settings.audit.iter().map(|(_, p)| p.clone()).collect();
                return Ok(request_path_grant(
                    &args,
                    who,
                    deadline,
                    slot,
                    settings.audit_sink(),
                    &off_limits,
                )
                .await
                .into());
            }
            return Ok(
                request_grant(&args, who, deadline, slot, settings.audit_sink())
                    .await
                    .into(),
            );
        }
        if tool.effect() == ToolEffect::Runs && settings.approval.mode == ApprovalMode::Untrusted {
            if let Some(refusal) =
                ask_before_running(tool, &args, &ctx.peer, deadline, settings.audit_sink()).await
            {
                return Ok(refusal.into());
            }
        }
        let env = Arc::clone(&settings.env);
        let out = tokio::task::spawn_blocking(move || {
            call(
                tool,
                &args,
                &env,
                &mut slot.lock().unwrap_or_else(PoisonError::into_inner),
            )
        })
        .await
        .map_err(|_| ErrorData::internal_error("the tool call's worker failed", None))?;
        Ok(out.into_result().into())
    }
}

/// Under `untrusted`: asks the person before `tool` runs what `args` say; the refusal to
/// return instead, or `None` to run it.
async fn ask_before_running(
    tool: ToolName,
    args: &rmcp::model::JsonObject,
    peer: &Peer<RoleServer>,
    deadline: Duration,
    audit: Option<&AuditSink>,
) -> Option<CallToolResult> {
    let what = ["command", "code"]
        .iter()
        .find_map(|k| args.get(*k).and_then(|v| v.as_str()))
        .unwrap_or("");
    let consent = consent::ask(peer, consent::run_question(tool.as_str(), what), deadline).await;
    record_consent(audit, tool.as_str(), what, None, "mcp-client", &consent);
    let why = match consent {
        Consent::Yes => return None,
        Consent::No(why) => why,
        Consent::NoAnswer(d) => format!("nobody answered within {} s", d.as_secs()),
        Consent::CannotAsk(why) => format!("{why}, and --approval untrusted asks the user before each command (run airlock mcp with --approval on-request to run commands unasked)"),
    };
    Some(CallToolResult::error(vec![ContentBlock::text(format!(
        "airlock did not run it: {why}. Nothing was run in the sandbox."
    ))]))
}

/// Records a question and its answer in the audit log, if there is one.
pub(crate) fn record_consent(
    audit: Option<&AuditSink>,
    tool: &str,
    subject: &str,
    reason: Option<&str>,
    by: &'static str,
    consent: &Consent,
) {
    let Some(audit) = audit else { return };
    let (answer, detail) = match consent {
        Consent::Yes => ("allowed", None),
        Consent::No(why) => ("denied", Some(why.clone())),
        Consent::NoAnswer(d) => (
            "timed-out",
            Some(format!("no answer within {} s", d.as_secs())),
        ),
        Consent::CannotAsk(why) => ("cannot-ask", Some(why.clone())),
    };
    let time_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    audit.record(&Record::Approval(ApprovalRecord {
        kind: "approval",
        time_ms,
        tool: tool.to_string(),
        subject: subject.chars().take(2000).collect(),
        reason: reason.map(str::to_string),
        answer,
        by,
        detail,
    }));
}

/// Who answers the model's grant requests: the approver program when there is one (the same
/// that the box's proxy asks), else the person through MCP elicitation.
enum GrantAsker<'a> {
    Person(&'a Peer<RoleServer>),
    Program(Arc<GrantProgram>),
}

/// `request_network_grant`: asks; a yes widens the box's allowlist by exactly the grant. A
/// client that cannot be asked gets the grant that would allow it.
async fn request_grant(
    args: &rmcp::model::JsonObject,
    who: GrantAsker<'_>,
    deadline: Duration,
    slot: Arc<Mutex<BoxSlot>>,
    audit: Option<&AuditSink>,
) -> CallToolResult {
    let refuse = |text: String| CallToolResult::error(vec![ContentBlock::text(text)]);
    let ask = match GrantAsk::parse(args) {
        Ok(a) => a,
        Err(e) => return refuse(format!("airlock cannot ask for that grant: {e}.")),
    };
    let (consent, by) = match who {
        GrantAsker::Person(peer) => {
            let question = consent::grant_question(&ask.grant, &ask.reason);
            (consent::ask(peer, question, deadline).await, "mcp-client")
        }
        GrantAsker::Program(program) => (program.ask(&ask, deadline).await, "approver-program"),
    };
    record_consent(
        audit,
        ToolName::RequestNetworkGrant.as_str(),
        &ask.grant,
        Some(&ask.reason),
        by,
        &consent,
    );
    match consent {
        Consent::Yes => {}
        Consent::No(why) => {
            return refuse(format!(
                "No: {why} the grant {}. Connections to it stay refused; do not ask again for it in this session unless the user says so.",
                ask.grant
            ))
        }
        Consent::NoAnswer(d) => {
            return refuse(format!(
                "No answer within {} s: the grant {} was not made; connections to it stay refused.",
                d.as_secs(),
                ask.grant
            ))
        }
        Consent::CannotAsk(why) => {
            return refuse(format!(
                "Nobody can say yes through this client ({why}); the model cannot grant itself access. The grant that would allow it: {}. Ask the user to add it and restart the session.",
                ask.remedy()
            ))
        }
    }
    let applied = tokio::task::spawn_blocking(move || {
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        slot.grant_egress(ask.list, &ask.grant)
            .map(|new| (new, ask.grant))
    })
    .await;
    match applied {
        Ok(Ok((true, grant))) => CallToolResult::success(vec![ContentBlock::text(format!(
            "Allowed {grant} for the rest of this session: retry the connection."
        ))]),
        Ok(Ok((false, grant))) => CallToolResult::success(vec![ContentBlock::text(format!(
            "{grant} is already allowed: if a connection to it is refused, read the refusal's reason (a deny rule or a private address is never granted this way)."
        ))]),
        Ok(Err(e)) => refuse(format!(
            "The user said yes, but airlock could not widen the sandbox's allowlist: {e}"
        )),
        Err(_) => refuse("the grant's worker failed; nothing was granted".into()),
    }
}

/// `request_filesystem_grant`: asks; a yes adds the path to the session's policy, for its
/// next box (the running one is ended). A client that cannot be asked gets the flag that
/// would allow it.
async fn request_path_grant(
    args: &rmcp::model::JsonObject,
    who: GrantAsker<'_>,
    deadline: Duration,
    slot: Arc<Mutex<BoxSlot>>,
    audit: Option<&AuditSink>,
    off_limits: &[PathBuf],
) -> CallToolResult {
    let refuse = |text: String| CallToolResult::error(vec![ContentBlock::text(text)]);
    let policy = {
        let slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        slot.policy().clone()
    };
    let ask = match FsGrantAsk::parse(args, &policy, off_limits) {
        Ok(a) => a,
        Err(e) => return refuse(format!("airlock cannot ask for that grant: {e}.")),
    };
    let grant = ask.grant();
    // Already there, or refused by the policy itself: said before anyone is asked.
    match airlock_policy::add_grant(&mut policy.clone(), ask.mount.clone()) {
        Ok(true) => {}
        Ok(false) => {
            return CallToolResult::success(vec![ContentBlock::text(format!(
                "{} is already granted with that access: nothing to ask.",
                ask.mount.host.display()
            ))])
        }
        Err(e) => return refuse(format!("airlock cannot ask for that grant: {e}.")),
    }
    let (consent, by) = match who {
        GrantAsker::Person(peer) => (
            consent::ask(peer, ask.question(), deadline).await,
            "mcp-client",
        ),
        GrantAsker::Program(program) => (
            program.ask_filesystem(&ask, deadline).await,
            "approver-program",
        ),
    };
    record_consent(
        audit,
        ToolName::RequestFilesystemGrant.as_str(),
        &grant,
        Some(&ask.reason),
        by,
        &consent,
    );
    match consent {
        Consent::Yes => {}
        Consent::No(why) => {
            return refuse(format!(
                "No: {why} the grant {grant}. The path stays out of the sandbox; do not ask again for it in this session unless the user says so."
            ))
        }
        Consent::NoAnswer(d) => {
            return refuse(format!(
                "No answer within {} s: the grant {grant} was not made.",
                d.as_secs()
            ))
        }
        Consent::CannotAsk(why) => {
            return refuse(format!(
                "Nobody can say yes through this client ({why}); the model cannot grant itself access. The grant that would allow it: {}. Ask the user to add it and restart the session.",
                ask.remedy()
            ))
        }
    }
    let path = ask.mount.host.display().to_string();
    let applied = tokio::task::spawn_blocking(move || {
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        slot.grant_path(ask.mount)
    })
    .await;
    match applied {
        Ok(Ok(true)) => CallToolResult::success(vec![ContentBlock::text(format!(
            "Granted {grant} for the rest of this session. The sandbox restarts with it at your next call (running processes and interpreter variables are gone; files in the workspace and grants stay); {path} is then at the same path inside."
        ))]),
        Ok(Ok(false)) => CallToolResult::success(vec![ContentBlock::text(format!(
            "{path} is already granted with that access: nothing changed."
        ))]),
        Ok(Err(e)) => refuse(format!(
            "The user said yes, but airlock could not add the grant: {e}"
        )),
        Err(_) => refuse("the grant's worker failed; nothing was granted".into()),
    }
}
