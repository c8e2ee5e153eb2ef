//! What a gVisor box enforces, layer by layer: what gVisor adds (the Sentry answers the box's
//! system calls; the host kernel never sees them) and what airlock's own layers still add
//! around it (a host cgroup, airlock's network namespace and proxy, the mounts it chose).

use crate::bundle::BundlePlan;
use crate::runsc::Runsc;
use airlock_policy::{NetworkMode, ResolvedPolicy};
use airlock_runtime::backend::Template;
use airlock_runtime::{LayerStatus, Receipt};

/// Host tasks runsc itself needs beyond the box's own processes (the Sentry's and the gofer's
/// threads: an idle box holds about 190 under the ptrace platform).
pub const PIDS_OVERHEAD: u64 = 256;
/// Host tasks one task of the box may cost (its stub process and the Sentry thread that runs
/// it: about 25 each under the ptrace platform, measured with 60 `sleep`s). The box's own count
/// is held exactly inside (RLIMIT_NPROC); the host cgroup's is this bound on what those cost.
pub const HOST_TASKS_PER_TASK: u64 = 32;

/// The host cgroup's task limit for a box of `pids` tasks.
pub fn host_pids(pids: u64) -> u64 {
    pids.saturating_mul(HOST_TASKS_PER_TASK)
        .saturating_add(PIDS_OVERHEAD)
}

/// Why a policy cannot be enforced as asked (with `fail_if_unavailable`).
#[derive(Debug, thiserror::Error)]
#[error("the policy requires every layer (fail_if_unavailable) but the gvisor backend cannot enforce {layer}: {detail}")]
pub struct Unenforceable {
    pub layer: &'static str,
    pub detail: String,
}

/// Facts of this start the receipt depends on.
pub struct Facts<'a> {
    pub runsc: &'a Runsc,
    pub plan: &'a BundlePlan,
    pub template: &'a Template,
    /// Whether a host cgroup can be made (memory, pids and CPU limits).
    pub cgroup: bool,
    /// Why the grants or the image's tree are not idmapped, if they are not.
    pub idmap_gap: Option<String>,
}

