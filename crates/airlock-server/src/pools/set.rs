//! The server's pools: boxes started ahead of demand, claimed by creates that match, refilled
//! in the background by [`super::refill`].
//!
//! A ready box has never been lent to anyone: it was started under the pool's policy (no
//! environment, an empty allowlist, no secrets) and nothing ran in it but its init. A claim
//! takes it out for good — binds its network decisions to the new sandbox, gives its proxy the
//! claim's allowlist and its commands the claim's environment — and the session manager then
//! owns it like any box it started; it is never given back to a pool.

use super::budget;
use super::key::{claim_env, PoolKey};
use super::sink::ClaimSink;
use super::spec::PoolSpec;
use airlock_policy::{BackendKind, NetworkMode, ResolvedPolicy};
use airlock_runtime::backend::{Backend, Backends, NetworkSink, StartOptions, Template};
use airlock_runtime::LiveSandbox;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The longest a new box's warm-up command may take.
const WARM_UP_LIMIT: Duration = Duration::from_secs(30);

/// Claim notes kept for the create events that read them.
const MAX_NOTES: usize = 4096;

/// How long the refill leaves the CPU to a claimed box before it starts the next one: a create
/// is almost always followed at once by its first command, which should not share two cores
/// with a box being started. Taken once per refill start, so claims that keep coming cannot
/// hold the refill off for longer.
pub(crate) const CLAIM_GRACE: Duration = Duration::from_millis(50);

/// Why the pools cannot be made as asked.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("{0}")]
    Policy(String),
    #[error("--pool {pool}: {why}")]
    Backend { pool: String, why: String },
    #[error("--pool {first} and --pool {second} make the same boxes; give one of them, with the sum of their sizes")]
    SameBoxes { first: String, second: String },
    #[error("two pools are named {0:?}; give each a different name=")]
    SameName(String),
    #[error("the pools would hold {total} of host memory ({detail}), more than --pool-memory {budget}; lower their sizes, give their boxes a smaller memory=, or raise --pool-memory")]
    OverBudget {
        total: String,
        budget: String,
        detail: String,
    },
}

/// One pool: what its boxes are made of and how many are kept ready.
pub(crate) struct Pool {
    pub name: String,
    pub size: usize,
    pub key: PoolKey,
    pub policy: ResolvedPolicy,
    pub backend: Arc<dyn Backend>,
    pub template: String,
    /// Host memory each ready box is counted as (see [`budget::charge`]).
    pub charge: u64,
}

/// A started box waiting for its claim.
pub(crate) struct Ready {
    pub sandbox: LiveSandbox,
    pub sink: Arc<ClaimSink>,
    /// Stopped while it waits ([`LiveSandbox::park`]); its claim continues it.
    pub parked: bool,
}

/// A pool's changing part.
#[derive(Default)]
pub(crate) struct PoolState {
    pub ready: VecDeque<Ready>,
    /// A box of this pool is being started by the refill.
    pub starting: bool,
    pub hits: u64,
    pub misses: u64,
    /// Boxes started for the pool, and starts that failed.
    pub started: u64,
    pub failed: u64,
    /// Ready boxes found ended (or failing their claim) and thrown away.
    pub discarded: u64,
    pub last_error: Option<String>,
    /// After a failed start, the refill leaves the pool alone until then.
    pub retry_at: Option<Instant>,
    pub failures_in_row: u32,
}

/// What a create got from the pools, for its event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimNote {
    pub pool: String,
    /// A ready box was claimed (else the pool was empty and the box started the ordinary way).
    pub hit: bool,
}

/// Every pool of the server.
pub struct Pools {
    pub(crate) pools: Vec<Pool>,
    pub(crate) state: Mutex<Vec<PoolState>>,
    /// Signalled when a box is claimed, a create starts or ends, or the server stops.
    pub(crate) wake: Condvar,
    /// Boxes being started the ordinary way (creates): the refill waits for them.
    pub(crate) creating: AtomicUsize,
    pub(crate) stopping: AtomicBool,
    notes: Mutex<HashMap<String, ClaimNote>>,
    /// Until then the refill starts nothing ([`CLAIM_GRACE`] after a claim).
    claim_hold: Mutex<Option<Instant>>,
    budget: u64,
}

