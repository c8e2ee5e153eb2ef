//! Landlock: filesystem, TCP-port and IPC-scope restrictions a process puts on itself, without
//! privileges, before it execs the agent's workload.
//!
//! The rules are deny-by-default: once applied, the process (and everything it forks or execs)
//! can reach only the paths in [`LandlockRules::paths`], with the access granted there. TCP and
//! IPC scopes are restricted only when the rules ask for it.
//!
//! # Kernel versions
//! Every Landlock ABI from 1 up is supported. The kernel's ABI is queried first and only the
//! rights and `landlock_ruleset_attr` fields that ABI knows are requested, so the same rules work
//! from Linux 5.13 (ABI 1) to today. A newer kernel is treated as the newest ABI known here (6
//! for rules; ABI 7 only adds audit-logging flags, which are not used).
//!
//! Older ABIs enforce less filesystem detail (no `REFER` before 2, no `TRUNCATE` before 3, no
//! device `ioctl` before 5); [`LandlockStatus::notes`] says what is missing. TCP rules need ABI 4
//! and IPC scopes ABI 6: [`apply`] refuses rules it cannot enforce, [`Compatibility::BestEffort`]
//! skips them and says so in the notes.
//!
//! # Use between fork and exec
//! [`Ruleset::build`] allocates and opens files; [`Ruleset::restrict_self`] does neither, so a
//! multi-threaded parent can build the ruleset before `fork` and the child only restricts itself.
//! Paths are resolved when the ruleset is built, by the process building it.

mod rights;
mod sys;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use sys::{access_net, scope, RulesetAttr};

/// Access granted beneath one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum FsAccess {
    /// Read files and list directories.
    Read,
    /// [`FsAccess::Read`] plus executing files.
    ReadExec,
    /// Every right the kernel can restrict: read, write, execute, create, remove, rename (also
    /// across other `ReadWrite` grants), truncate, device `ioctl`.
    ReadWrite,
}

/// What a sandboxed process may reach once the rules are applied.
#[derive(Debug, Clone, Default)]
pub struct LandlockRules {
    /// Files and directories (with everything beneath them) that stay reachable, and how.
    /// Paths are as seen by the process building the ruleset; symbolic links are followed.
    /// Every other path is refused.
    pub paths: Vec<(PathBuf, FsAccess)>,
    /// `None`: TCP connect is not restricted. `Some(ports)`: only these remote TCP ports may be
    /// connected to (empty: none). Needs ABI 4.
    pub tcp_connect_ports: Option<Vec<u16>>,
    /// Refuse binding TCP sockets to any port. Needs ABI 4.
    pub deny_tcp_bind: bool,
    /// Refuse connecting to abstract UNIX sockets created outside the sandbox. Needs ABI 6.
    pub scope_abstract_unix: bool,
    /// Refuse signalling processes outside the sandbox. Needs ABI 6.
    pub scope_signals: bool,
}

/// What Landlock enforces (or would enforce) on this kernel, for receipts.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LandlockStatus {
    /// The kernel's Landlock ABI version (0: unavailable).
    pub abi: u32,
    /// Filesystem access is restricted to the granted paths.
    pub fs: bool,
    /// The requested TCP restrictions are enforced.
    pub net: bool,
    /// The requested IPC scopes are enforced.
    pub scoped: bool,
    /// Human-readable caveats: rights this ABI cannot restrict, skipped paths, skipped features.
    pub notes: Vec<String>,
}

/// What to do with rules the kernel's ABI cannot enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub enum Compatibility {
    /// Refuse: Landlock missing, or TCP / scope rules the ABI lacks, are errors.
    #[default]
    Strict,
    /// Enforce what the ABI can and list the rest in [`LandlockStatus::notes`].
    BestEffort,
}

