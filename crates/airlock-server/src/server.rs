//! Starting and stopping the server: open the store and recover it, make the API key on first
//! start, wire the session manager to the store, serve HTTP until SIGTERM or SIGINT, then end
//! every box.

use crate::factory::SandboxFactory;
use crate::limits::{ConnectionLimits, DescriptorBudget};
use crate::observer::{SharedStore, StoreObserver};
use crate::secrets::{hash, new_api_key};
use crate::service::snapshots::SnapshotService;
use crate::state::AppState;
use crate::ServerError;
use airlock_runtime::backend::Backends;
use airlock_sessions::{ManagerConfig, SessionManager, SystemClock};
use airlock_store::Store;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often expiries, the queue and dead boxes are looked at.
const TICK: Duration = Duration::from_millis(250);
/// The reason recorded on boxes of a previous run found live in the store.
const RECOVERY_REASON: &str = "the server stopped while it ran (its boxes died with it)";

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `HOST:PORT` to listen on (port 0: any free port).
    pub listen: String,
    /// Where the store lives.
    pub data_dir: PathBuf,
    /// Boxes running at once; more are queued.
    pub max_running: usize,
    /// The airlock executable, re-run as `airlock sandbox-host` for each box.
    pub airlock_exe: PathBuf,
    /// The backend of sandboxes whose create request names none.
    pub default_backend: airlock_policy::BackendKind,
    /// Replace the E2B-format API key with a new one (printed) on this start.
    pub new_e2b_key: bool,
    /// The network of E2B sandboxes whose create request says nothing about it.
    pub e2b_default_network: E2bDefaultNetwork,
    /// The domain E2B sandboxes' ports are served under (`{port}-{id}.{domain}`); `None`: none.
    pub e2b_domain: Option<String>,
    /// `NAME=IP` pairs every E2B sandbox's egress proxy resolves without DNS
    /// (`--e2b-map-host`); the name must still be allowed by the sandbox's rules.
    pub e2b_map_host: Vec<String>,
    /// Caps on connections and the header timeout.
    pub connections: ConnectionLimits,
    /// Names clients ask for (`base`, `code-interpreter-v1`) → stored templates.
    pub template_aliases: std::collections::BTreeMap<String, String>,
    /// Pause boxes idle this long (no request, no running command) unless their create request
    /// says otherwise; `None`: never.
    pub idle_pause: Option<Duration>,
    /// Boxes kept started ahead of demand (`--pool`); a create that matches one claims a box.
    pub pools: Vec<crate::pools::PoolSpec>,
    /// Host memory the pools' ready boxes may hold (`--pool-memory`), in bytes.
    pub pool_memory: u64,
    /// The largest upload of a template build's files (E2B's Template SDK), in bytes.
    pub template_upload_max: u64,
}

pub use crate::e2b::templates::DEFAULT_MAX_UPLOAD as DEFAULT_TEMPLATE_UPLOAD_MAX;
pub use crate::e2b::DefaultNetwork as E2bDefaultNetwork;

/// What the shared state of the handlers is made with, beside the store and the backends.
pub(crate) struct AppSettings {
    pub max_running: usize,
    pub default_backend: airlock_policy::BackendKind,
    pub e2b_default_network: E2bDefaultNetwork,
    pub e2b_domain: Option<String>,
    pub e2b_map_host: Vec<String>,
    /// Where E2B's secrets are kept (`<data-dir>/e2b-secrets`); `None`: in memory only.
    pub e2b_secrets_dir: Option<PathBuf>,
    pub templates: crate::template_catalog::TemplateCatalog,
    /// Where snapshots are kept (`<data-dir>/snapshots`).
    pub snapshots_dir: PathBuf,
    pub idle_pause_ms: Option<i64>,
    /// `--pool`, and the memory their ready boxes may hold.
    pub pools: Vec<crate::pools::PoolSpec>,
    pub pool_memory: u64,
    /// Template builds (`None`: not served).
    pub template_builds: Option<crate::e2b::templates::BuildSettings>,
}

