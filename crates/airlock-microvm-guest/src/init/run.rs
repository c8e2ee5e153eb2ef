//! The init's whole life: set up, read the config, build the box, start the agent, relay, and
//! end the VM when the agent ends.

use super::sys::{io_err, mkdir_all, mount, InitError, Result};
use super::{confine, ctl, door, modules, ports, relay, rootfs};
use crate::config::{GuestConfig, INIT_READY, INIT_WAITING, PORT_AGENT, PORT_CTL, PORT_NET};
use airlock_jail::seccomp::{SeccompProfile, SeccompProgram, SocketPolicy};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// Longest config line.
const MAX_CONFIG: usize = 1 << 20;

/// PID 1's entry point. Never returns: the VM ends when the init does.
pub fn main() -> ! {
    let code = match start() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("airlock-vm-init: {e}");
            1
        }
    };
    power_off(code)
}

fn power_off(code: i32) -> ! {
    // SAFETY: sync and reboot take no pointers; with QEMU's -no-reboot a reset ends the VM.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_AUTOBOOT);
    }
    std::process::exit(code)
}

fn start() -> Result<()> {
    for (fs, target) in [("devtmpfs", "/dev"), ("proc", "/proc"), ("sysfs", "/sys")] {
        mkdir_all(target)?;
        mount(fs, target, fs, libc::MS_NOSUID, None)?;
    }
    modules::load_all()?;
    // Everything that does not depend on the config is done before the greeting, so a VM
    // restored from the template snapshot (taken right after it) skips it: the syscall filter
    // (the native box's, inet sockets allowed as there: without --net proxy only the guest's
    // loopback is there to reach), and the page cache and free memory given back as zeros, so
    // the snapshot holds less (QEMU writes a zero page as a few bytes).
    let filter = SeccompProgram::build(&SeccompProfile {
        sockets: SocketPolicy::UnixAndInet,
    })
    .map_err(|e| InitError {
        what: format!("cannot build the syscall filter: {e}"),
        source: std::io::Error::from(std::io::ErrorKind::InvalidData),
    })?;
    give_back_memory();
    let mut port = ports::open(PORT_AGENT)?;
    writeln!(port, "{INIT_WAITING}").map_err(io_err("cannot greet the host"))?;
    let cfg = read_config(&mut port)?;
    let built = match cfg.wall_clock_ns {
        Some(ns) => super::sys::set_wall_clock(ns).and_then(|()| build(&cfg, &port, &filter)),
        None => build(&cfg, &port, &filter),
    };
    match built {
        Ok(agent_pid) => reap_until(agent_pid),
        Err(e) => {
            let _ = writeln!(port, "error: {e}");
            Err(e)
        }
    }
}

/// Drops the page cache, then zeroes the free memory once: every free page is taken (the
/// kernel zeroes what it hands out) and given back. Best effort; a failure only costs size.
fn give_back_memory() {
    // SAFETY: sync takes no arguments.
    unsafe { libc::sync() };
    let _ = std::fs::write("/proc/sys/vm/drop_caches", b"3");
    let free_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemFree:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<usize>().ok())
        })
        .unwrap_or(0);
    // A quarter of it, and 64 MiB at least, is left alone: the kernel's reserves and the
    // mapping's page tables need room, and an out-of-memory here would end PID 1 (the VM).
    let bytes = (free_kib / 4 * 3).saturating_sub(64 * 1024) * 1024;
    if bytes == 0 {
        return;
    }
    // SAFETY: a fresh private anonymous mapping, unmapped right after; no pointer escapes.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if p != libc::MAP_FAILED {
            libc::munmap(p, bytes);
        }
    }
}

/// Reads the host's one-line config. The port reads as ended until the host connects (a VM
/// restored from a snapshot waits here until its new owner does).
fn read_config(port: &mut File) -> Result<GuestConfig> {
    let mut line = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match port.read(&mut buf) {
            Ok(0) => std::thread::sleep(Duration::from_millis(2)),
            Ok(n) => {
                line.extend_from_slice(&buf[..n]);
                if let Some(end) = line.iter().position(|b| *b == b'\n') {
                    line.truncate(end);
                    break;
                }
                if line.len() > MAX_CONFIG {
                    return Err(bad("the host's config line is too long"));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err("cannot read the host's config")(e)),
        }
    }
    serde_json::from_slice(&line).map_err(|e| bad(&format!("the host's config is not valid: {e}")))
}