/// Marks an ordinary start under way while it lives.
pub struct Creating<'a>(&'a Pools);

impl Drop for Creating<'_> {
    fn drop(&mut self) {
        self.0.creating.fetch_sub(1, Ordering::SeqCst);
        self.0.wake.notify_all();
    }
}

impl Pools {
    /// No pools: every create takes the ordinary path.
    pub fn none() -> Pools {
        Pools::from_parts(Vec::new(), budget::DEFAULT_BUDGET)
    }

    fn from_parts(pools: Vec<Pool>, budget: u64) -> Pools {
        let state = pools.iter().map(|_| PoolState::default()).collect();
        Pools {
            pools,
            state: Mutex::new(state),
            wake: Condvar::new(),
            creating: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            notes: Mutex::new(HashMap::new()),
            claim_hold: Mutex::new(None),
            budget,
        }
    }

    /// The pools `specs` ask for, each resolved as a create request would be, within `budget`
    /// bytes of host memory. Errors: a spec the server cannot serve, two specs for the same
    /// boxes, or more memory than the budget.
    pub fn new(
        specs: &[PoolSpec],
        default_backend: BackendKind,
        backends: &Backends,
        catalog: &crate::template_catalog::TemplateCatalog,
        budget: u64,
    ) -> Result<Pools, PoolError> {
        let mut pools: Vec<Pool> = Vec::new();
        for spec in specs {
            let policy = super::policy::resolve(spec, default_backend, catalog)
                .map_err(PoolError::Policy)?;
            let backend = backends
                .usable(policy.backend)
                .map_err(|e| PoolError::Backend {
                    pool: spec.name.clone(),
                    why: e.to_string(),
                })?;
            let key = PoolKey::of(&policy).ok_or_else(|| {
                PoolError::Policy(format!(
                    "--pool {}: its policy cannot be encoded",
                    spec.name
                ))
            })?;
            if let Some(other) = pools.iter().find(|p| p.name == spec.name) {
                return Err(PoolError::SameName(other.name.clone()));
            }
            if let Some(other) = pools.iter().find(|p| p.key == key) {
                return Err(PoolError::SameBoxes {
                    first: other.name.clone(),
                    second: spec.name.clone(),
                });
            }
            pools.push(Pool {
                name: spec.name.clone(),
                size: spec.size,
                key,
                charge: budget::charge(&policy),
                template: spec.template.clone().unwrap_or_else(|| "base".into()),
                policy,
                backend,
            });
        }
        let total = pools
            .iter()
            .map(|p| p.charge.saturating_mul(p.size as u64))
            .fold(0u64, u64::saturating_add);
        if total > budget {
            let detail = pools
                .iter()
                .map(|p| format!("{}: {} x {}", p.name, p.size, budget::human(p.charge)))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(PoolError::OverBudget {
                total: budget::human(total),
                budget: budget::human(budget),
                detail,
            });
        }
        Ok(Pools::from_parts(pools, budget))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Vec<PoolState>> {
        // Only counters and queues change under the lock; a panic cannot leave them half-done.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks an ordinary start (the refill waits until it is done).
    pub fn creating(&self) -> Creating<'_> {
        self.creating.fetch_add(1, Ordering::SeqCst);
        Creating(self)
    }

    /// A ready box for sandbox `id` whose policy is `policy`, made the sandbox's: its network
    /// decisions go to `sink`, its proxy has `policy`'s allowlist, its commands `policy`'s
    /// environment and working directory. `None` when no pool makes such boxes, or the pool is
    /// empty (a miss): the caller starts one the ordinary way.
    pub fn claim(
        &self,
        id: &str,
        policy: &ResolvedPolicy,
        sink: Arc<dyn NetworkSink>,
    ) -> Option<LiveSandbox> {
        let key = PoolKey::of(policy)?;
        let index = self.pools.iter().position(|p| p.key == key)?;
        let pool = &self.pools[index];
        loop {
            let ready = self.lock()[index].ready.pop_front();
            if ready.is_some() {
                // Before the refill is woken, so it cannot start a box in between.
                self.hold_refill(Instant::now() + CLAIM_GRACE);
            }
            self.wake.notify_all();
            let Some(ready) = ready else {
                self.lock()[index].misses += 1;
                self.note(id, &pool.name, false);
                return None;
            };
            match make_claimed(pool, ready, policy, sink.clone()) {
                Ok(sandbox) => {
                    self.lock()[index].hits += 1;
                    self.note(id, &pool.name, true);
                    return Some(sandbox);
                }
                Err(why) => {
                    eprintln!(
                        "airlock serve: a ready box of pool {} was thrown away: {why}",
                        pool.name
                    );
                    self.lock()[index].discarded += 1;
                }
            }
        }
    }

    /// Keeps the refill from starting a box before `until`, unless a hold is already set: one
    /// hold per refill start (see [`CLAIM_GRACE`]).
    fn hold_refill(&self, until: Instant) {
        let mut hold = self
            .claim_hold
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        hold.get_or_insert(until);
    }

    /// How long the refill must still wait after a claim; `None` (and the hold is spent) once
    /// it has passed.
    pub(crate) fn refill_held_for(&self, now: Instant) -> Option<Duration> {
        let mut hold = self
            .claim_hold
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match *hold {
            Some(until) if until > now => Some(until - now),
            _ => {
                *hold = None;
                None
            }
        }
    }

    fn note(&self, id: &str, pool: &str, hit: bool) {
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        if notes.len() >= MAX_NOTES {
            notes.clear();
        }
        notes.insert(
            id.to_string(),
            ClaimNote {
                pool: pool.to_string(),
                hit,
            },
        );
    }

    /// What sandbox `id`'s start got from the pools, once (`None`: no pool matched, or it has
    /// not started yet).
    pub fn take_note(&self, id: &str) -> Option<ClaimNote> {
        self.notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
    }

    /// Starts one box for pool `index`, under the pool's policy, its decisions held for the
    /// claim.
    pub(crate) fn start_one(&self, index: usize) -> Result<Ready, String> {
        let pool = &self.pools[index];
        let sink = Arc::new(ClaimSink::default());
        let opts = StartOptions {
            network_events: Some(sink.clone()),
            audit_file: None,
            // A pool's policy never asks (approvals are in the key): a claim that asks starts
            // its own box.
            approvals: None,
        };
        let sandbox = LiveSandbox::start(
            pool.backend.as_ref(),
            &pool.policy,
            &Template::of_policy(&pool.policy),
            &opts,
        )
        .map_err(|e| format!("a box could not start: {e}"))?;
        // One `true` through the agent, so that the claim's first command does not pay for the
        // box's first spawn (the agent's first fork and exec in its namespaces: 5-10 ms here);
        // it leaves nothing behind but a used pid. A box that cannot run it is not kept.
        if pool.policy.backend == BackendKind::Wasm {
            // Its commands are WebAssembly modules: no `true` to run.
            return Ok(parked(sandbox, sink, &pool.name));
        }
        let warm = sandbox
            .new_channel()
            .exec(&["true"], &[], None, Some(WARM_UP_LIMIT), 0);
        match warm {
            Ok(out) if out.exit_code == Some(0) => Ok(parked(sandbox, sink, &pool.name)),
            Ok(out) => {
                sandbox.kill();
                Err(format!(
                    "a new box's `true` ended with status {:?}, signal {:?}",
                    out.exit_code, out.signal
                ))
            }
            Err(e) => {
                sandbox.kill();
                Err(format!("a new box could not run `true`: {e}"))
            }
        }
    }

    /// Ends every ready box and makes the refill stop; later claims miss.
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.wake.notify_all();
        let boxes: Vec<Ready> = self
            .lock()
            .iter_mut()
            .flat_map(|s| s.ready.drain(..))
            .collect();
        for b in boxes {
            b.sandbox.kill();
        }
    }

