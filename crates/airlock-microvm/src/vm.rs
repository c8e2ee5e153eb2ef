//! One QEMU process running one microVM: its command line as data ([`VmSpec`]), the
//! descriptors it is started with (agent, door, monitor and console are socketpairs, the
//! snapshot to restore an open file — no path on disk for any of them), and its end.

use crate::qmp::Qmp;
use crate::starter;
use crate::MicrovmError;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How the guest's CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// Hardware virtualization through /dev/kvm.
    Kvm,
    /// QEMU's software emulation: slow, but needs nothing of the host.
    Tcg,
}

impl Accel {
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// TCG's translation cache per VM, in MiB. QEMU's default on a 64-bit host is 1 GiB, and a
/// guest fills it a few MiB per command it runs (new processes' code is translated again):
/// 100 commands grew a box's QEMU from 288 to 770 MB of resident memory, though the guest's
/// own free memory did not change. Capped here, the cache is flushed when full and a box
/// stays near its first figure (337 MB over the same 100 commands at 64 MiB), at no
/// measurable cost to a command (about 170 ms each either way under TCG here).
pub const TCG_TRANSLATION_MIB: u32 = 128;

/// One host directory shared over virtio-9p.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    pub tag: String,
    pub host: PathBuf,
    pub read_only: bool,
}

/// Everything QEMU is started with. Two specs with the same [`VmSpec::layout`] have the same
/// devices in the same order, so a snapshot of one restores into the other.
#[derive(Debug, Clone)]
pub struct VmSpec {
    pub qemu: PathBuf,
    pub accel: Accel,
    pub memory_mib: u64,
    pub vcpus: u32,
    pub kernel: PathBuf,
    pub initramfs: PathBuf,
    pub shares: Vec<Share>,
    /// The read-only root image (templates), as the first virtio disk.
    pub disk: Option<PathBuf>,
    /// The user and mount namespaces QEMU runs in.
    pub jail: crate::jail::VmmJail,
}

/// The descriptor numbers QEMU finds its channels at.
const FD_AGENT: i32 = 3;
const FD_QMP: i32 = 4;
const FD_CONSOLE: i32 = 5;
const FD_NET: i32 = 6;
const FD_INCOMING: i32 = 7;
const FD_CTL: i32 = 8;

/// Largest console tail kept for error messages.
const CONSOLE_TAIL: usize = 8 * 1024;

impl VmSpec {
    /// What must match between a snapshot and the VM restoring it (devices, memory, CPUs,
    /// kernel, its arguments and initramfs), as a string to hash.
    pub fn layout(&self) -> String {
        let shares: Vec<String> = self
            .shares
            .iter()
            .map(|s| format!("{}:{}", s.tag, s.read_only))
            .collect();
        format!(
            "{} {} {} {} {} {} disk={} args={KERNEL_ARGS}",
            self.accel.as_str(),
            self.memory_mib,
            self.vcpus,
            self.kernel.display(),
            self.initramfs.display(),
            shares.join(","),
            self.disk
                .as_ref()
                .map_or("-".into(), |d| d.display().to_string())
        )
    }

