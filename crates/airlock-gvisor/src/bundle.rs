//! From a resolved policy and a template to an OCI bundle for runsc: the `config.json` and the
//! few host-side steps that prepare its root. The host system directories a `host` box sees are
//! the native box's own selection ([`RootfsPlan::from_policy`]), translated op by op, so both
//! backends show the same tree.

use crate::agent_files::AgentFiles;
use crate::layout::Layout;
use crate::protect::ViewProtection;
use crate::spec::{self, Mount, Spec};
use airlock_jail::rootfs::{Cover, FsOp, RealHostFs, RootfsPlan};
use airlock_policy::{
    Access, FilesystemPolicy, NetworkMode, ResolvedPolicy, INSIDE_GID, INSIDE_UID,
};
use airlock_runtime::backend::Template;
use std::path::{Path, PathBuf};

/// Why a policy cannot become a gVisor box.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("the gvisor backend always gives the box its own root: the full-access profile (the host's filesystem as it is) needs --backend native")]
    HostFilesystem,
    #[error("the working directory {0} does not exist in the box: give a directory inside the workspace or a grant (or /tmp, the home directory)")]
    NoCwd(PathBuf),
    #[error("the gvisor backend writes a writable workspace directly (its box is long-lived): use --changes direct, or --backend native for a change layer")]
    ChangeLayer,
    #[error("{0} is neither a file nor a directory (a FIFO, socket or device): a gVisor box can be granted only those (runsc's gofer would open it, and a FIFO blocks the start), so grant its directory or use --backend native")]
    SpecialFile(PathBuf),
    #[error("cannot read the image's trust bundle {path} (the box's is it plus the box's CA, for its secrets): {err}")]
    TrustBundle { path: PathBuf, err: std::io::Error },
}

/// One host-side step before runsc starts (inside the box's private tmpfs only).
#[derive(Debug, Clone, PartialEq)]
pub enum Prep {
    /// A directory, owned by the box's user when `boxed`.
    Dir {
        path: PathBuf,
        mode: u32,
        boxed: bool,
    },
    File {
        path: PathBuf,
        contents: String,
        boxed: bool,
    },
    Symlink {
        path: PathBuf,
        target: PathBuf,
    },
    /// A small host file copied in (skipped if missing).
    Copy {
        source: PathBuf,
        path: PathBuf,
    },
}

/// A user mount (workspace or grant) shown through an idmapped view at `view`.
#[derive(Debug, Clone, PartialEq)]
pub struct UserMount {
    pub host: PathBuf,
    pub inside: PathBuf,
    pub writable: bool,
    /// Where the idmapped view is attached (inside the private tmpfs).
    pub view: PathBuf,
}

/// Everything the host process does to give runsc its bundle.
#[derive(Debug, Clone)]
pub struct BundlePlan {
    pub spec: Spec,
    pub prep: Vec<Prep>,
    pub user_mounts: Vec<UserMount>,
    /// The protected and denied paths under each grant, held by the host kernel beneath its
    /// view (the native box's pins and covers).
    pub protect: Vec<ViewProtection>,
    /// The image's root, mounted read-only under a writable layer on the scratch tmpfs.
    pub image_root: Option<PathBuf>,
}

/// Where an inside path lives on the host before runsc starts.
enum Home {
    /// In a directory airlock made (the root skeleton or the scratch tmpfs): free to prepare.
    Ours(PathBuf),
    /// Under a host bind (system or user): must exist already.
    Host,
}

fn rel(path: &Path, base: &Path) -> Option<PathBuf> {
    path.strip_prefix(base).ok().map(Path::to_path_buf)
}

impl BundlePlan {
    /// Plans the bundle. `agent` is what the init runs from; `layout` where things go;
    /// `extra_covers` the inside paths the placeholders add to the plan's covers.
    pub fn new(
        policy: &ResolvedPolicy,
        template: &Template,
        agent: &AgentFiles,
        layout: &Layout,
        extra_covers: &[PathBuf],
    ) -> Result<BundlePlan, BundleError> {
        BundlePlan::with_ops(policy, template, agent, layout, extra_covers, Vec::new())
    }