/// The handlers' shared state over `store`, starting boxes with `backends`: the session manager
/// wired to the store. The caller ticks the manager and serves the routes.
pub(crate) fn app_state(
    store: Store,
    backends: Backends,
    settings: &AppSettings,
    api_key_hash: String,
    e2b_key_hash: String,
) -> Result<AppState, ServerError> {
    // What the settings can get wrong is refused before anything starts.
    for entry in &settings.e2b_map_host {
        airlock_proxy::rules::parse_map_host(entry).map_err(|e| ServerError::MapHost {
            entry: entry.clone(),
            why: e.to_string(),
        })?;
    }
    let vault = match &settings.e2b_secrets_dir {
        Some(dir) => crate::e2b::secrets::Vault::open(dir)
            .map_err(|e| ServerError::Secrets(e.to_string()))?,
        None => crate::e2b::secrets::Vault::in_memory(),
    };
    let store: SharedStore = Arc::new(Mutex::new(store));
    let pending = Arc::new(Mutex::new(HashMap::new()));
    backends
        .usable(settings.default_backend)
        .map_err(|e| ServerError::Backend(e.to_string()))?;
    let area = airlock_store::SnapshotArea::open(&settings.snapshots_dir)
        .map_err(|e| ServerError::Snapshots(e.to_string()))?;
    let snapshots = Arc::new(SnapshotService::new(area, Arc::clone(&store)));
    let held_secrets = Arc::new(crate::held_secrets::HeldSecrets::default());
    let pools = Arc::new(crate::pools::Pools::new(
        &settings.pools,
        settings.default_backend,
        &backends,
        &settings.templates,
        settings.pool_memory,
    )?);
    let approvals = Arc::new(crate::approvals::ServerApprovals::default());
    let denials = Arc::new(crate::denials::RecentDenials::default());
    let factory = SandboxFactory::new(
        backends.clone(),
        Arc::clone(&store),
        Arc::clone(&snapshots),
        Arc::clone(&held_secrets),
    )
    .with_pools(pools)
    .with_approvals(Arc::clone(&approvals))
    .with_denials(Arc::clone(&denials));
    let e2b = Arc::new(
        crate::e2b::E2bState::new(e2b_key_hash, settings.e2b_default_network)
            .with_domain(settings.e2b_domain.clone())
            .with_map_host(settings.e2b_map_host.clone())
            .with_vault(vault),
    );
    let observer = Arc::new(
        StoreObserver::new(
            Arc::clone(&store),
            Arc::clone(&pending),
            Arc::clone(&e2b),
            Arc::clone(&snapshots),
            Arc::clone(&held_secrets),
        )
        .with_approvals(Arc::clone(&approvals))
        .with_denials(Arc::clone(&denials)),
    );
    let manager_config = ManagerConfig {
        max_running: settings.max_running,
        idle_pause_ms: settings.idle_pause_ms,
        ..ManagerConfig::default()
    };
    let manager = Arc::new(SessionManager::new(
        factory,
        manager_config,
        Arc::new(SystemClock),
        observer,
    )?);
    adopt_paused(&manager, &store, &snapshots);
    snapshots.remove_unclaimed();
    Ok(AppState {
        manager,
        store,
        api_key_hash: Arc::new(api_key_hash),
        tokens: Arc::default(),
        pending,
        backends,
        default_backend: settings.default_backend,
        e2b,
        templates: Arc::new(settings.templates.clone()),
        template_builds: Arc::new(crate::e2b::templates::TemplateService::new(
            settings.template_builds.clone(),
        )),
        held_secrets,
        approvals,
        denials,
    })
}

