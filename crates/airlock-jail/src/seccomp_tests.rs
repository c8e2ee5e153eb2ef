//! Tests for the seccomp filter.
//!
//! Two kinds: table/BPF tests that evaluate the compiled program with a small classic-BPF
//! interpreter, and kernel tests that install the filter in a forked child, perform the attack
//! for real, and report the result through the child's exit status.
//!
//! The test binary is multithreaded, so a forked child only does async-signal-safe work:
//! everything it needs (program, C strings, argv) is built before `fork`.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use super::compile::{ret_errno, CLONE_NAMESPACE_FLAGS};
use super::table_arch::AUDIT_ARCH;
use super::*;

// ---------------------------------------------------------------------------------------------
// A classic-BPF interpreter, enough for the opcodes the assembler emits.
// ---------------------------------------------------------------------------------------------

/// The 64-byte `seccomp_data` the kernel hands to the filter, as native-endian words.
fn seccomp_data(arch: u32, nr: u32, args: [u64; 6]) -> [u8; 64] {
    let mut bytes = [0u8; 64];
    bytes[0..4].copy_from_slice(&nr.to_ne_bytes());
    bytes[4..8].copy_from_slice(&arch.to_ne_bytes());
    for (i, arg) in args.iter().enumerate() {
        bytes[16 + 8 * i..24 + 8 * i].copy_from_slice(&arg.to_ne_bytes());
    }
    bytes
}

fn interpret(program: &[libc::sock_filter], data: &[u8; 64]) -> u32 {
    let mut acc: u32 = 0;
    let mut pc = 0usize;
    loop {
        let insn = program[pc];
        let code = u32::from(insn.code);
        let class = code & 0x07;
        match class {
            c if c == libc::BPF_LD => {
                assert_eq!(
                    code,
                    libc::BPF_LD | libc::BPF_W | libc::BPF_ABS,
                    "unexpected load"
                );
                let at = insn.k as usize;
                let word: [u8; 4] = data[at..at + 4].try_into().unwrap();
                acc = u32::from_ne_bytes(word);
                pc += 1;
            }
            c if c == libc::BPF_ALU => {
                assert_eq!(
                    code,
                    libc::BPF_ALU | libc::BPF_AND | libc::BPF_K,
                    "unexpected alu"
                );
                acc &= insn.k;
                pc += 1;
            }
            c if c == libc::BPF_JMP && code & 0xf0 == libc::BPF_JA => {
                pc += 1 + insn.k as usize;
            }
            c if c == libc::BPF_JMP => {
                let taken = match code & 0xf0 {
                    op if op == libc::BPF_JEQ => acc == insn.k,
                    op if op == libc::BPF_JGE => acc >= insn.k,
                    op if op == libc::BPF_JSET => acc & insn.k != 0,
                    op => panic!("unexpected jump opcode {op:#x}"),
                };
                let offset = if taken { insn.jt } else { insn.jf };
                pc += 1 + usize::from(offset);
            }
            c if c == libc::BPF_RET => return insn.k,
            _ => panic!("unexpected instruction class {class:#x}"),
        }
    }
}

fn verdict(program: &SeccompProgram, nr: libc::c_long, args: [u64; 6]) -> u32 {
    let data = seccomp_data(AUDIT_ARCH, u32::try_from(nr).unwrap(), args);
    interpret(program.instructions(), &data)
}

pub(super) fn build(sockets: SocketPolicy) -> SeccompProgram {
    SeccompProgram::build(&SeccompProfile { sockets }).unwrap()
}

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const EPERM: u32 = ret_errno(libc::EPERM);
const ENOSYS: u32 = ret_errno(libc::ENOSYS);
const EAFNOSUPPORT: u32 = ret_errno(libc::EAFNOSUPPORT);
const EPROTONOSUPPORT: u32 = ret_errno(libc::EPROTONOSUPPORT);

fn args(a0: u64, a1: u64, a2: u64) -> [u64; 6] {
    [a0, a1, a2, 0, 0, 0]
}

// ---------------------------------------------------------------------------------------------
// Table and program structure
// ---------------------------------------------------------------------------------------------