    /// QEMU's arguments.
    pub fn args(&self, incoming: bool) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
        let accel = match self.accel {
            Accel::Kvm => "kvm".to_string(),
            Accel::Tcg => format!("tcg,tb-size={TCG_TRANSLATION_MIB}"),
        };
        let cpu = match self.accel {
            Accel::Kvm => "host",
            Accel::Tcg => "max",
        };
        let mem = format!("{}M", self.memory_mib);
        let smp = self.vcpus.to_string();
        push(&[
            "-M", "microvm", "-accel", &accel, "-cpu", cpu, "-m", &mem, "-smp", &smp,
        ]);
        push(&[
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
        ]);
        // QEMU's own seccomp filter: no exec, no privilege changes, no obsolete calls.
        push(&[
            "-sandbox",
            "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
        ]);
        let kernel = self.kernel.display().to_string();
        let initrd = self.initramfs.display().to_string();
        push(&["-kernel", &kernel, "-initrd", &initrd]);
        push(&["-append", &kernel_cmdline()]);
        push(&[
            "-chardev",
            &format!("socket,id=con,fd={FD_CONSOLE}"),
            "-serial",
            "chardev:con",
        ]);
        push(&[
            "-chardev",
            &format!("socket,id=qmp,fd={FD_QMP}"),
            "-mon",
            "chardev=qmp,mode=control",
        ]);
        push(&["-device", "virtio-serial-device,max_ports=4"]);
        push(&["-chardev", &format!("socket,id=agent,fd={FD_AGENT}")]);
        push(&[
            "-device",
            &format!(
                "virtserialport,chardev=agent,name={}",
                airlock_microvm_guest::PORT_AGENT
            ),
        ]);
        push(&["-chardev", &format!("socket,id=ctl,fd={FD_CTL}")]);
        push(&[
            "-device",
            &format!(
                "virtserialport,chardev=ctl,name={}",
                airlock_microvm_guest::PORT_CTL
            ),
        ]);
        push(&["-chardev", &format!("socket,id=net,fd={FD_NET}")]);
        push(&[
            "-device",
            &format!(
                "virtserialport,chardev=net,name={}",
                airlock_microvm_guest::PORT_NET
            ),
        ]);
        for (i, s) in self.shares.iter().enumerate() {
            // A writable share keeps the guest's modes, owners, set-ID bits, device nodes and
            // symlinks in xattrs of plain host files (0644/0755, owned by QEMU's user): nothing
            // the guest does to metadata reaches the host's. A read-only one is QEMU-refused
            // writes over the host's own metadata (its symlinks must resolve).
            let model = if s.read_only {
                "security_model=none,readonly=on"
            } else {
                "security_model=mapped-xattr,fmode=0644,dmode=0755"
            };
            let fsdev = format!(
                "local,id=fs{i},path={},{model}",
                escape(&s.host.display().to_string())
            );
            push(&["-fsdev", &fsdev]);
            push(&[
                "-device",
                &format!("virtio-9p-device,fsdev=fs{i},mount_tag={}", s.tag),
            ]);
        }
        if let Some(disk) = &self.disk {
            let drive = format!(
                "if=none,id=root,file={},format=raw,readonly=on",
                escape(&disk.display().to_string())
            );
            push(&["-drive", &drive, "-device", "virtio-blk-device,drive=root"]);
        }
        if incoming {
            push(&["-incoming", &format!("fd:{FD_INCOMING}")]);
        }
        a
    }
}

/// The guest kernel's command line. Under TCG the guest's TSC is the host's, but a loaded host
/// makes the kernel's PIT calibration fail (and the boot hang): the TSC rate is measured here
/// and given, and the delay-loop calibration skipped.
///
/// `init_on_free=1`: the guest kernel zeroes every page it frees (the boot's decompressed
/// images, the cache the init drops, a box process's freed memory), and QEMU's migration
/// stream leaves zero pages out, so a snapshot holds more of what the guest uses and less of
/// what it once touched (a 4 GiB box's pause snapshot: 170 MiB before, 150 MiB with it).
fn kernel_cmdline() -> String {
    format!("{KERNEL_ARGS} tsc_early_khz={}", tsc_khz())
}

/// The guest kernel's arguments that a snapshot carries (part of the layout); the TSC rate,
/// measured per process, is added to them.
const KERNEL_ARGS: &str = "console=ttyS0 quiet panic=-1 reboot=t tsc=reliable lpj=4000000 no_timer_check init_on_free=1 rdinit=/init";

/// The host's TSC rate in kHz, measured once per process over 20 ms.
fn tsc_khz() -> u64 {
    static KHZ: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *KHZ.get_or_init(|| {
        // SAFETY: rdtsc has no preconditions on x86_64.
        let read = || unsafe { core::arch::x86_64::_rdtsc() };
        let (t0, c0) = (std::time::Instant::now(), read());
        std::thread::sleep(Duration::from_millis(20));
        let (c1, dt) = (read(), t0.elapsed());
        let khz = (c1.wrapping_sub(c0) as u128 * 1_000_000 / dt.as_micros().max(1)) / 1000;
        u64::try_from(khz).unwrap_or(1_000_000).max(1000)
    })
}

/// QEMU's option syntax doubles commas inside a value.
fn escape(value: &str) -> String {
    value.replace(',', ",,")
}

/// A running QEMU and the host ends of its channels.
pub struct Vm {
    child: Mutex<Child>,
    pub pid: u32,
    pub qmp: Qmp,
    /// The host end of the agent's port (the config line, then the agent protocol).
    pub agent: Option<UnixStream>,
    /// The host end of the egress door's port.
    pub net: Option<UnixStream>,
    /// The host end of the init's control port (detaching shares around a checkpoint).
    pub ctl: Option<UnixStream>,
    console: Arc<Mutex<Vec<u8>>>,
}

