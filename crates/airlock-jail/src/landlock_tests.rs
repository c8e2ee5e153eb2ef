//! Landlock against the real kernel. Each escape test builds the ruleset and every C string or
//! socket address it needs in the (multi-threaded) test process, forks, restricts only the
//! child, performs the attack there with raw libc calls and reports through the exit code: 0 for
//! "the access worked", otherwise the errno it failed with. The parent then checks the host.

use super::rights;
use super::sys::{self, access_fs, RulesetAttr};
use super::*;

use std::ffi::CString;
use std::fs;
use std::io::Read as _;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Exit code of a child whose `restrict_self` failed.
const CHILD_RESTRICT_FAILED: i32 = 200;
/// Exit code of a child whose attempt panicked.
const CHILD_PANICKED: i32 = 201;
/// Exit code of a child that failed before reaching the access under test.
const CHILD_SETUP_FAILED: i32 = 202;
/// Exit code of a child whose failing call left no errno.
const CHILD_NO_ERRNO: i32 = 203;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "airlock-landlock-{}-{label}-{n}",
            std::process::id()
        ));
        fs::create_dir_all(&path).expect("create temp dir");
        // Canonical, so grants are on the real path even if the temp dir is a symlink.
        Self(fs::canonicalize(&path).expect("canonicalize temp dir"))
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn file(&self, name: &str, content: &str) -> PathBuf {
        let path = self.0.join(name);
        fs::write(&path, content).expect("write fixture");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("path without NUL")
}

fn strict(rules: &LandlockRules) -> Ruleset {
    Ruleset::build(rules, Compatibility::Strict).expect("build ruleset")
}

/// The errno of the last failed libc call, as a child exit code.
fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(CHILD_NO_ERRNO)
}

/// 0 if `ret` is non-negative, else the errno.
fn outcome(ret: libc::c_int) -> i32 {
    if ret < 0 {
        errno()
    } else {
        0
    }
}

/// Forks; the child restricts itself with `ruleset`, runs `attempt` and exits with its result.
/// `attempt` must not allocate or take locks (the test process is multi-threaded).
fn in_sandbox(ruleset: Option<&Ruleset>, attempt: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child only calls async-signal-safe libc functions (prctl, Landlock syscalls,
    // open/read/write/…, _exit) on data prepared before the fork, and never returns to the test
    // harness: it always leaves through _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", io::Error::last_os_error());
    if pid == 0 {
        let restricted = ruleset.map_or(Ok(()), Ruleset::restrict_self);
        let code = match restricted {
            Ok(()) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(attempt))
                .unwrap_or(CHILD_PANICKED),
            Err(_) => CHILD_RESTRICT_FAILED,
        };
        // SAFETY: _exit ends the forked child immediately without running the parent's atexit
        // handlers or destructors.
        unsafe { libc::_exit(code) }
    }
    wait_exit_code(pid)
}

fn wait_exit_code(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: `pid` is our own child and `status` is a valid out-pointer.
    let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(ret, pid, "waitpid: {}", io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status),
        "child did not exit normally (status {status:#x})"
    );
    libc::WEXITSTATUS(status)
}

fn open_outcome(path: &CString, flags: libc::c_int) -> i32 {
    // SAFETY: `path` is NUL-terminated and outlives the call; the mode is only used with O_CREAT.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            flags | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return errno();
    }
    // SAFETY: `fd` was just opened by this child and is closed exactly once.
    unsafe { libc::close(fd) };
    0
}

// ---------------------------------------------------------------------------------------------
// ABI, struct sizes and planning
// ---------------------------------------------------------------------------------------------

#[test]
fn abi_version_is_available_on_this_machine() {
    let abi = abi_version();
    assert!(
        abi >= 1,
        "Landlock is unavailable (ABI {abi}); this machine is expected to offer ABI 7"
    );
    assert!(
        abi >= 7,
        "this machine is expected to offer Landlock ABI 7, found {abi}"
    );
}