fn bad(what: &str) -> InitError {
    InitError {
        what: what.to_string(),
        source: std::io::Error::from(std::io::ErrorKind::InvalidData),
    }
}

/// Builds the box and starts the agent; its pid.
fn build(cfg: &GuestConfig, port: &File, filter: &SeccompProgram) -> Result<libc::pid_t> {
    rootfs::build(cfg)?;
    if !std::path::Path::new(&format!("{}{}", rootfs::NEW_ROOT, cfg.cwd)).is_dir() {
        return Err(bad(&format!(
            "the working directory {} does not exist in the box: give one inside the workspace or a grant",
            cfg.cwd
        )));
    }
    if let Some(max) = cfg.pids {
        mkdir_all("/cgroup")?;
        mount(
            "cgroup2",
            "/cgroup",
            "cgroup2",
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            None,
        )?;
        std::fs::write("/cgroup/cgroup.subtree_control", b"+pids")
            .map_err(io_err("cannot enable the pids controller"))?;
        mkdir_all(confine::BOX_CGROUP)?;
        std::fs::write(format!("{}/pids.max", confine::BOX_CGROUP), max.to_string())
            .map_err(io_err("cannot cap the box's processes"))?;
    }
    // The box's own loopback, in every network mode (there is no other interface).
    door::loopback_up()?;
    let listener = match cfg.proxy_port {
        Some(p) => Some(
            std::net::TcpListener::bind(("127.0.0.1", p))
                .map_err(io_err(format!("cannot listen on the proxy port {p}")))?,
        ),
        None => None,
    };
    let root_ns = match cfg.box_root {
        true => Some(box_root(cfg)?),
        false => None,
    };
    let (ours, theirs) = UnixStream::pair().map_err(io_err("cannot make the agent's socket"))?;
    // SAFETY: the init has no other threads yet; the child only makes syscalls and execs.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let root_fd = root_ns.as_ref().map(|ns| ns.as_raw_fd());
        let e = confine::exec_agent(cfg, theirs.as_raw_fd(), root_fd, filter);
        eprintln!("airlock-vm-init: {e}");
        // SAFETY: ending the forked child without running the parent's destructors.
        unsafe { libc::_exit(127) };
    }
    super::sys::cvt(pid, || "cannot start the agent".into())?;
    drop(theirs);
    drop(root_ns);
    let mut out = port
        .try_clone()
        .map_err(io_err("cannot share the agent port"))?;
    writeln!(out, "{INIT_READY}").map_err(io_err("cannot tell the host the box is ready"))?;
    relay::start(out, ours).map_err(io_err("cannot start the agent's relay"))?;
    let control = ports::open(PORT_CTL)?;
    ctl::start(control, cfg.clone()).map_err(io_err("cannot serve the control port"))?;
    if let Some(listener) = listener {
        let net = ports::open(PORT_NET)?;
        door::start(listener, net).map_err(io_err("cannot start the proxy's door"))?;
    }
    Ok(pid)
}

/// The box's root namespace, made before the agent is chrooted (the kernel makes no user
/// namespace in a chroot) by a child that first becomes the box user, so that the box user owns
/// it and its processes can join it without a capability. Its descriptor is at 10 or above, so
/// placing the agent's descriptors at 3 and 4 cannot overwrite it.
fn box_root(cfg: &GuestConfig) -> Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let made = airlock_jail::box_root::make(
        cfg.uid,
        cfg.gid,
        airlock_jail::box_root::Maker::BecomeBoxUser,
    )
    .map_err(io_err("cannot make the box's root namespace"))?;
    // SAFETY: duplicates a descriptor this process holds, close-on-exec, at 10 or above.
    let high = unsafe { libc::fcntl(made.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
    super::sys::cvt(high, || "cannot keep the box's root namespace".into())?;
    // SAFETY: fcntl just returned this descriptor; nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(high) })
}

/// Reaps every process re-parented to PID 1 until the agent itself has ended.
fn reap_until(agent: libc::pid_t) -> Result<()> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid status pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == agent {
            return Ok(());
        }
        if pid == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
            return Ok(());
        }
    }
}
