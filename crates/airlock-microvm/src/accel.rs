//! Which accelerator a guest runs under: KVM when a standard guest boots under it here (probed
//! by booting the guest kernel to airlock's init, not assumed from `/dev/kvm` existing), TCG
//! otherwise. The answer is cached per kernel and initramfs for this process and on disk.

use crate::vm::{Accel, VmSpec};
use airlock_microvm_guest::PORT_AGENT;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a KVM guest may take to reach the init before KVM is judged unusable.
const KVM_PROBE_TIMEOUT: Duration = Duration::from_secs(8);

/// The accelerator and the sentence saying why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccelChoice {
    pub accel: Accel,
    pub why: String,
}

static CHOSEN: Mutex<Option<(String, AccelChoice)>> = Mutex::new(None);

/// Chooses for `spec` (its accel field is ignored). `AIRLOCK_MICROVM_ACCEL=tcg|kvm` forces it.
pub fn choose(spec: &VmSpec, cache: &Path) -> AccelChoice {
    match std::env::var("AIRLOCK_MICROVM_ACCEL").as_deref() {
        Ok("tcg") => {
            return AccelChoice {
                accel: Accel::Tcg,
                why: "AIRLOCK_MICROVM_ACCEL=tcg".into(),
            }
        }
        Ok("kvm") => {
            return AccelChoice {
                accel: Accel::Kvm,
                why: "AIRLOCK_MICROVM_ACCEL=kvm".into(),
            }
        }
        _ => {}
    }
    let key = format!("{} {}", spec.kernel.display(), spec.initramfs.display());
    let mut chosen = CHOSEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((k, c)) = chosen.as_ref() {
        if *k == key {
            return c.clone();
        }
    }
    let digest =
        crate::initramfs::hex(&<sha2::Sha256 as sha2::Digest>::digest(key.as_bytes())[..8]);
    let file = cache.join(format!("accel-{digest}"));
    let choice = match std::fs::read_to_string(&file)
        .ok()
        .as_deref()
        .map(str::trim)
    {
        Some("kvm") => AccelChoice {
            accel: Accel::Kvm,
            why: "a guest booted under KVM on this host (probed earlier)".into(),
        },
        Some(why) if why.starts_with("tcg") => AccelChoice {
            accel: Accel::Tcg,
            why: why.trim_start_matches("tcg ").to_string(),
        },
        _ => {
            let c = probe(spec);
            let line = match c.accel {
                Accel::Kvm => "kvm".to_string(),
                Accel::Tcg => format!("tcg {}", c.why),
            };
            let _ = crate::cache::put(&file, line.as_bytes());
            c
        }
    };
    *chosen = Some((key, choice.clone()));
    choice
}

fn tcg(why: impl Into<String>) -> AccelChoice {
    AccelChoice {
        accel: Accel::Tcg,
        why: why.into(),
    }
}

/// Boots the guest under KVM and waits for the init to answer on its port.
fn probe(spec: &VmSpec) -> AccelChoice {
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
    {
        return tcg(format!("/dev/kvm cannot be opened ({e})"));
    }
    let mut kvm = spec.clone();
    kvm.accel = Accel::Kvm;
    kvm.shares.clear();
    kvm.disk = None;
    kvm.memory_mib = 256;
    let mut vm = match crate::vm::Vm::spawn(&kvm, None) {
        Ok(vm) => vm,
        Err(e) => return tcg(format!("QEMU cannot start a KVM guest here ({e})")),
    };
    let Some(mut port) = vm.agent.take() else {
        return tcg("the probe VM has no agent port");
    };
    let start = Instant::now();
    let _ = port.set_read_timeout(Some(KVM_PROBE_TIMEOUT));
    // Not a config: the init answers with an error line, which proves the guest ran it.
    let _ = port.write_all(b"probe\n");
    let mut buf = [0u8; 64];
    let answered = matches!(port.read(&mut buf), Ok(n) if n > 0);
    vm.kill();
    if answered {
        AccelChoice {
            accel: Accel::Kvm,
            why: format!(
                "a guest booted under KVM in {} ms",
                start.elapsed().as_millis()
            ),
        }
    } else {
        tcg(format!(
            "/dev/kvm exists but a standard guest kernel did not reach airlock's init under it within {} s (the {PORT_AGENT} port stayed silent)",
            KVM_PROBE_TIMEOUT.as_secs()
        ))
    }
}
