//! Syscall filtering: a seccomp-BPF allowlist built in pure Rust and installed just before
//! `execve` in the box's child.
//!
//! The policy is data (`seccomp/allowlist.rs`, `seccomp/denylist.rs`, `seccomp/table_<arch>.rs`:
//! one row and one reason per syscall). The filter:
//! - kills the process on any syscall made through a foreign ABI (i386 `int 0x80`), and refuses
//!   every x32 syscall on x86_64 with `ENOSYS`;
//! - allows the syscalls ordinary programs need (glibc, sh, python3, node, git, gcc, make, pip),
//!   some only after checking their arguments (`clone` namespace flags, `socket` families,
//!   `ioctl` terminal injection, `prctl`, `personality`);
//! - refuses known escape and host-reconfiguration primitives with `EPERM`;
//! - answers everything else with `ENOSYS`, so libc falls back as on an older kernel.
//!
//! Building allocates; [`SeccompProgram::install`] does not and is safe between fork and exec.

mod allowlist;
mod bpf;
mod compile;
mod denylist;
mod table;
#[cfg(target_arch = "x86_64")]
#[path = "seccomp/table_x86_64.rs"]
mod table_arch;
#[cfg(target_arch = "aarch64")]
#[path = "seccomp/table_aarch64.rs"]
mod table_arch;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("airlock's seccomp filter supports x86_64 and aarch64 only");

use std::io;

use table::Rule;

/// Which optional socket families the box may create.
///
/// Under both policies `AF_UNIX` sockets are allowed and `AF_NETLINK` only with protocol
/// `NETLINK_ROUTE`; every other family (`AF_PACKET`, `AF_VSOCK`, `AF_ALG`, ...) is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SocketPolicy {
    /// Local sockets only: `socket(AF_INET/AF_INET6, ...)` fails with `EAFNOSUPPORT`.
    #[default]
    UnixOnly,
    /// Also `AF_INET`/`AF_INET6` stream and datagram sockets (raw sockets stay refused).
    UnixAndInet,
}

/// What a box's seccomp filter permits beyond the fixed allowlist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeccompProfile {
    /// Socket families the box may create.
    pub sockets: SocketPolicy,
}

/// Errors building or installing a seccomp filter.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    /// The policy table lists a syscall twice; only the first row would ever apply.
    #[error("the seccomp table lists syscall `{name}` twice; keep one row per syscall")]
    DuplicateRule {
        /// The syscall's name.
        name: &'static str,
    },
    /// A syscall number in the table does not fit the 32-bit `seccomp_data.nr`.
    #[error("the seccomp table has an out-of-range number for syscall `{name}`")]
    BadSyscallNumber {
        /// The syscall's name.
        name: &'static str,
    },
    /// The compiled filter would need a conditional jump longer than classic BPF allows.
    #[error("seccomp filter instruction {at} needs a jump of {distance}; classic BPF allows 255")]
    JumpTooFar {
        /// Index of the jump instruction.
        at: usize,
        /// Instructions to skip.
        distance: usize,
    },
    /// The compiled filter contains a backward jump, which classic BPF cannot express.
    #[error("seccomp filter instruction {at} jumps backwards")]
    BackwardJump {
        /// Index of the jump instruction.
        at: usize,
    },
    /// The filter builder referenced a label it never placed (a bug in the compiler).
    #[error("the seccomp filter compiler referenced an unplaced jump target")]
    UnboundLabel,
    /// The compiled filter is longer than the kernel accepts.
    #[error("the seccomp filter has {len} instructions; the kernel accepts at most 4096")]
    TooLong {
        /// Instruction count.
        len: usize,
    },
    /// `prctl(PR_SET_NO_NEW_PRIVS)` failed, so the filter cannot be installed unprivileged.
    #[error("could not set no_new_privs before installing the seccomp filter")]
    NoNewPrivs(#[source] io::Error),
    /// The kernel refused the filter (no seccomp support, or a malformed program).
    #[error("the kernel refused to install the seccomp filter")]
    Install(#[source] io::Error),
}

/// A compiled filter, ready to install. Building allocates; installing does not.
#[derive(Debug, Clone)]
pub struct SeccompProgram {
    filter: Vec<libc::sock_filter>,
}

impl SeccompProgram {
    /// Compiles the filter for `profile`. Fails, rather than weakening the filter, if the table
    /// is inconsistent or the program would not be accepted by the kernel.
    pub fn build(profile: &SeccompProfile) -> Result<SeccompProgram, SeccompError> {
        compile::compile(profile).map(|filter| SeccompProgram { filter })
    }

    /// Number of BPF instructions.
    pub fn len(&self) -> usize {
        self.filter.len()
    }

    /// Always false: a built filter has at least the architecture check.
    pub fn is_empty(&self) -> bool {
        self.filter.is_empty()
    }

    /// The BPF instructions, for inspection and tests.
    pub fn instructions(&self) -> &[libc::sock_filter] {
        &self.filter
    }

    /// Sets `PR_SET_NO_NEW_PRIVS` and installs the filter on the calling thread (flags 0, no
    /// TSYNC: call it in the single-threaded child, as the last step before `execve`). The filter
    /// is inherited across fork and exec and can never be removed.
    ///
    /// Does not allocate or lock, so it is safe between `fork` and `exec`.
    pub fn install(&self) -> Result<(), SeccompError> {
        // `build` caps the length at 4096, so this conversion cannot fail for a built program.
        let len = u16::try_from(self.filter.len()).map_err(|_| SeccompError::TooLong {
            len: self.filter.len(),
        })?;
        let program = libc::sock_fprog {
            len,
            // The kernel only reads the filter; the field is `*mut` for C compatibility.
            filter: self.filter.as_ptr().cast_mut(),
        };
        // SAFETY: prctl(PR_SET_NO_NEW_PRIVS) takes integer arguments only and touches no memory.
        let ret = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
        check(ret.into()).map_err(SeccompError::NoNewPrivs)?;
        // SAFETY: `program` points to `len` valid `sock_filter`s owned by `self`, which outlives
        // the call; the kernel copies the program before returning and does not retain the pointer.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &program as *const libc::sock_fprog,
            )
        };
        check(ret).map_err(SeccompError::Install)
    }
}

/// Turns a raw syscall return into a result. `io::Error::last_os_error` does not allocate.
fn check(ret: libc::c_long) -> Result<(), io::Error> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The denied syscall names with their reason, for receipts and docs: every syscall the filter
/// refuses by name (with `EPERM`, or `ENOSYS` for `clone3`). Unlisted syscalls are also refused.
pub fn denied_syscalls() -> Vec<(&'static str, &'static str)> {
    table::rules()
        .filter(|row| matches!(row.rule, Rule::Deny | Rule::Unsupported))
        .map(|row| (row.name(), row.reason))
        .collect()
}

/// The allowed syscall names with their reason, including those allowed only for some
/// arguments (`clone`, `socket`, `ioctl`, ...), whose reason says what is checked.
pub fn allowed_syscalls() -> Vec<(&'static str, &'static str)> {
    table::rules()
        .filter(|row| matches!(row.rule, Rule::Allow | Rule::Check(_)))
        .map(|row| (row.name(), row.reason))
        .collect()
}

#[cfg(test)]
#[path = "seccomp_tests.rs"]
mod tests;
