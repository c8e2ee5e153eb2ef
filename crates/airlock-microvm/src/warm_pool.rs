//! VMs restored ahead of time, one per VM layout that has been asked for more than once: each
//! waits in airlock's init for its config, so taking one skips QEMU's start and the snapshot's
//! load. A pooled VM is generic (it has seen no policy yet) but its QEMU command line names the
//! box's shares, so the pool is keyed by the whole command line.

use crate::vm::{Vm, VmSpec};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// VMs waiting, and how often each command line was asked for.
#[derive(Default, Clone)]
pub struct WarmPool {
    inner: Arc<Mutex<Pool>>,
}

#[derive(Default)]
struct Pool {
    ready: HashMap<String, Vm>,
    asked: HashMap<String, u32>,
}

fn key(spec: &VmSpec) -> String {
    format!(
        "{} {} {:?}",
        spec.qemu.display(),
        spec.args(true).join(" "),
        spec.jail
    )
}

impl WarmPool {
    /// A waiting VM for `spec`, if one is there; counts the request either way.
    pub fn take(&self, spec: &VmSpec) -> Option<Vm> {
        let k = key(spec);
        let mut pool = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        *pool.asked.entry(k.clone()).or_default() += 1;
        crate::boot::trace_note(&format!(
            "pool: {} waiting, asked {} times",
            pool.ready.contains_key(&k) as u8,
            pool.asked[&k]
        ));
        let vm = pool.ready.remove(&k)?;
        // A pooled VM that died meanwhile is no use.
        vm.exited().is_none().then_some(vm)
    }

    /// Restores a VM for `spec` in the background when its command line has been asked for
    /// more than once and none is waiting (`restore` makes it; a failure leaves no VM).
    pub fn refill(&self, spec: &VmSpec, restore: impl FnOnce() -> Option<Vm> + Send + 'static) {
        // A jail's binds hold the inodes of the moment QEMU starts: a VM kept for later would
        // guard a `.git/config` the host has since replaced, or a placeholder since removed.
        if !spec.jail.covers.is_empty() {
            return;
        }
        let k = key(spec);
        {
            let pool = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            if pool.asked.get(&k).copied().unwrap_or(0) < 2 || pool.ready.contains_key(&k) {
                return;
            }
        }
        let inner = Arc::clone(&self.inner);
        let _ = std::thread::Builder::new()
            .name("microvm-pool".into())
            .spawn(move || {
                if let Some(vm) = restore() {
                    let mut pool = inner.lock().unwrap_or_else(PoisonError::into_inner);
                    // Another refill may have won: the extra VM ends here.
                    pool.ready.entry(k).or_insert(vm);
                }
            });
    }
}