#[test]
fn builds_for_both_profiles_with_every_jump_in_bounds() {
    for sockets in [SocketPolicy::UnixOnly, SocketPolicy::UnixAndInet] {
        let program = build(sockets);
        let insns = program.instructions();
        assert_eq!(program.len(), insns.len());
        assert!(!program.is_empty());
        assert!(insns.len() <= 4096, "{} instructions", insns.len());
        // The search tree keeps the filter small (a flat table was ~750 instructions).
        assert!(
            insns.len() < 450,
            "{} instructions: the range tree should stay small",
            insns.len()
        );
        let last = insns[insns.len() - 1];
        assert_eq!(
            u32::from(last.code),
            libc::BPF_RET | libc::BPF_K,
            "must end in a return"
        );
        for (pc, insn) in insns.iter().enumerate() {
            if u32::from(insn.code) == libc::BPF_JMP | libc::BPF_JA {
                assert!(pc + 1 + (insn.k as usize) < insns.len(), "JA out at {pc}");
            } else if u32::from(insn.code) & 0x07 == libc::BPF_JMP {
                // jt/jf are u8, so overflow would have been caught by the assembler; here we check
                // that both targets land inside the program.
                for offset in [insn.jt, insn.jf] {
                    assert!(
                        pc + 1 + usize::from(offset) < insns.len(),
                        "jump out at {pc}"
                    );
                }
            }
        }
    }
}

#[test]
fn assembler_rejects_a_jump_longer_than_255() {
    let mut asm = bpf::Assembler::new();
    let far = asm.label();
    asm.load_nr();
    asm.jeq(0, bpf::Target::Label(far), bpf::Target::Next);
    for _ in 0..256 {
        asm.ret(ALLOW);
    }
    asm.bind(far);
    asm.ret(EPERM);
    assert!(matches!(
        asm.finish(),
        Err(SeccompError::JumpTooFar {
            at: 1,
            distance: 256
        })
    ));
}

#[test]
fn table_has_one_row_per_syscall_and_a_reason_for_each() {
    let mut seen = std::collections::HashSet::new();
    for row in table::rules() {
        assert!(seen.insert(row.nr), "{} listed twice", row.name());
        assert!(
            !row.reason.trim().is_empty(),
            "{} has no reason",
            row.name()
        );
        assert!(!row.name().starts_with("SYS_"));
    }
}

#[test]
fn denied_list_names_every_required_refusal() {
    let denied: Vec<&str> = denied_syscalls()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let required = [
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "bpf",
        "perf_event_open",
        "keyctl",
        "add_key",
        "request_key",
        "mount",
        "umount2",
        "pivot_root",
        "move_mount",
        "open_tree",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
        "unshare",
        "userfaultfd",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "kexec_load",
        "kexec_file_load",
        "init_module",
        "finit_module",
        "delete_module",
        "pidfd_getfd",
        "swapon",
        "swapoff",
        "reboot",
        "acct",
        "quotactl",
        "syslog",
        "open_by_handle_at",
        "name_to_handle_at",
        "settimeofday",
        "clock_settime",
        "adjtimex",
        "clock_adjtime",
        "vhangup",
        "fanotify_init",
        "kcmp",
        "clone3",
    ];
    for name in required {
        assert!(denied.contains(&name), "{name} is not in denied_syscalls()");
    }
    #[cfg(target_arch = "x86_64")]
    for name in ["iopl", "ioperm", "uselib", "nfsservctl", "lookup_dcookie"] {
        assert!(denied.contains(&name), "{name} is not in denied_syscalls()");
    }
    let allowed: Vec<&str> = allowed_syscalls()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    for name in [
        "seccomp",
        "landlock_restrict_self",
        "prlimit64",
        "clone",
        "socket",
        "ioctl",
    ] {
        assert!(
            allowed.contains(&name),
            "{name} is not in allowed_syscalls()"
        );
    }
}

#[test]
fn every_row_gets_its_table_verdict() {
    let program = build(SocketPolicy::UnixOnly);
    for row in table::rules() {
        let got = verdict(&program, row.nr, [0; 6]);
        let want = match row.rule {
            table::Rule::Allow => ALLOW,
            table::Rule::Deny => EPERM,
            table::Rule::Unsupported => ENOSYS,
            table::Rule::Check(_) => continue,
        };
        assert_eq!(got, want, "{}", row.name());
    }
}

