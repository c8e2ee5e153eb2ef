//! The syscall policy as reviewable data: row types here, rows in `allowlist.rs`, `denylist.rs`
//! and the per-architecture `table_*.rs`; one row per syscall, each with its reason.
//!
//! A syscall has at most one row (building fails otherwise). The filter checks rows linearly in
//! table order, so frequent syscalls come first. A syscall with no row is answered with `ENOSYS` (see `compile.rs`), so
//! libc falls back to an older call where one exists (`clone3` → `clone`).

use libc::c_long;

/// What the filter does with one syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Let the call through unchanged.
    Allow,
    /// Refuse with `EPERM`: a known escape or host-reconfiguration primitive.
    Deny,
    /// Refuse with `ENOSYS`, as if the kernel were too old, so libc falls back.
    Unsupported,
    /// Decide from the call's register arguments.
    Check(ArgCheck),
}

/// A decision taken on a syscall's arguments. See `compile.rs` for the exact BPF of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgCheck {
    /// `clone(flags, ...)`: refuse any namespace-creating flag.
    CloneFlags,
    /// `socket(domain, type, protocol)`: families from the profile's `SocketPolicy`.
    SocketFamily,
    /// `socketpair(domain, ...)`: `AF_UNIX` only.
    SocketpairFamily,
    /// `ioctl(fd, request, ...)`: refuse terminal input injection.
    IoctlRequest,
    /// `prctl(option, ...)`: refuse `PR_SET_MM`.
    PrctlOption,
    /// `setns(fd, nstype)`: only `CLONE_NEWUSER` (the box's root, see `box_root`). Joining a
    /// user namespace needs every capability in it, which a box process has only in one its
    /// own user owns below its own: one made inside the box, where `unshare` and `clone`'s
    /// namespace flags are refused, so only the one its init made. `nstype` 0 ("any kind") and
    /// every other kind (mount, network, pid… of another process) are refused.
    SetnsUserOnly,
    /// `personality(persona)`: only query or set plain `PER_LINUX`.
    PersonalityQuery,
    /// A file mode in argument `n` (`chmod`, `open`'s create mode, `mknod`…): refuse the
    /// set-user-ID and set-group-ID bits. A box's files land on the host (as root's, when root
    /// runs airlock, through the idmapped workspace): a set-ID executable there would run with
    /// that identity for anyone who starts it.
    NoSetIdMode(u8),
}

/// One row of the policy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SyscallRule {
    pub(crate) ident: &'static str,
    pub(crate) nr: c_long,
    pub(crate) rule: Rule,
    pub(crate) reason: &'static str,
}

impl SyscallRule {
    /// The syscall's name without the `SYS_` prefix, e.g. `openat`.
    pub(crate) fn name(&self) -> &'static str {
        self.ident.strip_prefix("SYS_").unwrap_or(self.ident)
    }
}

/// Syscall numbers: libc's, plus recent ones libc does not name yet. Since Linux 5.1 every
/// architecture shares one numbering for new syscalls (424 and up), so these are arch-neutral.
#[allow(non_upper_case_globals)]
pub(crate) mod nr {
    pub(crate) use libc::*;
    pub(crate) const SYS_cachestat: c_long = 451;
    pub(crate) const SYS_fchmodat2: c_long = 452;
    pub(crate) const SYS_map_shadow_stack: c_long = 453;
    pub(crate) const SYS_futex_wake: c_long = 454;
    pub(crate) const SYS_futex_wait: c_long = 455;
    pub(crate) const SYS_futex_requeue: c_long = 456;
    pub(crate) const SYS_setxattrat: c_long = 463;
    pub(crate) const SYS_getxattrat: c_long = 464;
    pub(crate) const SYS_listxattrat: c_long = 465;
    pub(crate) const SYS_removexattrat: c_long = 466;
    pub(crate) const SYS_open_tree_attr: c_long = 467;
}

macro_rules! sys {
    ($ident:ident, $rule:expr, $reason:literal) => {
        SyscallRule {
            ident: stringify!($ident),
            nr: nr::$ident,
            rule: $rule,
            reason: $reason,
        }
    };
}
pub(crate) use sys;

/// Every row for this architecture: shared allows, shared refusals, then the architecture's own.
pub(crate) fn rules() -> impl Iterator<Item = &'static SyscallRule> {
    super::allowlist::ALLOWED
        .iter()
        .chain(super::denylist::DENIED.iter())
        .chain(super::table_arch::ARCH.iter())
}