    /// [`BundlePlan::new`] with `extra` ops after the policy's own (the box's trust bundle).
    pub fn with_ops(
        policy: &ResolvedPolicy,
        template: &Template,
        agent: &AgentFiles,
        layout: &Layout,
        extra_covers: &[PathBuf],
        extra: Vec<FsOp>,
    ) -> Result<BundlePlan, BundleError> {
        let Some(mut rootfs) = RootfsPlan::from_policy(policy, &RealHostFs) else {
            return Err(BundleError::HostFilesystem);
        };
        rootfs.ops.extend(extra);
        let FilesystemPolicy::Isolated {
            workspace, grants, ..
        } = &policy.filesystem
        else {
            return Err(BundleError::HostFilesystem);
        };
        let image = match template {
            Template::Host => None,
            Template::Image(t) => Some(t.rootfs.clone()),
        };
        let user_mounts: Vec<UserMount> = workspace
            .iter()
            .chain(grants.iter())
            .enumerate()
            .map(|(i, m)| UserMount {
                host: m.host.clone(),
                inside: m.inside.clone(),
                writable: m.access == Access::ReadWrite,
                view: layout.views.join(i.to_string()),
            })
            .collect();
        for m in &user_mounts {
            // A missing path is the policy's to refuse; anything else must be a file or a dir.
            if let Ok(meta) = std::fs::metadata(&m.host) {
                if !meta.is_file() && !meta.is_dir() {
                    return Err(BundleError::SpecialFile(m.host.clone()));
                }
            }
        }
        let mut b = Builder {
            layout,
            mounts: Vec::new(),
            prep: Vec::new(),
            scratch: Vec::new(),
        };
        for op in &rootfs.ops {
            b.op(op, &user_mounts, image.as_deref())?;
        }
        // runsc always gives the box a /sys, the Sentry's own (synthetic: CPUs, loopback); a
        // native box has none, and neither does this one: an empty read-only tmpfs covers it.
        b.add_mount(Mount::tmpfs("/sys", true), true);
        for (m, is_dir) in agent.mounts() {
            b.add_mount(m, is_dir);
        }
        for (shim, inside) in [
            (&layout.statx_compat, crate::compat::STATX_COMPAT_INSIDE),
            (&layout.xattr_compat, crate::compat::XATTR_COMPAT_INSIDE),
        ] {
            b.add_mount(Mount::bind(shim, inside, false), false);
        }
        // The Sentry's own layer: pinned directories bound writable, protected paths bound
        // read-only, denied ones hidden. A symlink is left to the host-side cover (an empty
        // file over the link itself), which runsc could not bind without following it.
        for pin in &rootfs.pins {
            if let Some((um, host)) = user_host(&user_mounts, pin).filter(|(_, h)| lstat_dir(h)) {
                let view = um.view.join(rel(&host, &um.host).unwrap_or_default());
                b.add_mount(Mount::bind(view, pin, um.writable), true);
            }
        }
        check_cwd(&policy.cwd, &user_mounts, &b.scratch, image.as_deref())?;
        let extra = extra_covers.iter().map(|path| Cover {
            path: path.clone(),
            keep_visible: true,
        });
        let covers: Vec<Cover> = rootfs.covers.iter().cloned().chain(extra).collect();
        for cover in &covers {
            let Some((um, host)) = user_host(&user_mounts, &cover.path) else {
                continue;
            };
            let Ok(meta) = host.symlink_metadata() else {
                continue;
            };
            let view = um.view.join(rel(&host, &um.host).unwrap_or_default());
            if meta.file_type().is_symlink() {
                continue;
            }
            if cover.keep_visible {
                b.add_mount(Mount::bind(view, &cover.path, false), meta.is_dir());
            } else if meta.is_dir() {
                b.add_mount(Mount::tmpfs(&cover.path, true), true);
            } else {
                b.add_mount(Mount::bind(&layout.empty_file, &cover.path, false), false);
            }
        }
        let protect = view_protection(&user_mounts, &rootfs.pins, &covers);
        let mut env = vec![
            format!("PATH={}", airlock_policy::DEFAULT_PATH),
            format!("HOME={}", airlock_policy::INSIDE_HOME),
        ];
        if policy.network == NetworkMode::Proxy {
            env.extend(
                airlock_native::proxy_env()
                    .into_iter()
                    .map(|(k, v)| format!("{k}={v}")),
            );
        }
        if !policy.secrets.is_empty() {
            env.extend(
                airlock_proxy::intercept::box_trust_env()
                    .into_iter()
                    .map(|(k, v)| format!("{k}={v}")),
            );
        }
        let mut namespaces = vec!["pid", "ipc", "uts", "mount"];
        if policy.network == NetworkMode::None {
            namespaces.push("network");
        }
        let spec = Spec {
            oci_version: "1.0.2",
            process: spec::Process {
                terminal: false,
                user: spec::User {
                    uid: INSIDE_UID,
                    gid: INSIDE_GID,
                    additional_gids: Vec::new(),
                },
                // Inet sockets as in a native box: without a network the Sentry's netstack has
                // nothing but its own loopback, so they reach only the box's own listeners.
                args: agent.init_args(0, "inet"),
                env,
                cwd: "/".into(),
                capabilities: spec::Capabilities::default(),
                rlimits: vec![
                    spec::Rlimit {
                        kind: "RLIMIT_NOFILE",
                        hard: policy.limits.open_files,
                        soft: policy.limits.open_files,
                    },
                    spec::Rlimit {
                        kind: "RLIMIT_FSIZE",
                        hard: policy.limits.file_size,
                        soft: policy.limits.file_size,
                    },
                    spec::Rlimit {
                        kind: "RLIMIT_CORE",
                        hard: 0,
                        soft: 0,
                    },
                ]
                .into_iter()
                .chain(policy.limits.pids.map(|pids| spec::Rlimit {
                    // Every task of the box runs as its one user, so the Sentry's per-user
                    // task limit is the box's: a fork past it fails with EAGAIN inside the
                    // box, before the host cgroup's limit (which would end the Sentry) is near.
                    kind: "RLIMIT_NPROC",
                    hard: pids,
                    soft: pids,
                }))
                .collect(),
                no_new_privileges: true,
            },
            root: spec::Root {
                path: layout.rootfs.clone(),
                readonly: image.is_none(),
            },
            hostname: airlock_jail::identity::HOSTNAME.to_string(),
            mounts: b.mounts,
            linux: spec::Linux {
                namespaces: namespaces
                    .into_iter()
                    .map(|kind| spec::Namespace { kind })
                    .collect(),
            },
        };
        Ok(BundlePlan {
            spec,
            prep: b.prep,
            user_mounts,
            protect,
            image_root: image,
        })
    }
}

