//! Starting a box's host process from the server with `posix_spawn`, not `fork`.
//!
//! `std::process::Command` forks as soon as the child needs a `pre_exec` step (here: the control
//! socket at descriptor 3), and a fork of the server copies the page tables of a large,
//! many-threaded process and makes every page it writes next copy-on-write: 1–4 ms a start,
//! growing with the server (measured, BENCHMARKS.md). glibc's `posix_spawn` makes the child with
//! `clone(CLONE_VM | CLONE_VFORK)` and does the descriptor moves itself, so nothing is copied.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The descriptor the host process finds its control socket at.
pub(crate) const CONTROL_FD: libc::c_int = 3;

/// A started host process: its pid, until it is reaped.
pub(crate) struct SpawnedHost {
    pid: libc::pid_t,
    reaped: bool,
}

fn cstring(s: &[u8]) -> io::Result<CString> {
    CString::new(s).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{:?} holds a NUL byte", String::from_utf8_lossy(s)),
        )
    })
}

/// Fails with the error code a posix_spawn* call returned (they return it, not -1).
fn check(code: libc::c_int) -> io::Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(code))
    }
}

/// posix_spawn's file actions, destroyed when dropped.
struct FileActions(libc::posix_spawn_file_actions_t);

impl FileActions {
    fn new() -> io::Result<FileActions> {
        // SAFETY: the struct is plain data that init fills before any other use.
        let mut fa = FileActions(unsafe { std::mem::zeroed() });
        // SAFETY: a valid pointer to our struct.
        check(unsafe { libc::posix_spawn_file_actions_init(&mut fa.0) })?;
        Ok(fa)
    }
}

impl Drop for FileActions {
    fn drop(&mut self) {
        // SAFETY: initialised in new, destroyed once.
        unsafe { libc::posix_spawn_file_actions_destroy(&mut self.0) };
    }
}

/// posix_spawn's attributes, destroyed when dropped.
struct Attributes(libc::posix_spawnattr_t);

impl Attributes {
    fn new() -> io::Result<Attributes> {
        // SAFETY: the struct is plain data that init fills before any other use.
        let mut at = Attributes(unsafe { std::mem::zeroed() });
        // SAFETY: a valid pointer to our struct.
        check(unsafe { libc::posix_spawnattr_init(&mut at.0) })?;
        Ok(at)
    }
}

impl Drop for Attributes {
    fn drop(&mut self) {
        // SAFETY: initialised in new, destroyed once.
        unsafe { libc::posix_spawnattr_destroy(&mut self.0) };
    }
}

impl SpawnedHost {
    /// Runs `exe args…` with stdin and stdout on /dev/null, stderr inherited, the environment
    /// inherited, `control` at descriptor [`CONTROL_FD`] (and no other descriptor: the server's
    /// are all close-on-exec), every signal unblocked and SIGPIPE at its default (as `Command`
    /// would leave them).
    pub(crate) fn spawn(
        exe: &Path,
        args: &[&OsStr],
        control: BorrowedFd<'_>,
    ) -> io::Result<SpawnedHost> {
        let program = cstring(exe.as_os_str().as_bytes())?;
        let mut argv = vec![program.clone()];
        for a in args {
            argv.push(cstring(a.as_bytes())?);
        }
        let envp = std::env::vars_os()
            .map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                cstring(&kv)
            })
            .collect::<io::Result<Vec<_>>>()?;
        let mut argv_ptrs: Vec<*mut libc::c_char> =
            argv.iter().map(|a| a.as_ptr() as *mut _).collect();
        argv_ptrs.push(std::ptr::null_mut());
        let mut envp_ptrs: Vec<*mut libc::c_char> =
            envp.iter().map(|e| e.as_ptr() as *mut _).collect();
        envp_ptrs.push(std::ptr::null_mut());

        // A dup2 onto itself would leave close-on-exec set: move a control socket that already
        // sits at the target elsewhere first.
        let moved: Option<OwnedFd> = if control.as_raw_fd() == CONTROL_FD {
            // SAFETY: F_DUPFD_CLOEXEC on a descriptor we borrow; a new one or -1.
            let fd = unsafe { libc::fcntl(CONTROL_FD, libc::F_DUPFD_CLOEXEC, 10) };
            if fd == -1 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: fd is the new descriptor, owned by nobody else.
            Some(unsafe { OwnedFd::from_raw_fd(fd) })
        } else {
            None
        };
        let source = moved
            .as_ref()
            .map_or(control.as_raw_fd(), AsRawFd::as_raw_fd);
        let dev_null = c"/dev/null";
        let mut fa = FileActions::new()?;
        // SAFETY: valid file actions, a NUL-terminated path, descriptors and flags.
        unsafe {
            check(libc::posix_spawn_file_actions_addopen(
                &mut fa.0,
                0,
                dev_null.as_ptr(),
                libc::O_RDONLY,
                0,
            ))?;
            check(libc::posix_spawn_file_actions_addopen(
                &mut fa.0,
                1,
                dev_null.as_ptr(),
                libc::O_WRONLY,
                0,
            ))?;
            check(libc::posix_spawn_file_actions_adddup2(
                &mut fa.0, source, CONTROL_FD,
            ))?;
        }
        let mut at = Attributes::new()?;
        // SAFETY: the sets are plain data filled by sigemptyset/sigaddset; valid attributes.
        unsafe {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            let mut pipe: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut pipe);
            libc::sigaddset(&mut pipe, libc::SIGPIPE);
            check(libc::posix_spawnattr_setsigmask(&mut at.0, &none))?;
            check(libc::posix_spawnattr_setsigdefault(&mut at.0, &pipe))?;
            check(libc::posix_spawnattr_setflags(
                &mut at.0,
                (libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF) as libc::c_short,
            ))?;
        }
        let mut pid: libc::pid_t = 0;
        // SAFETY: every pointer is valid for the call: the program and the NULL-terminated
        // argv/envp arrays of NUL-terminated strings outlive it, as do the actions and attributes.
        check(unsafe {
            libc::posix_spawn(
                &mut pid,
                program.as_ptr(),
                &fa.0,
                &at.0,
                argv_ptrs.as_ptr(),
                envp_ptrs.as_ptr(),
            )
        })?;
        drop(moved);
        Ok(SpawnedHost { pid, reaped: false })
    }

    /// A child of ours that another process made for us (the host zygote clones with
    /// `CLONE_PARENT`): waited for and reaped by pid, as one we spawned.
    pub(crate) fn adopted(pid: libc::pid_t) -> SpawnedHost {
        SpawnedHost { pid, reaped: false }
    }

    pub(crate) fn id(&self) -> u32 {
        self.pid as u32
    }

    /// SIGKILL, unless it has been reaped (its pid may then be another process's).
    pub(crate) fn kill(&mut self) {
        if !self.reaped {
            // SAFETY: kill of our own unreaped child.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }

    /// Waits for its end and reaps it.
    pub(crate) fn wait(&mut self) {
        while !self.reaped {
            let mut status = 0;
            // SAFETY: waitpid on our own child; status is a valid out pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                self.reaped = true;
            }
        }
    }

    /// Whether it has ended (reaping it then), without waiting.
    pub(crate) fn try_wait(&mut self) -> io::Result<bool> {
        if self.reaped {
            return Ok(true);
        }
        let mut status = 0;
        // SAFETY: waitpid on our own child; status is a valid out pointer.
        match unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) } {
            0 => Ok(false),
            -1 => {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ECHILD) {
                    self.reaped = true;
                }
                Err(e)
            }
            _ => {
                self.reaped = true;
                Ok(true)
            }
        }
    }
}
