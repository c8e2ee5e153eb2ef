//! MCP over streamable HTTP at `/mcp`: airlock's code-execution tools (see `airlock-mcp`), one
//! box per MCP session, behind the API key like every other route. The session's first request
//! may choose its profile and tools in the query string:
//! `/mcp?profile=read-only&tools=read_*&deny_tools=run_command`. Server boxes see no host path
//! and have no network, like sandboxes made over REST.

use crate::auth::require_key;
use crate::state::AppState;
use crate::ApiError;
use airlock_mcp::{BackendStarter, McpSession, SessionSettings, StartBox, ToolFilter};
use airlock_policy::{PolicyFile, Profile, ResolveContext, ResolvedPolicy, INSIDE_HOME};
use airlock_runtime::backend::{Backends, StartOptions};
use airlock_runtime::{LiveSandbox, RealHost, SandboxError};
use airlock_sessions::SessionState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The query string a session may start with.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpQuery {
    profile: Option<String>,
    tools: Option<String>,
    deny_tools: Option<String>,
}

/// The settings of a session whose first request had `query`.
fn settings(query: &str) -> Result<SessionSettings, String> {
    let q: McpQuery = serde_urlencoded::from_str(query).map_err(|e| {
        format!("the /mcp query is not valid ({e}); use profile=, tools= and deny_tools=")
    })?;
    let profile = match q.profile.as_deref() {
        None => Profile::WorkspaceWrite,
        Some(p) => p.parse::<Profile>().map_err(|e| format!("profile: {e}"))?,
    };
    if profile == Profile::FullAccess {
        return Err("profile full-access is refused over HTTP: server boxes see no host path; use read-only or workspace-write".into());
    }
    let filter = ToolFilter::from_flags(
        &q.tools.into_iter().collect::<Vec<_>>(),
        &q.deny_tools.into_iter().collect::<Vec<_>>(),
    )
    .map_err(|e| e.to_string())?;
    let file = PolicyFile {
        profile: Some(profile),
        workspace: Some("none".into()),
        ..Default::default()
    };
    let env = BTreeMap::new();
    let mut policy: ResolvedPolicy = airlock_policy::resolve(
        &file,
        &ResolveContext {
            cwd: "/".into(),
            env: &env,
            host: &RealHost,
        },
    )
    .map_err(|e| format!("the policy is refused: {e}"))?;
    policy.cwd = INSIDE_HOME.into();
    let s = SessionSettings::new(policy, filter);
    if s.tool_names().is_empty() {
        return Err("tools/deny_tools leave no tool for this profile".into());
    }
    Ok(s)
}

/// Starts `/mcp` boxes, counting them: MCP boxes and the REST API's running sandboxes share the
/// server's `--max-running` slots, so neither can exceed what the operator allowed.
struct CountingStarter {
    starter: BackendStarter,
    app: AppState,
    max_running: usize,
    live: AtomicUsize,
}

impl StartBox for CountingStarter {
    fn start(
        &self,
        policy: &ResolvedPolicy,
        opts: &StartOptions,
    ) -> Result<LiveSandbox, SandboxError> {
        let mcp = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        let rest = self
            .app
            .manager
            .list(
                &[SessionState::Starting, SessionState::Running],
                &BTreeMap::new(),
            )
            .len();
        if mcp + rest > self.max_running {
            self.live.fetch_sub(1, Ordering::SeqCst);
            return Err(SandboxError::Setup {
                stage: "limits".into(),
                message: format!(
                    "the server already runs its maximum of {} boxes ({rest} sandboxes, {} MCP sessions); retry later, end a session, or raise airlock serve --max-running",
                    self.max_running,
                    mcp - 1
                ),
            });
        }
        match self.starter.start(policy, opts) {
            Ok(b) => Ok(b),
            Err(e) => {
                self.live.fetch_sub(1, Ordering::SeqCst);
                Err(e)
            }
        }
    }

    fn ended(&self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Clone)]
struct McpState {
    app: AppState,
    service: Arc<StreamableHttpService<McpSession, LocalSessionManager>>,
}

/// The `/mcp` route, starting boxes with `backends`; at most `max_running` boxes run at once,
/// counting the REST API's.
pub fn router(app: AppState, backends: Backends, max_running: usize) -> Router {
    let starter: Arc<dyn StartBox> = Arc::new(CountingStarter {
        starter: BackendStarter::new(backends),
        app: app.clone(),
        max_running,
        live: AtomicUsize::new(0),
    });
    let service = airlock_mcp::http_service(Arc::new(settings), starter, airlock_mcp::DEFAULT_IDLE);
    Router::new()
        .route("/mcp", any(handle))
        .with_state(McpState {
            app,
            service: Arc::new(service),
        })
}

async fn handle(State(state): State<McpState>, request: Request) -> Response {
    if let Err(e) = require_key(&state.app, request.headers()) {
        return e.into_response();
    }
    if let Err(e) = settings(request.uri().query().unwrap_or("")) {
        return ApiError::Invalid(e).into_response();
    }
    state.service.handle(request).await.map(Body::new)
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
