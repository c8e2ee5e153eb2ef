//! Turns the policy table into a BPF program.
//!
//! Layout (every conditional jump is short, so no jump ever exceeds classic BPF's 255):
//!
//! ```text
//!   A = arch;  if A != NATIVE_AUDIT_ARCH: return KILL_PROCESS
//!   A = nr;    if A >= X32_SYSCALL_BIT:   return ERRNO(ENOSYS)       (x86_64 only)
//!   for each row:  if A != row.nr: skip the row's body
//!                  <body: always ends in a return>
//!   return ERRNO(ENOSYS)
//! ```
//!
//! A row's body may overwrite the accumulator with an argument, but every path through a body
//! returns, so the next row's comparison always sees the syscall number.

use std::collections::HashSet;

use super::bpf::{Assembler, Target};
use super::table::{rules, ArgCheck, Rule};
use super::table_arch::{AUDIT_ARCH, X32_SYSCALL_BIT};
use super::{SeccompError, SeccompProfile, SocketPolicy};

/// Namespace-creating `clone` flags. `CLONE_NEWTIME` (0x80) is not named by every libc.
pub(crate) const CLONE_NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWUSER
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP
    | 0x80) as u32;

/// `PR_SET_MM` rewrites a process's memory map metadata (exe link, argv area).
const PR_SET_MM: u32 = libc::PR_SET_MM as u32;
/// `personality(0xffffffff)` queries the persona without changing it.
const PERSONALITY_QUERY: u32 = 0xffff_ffff;
/// `PER_LINUX`, the default persona (libc does not name it).
const PER_LINUX: u32 = 0;
/// Low four bits of `socket`'s type argument; the rest are SOCK_NONBLOCK/SOCK_CLOEXEC.
const SOCK_TYPE_MASK: u32 = 0xf;

/// `SECCOMP_RET_ERRNO` with `errno` as the data.
pub(crate) const fn ret_errno(errno: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)
}

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const KILL_PROCESS: u32 = libc::SECCOMP_RET_KILL_PROCESS;
const EPERM: u32 = ret_errno(libc::EPERM);
const ENOSYS: u32 = ret_errno(libc::ENOSYS);
const EAFNOSUPPORT: u32 = ret_errno(libc::EAFNOSUPPORT);
const EPROTONOSUPPORT: u32 = ret_errno(libc::EPROTONOSUPPORT);

/// Compiles the table for `profile`.
pub(super) fn compile(profile: &SeccompProfile) -> Result<Vec<libc::sock_filter>, SeccompError> {
    let mut asm = Assembler::new();

    // A syscall made through another ABI (i386 `int 0x80`, ...) has other numbers: kill it.
    let native = asm.label();
    asm.load_arch();
    asm.jeq(AUDIT_ARCH, Target::Label(native), Target::Next);
    asm.ret(KILL_PROCESS);
    asm.bind(native);

    asm.load_nr();
    if let Some(x32_bit) = X32_SYSCALL_BIT {
        let not_x32 = asm.label();
        asm.jge(x32_bit, Target::Next, Target::Label(not_x32));
        asm.ret(ENOSYS);
        asm.bind(not_x32);
    }

    let mut seen = HashSet::new();
    for row in rules() {
        if !seen.insert(row.nr) {
            return Err(SeccompError::DuplicateRule { name: row.name() });
        }
        let nr = u32::try_from(row.nr)
            .map_err(|_| SeccompError::BadSyscallNumber { name: row.name() })?;
        let next_row = asm.label();
        asm.jeq(nr, Target::Next, Target::Label(next_row));
        emit_body(&mut asm, row.rule, profile);
        asm.bind(next_row);
    }

    // Not in the table: pretend the kernel lacks it, so libc falls back where it can.
    asm.ret(ENOSYS);
    asm.finish()
}

fn emit_body(asm: &mut Assembler, rule: Rule, profile: &SeccompProfile) {
    match rule {
        Rule::Allow => asm.ret(ALLOW),
        Rule::Deny => asm.ret(EPERM),
        Rule::Unsupported => asm.ret(ENOSYS),
        Rule::Check(check) => emit_check(asm, check, profile),
    }
}

