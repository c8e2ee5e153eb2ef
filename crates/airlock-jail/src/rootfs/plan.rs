//! The root of an isolated box, planned as data from the resolved policy.

use crate::identity;
use airlock_policy::{
    Access, ChangesMode, FilesystemPolicy, NetworkMode, ResolvedPolicy, PROTECTED_PATHS,
};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Host directories bound read-only at the same path (or replicated as symlinks).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];
/// Host `/etc` entries bound read-only when present: what the dynamic loader, TLS, locales,
/// time zones, shells and interpreters need. No credentials (no shadow, no gitconfig, no npmrc).
pub const ETC_ENTRIES: &[&str] = &[
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "localtime",
    "timezone",
    "nsswitch.conf",
    "protocols",
    "services",
    "mime.types",
    "magic",
    "magic.mime",
    "inputrc",
    "bash.bashrc",
    "profile",
    "terminfo",
    "gai.conf",
    "host.conf",
    "os-release",
    "debian_version",
    "python3",
    "python3.11",
    "python3.12",
    "python3.13",
    "perl",
    "manpath.config",
    "locale.alias",
    "matplotlibrc",
    "fonts",
];
/// Device nodes bound from the host's /dev.
const DEV_NODES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];
/// /proc entries covered with an empty file (information leaks or dangerous triggers).
pub const PROC_MASKED: &[&str] = &[
    "kcore",
    "keys",
    "timer_list",
    "sched_debug",
    "sysrq-trigger",
    "kallsyms",
];
/// /proc subtrees made read-only.
pub const PROC_READ_ONLY: &[&str] = &["sys", "irq", "bus", "fs"];
/// Where the box keeps its empty placeholders (inside the read-only root).
pub(super) const EMPTY_FILE: &str = "/.airlock/empty";
pub(super) const EMPTY_DIR: &str = "/.airlock/empty.d";
/// Where [`FsOp::ExtendFile`] keeps the extended copies.
pub(super) const EXTENDED_DIR: &str = "/.airlock/extended";
/// Where the workspace's change layer (upper and work directories) lives on the scratch tmpfs;
/// no view of the scratch shows it to the box.
pub(super) const CHANGES_DIR: &str = "changes";

/// Whether a mount is read-only or writable, and what kind of node it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Dir,
    File,
}

/// One step of building the root, as data (so receipts can show it and tests can check it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum FsOp {
    Bind {
        source: PathBuf,
        target: PathBuf,
        writable: bool,
        kind: NodeKind,
        optional: bool,
    },
    /// A small host file copied into the (read-only) root: cheaper than a mount, and a later
    /// change on the host does not show through. Skipped if the source is missing.
    Copy {
        source: PathBuf,
        target: PathBuf,
    },
    Symlink {
        link: PathBuf,
        target: PathBuf,
    },
    Dir {
        target: PathBuf,
        mode: u32,
    },
    File {
        target: PathBuf,
        contents: String,
    },
    Tmpfs {
        target: PathBuf,
        size: u64,
        mode: u32,
    },
    /// A view of the shared scratch tmpfs (one size cap for /tmp, home and /dev/shm).
    Scratch {
        sub: String,
        target: PathBuf,
    },
    Proc {
        target: PathBuf,
    },
    Devpts {
        target: PathBuf,
    },
    /// Nothing at `target`: on a template root, what the template has there is removed from the
    /// box's own layer (the host's resolver config, `/sys`); a fresh root has nothing there.
    Absent {
        target: PathBuf,
    },
    /// The file at `target`, as the root has it so far (in a read-only bind, or absent), with
    /// `append` added, bound read-only over it. How the box's trust bundle gets the box's own
    /// CA (the egress proxy's secrets) without touching the host's file.
    ExtendFile {
        target: PathBuf,
        append: String,
    },
    /// An overlay over what is mounted at `target` (its read-only lower layer), whose upper
    /// layer lives on the scratch tmpfs: the box's writes there count against the scratch cap
    /// and stay in the layer until the supervisor applies them to the host.
    Overlay {
        target: PathBuf,
    },
}