/// The working directory must exist where the box will see it: in a grant (on the host now),
/// in the scratch (made fresh), in the template's root (a template's own working directory), or
/// be `/`.
fn check_cwd(
    cwd: &Path,
    users: &[UserMount],
    scratch: &[(PathBuf, PathBuf)],
    image: Option<&Path>,
) -> Result<(), BundleError> {
    let in_image = |root: &Path| {
        cwd.strip_prefix("/")
            .map(|rel| root.join(rel))
            .is_ok_and(|p| p.symlink_metadata().is_ok_and(|m| m.is_dir()))
    };
    let exists = match user_host(users, cwd) {
        Some((_, host)) => host.is_dir(),
        None => {
            cwd == Path::new("/")
                || scratch.iter().any(|(inside, _)| cwd == inside.as_path())
                || image.is_some_and(in_image)
        }
    };
    if exists {
        Ok(())
    } else {
        Err(BundleError::NoCwd(cwd.to_path_buf()))
    }
}

/// Whether `p` is a directory itself (not a symlink to one).
fn lstat_dir(p: &Path) -> bool {
    p.symlink_metadata().is_ok_and(|m| m.is_dir())
}

/// The pins and covers under each user mount, relative to its view (each path goes to the
/// deepest mount holding it).
fn view_protection(users: &[UserMount], pins: &[PathBuf], covers: &[Cover]) -> Vec<ViewProtection> {
    let mut out: Vec<ViewProtection> = users
        .iter()
        .map(|u| ViewProtection {
            view: u.view.clone(),
            pins: Vec::new(),
            covers: Vec::new(),
        })
        .collect();
    let slot = |p: &Path| {
        let (m, _) = user_host(users, p)?;
        let i = users.iter().position(|u| std::ptr::eq(u, m))?;
        rel(p, &m.inside).map(|r| (i, r))
    };
    for pin in pins {
        if let Some((i, r)) = slot(pin) {
            out[i].pins.push(r);
        }
    }
    for cover in covers {
        if let Some((i, r)) = slot(&cover.path) {
            out[i].covers.push(Cover {
                path: r,
                keep_visible: cover.keep_visible,
            });
        }
    }
    out.retain(|v| !v.pins.is_empty() || !v.covers.is_empty());
    out
}

