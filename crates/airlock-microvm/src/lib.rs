//! The microVM box's host side: each box is a QEMU `microvm` guest with a kernel of its own
//! (Debian's, extracted, never installed on the host), an initramfs airlock builds (its init
//! and the static agent), the template's root as a read-only disk or the host's system
//! directories over read-only 9p, the workspace and grants over 9p, no network device (the
//! egress proxy's door is a virtio-serial port), and snapshots through QEMU's migration.
//! Reached only through [`MicrovmBackend`] behind the runtime's seam.

mod accel;
mod backend;
mod boot;
mod box_plan;
mod cache;
mod control;
mod door;
mod egress;
mod error;
mod etc_stage;
mod guest_files;
mod image;
mod initramfs;
pub mod jail;
mod microvm_box;
mod qmp;
mod receipt;
mod snapshot;
mod starter;
mod usage;
mod vm;
mod warm_pool;

pub use backend::MicrovmBackend;
pub use error::MicrovmError;
pub use vm::{Accel, TCG_TRANSLATION_MIB};