impl FsOp {
    /// The path in the root this op makes or mounts on.
    pub(crate) fn place(&self) -> &Path {
        match self {
            FsOp::Symlink { link, .. } => link,
            FsOp::Bind { target, .. }
            | FsOp::Copy { target, .. }
            | FsOp::Dir { target, .. }
            | FsOp::File { target, .. }
            | FsOp::Tmpfs { target, .. }
            | FsOp::Scratch { target, .. }
            | FsOp::Proc { target }
            | FsOp::Devpts { target }
            | FsOp::Absent { target }
            | FsOp::ExtendFile { target, .. }
            | FsOp::Overlay { target } => target,
        }
    }
}

/// A protected or denied path to cover after pivot_root.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cover {
    pub path: PathBuf,
    /// `true`: keep the existing content visible but read-only; `false`: hide it.
    pub keep_visible: bool,
}

/// What the root itself is, before the ops run on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RootBase {
    /// A small fresh tmpfs, read-only once built, holding the host's system dirs (`host`).
    #[default]
    Tmpfs,
    /// An overlay: a template's tree read-only below, a writable layer on the scratch tmpfs
    /// (counted in its cap) above, gone with the box. Its content is the template's and so
    /// untrusted: nothing on the way to a mount point or a written file is ever followed.
    Template {
        /// The template's root directory on the host (or, for a root-started box, the key of
        /// its premade idmapped mount).
        lower: PathBuf,
        /// A host directory keeping the root's writable layer (`upper/`, `work/`) beyond the
        /// box (template builds); `None`: the layer is on the scratch tmpfs.
        keep_layer: Option<PathBuf>,
    },
}

/// Everything needed to build an isolated root.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RootfsPlan {
    /// What the root is made of.
    pub base: RootBase,
    pub ops: Vec<FsOp>,
    pub covers: Vec<Cover>,
    /// Directories inside a protected mount that hold protected paths (e.g. `.git`). Each is
    /// bound onto itself before the covers: it stays writable but, being a mount point, cannot be
    /// renamed or removed and replaced by one the box made (with its own hooks and config).
    pub pins: Vec<PathBuf>,
    /// Size cap of the scratch tmpfs (/tmp, home, /dev/shm together).
    pub scratch_size: u64,
}

/// Host facts the plan depends on: whether a system path is a directory, a symlink (and where it
/// points) or missing. The real implementation reads the host; tests pass their own.
pub trait HostFs {
    fn node(&self, path: &Path) -> HostNode;
}

/// What a host path is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostNode {
    Missing,
    Dir,
    File,
    Symlink(PathBuf),
}

/// The real host.
pub struct RealHostFs;

impl HostFs for RealHostFs {
    fn node(&self, path: &Path) -> HostNode {
        match std::fs::symlink_metadata(path) {
            Err(_) => HostNode::Missing,
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(path)
                .map(HostNode::Symlink)
                .unwrap_or(HostNode::Missing),
            Ok(m) if m.is_dir() => HostNode::Dir,
            Ok(_) => HostNode::File,
        }
    }
}

impl RootfsPlan {
    /// The inside path of the workspace whose writes go to a change layer, if any.
    pub fn changes_layer(&self) -> Option<&Path> {
        self.ops.iter().find_map(|op| match op {
            FsOp::Overlay { target } => Some(target.as_path()),
            _ => None,
        })
    }

    /// Plans the root for an isolated policy; `None` for `FilesystemPolicy::Host`.
    pub fn from_policy(policy: &ResolvedPolicy, host: &dyn HostFs) -> Option<RootfsPlan> {
        RootfsPlan::on_base(policy, RootBase::Tmpfs, host)
    }