/// The receipt of a gVisor box.
pub fn receipt(policy: &ResolvedPolicy, f: &Facts<'_>) -> Result<Receipt, Unenforceable> {
    let strict = policy.fail_if_unavailable;
    let mut r = Receipt::default();
    let mut add = |layer: &'static str, status: LayerStatus, mech: String, detail: String| {
        if strict && !matches!(status, LayerStatus::Enforced | LayerStatus::Off) {
            return Err(Unenforceable {
                layer,
                detail: detail.clone(),
            });
        }
        r.add(layer, status, mech, detail);
        Ok(())
    };
    add(
        "kernel",
        LayerStatus::Enforced,
        format!("gVisor Sentry ({}, platform {})", f.runsc.version, f.runsc.platform),
        "the box's system calls are answered by gVisor's user-space kernel; the host kernel sees only the Sentry's own seccomp-filtered set; no Landlock (the Sentry's mounts are the filesystem boundary)".into(),
    )?;
    add(
        "seccomp",
        LayerStatus::Enforced,
        "airlock's BPF allowlist, installed by the agent in each command, enforced by the Sentry".into(),
        "refused as in a native box: ptrace, mount, namespaces, bpf, keyctl, set-ID modes, io_uring, …".into(),
    )?;
    let root = match f.template {
        Template::Host => {
            "the host's system directories read-only (the native box's selection)".to_string()
        }
        Template::Image(t) => format!(
            "template {} ({}) read-only under a writable layer on the scratch tmpfs",
            t.name, t.digest
        ),
    };
    let fs_detail = format!(
        "{root}; workspace and grants as binds with their read-only flags, served by the gofer; protected paths (the native box's selection, empty placeholders for missing ones) read-only and pinned by host mounts beneath the grants, so the host kernel refuses their writes, renames and removals whatever the Sentry does"
    );
    add(
        "filesystem",
        LayerStatus::Enforced,
        "OCI mounts (runsc gofer) over host-side covers".into(),
        fs_detail,
    )?;
    match &f.idmap_gap {
        None => add(
            "process",
            LayerStatus::Enforced,
            "gVisor credentials".into(),
            format!("uid {} inside, no capabilities, no_new_privs; grants idmapped so the box's files belong to whoever ran airlock (an image's, to the box user, as in a native box)", airlock_policy::INSIDE_UID),
        )?,
        Some(why) => add(
            "process",
            LayerStatus::Fallback,
            "gVisor credentials".into(),
            format!("uid {} inside, no capabilities, no_new_privs; {why}", airlock_policy::INSIDE_UID),
        )?,
    }
    match policy.network {
        NetworkMode::None => add(
            "network",
            LayerStatus::Enforced,
            "runsc --network=none".into(),
            "the Sentry has no network device: loopback only, no route, no DNS".into(),
        )?,
        NetworkMode::Proxy => add(
            "network",
            LayerStatus::Enforced,
            format!("airlock's network namespace + egress proxy on 127.0.0.1:{} (outside the box)", airlock_native::PROXY_PORT),
            "runsc uses host sockets in a namespace holding only loopback and the proxy's listener: every connection goes through the allowlist and is audited; the box may also reach its own listeners on that loopback (no Landlock port rule); the host kernel's socket code is reachable through the Sentry's host-network calls".into(),
        )?,
        NetworkMode::Host => add(
            "network",
            LayerStatus::NotEnforced,
            "runsc --network=host".into(),
            "the host's network, unfiltered".into(),
        )?,
    }
    let l = &policy.limits;
    let cg = |what: Option<String>, layer: &'static str| -> (LayerStatus, String, String) {
        match (what, f.cgroup) {
            (None, _) => (LayerStatus::Off, "none".into(), String::new()),
            (Some(w), true) => (LayerStatus::Enforced, "host cgroup around runsc".into(), w),
            (Some(w), false) => (
                LayerStatus::NotEnforced,
                "none".into(),
                format!("{w} asked, but no cgroup can be made here for the {layer} limit"),
            ),
        }
    };
    for (layer, what) in [
        ("memory", l.memory.map(|m| format!("{m} bytes for the whole sandbox (the Sentry's own memory counts); reaching it ends the whole box, not one process: gVisor has no OOM killer of its own, and the host's kills the Sentry"))),
        ("pids", l.pids.map(|p| format!("{p} tasks: the Sentry refuses forks past it (RLIMIT_NPROC of the box's one user, EAGAIN inside); the host cgroup around runsc allows {} host tasks (the Sentry's, the gofer's and each task's stub), so a bomb fails inside the box before it can end the Sentry", host_pids(p)))),
        ("cpu", l.cpus.map(|c| format!("{c} CPUs for the whole sandbox"))),
    ] {
        let (status, mech, detail) = cg(what, layer);
        add(layer, status, mech, detail)?;
    }
    add(
        "disk",
        LayerStatus::Enforced,
        "host tmpfs size + RLIMIT_FSIZE".into(),
        format!(
            "{} bytes for /tmp, home, /dev/shm{} together; files up to {} bytes; the workspace is written directly (no change layer under gVisor), so its writes are not under this cap",
            l.disk,
            if f.plan.image_root.is_some() {
                " and the image's writable layer"
            } else {
                ""
            },
            l.file_size
        ),
    )?;
    let names: Vec<&str> = policy.env.iter().map(|(k, _)| k.as_str()).collect();
    add(
        "env",
        LayerStatus::Enforced,
        "allowlist".into(),
        names.join(" "),
    )?;
    add(
        airlock_runtime::ROOT_LAYER,
        LayerStatus::Enforced,
        "uid 0 of a user namespace nested in the box user's inside the Sentry, one per root command, mapping only the box user".into(),
        format!(
            "root is uid {} of the box by another name: no capabilities, owns exactly what the box user owns; \
             files of other users, mounts, the network and the host stay out of its reach",
            airlock_policy::INSIDE_UID
        ),
    )?;
    airlock_native::add_secrets_receipt(&mut r, policy);
    Ok(r)
}