    /// The pools as `GET /v1/pools` shows them.
    pub fn view(&self) -> PoolsView {
        let state = self.lock();
        let pools = self
            .pools
            .iter()
            .zip(state.iter())
            .map(|(p, s)| PoolView {
                name: p.name.clone(),
                backend: p.policy.backend.to_string(),
                template: p.template.clone(),
                network: match p.policy.network {
                    NetworkMode::Proxy => "proxy",
                    _ => "none",
                },
                memory_limit: p.policy.limits.memory,
                size: p.size,
                ready: s.ready.len(),
                starting: s.starting,
                hits: s.hits,
                misses: s.misses,
                started: s.started,
                failed: s.failed,
                discarded: s.discarded,
                last_error: s.last_error.clone(),
                charge_bytes: p.charge,
            })
            .collect::<Vec<_>>();
        let charged = pools
            .iter()
            .map(|p| p.charge_bytes.saturating_mul(p.size as u64))
            .fold(0u64, u64::saturating_add);
        PoolsView {
            pools,
            memory_budget_bytes: self.budget,
            memory_charged_bytes: charged,
        }
    }
}

/// A new box made ready to wait: parked when an idle box of its kind would spend CPU while it
/// waits (a gVisor Sentry). One that cannot be parked waits running: it still serves a claim.
fn parked(mut sandbox: LiveSandbox, sink: Arc<ClaimSink>, pool: &str) -> Ready {
    let parked = sandbox.capabilities().park
        && match sandbox.park() {
            Ok(()) => true,
            Err(e) => {
                eprintln!("airlock serve: pool {pool}: a ready box waits running (it spends CPU while idle): {e}");
                false
            }
        };
    Ready {
        sandbox,
        sink,
        parked,
    }
}