#[test]
fn plan_reports_abi_and_every_layer() {
    let rules = LandlockRules {
        paths: vec![(PathBuf::from("/usr"), FsAccess::ReadExec)],
        tcp_connect_ports: Some(vec![443]),
        deny_tcp_bind: true,
        scope_abstract_unix: true,
        scope_signals: true,
    };
    let status = plan(&rules);
    assert_eq!(status.abi, 7);
    assert!(status.fs && status.net && status.scoped, "{status:?}");
    assert!(status.notes.is_empty(), "{status:?}");

    let fs_only = plan(&LandlockRules::default());
    assert!(fs_only.fs && !fs_only.net && !fs_only.scoped, "{fs_only:?}");
}

#[test]
fn rights_per_abi() {
    let abi1 = (1u64 << 13) - 1;
    assert_eq!(rights::fs_rights(0), 0);
    assert_eq!(rights::fs_rights(1), abi1);
    assert_eq!(rights::fs_rights(2), abi1 | access_fs::REFER);
    assert_eq!(
        rights::fs_rights(3),
        abi1 | access_fs::REFER | access_fs::TRUNCATE
    );
    assert_eq!(rights::fs_rights(4), rights::fs_rights(3));
    assert_eq!(rights::fs_rights(5), (1u64 << 16) - 1);
    assert_eq!(rights::fs_rights(7), (1u64 << 16) - 1);
    assert_eq!(rights::net_rights(3), 0);
    assert_eq!(rights::net_rights(4), 0b11);
    assert_eq!(rights::scopes(5), 0);
    assert_eq!(rights::scopes(6), 0b11);
    assert_eq!(
        (1..=7).map(rights::ruleset_attr_len).collect::<Vec<_>>(),
        [8, 8, 8, 16, 16, 24, 24]
    );
    let rw = rights::grant(FsAccess::ReadWrite, rights::fs_rights(7));
    assert_eq!(
        rights::for_non_directory(rw),
        0b111 | access_fs::TRUNCATE | access_fs::IOCTL_DEV
    );
    assert_eq!(
        rights::grant(FsAccess::ReadExec, rights::fs_rights(1)),
        0b1101
    );
}

#[test]
fn old_abis_downgrade_or_refuse() {
    let rules = LandlockRules {
        tcp_connect_ports: Some(vec![]),
        scope_signals: true,
        ..LandlockRules::default()
    };
    let abi3 = Plan::new(&rules, 3);
    assert!(abi3.status.fs && !abi3.status.net && !abi3.status.scoped);
    assert_eq!(abi3.attr.handled_access_net, 0);
    assert!(matches!(
        abi3.gaps[0].into_error(),
        LandlockError::Unsupported {
            needed: 4,
            abi: 3,
            ..
        }
    ));
    let abi5 = Plan::new(&rules, 5);
    assert!(abi5.status.net && !abi5.status.scoped);
    assert_eq!(abi5.gaps.len(), 1);
    let abi0 = Plan::new(&rules, 0);
    assert!(!abi0.status.fs && matches!(abi0.gaps[0].into_error(), LandlockError::Unavailable));
    assert!(Plan::new(&rules, 7).gaps.is_empty());
}

/// Documents what this kernel accepts as `landlock_ruleset_attr` size: the ABI 1 size (8), the
/// ABI 4 size (16), the full struct (24), and a longer one only with a zero tail.
#[test]
fn kernel_accepts_every_abi_struct_size() {
    let attr = RulesetAttr {
        handled_access_fs: rights::fs_rights(1),
        handled_access_net: 0,
        scoped: 0,
    };
    for len in [8, 16, 24] {
        assert!(
            sys::create_ruleset(&attr.to_bytes()[..len]).is_ok(),
            "size {len} refused"
        );
    }
    let short = sys::create_ruleset(&attr.to_bytes()[..4]).expect_err("4 bytes accepted");
    assert_eq!(short.raw_os_error(), Some(libc::EINVAL));

    let mut long = [0u8; 32];
    long[..24].copy_from_slice(&attr.to_bytes());
    assert!(sys::create_ruleset(&long).is_ok(), "zero tail refused");
    long[31] = 1;
    let err = sys::create_ruleset(&long).expect_err("non-zero tail accepted");
    assert_eq!(err.raw_os_error(), Some(libc::E2BIG));

    // A right the ABI does not know is refused, not ignored.
    let unknown = RulesetAttr {
        handled_access_fs: 1 << 40,
        ..attr
    };
    let err = sys::create_ruleset(&unknown.to_bytes()).expect_err("unknown right accepted");
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
}

