//! A run's refusals as structured values ([`Denial`]), gathered for its result document from
//! what the run already reports: the proxy's refusals (each event carries its denial), the
//! protected paths the change layer did not apply, and the limits that were reached.

use crate::result::{LimitHit, RunResult};
use airlock_policy::{Denial, DenialKind};

/// The denials of `run`, in the order: network, paths, limits.
pub fn of_run(run: &RunResult) -> Vec<Denial> {
    let network = run.network_events.iter().filter_map(|e| e.denial.clone());
    let paths = run
        .changes
        .iter()
        .flat_map(|c| c.skipped.iter())
        .filter(|i| i.reason.contains("protected"))
        .map(|i| Denial {
            kind: DenialKind::Path,
            what: i.path.clone(),
            reason: "protected".into(),
            rule: Some(i.reason.clone()),
            grant: None,
            flag: None,
        });
    let limits = run.limits_hit.iter().map(|&hit| limit(hit));
    network.chain(paths).chain(limits).collect()
}

/// The denial of a limit reached, with the flag that raises it.
pub fn limit(hit: LimitHit) -> Denial {
    let (what, flag) = match hit {
        LimitHit::Timeout => ("timeout", "--timeout"),
        LimitHit::Memory => ("memory", "--memory"),
        LimitHit::Pids => ("pids", "--pids"),
        LimitHit::Output => ("output", "--output-limit"),
        LimitHit::ByteBudget => ("byte-budget", "--byte-budget"),
    };
    Denial {
        kind: DenialKind::Limit,
        what: what.into(),
        reason: format!("{what}-reached"),
        rule: None,
        grant: None,
        flag: Some(flag.into()),
    }
}