#[test]
fn unlisted_syscalls_get_enosys_and_foreign_abis_are_killed() {
    let program = build(SocketPolicy::UnixAndInet);
    // 460 is lsm_list_modules: real, harmless, and deliberately not listed.
    assert_eq!(verdict(&program, 460, [0; 6]), ENOSYS);
    assert_eq!(verdict(&program, 4000, [0; 6]), ENOSYS);
    let foreign = seccomp_data(0x4000_0003 /* AUDIT_ARCH_I386 */, 20, [0; 6]);
    assert_eq!(
        interpret(program.instructions(), &foreign),
        libc::SECCOMP_RET_KILL_PROCESS
    );
    #[cfg(target_arch = "x86_64")]
    {
        // x32 getpid and x32 read: refused even though getpid/read are allowed natively.
        let x32 = 0x4000_0000 | libc::SYS_getpid;
        assert_eq!(verdict(&program, x32, [0; 6]), ENOSYS);
        assert_eq!(
            verdict(&program, 0x4000_0000 | libc::SYS_read, [0; 6]),
            ENOSYS
        );
    }
}

#[test]
fn clone_verdict_depends_on_namespace_flags_in_the_low_word() {
    let program = build(SocketPolicy::UnixOnly);
    let thread_flags = (libc::CLONE_VM
        | libc::CLONE_FS
        | libc::CLONE_FILES
        | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD
        | libc::CLONE_SYSVSEM
        | libc::CLONE_SETTLS
        | libc::CLONE_PARENT_SETTID
        | libc::CLONE_CHILD_CLEARTID) as u64;
    assert_eq!(
        verdict(&program, libc::SYS_clone, args(thread_flags, 0, 0)),
        ALLOW
    );
    assert_eq!(
        verdict(&program, libc::SYS_clone, args(libc::SIGCHLD as u64, 0, 0)),
        ALLOW
    );
    for bit in 0..32 {
        let flag = 1u32 << bit;
        if flag & CLONE_NAMESPACE_FLAGS == 0 {
            continue;
        }
        let flags = u64::from(flag) | libc::SIGCHLD as u64;
        assert_eq!(
            verdict(&program, libc::SYS_clone, args(flags, 0, 0)),
            EPERM,
            "{flag:#x}"
        );
        // The kernel drops the high word; junk there must not change the verdict.
        let junk = flags | 0xffff_ffff_0000_0000;
        assert_eq!(
            verdict(&program, libc::SYS_clone, args(junk, 0, 0)),
            EPERM,
            "{flag:#x}"
        );
    }
    assert_eq!(verdict(&program, libc::SYS_clone3, [0; 6]), ENOSYS);
}

#[test]
fn socket_verdicts_follow_the_profile() {
    let (unix_only, inet) = (
        build(SocketPolicy::UnixOnly),
        build(SocketPolicy::UnixAndInet),
    );
    let socket = |program: &SeccompProgram, domain: i32, ty: i32, proto: i32| {
        verdict(
            program,
            libc::SYS_socket,
            args(domain as u64, ty as u64, proto as u64),
        )
    };
    let stream = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    for program in [&unix_only, &inet] {
        assert_eq!(socket(program, libc::AF_UNIX, stream, 0), ALLOW);
        assert_eq!(
            socket(
                program,
                libc::AF_NETLINK,
                libc::SOCK_RAW,
                libc::NETLINK_ROUTE
            ),
            ALLOW
        );
        let audit = socket(
            program,
            libc::AF_NETLINK,
            libc::SOCK_RAW,
            libc::NETLINK_AUDIT,
        );
        assert_eq!(audit, EPROTONOSUPPORT);
        for family in [
            libc::AF_PACKET,
            libc::AF_VSOCK,
            libc::AF_ALG,
            libc::AF_BLUETOOTH,
        ] {
            assert_eq!(
                socket(program, family, libc::SOCK_RAW, 0),
                EAFNOSUPPORT,
                "{family}"
            );
        }
        let pair = verdict(
            program,
            libc::SYS_socketpair,
            args(libc::AF_UNIX as u64, 1, 0),
        );
        assert_eq!(pair, ALLOW);
        let pair = verdict(
            program,
            libc::SYS_socketpair,
            args(libc::AF_INET as u64, 1, 0),
        );
        assert_eq!(pair, EAFNOSUPPORT);
    }
    for family in [libc::AF_INET, libc::AF_INET6] {
        assert_eq!(socket(&unix_only, family, stream, 0), EAFNOSUPPORT);
        assert_eq!(socket(&inet, family, stream, 0), ALLOW);
        assert_eq!(
            socket(&inet, family, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK, 0),
            ALLOW
        );
        assert_eq!(
            socket(&inet, family, libc::SOCK_RAW, libc::IPPROTO_ICMP),
            EPERM
        );
    }
}

