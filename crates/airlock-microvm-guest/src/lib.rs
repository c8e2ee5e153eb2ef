//! The guest half of the microVM box. Inside the VM, `airlock-vm-init` runs as PID 1: it loads
//! the few kernel modules the box needs, waits on its virtio-serial port for the host's
//! [`GuestConfig`], builds the box's root (the template read-only, a capped writable layer, the
//! workspace and grants), starts the agent confined (no capabilities, chrooted, pids capped)
//! and relays the agent's connection between the port and the agent's socket. It also serves
//! the egress proxy's door: a loopback listener whose connections are [`mux`]ed to the host.
//!
//! The wire types ([`config`], [`mux`]) are shared with the host side (`airlock-microvm`).

pub mod config;
pub mod mux;

#[cfg(target_os = "linux")]
pub mod init;

pub use config::{
    wall_clock_ns, GuestConfig, GuestRoot, GuestShare, CTL_ATTACH, CTL_CLOCK, CTL_DETACH, CTL_OK,
    INIT_READY, INIT_WAITING, PORT_AGENT, PORT_CTL, PORT_NET, TRUST_BUNDLE,
};
