//! PID 1 of the microVM guest. Runs from the initramfs; every step that fails ends the VM with
//! a sentence on the agent port (and on the console).

mod confine;
mod ctl;
mod door;
mod modules;
mod ports;
mod relay;
mod rootfs;
mod run;
mod sys;

pub use run::main;
