//! Turns the policy table into a BPF program.
//!
//! Layout:
//!
//! ```text
//!   A = arch;  if A != NATIVE_AUDIT_ARCH: return KILL_PROCESS
//!   A = nr;    if A >= X32_SYSCALL_BIT:   return ERRNO(ENOSYS)       (x86_64 only)
//!   binary search over syscall-number ranges:
//!       node:  if A >= range.lo: jump (JA, 32-bit) to the upper half, else fall into the lower
//!       leaf:  one range of numbers with one outcome: a return, or an argument check
//! ```
//!
//! Adjacent numbers with the same plain outcome (allow, EPERM, ENOSYS — including numbers not in
//! the table) share one range, so the tree is small: a syscall costs about log2(ranges)
//! comparisons instead of a scan of the whole table, and the kernel's per-syscall action cache
//! (built by emulating the filter for every number when it is installed) is cheap to build.
//! Leaves may overwrite the accumulator with an argument, but every leaf returns.

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
/// `S_ISUID | S_ISGID` in a file mode.
const SET_ID_BITS: u32 = libc::S_ISUID | libc::S_ISGID;

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
    let mut rows: Vec<(u32, Rule)> = Vec::new();
    for row in rules() {
        if !seen.insert(row.nr) {
            return Err(SeccompError::DuplicateRule { name: row.name() });
        }
        let nr = u32::try_from(row.nr)
            .map_err(|_| SeccompError::BadSyscallNumber { name: row.name() })?;
        rows.push((nr, row.rule));
    }
    let ranges = ranges(rows);
    emit_tree(&mut asm, &ranges, profile);
    asm.finish()
}

/// What one range of syscall numbers does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Return(u32),
    Check(ArgCheck),
}

/// A range `lo..=hi` of syscall numbers with one outcome.
#[derive(Debug, Clone, Copy)]
struct Range {
    lo: u32,
    hi: u32,
    outcome: Outcome,
}

fn outcome(rule: Rule) -> Outcome {
    match rule {
        Rule::Allow => Outcome::Return(ALLOW),
        Rule::Deny => Outcome::Return(EPERM),
        // Not in the table: pretend the kernel lacks it, so libc falls back where it can.
        Rule::Unsupported => Outcome::Return(ENOSYS),
        Rule::Check(check) => Outcome::Check(check),
    }
}

/// Covers every number `0..=u32::MAX` with ranges; numbers not in the table return ENOSYS.
/// Adjacent plain outcomes that are equal merge; argument checks never merge.
fn ranges(mut rows: Vec<(u32, Rule)>) -> Vec<Range> {
    rows.sort_by_key(|(nr, _)| *nr);
    let mut out: Vec<Range> = Vec::new();
    let push = |out: &mut Vec<Range>, lo: u32, hi: u32, outcome: Outcome| {
        if let Some(last) = out.last_mut() {
            if matches!(outcome, Outcome::Return(_))
                && last.outcome == outcome
                && last.hi.checked_add(1) == Some(lo)
            {
                last.hi = hi;
                return;
            }
        }
        out.push(Range { lo, hi, outcome });
    };
    let mut next = 0u32;
    for (nr, rule) in rows {
        if nr > next {
            push(&mut out, next, nr - 1, Outcome::Return(ENOSYS));
        }
        push(&mut out, nr, nr, outcome(rule));
        next = nr.saturating_add(1);
    }
    push(&mut out, next, u32::MAX, Outcome::Return(ENOSYS));
    out
}

/// Emits a binary search over `ranges` (sorted, contiguous); A holds the syscall number.
fn emit_tree(asm: &mut Assembler, ranges: &[Range], profile: &SeccompProfile) {
    match ranges {
        [] => asm.ret(ENOSYS),
        [only] => match only.outcome {
            Outcome::Return(action) => asm.ret(action),
            Outcome::Check(check) => emit_check(asm, check, profile),
        },
        _ => {
            let mid = ranges.len() / 2;
            let upper = asm.label();
            let lower = asm.label();
            asm.jge(ranges[mid].lo, Target::Next, Target::Label(lower));
            asm.ja(upper);
            asm.bind(lower);
            emit_tree(asm, &ranges[..mid], profile);
            asm.bind(upper);
            emit_tree(asm, &ranges[mid..], profile);
        }
    }
}

// Every check below reads only the LOW 32-bit word of the argument it inspects. That is a
// deliberate choice, not an omission: for each of these syscalls the kernel itself truncates the
// argument to 32 bits (`clone` keeps `lower_32_bits(clone_flags)`; `socket`, `socketpair`,
// `prctl` and `setns`'s nstype take `int`; `ioctl`'s request and `personality`'s persona are `unsigned int`). Whatever
// the caller puts in the high word is discarded before the kernel acts, so deciding on the low
// word decides on exactly what the kernel will see. Comparing the full 64-bit value instead would
// be *weaker*: `ioctl(fd, (1 << 32) | TIOCSTI)` would not equal TIOCSTI yet would still inject.
// File modes are `umode_t` (16 bits) in the kernel: the set-ID bits are in the low word too.
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
        ArgCheck::NoSetIdMode(arg) => {
            let refuse = asm.label();
            asm.load_arg_low(arg as u32);
            asm.jset(SET_ID_BITS, Target::Label(refuse), Target::Next);
            asm.ret(ALLOW);
            asm.bind(refuse);
            asm.ret(EPERM);
        }
        ArgCheck::SetnsUserOnly => {
            let allow = asm.label();
            asm.load_arg_low(1);
            asm.jeq(
                libc::CLONE_NEWUSER as u32,
                Target::Label(allow),
                Target::Next,
            );
            asm.ret(EPERM);
            asm.bind(allow);
            asm.ret(ALLOW);
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
