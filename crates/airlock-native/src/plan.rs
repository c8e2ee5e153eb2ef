//! From a resolved policy to a box: which mechanism enforces each clause on this host, and the
//! [`BoxSpec`] the jail executes. Where a clause can only be enforced by a fallback, the receipt
//! says so, or planning fails when the policy says `fail_if_unavailable`.

use airlock_jail::cgroup::{self, CgroupLimits, CgroupSupport};
use airlock_jail::idmap::BOX_HOST_ID;
use airlock_jail::landlock::{self, FsAccess, LandlockRules};
use airlock_jail::rlimits::RlimitPlan;
use airlock_jail::rootfs::{Cover, RealHostFs, RootBase, RootfsPlan};
use airlock_jail::seccomp::{SeccompProfile, SeccompProgram, SocketPolicy};
use airlock_jail::spawn::{BoxMain, BoxSpec, IdMap, Namespaces};
use airlock_policy::{
    Access, ChangesMode, FilesystemPolicy, NetworkMode, ResolvedPolicy, INSIDE_GID, INSIDE_HOME,
    INSIDE_UID,
};
use airlock_proxy::rules::EgressRules;
use airlock_runtime::{LayerStatus, Receipt};
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Why a box cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("no command given: put it after `--`, e.g. `airlock run -- python3 task.py`")]
    NoCommand,
    #[error("{0} contains a NUL byte")]
    Nul(String),
    #[error("the policy requires every layer (fail_if_unavailable) but this host cannot enforce {layer}: {detail}")]
    Unavailable { layer: &'static str, detail: String },
    #[error("cannot build the seccomp filter: {0}")]
    Seccomp(String),
    #[error("invalid network allowlist: {0}")]
    Egress(String),
}

/// The port of the proxy's listener inside a proxied box (its own loopback, so no clash).
pub const PROXY_PORT: u16 = 3128;

/// The proxy a proxied box needs.
#[derive(Debug, Clone)]
pub struct EgressPlan {
    pub rules: EgressRules,
    pub max_connections: usize,
    pub byte_budget: Option<u64>,
}

/// The loopback names a proxied box reaches directly, never through the proxy: the box's own
/// loopback (its network namespace's), where its dev servers, databases and daemons listen.
pub const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// What tools inside a proxied box need to find the proxy: the usual variables (upper and lower
/// case), SOCKS with remote DNS for ALL_PROXY, NO_PROXY naming the box's own loopback (which is
/// not the host's: the box has a network namespace of its own), and the settings npm, pip and
/// Java read.
pub fn proxy_env() -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{PROXY_PORT}");
    let socks = format!("socks5h://127.0.0.1:{PROXY_PORT}");
    let mut env = Vec::new();
    for (name, value) in [
        ("HTTP_PROXY", &http),
        ("HTTPS_PROXY", &http),
        ("ALL_PROXY", &socks),
        ("NO_PROXY", &NO_PROXY.to_string()),
        ("npm_config_proxy", &http),
        ("npm_config_https_proxy", &http),
        ("PIP_PROXY", &http),
    ] {
        env.push((name.to_string(), value.clone()));
        if name.chars().any(|c| c.is_ascii_uppercase()) && !name.starts_with("PIP") {
            env.push((name.to_lowercase(), value.clone()));
        }
    }
    env.push((
        "JAVA_TOOL_OPTIONS".into(),
        format!("-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort={PROXY_PORT} -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort={PROXY_PORT} -Dhttp.nonProxyHosts=localhost|127.0.0.1|[::1]"),
    ));
    env
}

/// A planned box: the spec to spawn, the cgroup limits to create, and the receipt.
pub struct BoxPlan {
    pub spec: BoxSpec,
    /// Limits to enforce through a cgroup (empty when none can or need to be).
    pub cgroup: Option<CgroupLimits>,
    /// The egress proxy to start (proxied boxes only).
    pub egress: Option<EgressPlan>,
    /// Grants to mount idmapped (root-started isolated boxes): (host path, inside path, read-only).
    pub idmapped: Vec<(PathBuf, PathBuf, bool)>,
    pub receipt: Receipt,
}

