//! What a microVM box enforces, layer by layer, said plainly (TCG is slow; which layers the
//! VM boundary holds and which the guest kernel holds).

use crate::accel::AccelChoice;
use crate::box_plan::BoxPlan;
use crate::vm::Accel;
use airlock_runtime::backend::Template;
use airlock_runtime::{LayerStatus, Receipt};

/// The receipt of a box planned as `plan` under `accel`.
pub fn receipt(plan: &BoxPlan, template: &Template, accel: &AccelChoice, start: &str) -> Receipt {
    let mut r = Receipt::default();
    let (status, speed) = match accel.accel {
        Accel::Kvm => (LayerStatus::Enforced, "hardware virtualization (KVM)".to_string()),
        Accel::Tcg => (
            LayerStatus::Enforced,
            "software emulation (TCG): every guest instruction is translated, so commands run several times slower than on the host and a cold boot takes seconds".to_string(),
        ),
    };
    r.add(
        "isolation",
        status,
        format!("microVM: its own Linux kernel under QEMU's microvm machine, {}", accel.accel.as_str()),
        format!(
            "the box's system calls are answered by the guest kernel; the host is reached only through QEMU's virtio-mmio devices (serial ports, 9p shares, a read-only disk); {speed} ({})",
            accel.why
        ),
    );
    r.add(
        "vmm",
        LayerStatus::Enforced,
        "QEMU jailed: a user namespace of its own, a mount namespace of its own, its seccomp filter",
        format!(
            "QEMU is uid {} in a user namespace mapping only that uid to the caller's (no capability on the host, even when airlock runs as root); in its mount namespace the protected paths of writable shares are read-only binds and their directories (.git) pinned mount points{}; -sandbox forbids exec and privilege changes; a VMM escape lands with the caller's rights and no more (no cgroup of its own yet)",
            crate::jail::VMM_UID,
            if plan.covers.is_empty() { " (none here)" } else { "" }
        ),
    );
    let root = match template {
        Template::Host => "the host's /usr and selected /etc entries over read-only 9p (QEMU refuses writes), a read-only tmpfs root".to_string(),
        Template::Image(t) => format!("template {} ({}) as a read-only erofs disk under a tmpfs layer", t.name, t.digest),
    };
    let shares: Vec<String> = plan
        .guest
        .shares
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s.inside,
                if s.read_only {
                    "read-only (QEMU refuses writes)"
                } else {
                    "read-write"
                }
            )
        })
        .collect();
    r.add(
        "filesystem",
        LayerStatus::Enforced,
        "virtio-9p shares and a guest-built root",
        format!(
            "{root}; shares: {}; writable shares use QEMU's mapped-xattr model: the guest's modes, owners, set-ID bits, symlinks and device nodes are xattrs of plain host files (0644/0755), never the host's own metadata, and the host's symlinks inside them do not resolve in the guest; protected paths are read-only both in QEMU's mount namespace (holds against a compromised guest kernel) and in the guest; the box has no capabilities to undo a mount",
            if shares.is_empty() { "none".to_string() } else { shares.join(", ") }
        ),
    );
    if plan.proxied {
        r.add(
            "network",
            LayerStatus::Enforced,
            "no network device; the egress proxy's door over a virtio-serial port",
            format!("the only way out is 127.0.0.1:{} in the guest, carried to airlock's proxy on the host, which applies the allowlist and audit", airlock_native::PROXY_PORT),
        );
    } else {
        r.add(
            "network",
            LayerStatus::Enforced,
            "no network device",
            "the VM has no NIC; only its own loopback",
        );
    }
    r.add(
        "limits",
        LayerStatus::Enforced,
        "the VM's size and the guest kernel",
        format!(
            "memory: {} MiB of guest RAM; vCPUs: {}; processes: {}; /tmp, home, /dev/shm and the writable layer: one tmpfs capped at {} bytes together (the workspace and writable grants are live host directories, not counted in it); files: up to {} bytes each, everywhere (the guest's RLIMIT_FSIZE)",
            plan.memory_mib,
            plan.vcpus,
            plan.guest.pids.map_or("uncapped".to_string(), |p| format!("{p} (guest pids cgroup)")),
            plan.guest.disk_bytes,
            plan.guest.file_size
        ),
    );
    r.add(
        "privileges",
        LayerStatus::Enforced,
        "chroot, empty capability sets, locked securebits, no_new_privs, the native box's seccomp filter, hidepid /proc",
        format!(
            "the agent and everything it runs have uid {} inside the guest and no capabilities",
            plan.guest.uid
        ),
    );
    if plan.guest.box_root {
        r.add(
            airlock_runtime::ROOT_LAYER,
            LayerStatus::Enforced,
            "uid 0 of a user namespace nested in the box user's inside the guest, mapping only the box user",
            format!(
                "root is uid {} of the guest by another name: no capabilities, owns exactly what the box user owns (the template's files and /root); \
                 the guest kernel's own root, its sysctls, its init and the other users' files stay out of its reach",
                plan.guest.uid
            ),
        );
    } else {
        r.add(
            airlock_runtime::ROOT_LAYER,
            LayerStatus::Off,
            "none",
            format!(
                "a root request (E2B's user=\"root\") runs as the box user, uid {}",
                plan.guest.uid
            ),
        );
    }
    airlock_native::add_secrets_receipt_for(&mut r, &plan.secrets);
    r.add("start", LayerStatus::Off, start.to_string(), String::new());
    r
}