/// Why Landlock rules could not be built or enforced.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    /// The kernel offers no Landlock (too old, not built in, or not in the `lsm=` boot list).
    #[error("Landlock is not available on this kernel; enable it (Linux 5.13+, `lsm=...,landlock`) or use best-effort compatibility")]
    Unavailable,
    /// The rules need a newer ABI than the kernel offers.
    #[error("Landlock ABI {abi} cannot enforce {feature}, which needs ABI {needed}; drop that rule or use best-effort compatibility")]
    Unsupported {
        /// The rule that cannot be enforced.
        feature: &'static str,
        /// The kernel's ABI.
        abi: u32,
        /// The first ABI that can enforce it.
        needed: u32,
    },
    /// A granted path contains a NUL byte.
    #[error("granted path {path:?} contains a NUL byte")]
    InvalidPath {
        /// The offending path.
        path: PathBuf,
    },
    /// A granted path exists but could not be opened or inspected.
    #[error("could not open granted path {path:?}")]
    OpenPath {
        /// The path.
        path: PathBuf,
        /// The `open`/`fstat` error.
        #[source]
        source: io::Error,
    },
    /// `landlock_create_ruleset` failed.
    #[error("could not create the Landlock ruleset")]
    CreateRuleset(#[source] io::Error),
    /// `landlock_add_rule` failed for a path.
    #[error("could not add the Landlock rule for {path:?}")]
    AddPathRule {
        /// The path.
        path: PathBuf,
        /// The kernel's error.
        #[source]
        source: io::Error,
    },
    /// `landlock_add_rule` failed for a TCP port.
    #[error("could not add the Landlock rule for TCP port {port}")]
    AddPortRule {
        /// The port.
        port: u16,
        /// The kernel's error.
        #[source]
        source: io::Error,
    },
    /// `prctl(PR_SET_NO_NEW_PRIVS)` failed.
    #[error("could not set no_new_privs, which Landlock requires")]
    NoNewPrivs(#[source] io::Error),
    /// `landlock_restrict_self` failed.
    #[error("could not restrict the process with the Landlock ruleset")]
    RestrictSelf(#[source] io::Error),
}

/// Landlock ABI version this kernel offers (0 = unavailable/disabled).
pub fn abi_version() -> u32 {
    sys::abi_version()
}

/// What [`apply`] would enforce here (for receipts, without applying). Paths are not opened, so
/// missing paths are not listed; when `apply` would refuse the rules the notes say why.
pub fn plan(rules: &LandlockRules) -> LandlockStatus {
    let plan = Plan::new(rules, abi_version());
    let mut status = plan.status;
    if let Some(gap) = plan.gaps.first() {
        status
            .notes
            .push(format!("apply() refuses these rules: {}", gap.into_error()));
    }
    status
}

/// Builds the ruleset and restricts the calling thread (and all it later forks or execs), after
/// setting `no_new_privs`. Paths that do not exist are skipped and listed in the notes. Fails
/// closed: Landlock missing, rules the ABI cannot enforce, or any syscall error other than a
/// missing path is an error.
pub fn apply(rules: &LandlockRules) -> Result<LandlockStatus, LandlockError> {
    apply_with(rules, Compatibility::Strict)
}

/// [`apply`] with an explicit [`Compatibility`] for rules the ABI cannot enforce.
pub fn apply_with(
    rules: &LandlockRules,
    compatibility: Compatibility,
) -> Result<LandlockStatus, LandlockError> {
    let ruleset = Ruleset::build(rules, compatibility)?;
    ruleset.restrict_self()?;
    Ok(ruleset.into_status())
}

/// A built ruleset, not yet enforced. Its descriptor is close-on-exec.
#[derive(Debug)]
pub struct Ruleset {
    /// `None` only when Landlock is unavailable and best effort was asked for.
    fd: Option<OwnedFd>,
    status: LandlockStatus,
}

impl Ruleset {
    /// Opens the granted paths and builds the kernel ruleset, without restricting anything yet.
    pub fn build(
        rules: &LandlockRules,
        compatibility: Compatibility,
    ) -> Result<Self, LandlockError> {
        let plan = Plan::new(rules, abi_version());
        if compatibility == Compatibility::Strict {
            if let Some(gap) = plan.gaps.first() {
                return Err(gap.into_error());
            }
        }
        let mut status = plan.status;
        if plan.abi == 0 {
            return Ok(Self { fd: None, status });
        }
        let bytes = plan.attr.to_bytes();
        let fd = sys::create_ruleset(&bytes[..rights::ruleset_attr_len(plan.abi)])
            .map_err(LandlockError::CreateRuleset)?;
        for (path, access) in &rules.paths {
            let allowed = rights::grant(*access, plan.attr.handled_access_fs);
            if let Some(note) = add_path_rule(&fd, path, allowed)? {
                status.notes.push(note);
            }
        }
        if plan.attr.handled_access_net & access_net::CONNECT_TCP != 0 {
            for &port in rules.tcp_connect_ports.iter().flatten() {
                sys::add_net_port_rule(fd.as_fd(), access_net::CONNECT_TCP, port)
                    .map_err(|source| LandlockError::AddPortRule { port, source })?;
            }
        }
        Ok(Self {
            fd: Some(fd),
            status,
        })
    }

    /// What this ruleset enforces once applied.
    pub fn status(&self) -> &LandlockStatus {
        &self.status
    }

    /// The status, consuming the ruleset.
    pub fn into_status(self) -> LandlockStatus {
        self.status
    }

    /// Sets `no_new_privs` and enforces the ruleset on the calling thread and its future
    /// children. Does not allocate, so it is safe between `fork` and `exec`. May be called more
    /// than once (each call stacks another layer of the same rules).
    pub fn restrict_self(&self) -> Result<(), LandlockError> {
        sys::set_no_new_privs().map_err(LandlockError::NoNewPrivs)?;
        match &self.fd {
            Some(fd) => sys::restrict_self(fd.as_fd()).map_err(LandlockError::RestrictSelf),
            None => Ok(()),
        }
    }
}

/// Adds one path rule. Returns a note instead when the path does not exist.
fn add_path_rule(
    ruleset: &OwnedFd,
    path: &Path,
    allowed: u64,
) -> Result<Option<String>, LandlockError> {
    let c_path =
        CString::new(path.as_os_str().as_bytes()).map_err(|_| LandlockError::InvalidPath {
            path: path.to_path_buf(),
        })?;
    let open_error = |source| LandlockError::OpenPath {
        path: path.to_path_buf(),
        source,
    };
    // SAFETY: `c_path` is a NUL-terminated string that outlives the call; O_PATH opens no file
    // content and the returned descriptor (if any) is owned below.
    let raw = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if raw < 0 {
        let err = io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::ENOENT | libc::ENOTDIR) => {
                Ok(Some(format!("skipped missing path {}", path.display())))
            }
            _ => Err(open_error(err)),
        };
    }
    // SAFETY: `raw` is a descriptor open() just returned; nothing else owns it.
    let parent = unsafe { OwnedFd::from_raw_fd(raw) };
    let allowed = if is_directory(&parent).map_err(open_error)? {
        allowed
    } else {
        rights::for_non_directory(allowed)
    };
    sys::add_path_beneath_rule(ruleset.as_fd(), allowed, parent.as_fd()).map_err(|source| {
        LandlockError::AddPathRule {
            path: path.to_path_buf(),
            source,
        }
    })?;
    Ok(None)
}