fn pair() -> Result<(UnixStream, UnixStream), MicrovmError> {
    UnixStream::pair().map_err(|e| MicrovmError::io("cannot make a socket pair", e))
}

impl Vm {
    /// Starts QEMU (from a permanent starter thread, so the parent-death signal is tied to
    /// this program's life, not to the calling thread's) and connects its monitor. With
    /// `incoming`, the VM waits to be restored from that snapshot file.
    pub fn spawn(spec: &VmSpec, incoming: Option<std::fs::File>) -> Result<Vm, MicrovmError> {
        let (agent, agent_q) = pair()?;
        let (qmp, qmp_q) = pair()?;
        let (console, console_q) = pair()?;
        let (net, net_q) = pair()?;
        let (ctl, ctl_q) = pair()?;
        let mut fds: Vec<(OwnedFd, i32)> = vec![
            (ctl_q.into(), FD_CTL),
            (agent_q.into(), FD_AGENT),
            (qmp_q.into(), FD_QMP),
            (console_q.into(), FD_CONSOLE),
            (net_q.into(), FD_NET),
        ];
        if let Some(f) = incoming.as_ref() {
            fds.push((
                f.try_clone()
                    .map_err(|e| MicrovmError::io("cannot share the snapshot", e))?
                    .into(),
                FD_INCOMING,
            ));
        }
        let mut cmd = Command::new(&spec.qemu);
        cmd.args(spec.args(incoming.is_some()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env_clear()
            .process_group(0);
        let raw: Vec<(i32, i32)> = fds.iter().map(|(fd, at)| (fd.as_raw_fd(), *at)).collect();
        let jail = spec.jail.prepare()?;
        // SAFETY: in the forked child before exec: prctl, dup2, fcntl and the jail's unshare,
        // open, write and mount calls are async-signal-safe and nothing is allocated (`raw` and
        // `jail` were built before the fork).
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // Each source is first moved above the targets, so no dup2 clobbers another.
                let mut high = [0i32; 8];
                for (i, (fd, _)) in raw.iter().enumerate() {
                    high[i] = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 100);
                    if high[i] == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                for (i, (_, at)) in raw.iter().enumerate() {
                    if libc::dup2(high[i], *at) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    libc::fcntl(*at, libc::F_SETFD, 0);
                }
                jail.enter()
            });
        }
        let mut child = starter::spawn(cmd).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                MicrovmError::NoQemu(format!("{}: {e}", spec.qemu.display()))
            }
            _ => MicrovmError::Jail(e),
        })?;
        drop(fds);
        let pid = child.id();
        let tail = Arc::new(Mutex::new(Vec::new()));
        keep_tail(console, Arc::clone(&tail));
        if let Some(err) = child.stderr.take() {
            keep_tail(err, Arc::clone(&tail));
        }
        let qmp = match Qmp::connect(qmp) {
            Ok(q) => q,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                let said =
                    String::from_utf8_lossy(&tail.lock().unwrap_or_else(PoisonError::into_inner))
                        .into_owned();
                return Err(MicrovmError::Boot(format!(
                    "QEMU did not start ({e}): {}",
                    said.trim()
                )));
            }
        };
        Ok(Vm {
            child: Mutex::new(child),
            pid,
            qmp,
            agent: Some(agent),
            net: Some(net),
            ctl: Some(ctl),
            console: tail,
        })
    }

    /// The last lines the guest's console and QEMU printed.
    pub fn console_tail(&self) -> String {
        let tail = self.console.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&tail).trim().to_string()
    }

    /// Whether QEMU has exited (and how).
    pub fn exited(&self) -> Option<String> {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        match child.try_wait() {
            Ok(None) => None,
            Ok(Some(status)) => Some(format!("the VM ended ({status})")),
            Err(e) => Some(format!("the VM cannot be waited for: {e}")),
        }
    }

    /// Ends QEMU at once and reaps it.
    pub fn kill(&self) {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Keeps the last [`CONSOLE_TAIL`] bytes of `from` in `tail`, on a thread of its own.
fn keep_tail(mut from: impl Read + Send + 'static, tail: Arc<Mutex<Vec<u8>>>) {
    let _ = std::thread::Builder::new()
        .name("microvm-console".into())
        .spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    return;
                }
                let mut t = tail.lock().unwrap_or_else(PoisonError::into_inner);
                t.extend_from_slice(&buf[..n]);
                let excess = t.len().saturating_sub(CONSOLE_TAIL);
                t.drain(..excess);
            }
        });
}