fn cstr(s: impl Into<Vec<u8>>) -> Result<CString, PlanError> {
    CString::new(s).map_err(|e| PlanError::Nul(String::from_utf8_lossy(&e.into_vec()).into_owned()))
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// The disk layer of the receipt: what one total covers, and what only the per-file cap limits.
fn disk_receipt(policy: &ResolvedPolicy, isolated: bool) -> (&'static str, String) {
    let file = human(policy.limits.file_size);
    if !isolated {
        return ("RLIMIT_FSIZE", format!("files up to {file}; no total cap"));
    }
    let total = human(policy.limits.disk);
    let FilesystemPolicy::Isolated {
        workspace, grants, ..
    } = &policy.filesystem
    else {
        return ("RLIMIT_FSIZE", format!("files up to {file}"));
    };
    let writable_ws = workspace
        .as_ref()
        .filter(|w| w.access == Access::ReadWrite && w.protect);
    let mut detail = match (writable_ws, policy.changes) {
        (Some(_), ChangesMode::Apply) => {
            format!("{total} in total for the workspace's changes, /tmp, home and /dev/shm")
        }
        (Some(_), ChangesMode::Direct) => format!(
            "{total} for /tmp, home and /dev/shm together; workspace: no total write cap (each file ≤ {file})"
        ),
        (None, _) => format!("{total} for /tmp, home and /dev/shm together"),
    };
    if grants.iter().any(|g| g.access == Access::ReadWrite) {
        detail += &format!("; writable grants: no total write cap (each file ≤ {file})");
    }
    detail += &format!("; files up to {file}");
    (
        if writable_ws.is_some() && policy.changes == ChangesMode::Apply {
            "tmpfs size (change layer + scratch) + RLIMIT_FSIZE"
        } else {
            "tmpfs size + RLIMIT_FSIZE"
        },
        detail,
    )
}

impl BoxPlan {
    /// Plans a box for `argv` under `policy`, probing what this host can enforce.
    pub fn new(
        policy: &ResolvedPolicy,
        argv: &[String],
        extra_covers: &[PathBuf],
    ) -> Result<BoxPlan, PlanError> {
        BoxPlan::with_cgroups(policy, argv, extra_covers, &cgroup::probe())
    }

    /// Plans with a cgroup probe the caller already made (e.g. the cheap [`cgroup::probe_writable`]).
    pub fn with_cgroups(
        policy: &ResolvedPolicy,
        argv: &[String],
        extra_covers: &[PathBuf],
        support: &CgroupSupport,
    ) -> Result<BoxPlan, PlanError> {
        if argv.is_empty() {
            return Err(PlanError::NoCommand);
        }
        let mut receipt = Receipt::default();
        let strict = policy.fail_if_unavailable;
        let gap = |receipt: &mut Receipt,
                   layer: &'static str,
                   status: LayerStatus,
                   mech: String,
                   detail: String| {
            if strict && status != LayerStatus::Enforced && status != LayerStatus::Off {
                return Err(PlanError::Unavailable {
                    layer,
                    detail: detail.clone(),
                });
            }
            receipt.add(layer, status, mech, detail);
            Ok(())
        };
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let isolated = matches!(policy.filesystem, FilesystemPolicy::Isolated { .. });

        // Filesystem.
        let base = match &policy.template {
            Some(t) => RootBase::Template {
                lower: t.rootfs.clone(),
                keep_layer: t.keep_layer.clone(),
            },
            None => RootBase::Tmpfs,
        };
        let rootfs = RootfsPlan::on_base(policy, base, &RealHostFs).map(|mut p| {
            p.covers.extend(extra_covers.iter().map(|c| Cover {
                path: c.clone(),
                keep_visible: true,
            }));
            p
        });
        match &policy.filesystem {
            FilesystemPolicy::Isolated {
                workspace,
                grants,
                deny,
            } => {
                let layered = rootfs.as_ref().is_some_and(|r| r.changes_layer().is_some());
                let ws = match workspace {
                    Some(w) => format!(
                        "workspace {} at {} ({}{})",
                        w.host.display(),
                        w.inside.display(),
                        match (w.access, layered) {
                            (Access::ReadOnly, _) => "read-only".to_string(),
                            (Access::ReadWrite, true) => format!(
                                "writable through a change layer on the box's tmpfs, counted in the {} total; applied to the host when the box ends",
                                human(policy.limits.disk)
                            ),
                            (Access::ReadWrite, false) => format!(
                                "writable directly: no total write cap (each file ≤ {})",
                                human(policy.limits.file_size)
                            ),
                        },
                        if w.protect {
                            ", git hooks/config, shell rc and editor config read-only"
                        } else {
                            ""
                        }
                    ),
                    None => "no workspace".into(),
                };
                let root = match &policy.template {
                    None => "fresh tmpfs root; /usr and system dirs read-only; /root on the tmpfs".to_string(),
                    Some(t) => format!(
                        "root from template {} ({}) read-only under the box's own writable layer (overlayfs on its tmpfs, counted in the {} total, gone with the box)",
                        t.name,
                        t.digest,
                        human(policy.limits.disk)
                    ),
                };
                let mut detail = format!(
                    "{root}; synthesized /etc/passwd, group, hosts; new /proc and /dev; /tmp and {INSIDE_HOME} on tmpfs capped at {}; {ws}",
                    human(policy.limits.disk)
                );
                for g in grants {
                    detail += &format!(
                        "; {} {}",
                        if g.access == Access::ReadWrite {
                            "writable (directly, no total write cap)"
                        } else {
                            "read-only"
                        },
                        g.host.display()
                    );
                }
                for d in deny {
                    detail += &format!("; hidden {}", d.display());
                }
                receipt.add(
                    "filesystem",
                    LayerStatus::Enforced,
                    "mount namespace + pivot_root",
                    detail,
                );
            }
            FilesystemPolicy::Host => {
                receipt.add(
                    "filesystem",
                    LayerStatus::Off,
                    "none (full-access)",
                    "the host's whole filesystem is visible and writable as the caller",
                );
            }
        }

        // Process.
        let proxied = policy.network == NetworkMode::Proxy;
        let ns = Namespaces {
            mount: isolated,
            net: policy.network != NetworkMode::Host,
        };
        let egress = if proxied {
            let e = &policy.egress;
            let rules =
                EgressRules::from_egress(e).map_err(|err| PlanError::Egress(err.to_string()))?;
            Some(EgressPlan {
                rules,
                max_connections: e.max_connections as usize,
                byte_budget: e.byte_budget,
            })
        } else {
            None
        };
        // Started by root: the box's user is an unused host uid, and the grants are idmapped so
        // the caller's files still look (and end up) like the box user's own (see `idmap`).
        let idmapped = isolated && uid == 0;
        let ids = if idmapped {
            IdMap {
                inside_uid: INSIDE_UID,
                inside_gid: INSIDE_GID,
                host_uid: BOX_HOST_ID,
                host_gid: BOX_HOST_ID,
            }
        } else if isolated {
            IdMap {
                inside_uid: INSIDE_UID,
                inside_gid: INSIDE_GID,
                host_uid: uid,
                host_gid: gid,
            }
        } else {
            IdMap {
                inside_uid: uid,
                inside_gid: gid,
                host_uid: uid,
                host_gid: gid,
            }
        };
        receipt.add(
            "process",
            LayerStatus::Enforced,
            "user, pid, ipc, uts, cgroup namespaces; all capabilities dropped; no_new_privs",
            format!(
                "runs as uid {} inside (host uid {}{}){}; the box dies with airlock",
                ids.inside_uid,
                ids.host_uid,
                if idmapped {
                    ", not root: workspace and grants are idmapped so files stay the caller's"
                } else {
                    ""
                },
                if ns.mount { ", mount namespace" } else { "" }
            ),
        );
        let seccomp = SeccompProgram::build(&SeccompProfile {
            sockets: SocketPolicy::UnixAndInet,
        })
        .map_err(|e| PlanError::Seccomp(e.to_string()))?;
        receipt.add(
            "seccomp",
            LayerStatus::Enforced,
            format!("BPF allowlist ({} instructions), installed last before exec", seccomp.len()),
            "refused: ptrace, mount, namespaces, bpf, keyctl, perf_event_open, io_uring, userfaultfd, modules, kexec, AF_PACKET/AF_VSOCK, TIOCSTI",
        );

        // Landlock mirrors the mounts: read+exec everywhere visible, write only where writable.
        let abi = landlock::abi_version();
        let landlock = if !isolated {
            receipt.add("landlock", LayerStatus::Off, "none (full-access)", "");
            None
        } else if abi == 0 {
            gap(
                &mut receipt,
                "landlock",
                LayerStatus::NotEnforced,
                "unavailable".into(),
                "this kernel has no Landlock; mounts still enforce the filesystem view".into(),
            )?;
            None
        } else {
            // On a template the root is the box's own writable layer (mounts still hold the
            // read-only grants and protected paths).
            let root_access = match policy.template {
                Some(_) => FsAccess::ReadWrite,
                None => FsAccess::ReadExec,
            };
            let mut paths = vec![(PathBuf::from("/"), root_access)];
            for p in ["/tmp", INSIDE_HOME, "/dev", "/proc"] {
                paths.push((p.into(), FsAccess::ReadWrite));
            }
            if policy.template.is_none() {
                // The box root's home, on the scratch tmpfs (a template's is in its layer).
                paths.push(("/root".into(), FsAccess::ReadWrite));
            }
            if let FilesystemPolicy::Isolated {
                workspace, grants, ..
            } = &policy.filesystem
            {
                for m in workspace
                    .iter()
                    .chain(grants.iter())
                    .filter(|m| m.access == Access::ReadWrite)
                {
                    paths.push((m.inside.clone(), FsAccess::ReadWrite));
                }
            }
            // No TCP-port rule: a box with a network namespace reaches nothing but its own
            // loopback (where the proxy's door is one listener among the box's own), and
            // Landlock's rule is by port alone, so it would refuse the box's processes talking
            // to each other (a dev server and its client) while protecting nothing more.
            let tcp_connect_ports = None;
            let rules = LandlockRules {
                paths,
                tcp_connect_ports,
                deny_tcp_bind: false,
                scope_abstract_unix: abi >= 6,
                scope_signals: abi >= 6,
            };
            let st = landlock::plan(&rules);
            receipt.add(
                "landlock",
                LayerStatus::Enforced,
                format!("Landlock ABI {}", st.abi),
                format!(
                    "writes only to the writable mounts{}",
                    if st.scoped {
                        "; signals and abstract unix sockets scoped to the box"
                    } else {
                        ""
                    },
                ),
            );
            Some(rules)
        };

        // Network.
        match policy.network {
            NetworkMode::None => receipt.add(
                "network",
                LayerStatus::Enforced,
                "network namespace with loopback only",
                "no route to the host or anywhere else; no DNS",
            ),
            NetworkMode::Host => receipt.add(
                "network",
                LayerStatus::Off,
                "host network",
                "the box shares the host's network, unfiltered",
            ),
            NetworkMode::Proxy => {
                let e = &policy.egress;
                let mut grants: Vec<String> = e
                    .allow_domain
                    .iter()
                    .map(|d| format!("allow {d}"))
                    .collect();
                if e.public_internet {
                    grants.push("allow any public destination by name (public_internet)".into());
                }
                grants.extend(e.deny_domain.iter().map(|d| format!("deny {d}")));
                grants.extend(e.allow_ip.iter().map(|d| format!("allow ip {d}")));
                grants.extend(e.deny_ip.iter().map(|d| format!("deny ip {d}")));
                grants.extend(e.map_host.iter().map(|d| format!("map {d}")));
                if grants.is_empty() {
                    grants.push("nothing allowed".into());
                }
                receipt.add(
                    "network",
                    LayerStatus::Enforced,
                    format!("network namespace + egress proxy on 127.0.0.1:{PROXY_PORT} (outside the box)"),
                    format!(
                        "{}; names resolved on the host, private/loopback/link-local/metadata addresses refused unless --allow-ip; at most {} connections{}; the box's own loopback is direct ({NO_PROXY}), the host's is not reachable",
                        grants.join(", "),
                        e.max_connections,
                        e.byte_budget.map(|b| format!(", {} in total", human(b))).unwrap_or_default()
                    ),
                )
            }
        }

        crate::box_secrets::add_receipt(&mut receipt, policy);

        // Resources: cgroups where this host lets us, rlimits otherwise.
        let why = support.reason.clone().unwrap_or_default();
        let mut cg = CgroupLimits::default();
        let mut rl = RlimitPlan {
            open_files: Some(policy.limits.open_files),
            file_size: Some(policy.limits.file_size),
            address_space: None,
            processes: None,
        };
        let version = match &support.version {
            Some(v) => format!("cgroup {v:?}").to_lowercase(),
            None => "cgroup".into(),
        };
        if let Some(mem) = policy.limits.memory {
            if support.memory {
                cg.memory_bytes = Some(mem);
                receipt.add(
                    airlock_runtime::MEMORY_LAYER,
                    LayerStatus::Enforced,
                    format!("{version} memory limit"),
                    human(mem),
                );
            } else {
                rl.address_space = Some(mem);
                gap(
                    &mut receipt,
                    airlock_runtime::MEMORY_LAYER,
                    LayerStatus::Fallback,
                    "RLIMIT_AS".into(),
                    format!(
                        "{} of address space per process — no delegated memory cgroup ({why})",
                        human(mem)
                    ),
                )?;
            }
        }
        if let Some(pids) = policy.limits.pids {
            if support.pids {
                cg.pids = Some(pids);
                receipt.add(
                    "pids",
                    LayerStatus::Enforced,
                    format!("{version} pids limit"),
                    format!("{pids} processes"),
                );
            } else {
                rl.processes = Some(pids);
                gap(
                    &mut receipt,
                    "pids",
                    LayerStatus::Fallback,
                    "RLIMIT_NPROC".into(),
                    format!(
                        "{pids} processes of the box's user — no delegated pids cgroup ({why})"
                    ),
                )?;
            }
        }
        match policy.limits.cpus {
            Some(cpus) if support.cpu => {
                cg.cpus = Some(cpus);
                receipt.add(
                    "cpu",
                    LayerStatus::Enforced,
                    format!("{version} CPU bandwidth"),
                    format!("{cpus} CPUs"),
                );
            }
            Some(cpus) => gap(
                &mut receipt,
                "cpu",
                LayerStatus::NotEnforced,
                "none".into(),
                format!("{cpus} CPUs requested but no delegated cpu cgroup ({why})"),
            )?,
            None => receipt.add(
                "cpu",
                LayerStatus::Off,
                "none",
                "no CPU cap requested (--cpus)",
            ),
        }
        let (disk_mech, disk_detail) = disk_receipt(policy, isolated);
        receipt.add(
            "disk",
            if isolated {
                LayerStatus::Enforced
            } else {
                LayerStatus::Fallback
            },
            disk_mech,
            disk_detail,
        );
        match policy.limits.timeout {
            Some(t) => receipt.add(
                "time",
                LayerStatus::Enforced,
                "wall-clock timeout",
                format!("{:?}, kills the whole box", t),
            ),
            None => receipt.add("time", LayerStatus::Off, "none", "no timeout (--timeout)"),
        }
        match policy.limits.output {
            Some(o) => receipt.add(
                "output",
                LayerStatus::Enforced,
                "supervisor byte count",
                format!("{} of stdout+stderr, then the box is killed", human(o)),
            ),
            None => receipt.add("output", LayerStatus::Off, "none", ""),
        }
        let mut env_pairs = policy.env.clone();
        if proxied {
            for (k, v) in proxy_env() {
                if !env_pairs.iter().any(|(n, _)| *n == k) {
                    env_pairs.push((k, v));
                }
            }
        }
        if !policy.secrets.is_empty() {
            for (k, v) in airlock_proxy::intercept::box_trust_env() {
                env_pairs.retain(|(n, _)| *n != k);
                env_pairs.push((k, v));
            }
        }
        let names: Vec<&str> = env_pairs.iter().map(|(k, _)| k.as_str()).collect();
        receipt.add("env", LayerStatus::Enforced, "allowlist", names.join(" "));

        // Command.
        let path_var = policy
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str())
            .unwrap_or(airlock_policy::DEFAULT_PATH);
        let program = &argv[0];
        let candidates: Vec<String> = if program.contains('/') {
            vec![program.clone()]
        } else {
            path_var
                .split(':')
                .filter(|d| !d.is_empty())
                .map(|d| Path::new(d).join(program).to_string_lossy().into_owned())
                .collect()
        };
        let spec = BoxSpec {
            main: BoxMain::Command { root_at: None },
            argv: argv
                .iter()
                .map(|a| cstr(a.as_bytes()))
                .collect::<Result<_, _>>()?,
            program_candidates: candidates.into_iter().map(cstr).collect::<Result<_, _>>()?,
            env: env_pairs
                .iter()
                .map(|(k, v)| cstr(format!("{k}={v}")))
                .collect::<Result<_, _>>()?,
            cwd: cstr(policy.cwd.to_string_lossy().as_bytes())?,
            namespaces: ns,
            ids,
            rootfs,
            rlimits: rl,
            landlock,
            seccomp: Some(seccomp),
            proxy_listener: None,
            premade_mounts: Vec::new(),
            changes_channel: None,
            cgroup_join: Vec::new(),
        };
        let mut idmapped_grants: Vec<(PathBuf, PathBuf, bool)> =
            match (&policy.filesystem, idmapped) {
                (
                    FilesystemPolicy::Isolated {
                        workspace, grants, ..
                    },
                    true,
                ) => workspace
                    .iter()
                    .chain(grants.iter())
                    .map(|m| {
                        (
                            m.host.clone(),
                            m.inside.clone(),
                            m.access == Access::ReadOnly,
                        )
                    })
                    .collect(),
                _ => Vec::new(),
            };
        if let (Some(t), true) = (&policy.template, idmapped) {
            // The template's tree (owned by root, who stored it) seen as the box user's own, so
            // the box's writable layer can copy its files up.
            idmapped_grants.push((t.rootfs.clone(), t.rootfs.clone(), true));
        }
        Ok(BoxPlan {
            spec,
            cgroup: (!cg.is_empty()).then_some(cg),
            egress,
            idmapped: idmapped_grants,
            receipt,
        })
    }
}
