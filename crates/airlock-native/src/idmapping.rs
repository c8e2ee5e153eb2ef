//! Idmapped grants for root-started boxes (see `airlock_jail::idmap`).

use crate::plan::{BoxPlan, PlanError};
use crate::RunError;
use std::io;

/// Makes the idmapped grant mounts of a root-started box. Where this host cannot (a filesystem
/// without idmapping support), the box falls back to running as host uid 0 without capabilities,
/// and the receipt says so — or, with `fail_if_unavailable`, the run is refused. The returned
/// descriptors must stay open until the box has started.
pub(crate) fn idmap_grants(
    plan: &mut BoxPlan,
    strict: bool,
) -> Result<Vec<std::os::fd::OwnedFd>, RunError> {
    use std::os::fd::AsRawFd;
    if plan.idmapped.is_empty() {
        return Ok(Vec::new());
    }
    let made = (|| {
        let ns = airlock_jail::idmap::IdmapNamespace::new()?;
        plan.idmapped
            .iter()
            .map(|(host, inside, ro)| {
                airlock_jail::idmap::idmapped_tree(host, &ns, *ro).map(|fd| (inside.clone(), fd))
            })
            .collect::<io::Result<Vec<_>>>()
    })();
    match made {
        Ok(trees) => {
            plan.spec.premade_mounts = trees
                .iter()
                .map(|(inside, fd)| (inside.clone(), fd.as_raw_fd()))
                .collect();
            Ok(trees.into_iter().map(|(_, fd)| fd).collect())
        }
        Err(e) => {
            let detail = format!("runs as uid 1000 inside = host uid 0 without any capability: idmapped mounts are unavailable here ({e})");
            if strict {
                return Err(RunError::Plan(PlanError::Unavailable {
                    layer: "process",
                    detail,
                }));
            }
            plan.spec.ids.host_uid = 0;
            plan.spec.ids.host_gid = 0;
            if let Some(l) = plan
                .receipt
                .layers
                .iter_mut()
                .find(|l| l.layer == "process")
            {
                l.status = airlock_runtime::LayerStatus::Fallback;
                l.detail = detail;
            }
            Ok(Vec::new())
        }
    }
}