/// Runs the server until SIGTERM or SIGINT. Prints `listening on http://ADDR` on stdout once
/// bound, preceded on the first start by the new API key (`api key: al_…`) and the new
/// E2B-format key for E2B's SDKs (`e2b api key: e2b_…`), each shown this once only (a lost E2B
/// key is replaced with `new_e2b_key`).
pub fn serve(config: ServerConfig) -> Result<(), ServerError> {
    // Ready pool boxes hold descriptors in this process as running ones do.
    let pooled: usize = config.pools.iter().map(|p| p.size).sum();
    let budget = DescriptorBudget::probe(config.max_running + pooled)?;
    let max_connections = budget.fit(config.connections.max_connections);
    if max_connections < config.connections.max_connections {
        eprintln!(
            "airlock serve: serving at most {max_connections} connections, not {}: the open-file \
             limit is {} and {} descriptors are kept for boxes and files (raise ulimit -n for \
             more)",
            config.connections.max_connections, budget.limit, budget.reserve
        );
    }
    let store = Store::open(&config.data_dir.join("airlock.db"))?;
    // A paused sandbox whose pause saved its state in a snapshot outlives the server; every
    // other live one died with it.
    let saved: std::collections::HashSet<String> = store
        .all_snapshots()?
        .into_iter()
        .filter(|s| s.purpose == airlock_store::SnapshotPurpose::Pause)
        .map(|s| s.sandbox_id)
        .collect();
    let recovered = store.recover(
        &|rec| {
            matches!(
                rec.state,
                airlock_store::SandboxState::Paused | airlock_store::SandboxState::Resuming
            ) && saved.contains(&rec.id)
        },
        RECOVERY_REASON,
    )?;
    for id in &recovered {
        let detail = serde_json::json!({ "state": "dead", "reason": RECOVERY_REASON });
        let _ = store.add_event(id, "state", &detail);
    }
    let api_key_hash = match store.api_key_hash("default")? {
        Some(h) => h,
        None => {
            let key = new_api_key().map_err(ServerError::Random)?;
            store.set_api_key_hash("default", &hash(&key))?;
            println!("api key: {key}");
            println!("(shown once: airlock keeps only its hash; send it as `Authorization: Bearer <key>`)");
            hash(&key)
        }
    };
    let e2b_key_hash = match store.api_key_hash(crate::e2b::auth::KEY_NAME)? {
        Some(h) if !config.new_e2b_key => h,
        _ => {
            let key = crate::e2b::auth::new_key().map_err(ServerError::Random)?;
            store.set_api_key_hash(crate::e2b::auth::KEY_NAME, &hash(&key))?;
            println!("e2b api key: {key}");
            println!("(shown once: for E2B's SDKs, set E2B_API_KEY to it and E2B_API_URL and E2B_SANDBOX_URL to this server's address)");
            hash(&key)
        }
    };
    let backends = airlock_backends::built_in(&airlock_backends::BackendConfig::new(
        config.airlock_exe.clone(),
    ));
    let template_store = airlock_template::TemplateStore::open(&config.data_dir)
        .map_err(|e| ServerError::Templates(e.to_string()))?;
    let templates = crate::template_catalog::TemplateCatalog::new(
        template_store,
        config.template_aliases.clone(),
    )
    .map_err(ServerError::Templates)?;
    let state = app_state(
        store,
        backends.clone(),
        &AppSettings {
            max_running: config.max_running,
            default_backend: config.default_backend,
            e2b_default_network: config.e2b_default_network,
            e2b_domain: config.e2b_domain.clone(),
            e2b_map_host: config.e2b_map_host.clone(),
            e2b_secrets_dir: Some(config.data_dir.join("e2b-secrets")),
            templates,
            snapshots_dir: config.data_dir.join("snapshots"),
            idle_pause_ms: config
                .idle_pause
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            pools: config.pools.clone(),
            pool_memory: config.pool_memory,
            template_builds: Some(crate::e2b::templates::BuildSettings {
                airlock_exe: config.airlock_exe.clone(),
                // The builder runs in its build's directory: the store must not be relative.
                data_dir: std::path::absolute(&config.data_dir)?,
                max_upload: config.template_upload_max,
            }),
        },
        api_key_hash,
        e2b_key_hash,
    )?;
    let manager = Arc::clone(&state.manager);

    let stopping = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (manager, stopping) = (Arc::clone(&manager), Arc::clone(&stopping));
        std::thread::Builder::new()
            .name("session-tick".into())
            .spawn(move || {
                while !stopping.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    manager.tick();
                }
            })?
    };
    let sampler = crate::e2b::metrics::spawn_sampler(state.clone(), Arc::clone(&stopping))?;
    let pools = Arc::clone(manager.factory().pools());
    let refill = crate::pools::refill::spawn(Arc::clone(&pools))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&config.listen)
            .await
            .map_err(|source| ServerError::Bind {
                addr: config.listen.clone(),
                source,
            })?;
        let addr = listener.local_addr()?;
        println!("listening on http://{addr}");
        let _ = std::io::stdout().flush();
        let stop_manager = Arc::clone(&manager);
        let shutdown = async move {
            wait_for_signal().await;
            // End every box first, so streams in flight finish and the graceful stop can complete.
            let _ = tokio::task::spawn_blocking(move || stop_manager.shutdown()).await;
        };
        // MCP over streamable HTTP (`/mcp`) beside the REST API, behind the same API key.
        let app = crate::mcp::router(state.clone(), backends, config.max_running)
            .merge(crate::routes::router(state));
        crate::accept::serve(listener, app, config.connections, budget, shutdown).await;
        Ok::<(), ServerError>(())
    });
    stopping.store(true, Ordering::Relaxed);
    pools.shutdown();
    let _ = refill.join();
    manager.shutdown();
    let _ = ticker.join();
    let _ = sampler.join();
    served
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Registers with the manager every sandbox the store lists as paused (or resuming) after a
/// restart: recovery kept only those whose pause saved a snapshot, so each resumes from it.
fn adopt_paused(
    manager: &SessionManager<SandboxFactory>,
    store: &SharedStore,
    snapshots: &SnapshotService,
) {
    let filter = airlock_store::SandboxFilter {
        states: vec![
            airlock_store::SandboxState::Paused,
            airlock_store::SandboxState::Resuming,
        ],
        limit: airlock_store::MAX_PAGE,
        ..airlock_store::SandboxFilter::default()
    };
    let recs = crate::observer::lock(store)
        .list_sandboxes(&filter)
        .unwrap_or_default();
    for rec in recs {
        if snapshots.pause_snapshot(&rec.id).is_none() {
            continue;
        }
        let spec = crate::service::sandboxes::spec_of_record(&rec);
        if let Err(e) = manager.adopt_paused(rec.id.clone(), spec, rec.created_ms) {
            eprintln!(
                "airlock serve: cannot take back paused sandbox {}: {e}",
                rec.id
            );
        }
    }
}