#[test]
fn ioctl_prctl_and_personality_verdicts() {
    let program = build(SocketPolicy::UnixOnly);
    let ioctl = |request: u64| verdict(&program, libc::SYS_ioctl, args(0, request, 0));
    assert_eq!(ioctl(libc::TCGETS), ALLOW);
    assert_eq!(ioctl(libc::TIOCGWINSZ), ALLOW);
    assert_eq!(ioctl(libc::TIOCSTI), EPERM);
    assert_eq!(ioctl(libc::TIOCLINUX), EPERM);
    // The kernel's `cmd` is an unsigned int: a high word cannot smuggle TIOCSTI past the filter.
    assert_eq!(ioctl(0x1_0000_0000 | libc::TIOCSTI), EPERM);
    assert_eq!(ioctl(0xdead_beef_0000_0000 | libc::TIOCLINUX), EPERM);

    let prctl = |option: i32| verdict(&program, libc::SYS_prctl, args(option as u64, 0, 0));
    assert_eq!(prctl(libc::PR_SET_NAME), ALLOW);
    assert_eq!(prctl(libc::PR_SET_NO_NEW_PRIVS), ALLOW);
    assert_eq!(prctl(libc::PR_SET_MM), EPERM);

    let personality = |p: u64| verdict(&program, libc::SYS_personality, args(p, 0, 0));
    assert_eq!(personality(0xffff_ffff), ALLOW);
    assert_eq!(personality(0), ALLOW);
    assert_eq!(personality(0x0040000 /* ADDR_NO_RANDOMIZE */), EPERM);
}

#[path = "seccomp/kernel_tests.rs"]
mod kernel;
#[path = "seccomp/program_tests.rs"]
mod programs;

#[test]
fn set_id_modes_are_refused_wherever_a_mode_is_passed() {
    let program = build(SocketPolicy::UnixOnly);
    let at = |nr: libc::c_long, a: [u64; 6]| verdict(&program, nr, a);
    let six = |i: usize, mode: u64| {
        let mut a = [0u64; 6];
        a[i] = mode;
        a
    };
    // (syscall, index of its mode argument)
    let mut rows: Vec<(libc::c_long, usize)> = vec![
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (super::table::nr::SYS_fchmodat2, 2),
        (libc::SYS_openat, 3),
        (libc::SYS_mknodat, 2),
    ];
    #[cfg(target_arch = "x86_64")]
    rows.extend([
        (libc::SYS_chmod, 1),
        (libc::SYS_open, 2),
        (libc::SYS_creat, 1),
        (libc::SYS_mknod, 1),
    ]);
    for (nr, i) in rows {
        for mode in [
            0o4755u64,
            0o2755,
            0o6777,
            0o104755,
            0xffff_0000_0000_0000 | 0o4755,
        ] {
            assert_eq!(at(nr, six(i, mode)), EPERM, "syscall {nr} mode {mode:#o}");
        }
        for mode in [
            0o755u64,
            0o644,
            0o1777,
            0o100644,
            0,
            0xffff_0000_0000_0000 | 0o755,
        ] {
            assert_eq!(at(nr, six(i, mode)), ALLOW, "syscall {nr} mode {mode:#o}");
        }
    }
    // openat2's mode is behind a pointer: refused as unknown, so callers fall back to openat.
    assert_eq!(at(libc::SYS_openat2, args(0, 0, 0)), ENOSYS);
}