/// The user mount holding inside path `p` (the deepest), and `p`'s host path.
fn user_host<'a>(mounts: &'a [UserMount], p: &Path) -> Option<(&'a UserMount, PathBuf)> {
    mounts
        .iter()
        .filter(|m| p.starts_with(&m.inside))
        .max_by_key(|m| m.inside.components().count())
        .and_then(|m| rel(p, &m.inside).map(|r| (m, m.host.join(r))))
}

struct Builder<'a> {
    layout: &'a Layout,
    mounts: Vec<Mount>,
    prep: Vec<Prep>,
    /// Inside paths served from the scratch tmpfs: (inside, host directory).
    scratch: Vec<(PathBuf, PathBuf)>,
}

impl Builder<'_> {
    fn op(
        &mut self,
        op: &FsOp,
        users: &[UserMount],
        image: Option<&Path>,
    ) -> Result<(), BundleError> {
        match op {
            // gVisor makes its own /dev (null, zero, full, random, urandom, tty, pts, ptmx, fd
            // and std* links): nothing of the host's /dev is bound.
            FsOp::Bind { target, .. } | FsOp::Symlink { link: target, .. }
                if target.starts_with("/dev") => {}
            FsOp::Tmpfs { target, .. } | FsOp::Devpts { target } | FsOp::Dir { target, .. }
                if target.starts_with("/dev") => {}
            FsOp::Bind {
                source,
                target,
                writable,
                optional,
                ..
            } => {
                if let Some(u) = users.iter().find(|u| &u.inside == target) {
                    self.add_mount(Mount::bind(&u.view, target, u.writable), u.host.is_dir());
                } else if image.is_none() && (!optional || source.exists()) {
                    self.add_mount(Mount::bind(source, target, *writable), source.is_dir());
                }
            }
            // The image brings its own system files; a host box gets the host's.
            FsOp::Copy { source, target } if image.is_none() => {
                if let Home::Ours(path) = self.home(target) {
                    self.prep.push(Prep::Copy {
                        source: source.clone(),
                        path,
                    });
                }
            }
            FsOp::Symlink { link, target } if image.is_none() => {
                if let Home::Ours(path) = self.home(link) {
                    self.prep.push(Prep::Symlink {
                        path,
                        target: target.clone(),
                    });
                }
            }
            FsOp::Copy { .. } | FsOp::Symlink { .. } => {}
            FsOp::Dir { target, mode } => {
                if let Home::Ours(path) = self.home(target) {
                    self.prep.push(Prep::Dir {
                        path,
                        mode: *mode,
                        boxed: false,
                    });
                }
            }
            FsOp::File { target, contents } => {
                if let Home::Ours(path) = self.home(target) {
                    let boxed = self
                        .scratch
                        .iter()
                        .any(|(inside, _)| target.starts_with(inside));
                    self.prep.push(Prep::File {
                        path,
                        contents: contents.clone(),
                        boxed,
                    });
                }
            }
            FsOp::Tmpfs { target, .. } => self.add_mount(Mount::tmpfs(target, false), true),
            FsOp::Devpts { .. } => {}
            // What a template leaves at a path the native box hides stays visible under gVisor
            // where it is harmless: a resolver config names servers the box has no route to (its
            // only door is the proxy, which resolves on the host); /sys is covered below.
            FsOp::Absent { .. } => {}
            FsOp::Scratch { sub, target } => {
                let host = self.layout.scratch.join(sub);
                let mode = if sub == "home" { 0o700 } else { 0o1777 };
                self.prep.push(Prep::Dir {
                    path: host.clone(),
                    mode,
                    boxed: true,
                });
                self.add_mount(Mount::bind(&host, target, true), true);
                self.scratch.push((target.clone(), host));
            }
            FsOp::Proc { target } => self.add_mount(
                Mount {
                    destination: target.clone(),
                    kind: "proc",
                    source: "proc".into(),
                    options: vec!["nosuid".into(), "nodev".into(), "noexec".into()],
                },
                true,
            ),
            FsOp::Overlay { .. } => return Err(BundleError::ChangeLayer),
            // The host's file (a host box sees the host's /etc/ssl) with the addition, in the
            // bundle's own root, bound read-only over the target.
            FsOp::ExtendFile { target, append } => {
                let original = match image {
                    // The image's own file, resolved inside its tree as the box would see it
                    // (a symlink there never leads to the host's files).
                    Some(root) => airlock_jail::in_root::read_file(root, target, 64 << 20)
                        .map_err(|err| BundleError::TrustBundle {
                            path: target.clone(),
                            err,
                        })?
                        .unwrap_or_default(),
                    None => std::fs::read(target).unwrap_or_default(),
                };
                let mut contents = String::from_utf8_lossy(&original).into_owned();
                if !contents.is_empty() && !contents.ends_with('\n') {
                    contents.push('\n');
                }
                contents.push_str(append);
                let name = target.to_string_lossy().replace('/', "_");
                let copy = self.layout.rootfs.join(".airlock/extended").join(name);
                self.prep.push(Prep::File {
                    path: copy.clone(),
                    contents,
                    boxed: false,
                });
                self.add_mount(Mount::bind(&copy, target, false), false);
            }
        }
        Ok(())
    }

    /// Where inside path `p` is on the host now: the deepest mount so far holding it decides.
    fn home(&self, p: &Path) -> Home {
        let deepest = self
            .mounts
            .iter()
            .filter(|m| p.starts_with(&m.destination) && m.kind == "bind")
            .max_by_key(|m| m.destination.components().count());
        let scratch = self
            .scratch
            .iter()
            .filter(|(inside, _)| p.starts_with(inside))
            .max_by_key(|(inside, _)| inside.components().count());
        match (deepest, scratch) {
            (Some(m), Some((inside, host))) if m.destination == *inside => {
                Home::Ours(host.join(rel(p, inside).unwrap_or_default()))
            }
            (Some(_), _) => Home::Host,
            (None, _) => Home::Ours(
                self.layout
                    .rootfs
                    .join(rel(p, Path::new("/")).unwrap_or_default()),
            ),
        }
    }

    /// Adds a mount, preparing its mount point (a directory or a file) where it lies in a
    /// directory airlock made.
    fn add_mount(&mut self, m: Mount, is_dir: bool) {
        if let Home::Ours(path) = self.home(&m.destination) {
            self.prep.push(if is_dir {
                Prep::Dir {
                    path,
                    mode: 0o755,
                    boxed: false,
                }
            } else {
                Prep::File {
                    path,
                    contents: String::new(),
                    boxed: false,
                }
            });
        }
        // A mount hides every earlier one at or below its destination, so those are dropped:
        // the box sees the same tree, and no two mounts share a destination, which `runsc
        // restore` needs (it pairs the restored mounts with the gofer's by destination, and
        // a second mount at one place finds its connection taken: "cannot allocate memory").
        self.mounts
            .retain(|earlier| !earlier.destination.starts_with(&m.destination));
        self.mounts.push(m);
    }
}

#[cfg(test)]
#[path = "bundle_tests.rs"]
mod tests;