#[test]
fn missing_paths_are_skipped_and_noted_files_are_masked() {
    let dir = TempDir::new("missing");
    let file = dir.file("f", "x");
    let missing = dir.path().join("does-not-exist");
    let rules = LandlockRules {
        paths: vec![
            (missing.clone(), FsAccess::Read),
            (missing.join("below"), FsAccess::ReadWrite),
            // A regular file with every right: only file rights may be granted, else EINVAL.
            (file, FsAccess::ReadWrite),
        ],
        ..LandlockRules::default()
    };
    let status = strict(&rules).into_status();
    assert_eq!(status.notes.len(), 2, "{status:?}");
    assert!(status.notes[0].contains("does-not-exist"), "{status:?}");

    let nul = LandlockRules {
        paths: vec![(PathBuf::from("/tmp/a\0b"), FsAccess::Read)],
        ..LandlockRules::default()
    };
    assert!(matches!(
        Ruleset::build(&nul, Compatibility::Strict),
        Err(LandlockError::InvalidPath { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Filesystem
// ---------------------------------------------------------------------------------------------

#[test]
fn read_grant_allows_read_and_refuses_write() {
    let dir = TempDir::new("read");
    let file = dir.file("secret.txt", "original");
    let ruleset = strict(&LandlockRules {
        paths: vec![(dir.path().to_path_buf(), FsAccess::Read)],
        ..LandlockRules::default()
    });
    let path = c_path(&file);
    let read = in_sandbox(Some(&ruleset), || {
        // SAFETY: NUL-terminated path; the descriptor is read into a stack buffer and closed.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return errno();
            }
            let mut buf = [0u8; 16];
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            libc::close(fd);
            if n == 8 && &buf[..8] == b"original" {
                0
            } else {
                CHILD_SETUP_FAILED
            }
        }
    });
    assert_eq!(read, 0, "read under a Read grant failed");

    for flags in [
        libc::O_WRONLY | libc::O_TRUNC,
        libc::O_RDWR,
        libc::O_WRONLY | libc::O_APPEND,
    ] {
        let write = in_sandbox(Some(&ruleset), || open_outcome(&path, flags));
        assert_eq!(
            write,
            libc::EACCES,
            "write open (flags {flags:#x}) not refused"
        );
    }
    let truncate = in_sandbox(Some(&ruleset), || {
        // SAFETY: NUL-terminated path that outlives the call.
        outcome(unsafe { libc::truncate(path.as_ptr(), 0) })
    });
    assert_eq!(truncate, libc::EACCES, "truncate not refused");
    let create = c_path(&dir.path().join("new"));
    let created = in_sandbox(Some(&ruleset), || {
        open_outcome(&create, libc::O_WRONLY | libc::O_CREAT)
    });
    assert_eq!(created, libc::EACCES, "create not refused");

    assert_eq!(fs::read_to_string(&file).expect("read back"), "original");
    assert!(!dir.path().join("new").exists());
}

#[test]
fn file_outside_every_grant_cannot_be_opened() {
    let granted = TempDir::new("granted");
    let outside = TempDir::new("outside");
    let secret = outside.file("secret.txt", "host secret");
    let ruleset = strict(&LandlockRules {
        paths: vec![(granted.path().to_path_buf(), FsAccess::ReadWrite)],
        ..LandlockRules::default()
    });
    let path = c_path(&secret);
    let dir = c_path(outside.path());
    assert_eq!(
        in_sandbox(Some(&ruleset), || open_outcome(&path, libc::O_RDONLY)),
        libc::EACCES
    );
    assert_eq!(
        in_sandbox(Some(&ruleset), || open_outcome(
            &dir,
            libc::O_RDONLY | libc::O_DIRECTORY
        )),
        libc::EACCES
    );
    let unlink = in_sandbox(Some(&ruleset), || {
        // SAFETY: NUL-terminated path that outlives the call.
        outcome(unsafe { libc::unlink(path.as_ptr()) })
    });
    assert_eq!(unlink, libc::EACCES);
    // Control: the same open works without the ruleset.
    assert_eq!(in_sandbox(None, || open_outcome(&path, libc::O_RDONLY)), 0);
    assert_eq!(
        fs::read_to_string(&secret).expect("read back"),
        "host secret"
    );
}

#[test]
fn read_write_grant_allows_create_write_rename_unlink() {
    let dir = TempDir::new("rw");
    let doomed = dir.file("doomed", "bye");
    let ruleset = strict(&LandlockRules {
        paths: vec![(dir.path().to_path_buf(), FsAccess::ReadWrite)],
        ..LandlockRules::default()
    });
    let new = c_path(&dir.path().join("new"));
    let renamed = c_path(&dir.path().join("renamed"));
    let subdir = c_path(&dir.path().join("sub"));
    let moved = c_path(&dir.path().join("sub/moved"));
    let doomed_c = c_path(&doomed);
    let code = in_sandbox(Some(&ruleset), || {
        // SAFETY: all paths are NUL-terminated and outlive the calls; the descriptor is closed.
        unsafe {
            let fd = libc::open(
                new.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
                0o600,
            );
            if fd < 0 {
                return errno();
            }
            let written = libc::write(fd, b"hello".as_ptr().cast(), 5);
            libc::close(fd);
            if written != 5 {
                return errno();
            }
            for ret in [
                libc::rename(new.as_ptr(), renamed.as_ptr()),
                libc::mkdir(subdir.as_ptr(), 0o700),
                // Across directories: needs REFER, which ReadWrite grants.
                libc::rename(renamed.as_ptr(), moved.as_ptr()),
                libc::unlink(doomed_c.as_ptr()),
            ] {
                if ret < 0 {
                    return errno();
                }
            }
            0
        }
    });
    assert_eq!(code, 0, "ReadWrite operation failed");
    assert_eq!(
        fs::read_to_string(dir.path().join("sub/moved")).expect("moved file"),
        "hello"
    );
    assert!(!doomed.exists() && !dir.path().join("new").exists());
}

#[test]
fn rename_from_read_write_into_read_dir_is_refused() {
    let writable = TempDir::new("rw-src");
    let readonly = TempDir::new("ro-dst");
    let file = writable.file("payload", "data");
    let ruleset = strict(&LandlockRules {
        paths: vec![
            (writable.path().to_path_buf(), FsAccess::ReadWrite),
            (readonly.path().to_path_buf(), FsAccess::Read),
        ],
        ..LandlockRules::default()
    });
    let from = c_path(&file);
    let to = c_path(&readonly.path().join("payload"));
    let code = in_sandbox(Some(&ruleset), || {
        // SAFETY: NUL-terminated paths that outlive the call.
        outcome(unsafe { libc::rename(from.as_ptr(), to.as_ptr()) })
    });
    assert!(
        code == libc::EXDEV || code == libc::EACCES,
        "rename not refused: {code}"
    );
    let link = in_sandbox(Some(&ruleset), || {
        // SAFETY: NUL-terminated paths that outlive the call.
        outcome(unsafe { libc::link(from.as_ptr(), to.as_ptr()) })
    });
    assert!(
        link == libc::EXDEV || link == libc::EACCES,
        "link not refused: {link}"
    );
    assert_eq!(fs::read_to_string(&file).expect("file still there"), "data");
    assert!(!readonly.path().join("payload").exists());
}

#[test]
fn read_exec_allows_exec_and_read_forbids_it() {
    let system = |access| LandlockRules {
        paths: ["/usr", "/bin", "/lib", "/lib64", "/etc"]
            .iter()
            .map(|p| (PathBuf::from(p), access))
            .collect(),
        ..LandlockRules::default()
    };
    let true_bin = CString::new("/bin/true").expect("static path");
    let argv = [true_bin.as_ptr(), std::ptr::null()];
    let envp = [std::ptr::null::<libc::c_char>()];
    let exec = || {
        // SAFETY: path, argv and envp are NUL-terminated and outlive the call; on success the
        // child image is replaced, on failure we return the errno.
        unsafe { libc::execve(true_bin.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
        errno()
    };
    let exec_ok = strict(&system(FsAccess::ReadExec));
    assert_eq!(
        in_sandbox(Some(&exec_ok), exec),
        0,
        "ReadExec did not allow exec"
    );
    let read_only = strict(&system(FsAccess::Read));
    assert_eq!(
        in_sandbox(Some(&read_only), exec),
        libc::EACCES,
        "Read allowed exec"
    );
}

// ---------------------------------------------------------------------------------------------
// Network and scopes
// ---------------------------------------------------------------------------------------------

fn loopback(port: u16) -> libc::sockaddr_in {
    // SAFETY: sockaddr_in is plain old data; all-zero is a valid value.
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_port = port.to_be();
    addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
    addr
}

/// Creates a TCP socket and connects it to `addr` (or binds it, if `bind`); 0 or the errno.
fn tcp_attempt(addr: &libc::sockaddr_in, bind: bool) -> i32 {
    // SAFETY: socket takes integers only.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return CHILD_SETUP_FAILED;
    }
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let ptr = std::ptr::from_ref(addr).cast::<libc::sockaddr>();
    // SAFETY: `addr` is a valid sockaddr_in of `len` bytes; `fd` is our own socket.
    let ret = unsafe {
        if bind {
            libc::bind(fd, ptr, len)
        } else {
            libc::connect(fd, ptr, len)
        }
    };
    let code = outcome(ret);
    // SAFETY: closes the socket opened above, once.
    unsafe { libc::close(fd) };
    code
}

#[test]
fn tcp_connect_only_to_listed_ports() {
    let allowed = TcpListener::bind("127.0.0.1:0").expect("listener");
    let denied = TcpListener::bind("127.0.0.1:0").expect("listener");
    let allowed_port = allowed.local_addr().expect("addr").port();
    let denied_port = denied.local_addr().expect("addr").port();
    let ruleset = strict(&LandlockRules {
        tcp_connect_ports: Some(vec![allowed_port]),
        ..LandlockRules::default()
    });
    assert!(ruleset.status().net);
    let (ok_addr, denied_addr) = (loopback(allowed_port), loopback(denied_port));
    assert_eq!(
        in_sandbox(Some(&ruleset), || tcp_attempt(&ok_addr, false)),
        0
    );
    assert_eq!(
        in_sandbox(Some(&ruleset), || tcp_attempt(&denied_addr, false)),
        libc::EACCES
    );
    // Control: the denied port is reachable without the ruleset.
    assert_eq!(in_sandbox(None, || tcp_attempt(&denied_addr, false)), 0);
}

#[test]
fn tcp_bind_denied() {
    let ruleset = strict(&LandlockRules {
        deny_tcp_bind: true,
        ..LandlockRules::default()
    });
    let any_port = loopback(0);
    assert_eq!(
        in_sandbox(Some(&ruleset), || tcp_attempt(&any_port, true)),
        libc::EACCES
    );
    assert_eq!(in_sandbox(None, || tcp_attempt(&any_port, true)), 0);
}

#[test]
fn scope_signals_blocks_kill_outside_domain() {
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let pid = libc::pid_t::try_from(sleeper.id()).expect("pid fits");
    let ruleset = strict(&LandlockRules {
        scope_signals: true,
        ..LandlockRules::default()
    });
    let kill = || {
        // SAFETY: signal 0 only checks permission; nothing is delivered.
        outcome(unsafe { libc::kill(pid, 0) })
    };
    let scoped = in_sandbox(Some(&ruleset), kill);
    let unscoped = in_sandbox(None, kill);
    let own = in_sandbox(Some(&ruleset), || {
        // SAFETY: signal 0 to ourselves, permission check only.
        outcome(unsafe { libc::kill(libc::getpid(), 0) })
    });

    // SAFETY: `pid` is our own still-unreaped child, so the PID cannot have been reused.
    let killed = unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = sleeper.wait();
    assert_eq!(killed, 0, "could not kill our sleep");
    assert_eq!(scoped, libc::EPERM, "signal left the domain");
    assert_eq!(unscoped, 0, "control kill failed");
    assert_eq!(own, 0, "signalling inside the domain failed");
}

#[test]
fn scope_abstract_unix_blocks_connect_outside_domain() {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("airlock-landlock-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
        .expect("abstract address");
    let listener = UnixListener::bind_addr(&addr).expect("bind abstract socket");

    // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
    let mut sun: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (dst, src) in sun.sun_path[1..].iter_mut().zip(name.as_bytes()) {
        *dst = *src as libc::c_char;
    }
    let len = (std::mem::size_of::<libc::sa_family_t>() + 1 + name.len()) as libc::socklen_t;
    let connect = || {
        // SAFETY: socket takes integers only.
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return CHILD_SETUP_FAILED;
        }
        // SAFETY: `sun` is a valid sockaddr_un whose first `len` bytes hold the abstract address.
        let ret = unsafe { libc::connect(fd, std::ptr::from_ref(&sun).cast(), len) };
        let code = outcome(ret);
        // SAFETY: closes the socket opened above, once.
        unsafe { libc::close(fd) };
        code
    };
    let ruleset = strict(&LandlockRules {
        scope_abstract_unix: true,
        ..LandlockRules::default()
    });
    assert_eq!(in_sandbox(Some(&ruleset), connect), libc::EPERM);
    assert_eq!(in_sandbox(None, connect), 0, "control connect failed");
    drop(listener);
}

// ---------------------------------------------------------------------------------------------
// apply() end to end
// ---------------------------------------------------------------------------------------------

/// `apply` itself in the child (it allocates; glibc's fork resets malloc locks in the child, and
/// nothing else here takes a lock).
#[test]
fn apply_restricts_and_reports_status() {
    let dir = TempDir::new("apply");
    let file = dir.file("f", "content");
    let rules = LandlockRules {
        paths: vec![
            (dir.path().to_path_buf(), FsAccess::Read),
            (dir.path().join("missing"), FsAccess::Read),
        ],
        tcp_connect_ports: Some(vec![]),
        scope_signals: true,
        ..LandlockRules::default()
    };
    let path = c_path(&file);
    let expected = plan(&rules);
    let code = in_sandbox(None, || {
        let Ok(status) = apply(&rules) else {
            return CHILD_RESTRICT_FAILED;
        };
        if status.abi != expected.abi
            || !status.fs
            || !status.net
            || !status.scoped
            || status.notes.len() != 1
        {
            return CHILD_SETUP_FAILED;
        }
        if open_outcome(&path, libc::O_RDONLY) != 0 {
            return CHILD_SETUP_FAILED;
        }
        open_outcome(&path, libc::O_WRONLY)
    });
    assert_eq!(code, libc::EACCES);
    let mut content = String::new();
    fs::File::open(&file)
        .and_then(|mut f| f.read_to_string(&mut content))
        .expect("read back");
    assert_eq!(content, "content");
}