    /// [`RootfsPlan::from_policy`] on a given base: on a template, the template supplies the
    /// system dirs and `/etc`, and only the box's identity files, devices, scratch, `/proc`
    /// and the user mounts are added.
    pub fn on_base(
        policy: &ResolvedPolicy,
        base: RootBase,
        host: &dyn HostFs,
    ) -> Option<RootfsPlan> {
        let FilesystemPolicy::Isolated {
            workspace,
            grants,
            deny,
        } = &policy.filesystem
        else {
            return None;
        };
        let mut ops = Vec::new();
        let host_system = base == RootBase::Tmpfs;
        for dir in SYSTEM_DIRS.iter().filter(|_| host_system) {
            match host.node(Path::new(dir)) {
                HostNode::Dir => ops.push(bind(dir, dir, false, NodeKind::Dir, false)),
                HostNode::Symlink(to) => ops.push(FsOp::Symlink {
                    link: dir.into(),
                    target: to,
                }),
                HostNode::File | HostNode::Missing => {}
            }
        }
        ops.push(FsOp::Dir {
            target: "/etc".into(),
            mode: 0o755,
        });
        for entry in ETC_ENTRIES.iter().filter(|_| host_system) {
            let path = Path::new("/etc").join(entry);
            match host.node(&path) {
                HostNode::Dir => ops.push(bind(&path, &path, false, NodeKind::Dir, true)),
                HostNode::File => ops.push(FsOp::Copy {
                    source: path.clone(),
                    target: path,
                }),
                // The link's target is under /usr (or another visible dir): replicate the link.
                HostNode::Symlink(to) => ops.push(FsOp::Symlink {
                    link: path,
                    target: to,
                }),
                HostNode::Missing => {}
            }
        }
        if !host_system {
            // What a `host` box does not have either: a resolver config (unless it shares the
            // host's network, below) and /sys.
            ops.push(FsOp::Absent {
                target: "/etc/resolv.conf".into(),
            });
            ops.push(FsOp::Absent {
                target: "/sys".into(),
            });
        }
        if policy.network == NetworkMode::Host {
            ops.push(bind(
                "/etc/resolv.conf",
                "/etc/resolv.conf",
                false,
                NodeKind::File,
                true,
            ));
        }
        ops.push(FsOp::File {
            target: "/etc/passwd".into(),
            contents: identity::passwd(),
        });
        ops.push(FsOp::File {
            target: "/etc/group".into(),
            contents: identity::group(),
        });
        ops.push(FsOp::File {
            target: "/etc/hosts".into(),
            contents: identity::hosts(),
        });
        ops.push(FsOp::File {
            target: "/etc/hostname".into(),
            contents: format!("{}\n", identity::HOSTNAME),
        });
        if host_system {
            // A directory of the root tmpfs (read-only with it): a mount of its own would be one
            // more superblock a box, and each costs every memory cgroup on the machine a shrinker
            // slot (BENCHMARKS.md, "Idle density"). The nodes below are binds, writable as before.
            ops.push(FsOp::Dir {
                target: "/dev".into(),
                mode: 0o755,
            });
        } else {
            // On a template, a tmpfs hides whatever the image has in its /dev.
            ops.push(FsOp::Tmpfs {
                target: "/dev".into(),
                size: 64 << 10,
                mode: 0o755,
            });
        }
        for node in DEV_NODES {
            let p = Path::new("/dev").join(node);
            ops.push(bind(&p, &p, true, NodeKind::File, false));
        }
        ops.push(FsOp::Devpts {
            target: "/dev/pts".into(),
        });
        ops.push(FsOp::Symlink {
            link: "/dev/ptmx".into(),
            target: "pts/ptmx".into(),
        });
        for (name, fd) in [("stdin", 0), ("stdout", 1), ("stderr", 2)] {
            ops.push(FsOp::Symlink {
                link: Path::new("/dev").join(name),
                target: format!("/proc/self/fd/{fd}").into(),
            });
        }
        ops.push(FsOp::Symlink {
            link: "/dev/fd".into(),
            target: "/proc/self/fd".into(),
        });
        ops.push(FsOp::Scratch {
            sub: "shm".into(),
            target: "/dev/shm".into(),
        });
        ops.push(FsOp::Scratch {
            sub: "tmp".into(),
            target: "/tmp".into(),
        });
        ops.push(FsOp::Scratch {
            sub: "home".into(),
            target: airlock_policy::INSIDE_HOME.into(),
        });
        if base == RootBase::Tmpfs {
            // The box's root's home (a template has its own), writable like the user's.
            ops.push(FsOp::Scratch {
                sub: "root".into(),
                target: "/root".into(),
            });
        }
        // Placeholders of protected files are untracked files to git: without this global ignore
        // file (in the box's own home, before any user mount), `git add -A` inside the box would
        // commit them into the workspace's repository.
        ops.push(FsOp::File {
            target: Path::new(airlock_policy::INSIDE_HOME).join(".config/git/ignore"),
            contents: placeholder_git_ignore(),
        });
        ops.push(FsOp::Proc {
            target: "/proc".into(),
        });
        ops.push(FsOp::Dir {
            target: EMPTY_DIR.into(),
            mode: 0o555,
        });
        ops.push(FsOp::File {
            target: EMPTY_FILE.into(),
            contents: String::new(),
        });

        // User mounts, parents before children so nested grants land on top.
        let mut mounts: Vec<_> = workspace.iter().chain(grants.iter()).collect();
        mounts.sort_by_key(|m| m.inside.components().count());
        let mut covers = Vec::new();
        let mut pins: Vec<PathBuf> = Vec::new();
        let overlaid = workspace.as_ref().filter(|w| {
            policy.changes == ChangesMode::Apply
                && w.access == Access::ReadWrite
                && host.node(&w.host) == HostNode::Dir
        });
        for m in &mounts {
            let kind = if host.node(&m.host) == HostNode::Dir {
                NodeKind::Dir
            } else {
                NodeKind::File
            };
            let layered = overlaid.is_some_and(|w| std::ptr::eq(w, *m));
            // An overlaid workspace is the overlay's lower layer: read-only underneath.
            ops.push(bind(
                &m.host,
                &m.inside,
                m.access == Access::ReadWrite && !layered,
                kind,
                false,
            ));
            if layered {
                ops.push(FsOp::Overlay {
                    target: m.inside.clone(),
                });
            }
            if m.protect && kind == NodeKind::Dir {
                let (mount_pins, protected) = protected_under(&m.inside);
                for pin in mount_pins {
                    if !pins.contains(&pin) {
                        pins.push(pin);
                    }
                }
                covers.extend(protected.into_iter().map(|path| Cover {
                    path,
                    keep_visible: true,
                }));
            }
        }
        for d in deny {
            covers.push(Cover {
                path: d.clone(),
                keep_visible: false,
            });
        }
        Some(RootfsPlan {
            base,
            ops,
            covers,
            pins,
            scratch_size: policy.limits.disk,
        })
    }
}

