//! A policy and a template turned into what the VM needs: the shares QEMU exports, the disk it
//! attaches, the guest's config line, the VM's size and the commands' defaults. Pure data; a
//! policy the VM cannot enforce as written is refused here, never downgraded.

use crate::jail::{CoverKind, HostCover, VMM_GID, VMM_UID};
use crate::vm::Share;
use crate::MicrovmError;
use airlock_microvm_guest::{GuestConfig, GuestRoot, GuestShare};
use airlock_policy::{
    Access, FilesystemPolicy, NetworkMode, ResolvedPolicy, INSIDE_HOME, INSIDE_USER,
    PROTECTED_PATHS,
};
use airlock_runtime::backend::{CommandDefaults, Template};
use std::path::{Path, PathBuf};

/// The guest's memory when the policy sets none.
pub const DEFAULT_MEMORY_MIB: u64 = 512;
/// The least memory the guest kernel and agent need.
pub const MIN_MEMORY_MIB: u64 = 128;
/// The most vCPUs a box may ask for.
const MAX_VCPUS: u32 = 16;

/// The VM a box needs.
#[derive(Debug, Clone)]
pub struct BoxPlan {
    pub memory_mib: u64,
    pub vcpus: u32,
    /// System shares (host template) then the policy's shares, in tag order.
    pub shares: Vec<Share>,
    pub disk: Option<PathBuf>,
    pub guest: GuestConfig,
    pub defaults: CommandDefaults,
    pub proxied: bool,
    /// The allowlist of a proxied box.
    pub egress: airlock_policy::Egress,
    /// Host paths QEMU's mount namespace pins, holds read-only or hides.
    pub covers: Vec<HostCover>,
    /// The host directories the box can write (the audit file is never opened through a
    /// symlink in them).
    pub box_writable: Vec<PathBuf>,
    /// The secrets the box's proxy holds (for its receipt; the proxy's interceptor is made
    /// from the policy when the box starts).
    pub secrets: Vec<airlock_policy::SecretBinding>,
}

fn refuse(msg: &str) -> MicrovmError {
    MicrovmError::Invalid(msg.to_string())
}