/// Whether an (`O_PATH`) descriptor refers to a directory.
fn is_directory(fd: &OwnedFd) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fd` is open (fstat accepts O_PATH descriptors) and `stat` is writable memory of
    // the right type, which the kernel fills on success.
    let ret = unsafe { libc::fstat(fd.as_raw_fd(), stat.as_mut_ptr()) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstat returned 0, so it initialised the whole struct.
    let stat = unsafe { stat.assume_init() };
    Ok(stat.st_mode & libc::S_IFMT == libc::S_IFDIR)
}

/// A rule the ABI cannot enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gap {
    Unavailable,
    Feature {
        feature: &'static str,
        abi: u32,
        needed: u32,
    },
}

impl Gap {
    fn into_error(self) -> LandlockError {
        match self {
            Gap::Unavailable => LandlockError::Unavailable,
            Gap::Feature {
                feature,
                abi,
                needed,
            } => LandlockError::Unsupported {
                feature,
                abi,
                needed,
            },
        }
    }
}

/// The ruleset attributes for `rules` on a given ABI, with the resulting status and gaps.
/// Pure, so every ABI's downgrade is testable on any kernel.
#[derive(Debug)]
struct Plan {
    abi: u32,
    attr: RulesetAttr,
    status: LandlockStatus,
    gaps: Vec<Gap>,
}

impl Plan {
    fn new(rules: &LandlockRules, abi: u32) -> Self {
        let mut notes = Vec::new();
        let mut gaps = Vec::new();
        if abi == 0 {
            notes.push("Landlock is unavailable: nothing is restricted".to_owned());
            gaps.push(Gap::Unavailable);
        } else {
            if abi < 2 {
                notes.push(format!("ABI {abi} has no REFER right: moving or linking files between directories is refused everywhere"));
            }
            if abi < 3 {
                notes.push(format!(
                    "ABI {abi} cannot restrict truncate(): files under any grant can be truncated"
                ));
            }
            if abi < 5 {
                notes.push(format!(
                    "ABI {abi} cannot restrict ioctl on devices under granted paths"
                ));
            }
        }

        let mut net = 0;
        if rules.tcp_connect_ports.is_some() {
            net |= access_net::CONNECT_TCP;
        }
        if rules.deny_tcp_bind {
            net |= access_net::BIND_TCP;
        }
        let mut scoped = 0;
        if rules.scope_abstract_unix {
            scoped |= scope::ABSTRACT_UNIX_SOCKET;
        }
        if rules.scope_signals {
            scoped |= scope::SIGNAL;
        }
        // Records a gap and a note when the wanted bits exceed what the ABI knows.
        let mut supported = |wanted: u64, known: u64, feature: &'static str, needed: u32| {
            if wanted & !known == 0 {
                return true;
            }
            if abi > 0 {
                gaps.push(Gap::Feature {
                    feature,
                    abi,
                    needed,
                });
                notes.push(format!(
                    "ABI {abi} cannot enforce {feature} (needs ABI {needed}): not restricted"
                ));
            }
            false
        };
        let net_ok = supported(net, rights::net_rights(abi), "TCP port rules", 4);
        let scoped_ok = supported(scoped, rights::scopes(abi), "IPC scopes", 6);

        let attr = RulesetAttr {
            handled_access_fs: rights::fs_rights(abi),
            handled_access_net: if net_ok { net } else { 0 },
            scoped: if scoped_ok { scoped } else { 0 },
        };
        Plan {
            abi,
            attr,
            status: LandlockStatus {
                abi,
                fs: abi >= 1,
                net: net_ok && net != 0,
                scoped: scoped_ok && scoped != 0,
                notes,
            },
            gaps,
        }
    }
}

#[cfg(test)]
#[path = "landlock_tests.rs"]
mod tests;
