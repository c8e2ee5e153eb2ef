//! What a box is made of before it is claimed, as a value two policies can be compared by.
//!
//! The key is the whole resolved policy (backend, template with its digest, network mode,
//! limits, profile, filesystem, secrets, the proxy's connection cap and byte budget, ...) with
//! only the fields a claim sets cleared: the environment and working directory of commands, and
//! the parts of the egress allowlist a running proxy replaces (`set_egress`). Everything else
//! must be equal, so a field added to the policy later keeps requests off pools until someone
//! decides it is per-claim (fail closed).

use airlock_policy::{Egress, ResolvedPolicy};
use std::collections::BTreeMap;

/// A pool's identity: create requests whose key equals a pool's may claim its boxes.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolKey(serde_json::Value);

impl PoolKey {
    /// The key of a box made under `policy`; `None` if the policy cannot be encoded (it then
    /// matches no pool).
    pub fn of(policy: &ResolvedPolicy) -> Option<PoolKey> {
        let mut p = policy.clone();
        p.env.clear();
        p.cwd = std::path::PathBuf::new();
        clear_live_egress(&mut p.egress);
        serde_json::to_value(&p).ok().map(PoolKey)
    }
}

/// Clears what `BoxInstance::set_egress` replaces on a running box (the proxy's rules); the
/// connection cap, the byte budget and approvals are fixed at start and stay in the key.
fn clear_live_egress(e: &mut Egress) {
    e.allow_domain.clear();
    e.deny_domain.clear();
    e.allow_ip.clear();
    e.deny_ip.clear();
    e.map_host.clear();
    e.public_internet = false;
}

/// The environment commands of a claimed box start with: the pooled box's own (what its
/// backend adds, such as the proxy's variables), without what the pool's policy put there, plus
/// the claim's policy environment (which wins, as it does in a box started for the claim).
pub fn claim_env(
    pooled: &BTreeMap<String, String>,
    pool_policy: &ResolvedPolicy,
    claim: &ResolvedPolicy,
) -> BTreeMap<String, String> {
    let mut env = pooled.clone();
    for (k, _) in &pool_policy.env {
        env.remove(k);
    }
    env.extend(claim.env.iter().cloned());
    env
}

#[cfg(test)]
#[path = "key_tests.rs"]
mod tests;