/// Plans the box; `image` is the template's built root image (for `Template::Image`).
pub fn plan(
    policy: &ResolvedPolicy,
    template: &Template,
    image: Option<(PathBuf, String)>,
    cache: &Path,
) -> Result<BoxPlan, MicrovmError> {
    let FilesystemPolicy::Isolated {
        workspace,
        grants,
        deny,
    } = &policy.filesystem
    else {
        return Err(refuse("the microvm backend cannot show the host's whole filesystem (profile full-access): use --profile workspace-write or read-only, with the directories the box needs granted"));
    };
    let proxied = match policy.network {
        NetworkMode::None => false,
        NetworkMode::Proxy => true,
        NetworkMode::Host => {
            return Err(refuse("the microvm backend has no host network: a VM has no network device; use --net proxy (the egress proxy, with an allowlist) or --net none"))
        }
    };
    let memory_mib = match policy.limits.memory {
        None => DEFAULT_MEMORY_MIB,
        Some(bytes) => {
            let mib = bytes.div_ceil(1 << 20);
            if mib < MIN_MEMORY_MIB {
                return Err(MicrovmError::Invalid(format!("--memory {mib} MiB is too little for a VM (its own kernel needs room): give at least {MIN_MEMORY_MIB} MiB")));
            }
            mib
        }
    };
    let vcpus = match policy.limits.cpus {
        None => 1,
        Some(c) if c <= 0.0 => return Err(refuse("--cpus must be positive")),
        Some(c) => (c.ceil() as u32).clamp(1, MAX_VCPUS),
    };
    let mut shares = Vec::new();
    let (root, disk) = match (template, image) {
        (Template::Host, _) => {
            shares.push(Share {
                tag: "usr".into(),
                host: "/usr".into(),
                read_only: true,
            });
            let etc = crate::etc_stage::staged(cache, INSIDE_USER, VMM_UID, VMM_GID, INSIDE_HOME)?;
            shares.push(Share {
                tag: "etc".into(),
                host: etc,
                read_only: true,
            });
            (
                GuestRoot::Host {
                    links: host_links(),
                },
                None,
            )
        }
        (Template::Image(_), Some((path, fstype))) => (GuestRoot::Disk { fstype }, Some(path)),
        (Template::Image(t), None) => {
            return Err(MicrovmError::Invalid(format!(
                "template {:?} has no built image",
                t.name
            )))
        }
    };
    let mut guest_shares = Vec::new();
    let mut protect = Vec::new();
    let mut covers = Vec::new();
    for m in workspace.iter().chain(grants.iter()) {
        // A 9p export is a directory: QEMU cannot share one file (or a FIFO, a socket).
        if !m.host.is_dir() {
            return Err(MicrovmError::Invalid(format!(
                "the microvm backend shares directories only, and {} is not one: grant the directory that holds it (with --deny for what the box must not see), or use --backend native or gvisor",
                m.host.display()
            )));
        }
        if m.access == Access::ReadWrite && m.protect {
            let (pins, paths) = airlock_jail::rootfs::protected_under(&m.host);
            covers.extend(pins.into_iter().map(|path| HostCover {
                path,
                kind: CoverKind::Pin,
            }));
            covers.extend(paths.into_iter().map(|path| HostCover {
                path,
                kind: CoverKind::ReadOnly,
            }));
        }
        let tag = format!("s{}", guest_shares.len());
        let read_only = m.access == Access::ReadOnly;
        shares.push(Share {
            tag: tag.clone(),
            host: m.host.clone(),
            read_only,
        });
        let inside = m.inside.to_string_lossy().into_owned();
        if !read_only && m.protect {
            for p in PROTECTED_PATHS {
                protect.push(format!("{}/{}", inside.trim_end_matches('/'), p.relative));
            }
        }
        guest_shares.push(GuestShare {
            tag,
            inside,
            read_only,
        });
    }
    let mut env: std::collections::BTreeMap<String, String> = match template {
        Template::Image(t) => t.defaults.env.clone(),
        Template::Host => Default::default(),
    };
    env.extend(policy.env.iter().cloned());
    if proxied {
        for (k, v) in airlock_native::proxy_env() {
            env.entry(k).or_insert(v);
        }
    }
    if !policy.secrets.is_empty() {
        // TLS clients read the bundle that has the proxy's CA (the guest binds it in).
        env.extend(airlock_proxy::intercept::box_trust_env());
    }
    let mut mounts: Vec<(&Path, &Path)> = workspace
        .iter()
        .chain(grants.iter())
        .map(|m| (m.inside.as_path(), m.host.as_path()))
        .collect();
    if matches!(template, Template::Host) {
        mounts.push((Path::new("/usr"), Path::new("/usr")));
    }
    for d in deny {
        if let Some(path) = host_of(&mounts, d) {
            covers.push(HostCover {
                path,
                kind: CoverKind::Hide,
            });
        }
    }
    let cwd = policy.cwd.to_string_lossy().into_owned();
    // The box user is uid 1000 (E2B's `user`), whoever runs airlock: QEMU's user namespace maps
    // 1000 to the caller, so the caller's files are the box user's, and the guest's chown and
    // chmod live in xattrs (mapped-xattr) instead of reaching the host.
    let (uid, gid) = (VMM_UID, VMM_GID);
    let guest = GuestConfig {
        root,
        shares: guest_shares,
        protect,
        deny: deny
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
        disk_bytes: policy.limits.disk,
        file_size: policy.limits.file_size,
        open_files: policy.limits.open_files,
        pids: policy.limits.pids,
        uid,
        gid,
        user: INSIDE_USER.to_string(),
        home: INSIDE_HOME.to_string(),
        box_root: true,
        cwd: cwd.clone(),
        proxy_port: proxied.then_some(airlock_native::PROXY_PORT),
        trust_ca: None,
        // Set when the config is sent (`boot::configure`).
        wall_clock_ns: None,
    };
    Ok(BoxPlan {
        memory_mib,
        vcpus,
        shares,
        disk,
        guest,
        defaults: CommandDefaults { env, cwd },
        proxied,
        egress: policy.egress.clone(),
        covers,
        box_writable: airlock_native::box_writable_roots(policy),
        secrets: policy
            .secrets
            .iter()
            .map(|b| airlock_policy::SecretBinding {
                name: b.name.clone(),
                hosts: b.hosts.clone(),
                placeholder: b.placeholder.clone(),
                body: b.body,
                set_headers: b.set_headers.clone(),
                value: None,
            })
            .collect(),
    })
}

/// The host path of `inside` through the share mounted deepest above it, if any.
pub fn host_of(mounts: &[(&Path, &Path)], inside: &Path) -> Option<PathBuf> {
    mounts
        .iter()
        .filter_map(|(at, host)| inside.strip_prefix(at).ok().map(|rest| (at, host, rest)))
        .max_by_key(|(at, _, _)| at.components().count())
        .map(|(_, host, rest)| {
            if rest.as_os_str().is_empty() {
                host.to_path_buf()
            } else {
                host.join(rest)
            }
        })
}

/// The host's top-level links into `/usr` (`bin` → `usr/bin` on merged-usr systems).
fn host_links() -> Vec<(String, String)> {
    let mut links = Vec::new();
    for name in ["bin", "sbin", "lib", "lib32", "lib64", "libx32"] {
        if let Ok(to) = std::fs::read_link(Path::new("/").join(name)) {
            links.push((format!("/{name}"), to.to_string_lossy().into_owned()));
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::host_of;
    use std::path::Path;

    #[test]
    fn an_inside_path_maps_through_the_deepest_share_above_it() {
        let mounts = [
            (Path::new("/w"), Path::new("/host/ws")),
            (Path::new("/w/data"), Path::new("/srv/data")),
        ];
        assert_eq!(
            host_of(&mounts, Path::new("/w/.git/config")).unwrap(),
            Path::new("/host/ws/.git/config")
        );
        assert_eq!(
            host_of(&mounts, Path::new("/w/data/secret")).unwrap(),
            Path::new("/srv/data/secret")
        );
        assert_eq!(
            host_of(&mounts, Path::new("/w/data")).unwrap(),
            Path::new("/srv/data")
        );
        // Not under any share (and `/wx` is not under `/w`).
        assert_eq!(host_of(&mounts, Path::new("/wx/f")), None);
        assert_eq!(host_of(&mounts, Path::new("/etc/shadow")), None);
    }
}
