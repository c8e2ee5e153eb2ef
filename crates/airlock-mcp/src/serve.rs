//! Serving MCP sessions: over stdio (`airlock mcp`: one session, ends with stdin) and as the
//! streamable-HTTP service that `airlock serve` mounts at `/mcp` (one session per MCP session id).

use crate::boxes::{BackendStarter, StartBox};
use crate::server::{McpSession, SessionSettings, SettingsBuilder, SettingsSource};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long a box may sit unused before it is ended, unless told otherwise.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(15 * 60);
/// How long shutting down waits for calls in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot start the MCP server: {0}")]
    Io(#[from] std::io::Error),
    #[error("the MCP session failed to start: {0}")]
    Init(String),
}

/// Serves one MCP session on stdin/stdout until the client closes stdin; the session's box (if
/// one was started) is ended before returning.
pub fn serve_stdio(
    airlock_exe: PathBuf,
    settings: SessionSettings,
    idle: Duration,
) -> Result<(), ServeError> {
    let backends = airlock_backends::built_in(&airlock_backends::BackendConfig::new(airlock_exe));
    let starter: Arc<dyn StartBox> = Arc::new(BackendStarter::new(backends));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let session = McpSession::new(
        Arc::new(SettingsSource::Fixed(Arc::new(settings))),
        starter,
        idle,
    );
    let served = runtime.block_on(async move {
        let running = session
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::Init(e.to_string()))?;
        let _ = running.waiting().await;
        Ok(())
    });
    // Calls still in flight hold the box; past the grace the process exits and the box's host
    // dies with it (PR_SET_PDEATHSIG).
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    served
}

/// The streamable-HTTP MCP service: each MCP session gets its own box; settings come from the
/// query string of the session's first request. Sessions idle for `idle` are closed (and their
/// box ended). Authentication is the caller's job (the server checks its API key first).
pub fn http_service(
    build: SettingsBuilder,
    starter: Arc<dyn StartBox>,
    idle: Duration,
) -> StreamableHttpService<McpSession, LocalSessionManager> {
    let source = Arc::new(SettingsSource::FromQuery(build));
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(idle);
    // The API key guards the route (a browser cannot send it cross-origin without a preflight
    // airlock does not answer), so the Host allowlist is not needed to stop DNS rebinding, and it
    // would refuse servers listening on a non-loopback address.
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    StreamableHttpService::new(
        move || {
            Ok(McpSession::new(
                Arc::clone(&source),
                Arc::clone(&starter),
                idle,
            ))
        },
        Arc::new(manager),
        config,
    )
}