// Every check below reads only the LOW 32-bit word of the argument it inspects. That is a
// deliberate choice, not an omission: for each of these syscalls the kernel itself truncates the
// argument to 32 bits (`clone` keeps `lower_32_bits(clone_flags)`; `socket`, `socketpair`,
// `prctl` take `int`; `ioctl`'s request and `personality`'s persona are `unsigned int`). Whatever
// the caller puts in the high word is discarded before the kernel acts, so deciding on the low
// word decides on exactly what the kernel will see. Comparing the full 64-bit value instead would
// be *weaker*: `ioctl(fd, (1 << 32) | TIOCSTI)` would not equal TIOCSTI yet would still inject.
fn emit_check(asm: &mut Assembler, check: ArgCheck, profile: &SeccompProfile) {
    match check {
        ArgCheck::CloneFlags => {
            let refuse = asm.label();
            asm.load_arg_low(0);
            asm.jset(CLONE_NAMESPACE_FLAGS, Target::Label(refuse), Target::Next);
            asm.ret(ALLOW);
            asm.bind(refuse);
            asm.ret(EPERM);
        }
        ArgCheck::SocketFamily => emit_socket(asm, profile.sockets),
        ArgCheck::SocketpairFamily => {
            let allow = asm.label();
            asm.load_arg_low(0);
            asm.jeq(libc::AF_UNIX as u32, Target::Label(allow), Target::Next);
            asm.ret(EAFNOSUPPORT);
            asm.bind(allow);
            asm.ret(ALLOW);
        }
        ArgCheck::IoctlRequest => {
            let refuse = asm.label();
            asm.load_arg_low(1);
            asm.jeq(libc::TIOCSTI as u32, Target::Label(refuse), Target::Next);
            asm.jeq(libc::TIOCLINUX as u32, Target::Label(refuse), Target::Next);
            asm.ret(ALLOW);
            asm.bind(refuse);
            asm.ret(EPERM);
        }
        ArgCheck::PrctlOption => {
            let refuse = asm.label();
            asm.load_arg_low(0);
            asm.jeq(PR_SET_MM, Target::Label(refuse), Target::Next);
            asm.ret(ALLOW);
            asm.bind(refuse);
            asm.ret(EPERM);
        }
        ArgCheck::PersonalityQuery => {
            let allow = asm.label();
            asm.load_arg_low(0);
            asm.jeq(PERSONALITY_QUERY, Target::Label(allow), Target::Next);
            asm.jeq(PER_LINUX, Target::Label(allow), Target::Next);
            asm.ret(EPERM);
            asm.bind(allow);
            asm.ret(ALLOW);
        }
    }
}

/// `socket(domain, type, protocol)`:
/// AF_UNIX always; AF_NETLINK only with NETLINK_ROUTE (interface and address listing, which
/// getaddrinfo and `ip addr` use); AF_INET/AF_INET6 only under `UnixAndInet`, and then only
/// stream and datagram sockets (no raw packet forging). Other families → EAFNOSUPPORT.
fn emit_socket(asm: &mut Assembler, policy: SocketPolicy) {
    let allow = asm.label();
    let netlink = asm.label();
    let inet = match policy {
        SocketPolicy::UnixOnly => None,
        SocketPolicy::UnixAndInet => Some(asm.label()),
    };

    asm.load_arg_low(0);
    asm.jeq(libc::AF_UNIX as u32, Target::Label(allow), Target::Next);
    if let Some(inet) = inet {
        asm.jeq(libc::AF_INET as u32, Target::Label(inet), Target::Next);
        asm.jeq(libc::AF_INET6 as u32, Target::Label(inet), Target::Next);
    }
    asm.jeq(
        libc::AF_NETLINK as u32,
        Target::Label(netlink),
        Target::Next,
    );
    asm.ret(EAFNOSUPPORT);

    asm.bind(netlink);
    asm.load_arg_low(2);
    asm.jeq(
        libc::NETLINK_ROUTE as u32,
        Target::Label(allow),
        Target::Next,
    );
    asm.ret(EPROTONOSUPPORT);

    if let Some(inet) = inet {
        asm.bind(inet);
        asm.load_arg_low(1);
        asm.and(SOCK_TYPE_MASK);
        asm.jeq(libc::SOCK_STREAM as u32, Target::Label(allow), Target::Next);
        asm.jeq(libc::SOCK_DGRAM as u32, Target::Label(allow), Target::Next);
        asm.ret(EPERM);
    }

    asm.bind(allow);
    asm.ret(ALLOW);
}