/// Makes a ready box sandbox `id`'s (see [`Pools::claim`]); an error ends the box.
fn make_claimed(
    pool: &Pool,
    ready: Ready,
    policy: &ResolvedPolicy,
    sink: Arc<dyn NetworkSink>,
) -> Result<LiveSandbox, String> {
    let Ready {
        mut sandbox,
        sink: held,
        parked,
    } = ready;
    if let Some(end) = sandbox.ended() {
        sandbox.kill();
        return Err(format!("it had ended ({})", end.reason));
    }
    if parked {
        if let Err(e) = sandbox.unpark() {
            sandbox.kill();
            return Err(format!("it could not be continued: {e}"));
        }
    }
    held.bind(sink);
    if policy.network == NetworkMode::Proxy {
        if let Err(e) = sandbox.set_egress(&policy.egress) {
            sandbox.kill();
            return Err(format!("its allowlist could not be set: {e}"));
        }
    }
    let env = claim_env(&sandbox.command_defaults().env, &pool.policy, policy);
    sandbox.set_command_defaults(airlock_runtime::backend::CommandDefaults {
        env,
        cwd: policy.cwd.to_string_lossy().into_owned(),
    });
    Ok(sandbox)
}

/// `GET /v1/pools`.
#[derive(Debug, Serialize)]
pub struct PoolsView {
    pub pools: Vec<PoolView>,
    /// `--pool-memory`.
    pub memory_budget_bytes: u64,
    /// What the pools hold when full, as counted against the budget.
    pub memory_charged_bytes: u64,
}

/// One pool in `GET /v1/pools`.
#[derive(Debug, Serialize)]
pub struct PoolView {
    pub name: String,
    pub backend: String,
    pub template: String,
    pub network: &'static str,
    pub memory_limit: Option<u64>,
    pub size: usize,
    pub ready: usize,
    pub starting: bool,
    pub hits: u64,
    pub misses: u64,
    pub started: u64,
    pub failed: u64,
    pub discarded: u64,
    pub last_error: Option<String>,
    pub charge_bytes: u64,
}

/// How long the refill leaves a pool alone after `failures` starts failed in a row.
pub(crate) fn backoff(failures: u32) -> Duration {
    Duration::from_millis(500u64.saturating_mul(1 << failures.min(6))).min(Duration::from_secs(30))
}

#[cfg(test)]
#[path = "set_tests.rs"]
mod tests;
