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
    let mut port = ports::open(PORT_AGENT)?;
    writeln!(port, "{INIT_WAITING}").map_err(io_err("cannot greet the host"))?;
    let cfg = read_config(&mut port)?;
    match build(&cfg, &port) {
        Ok(agent_pid) => reap_until(agent_pid),
        Err(e) => {
            let _ = writeln!(port, "error: {e}");
            Err(e)
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
fn build(cfg: &GuestConfig, port: &File) -> Result<libc::pid_t> {
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
    // As the native box's: inet sockets are allowed (without --net proxy there is only the
    // guest's loopback to reach).
    let sockets = SocketPolicy::UnixAndInet;
    let filter = SeccompProgram::build(&SeccompProfile { sockets }).map_err(|e| InitError {
        what: format!("cannot build the syscall filter: {e}"),
        source: std::io::Error::from(std::io::ErrorKind::InvalidData),
    })?;
    let (ours, theirs) = UnixStream::pair().map_err(io_err("cannot make the agent's socket"))?;
    // SAFETY: the init has no other threads yet; the child only makes syscalls and execs.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let e = confine::exec_agent(cfg, theirs.as_raw_fd(), &filter);
        eprintln!("airlock-vm-init: {e}");
        // SAFETY: ending the forked child without running the parent's destructors.
        unsafe { libc::_exit(127) };
    }
    super::sys::cvt(pid, || "cannot start the agent".into())?;
    drop(theirs);
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