/// The protected paths of a protected directory mounted at `root`: the directories holding
/// protected paths, to pin (bind onto themselves, so they cannot be renamed or replaced), and
/// the protected paths themselves, to cover read-only, pins first. Every box kind that exports a
/// writable directory uses this one selection.
pub fn protected_under(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut pins: Vec<PathBuf> = Vec::new();
    let mut covers = Vec::new();
    for p in PROTECTED_PATHS {
        if let Some(parent) = Path::new(p.relative)
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
        {
            let pin = root.join(parent);
            if !pins.contains(&pin) {
                pins.push(pin);
            }
        }
        covers.push(root.join(p.relative));
    }
    (pins, covers)
}

/// Git ignore patterns for the protected files at a repository's root (empty directories are
/// invisible to git already).
fn placeholder_git_ignore() -> String {
    PROTECTED_PATHS
        .iter()
        .filter(|p| p.kind == airlock_policy::ProtectedKind::File && !p.relative.contains('/'))
        .map(|p| format!("/{}\n", p.relative))
        .collect()
}

fn bind(
    source: impl AsRef<Path>,
    target: impl AsRef<Path>,
    writable: bool,
    kind: NodeKind,
    optional: bool,
) -> FsOp {
    FsOp::Bind {
        source: source.as_ref().to_path_buf(),
        target: target.as_ref().to_path_buf(),
        writable,
        kind,
        optional,
    }
}
