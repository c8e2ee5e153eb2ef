//! What the host tells the guest's init before the box starts: one JSON line on the agent port.

use serde::{Deserialize, Serialize};

/// The virtio-serial port name of the agent's connection (and, before it, the config line).
pub const PORT_AGENT: &str = "airlock.agent";
/// The virtio-serial port name of the egress proxy's door (multiplexed connections).
pub const PORT_NET: &str = "airlock.net";
/// The virtio-serial port name of the host's control channel (see [`CTL_DETACH`]).
pub const PORT_CTL: &str = "airlock.ctl";
/// Control word: unmount the box's 9p shares (and what covers them) for a checkpoint.
pub const CTL_DETACH: &str = "detach-shares";
/// Control word: mount them again (after the checkpoint, or in a VM restored from one).
pub const CTL_ATTACH: &str = "attach-shares";
/// Control word, followed by a space and the host's wall clock in Unix nanoseconds: set the
/// guest's clock to it. A VM restored from a snapshot, or resumed after a pause, keeps the
/// time it had when it was saved or stopped.
pub const CTL_CLOCK: &str = "clock";
/// The control port's answer when the word was done; otherwise `error: <sentence>`.
pub const CTL_OK: &str = "ok";
/// The line the init writes once its port is open and it waits for the config (a template
/// snapshot is taken right after it).
pub const INIT_WAITING: &str = "waiting";
/// The line the init writes once the box is built and the agent runs; any other line is an
/// error sentence (`error: …`).
pub const INIT_READY: &str = "ready";

/// The box the init must build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestConfig {
    pub root: GuestRoot,
    /// Host directories shared into the box (workspace and grants), in mount order.
    pub shares: Vec<GuestShare>,
    /// Paths inside writable shares that stay read-only (existing ones are bound read-only).
    pub protect: Vec<String>,
    /// Paths inside the box hidden behind an empty read-only node.
    pub deny: Vec<String>,
    /// Size cap of the one tmpfs holding /tmp, home, /dev/shm and the root's writable layer
    /// together, bytes.
    pub disk_bytes: u64,
    /// Largest file a box process may write (RLIMIT_FSIZE).
    pub file_size: u64,
    /// Open files per process (RLIMIT_NOFILE).
    pub open_files: u64,
    /// Most processes in the box at once (pids cgroup); `None`: uncapped.
    pub pids: Option<u64>,
    /// The uid and gid the box's processes run as (no capabilities, whatever the number).
    pub uid: u32,
    pub gid: u32,
    /// The box user's name and home (synthesized `/etc/passwd`).
    pub user: String,
    pub home: String,
    /// Give the box a root: uid 0 of a user namespace nested in the box user's, mapping only
    /// the box user (`airlock_jail::box_root`), which a `user: root` command joins.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub box_root: bool,
    /// The working directory the agent starts in.
    pub cwd: String,
    /// Serve the egress proxy's door on this loopback port.
    pub proxy_port: Option<u16>,
    /// A CA certificate (PEM) the box trusts besides its root's own bundle: the one its proxy
    /// made to hold the box's secrets. Only the certificate: its key stays with the proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_ca: Option<String>,
    /// The host's wall clock when it sent this config, Unix nanoseconds: the init sets the
    /// guest's clock to it before it builds the box (a VM restored from a template snapshot
    /// would otherwise keep the snapshot's time, and TLS would call new certificates not yet
    /// valid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_clock_ns: Option<u64>,
}

/// The wall clock now, Unix nanoseconds (0 before 1970).
pub fn wall_clock_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The CA bundle the box's TLS clients read (Debian's path; the trust variables name it).
pub const TRUST_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// What the box's root is made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum GuestRoot {
    /// The host's system directories (9p tag `usr`, read-only), the box's `/etc` staged by the
    /// host (9p tag `etc`, read-only: the selected host entries and the identity files) and the
    /// host's top-level links.
    Host {
        /// Top-level symlinks to replicate (`bin` → `usr/bin`).
        links: Vec<(String, String)>,
    },
    /// A read-only image on the first virtio disk (`erofs` or `ext4`) under a writable tmpfs.
    Disk { fstype: String },
}

/// One host directory shared into the box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestShare {
    /// The 9p mount tag.
    pub tag: String,
    /// Where it appears inside the box (absolute).
    pub inside: String,
    pub read_only: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_round_trips_and_unknown_keys_are_refused() {
        let c = GuestConfig {
            root: GuestRoot::Disk {
                fstype: "erofs".into(),
            },
            shares: vec![GuestShare {
                tag: "s0".into(),
                inside: "/w".into(),
                read_only: true,
            }],
            protect: vec!["/w/.git/hooks".into()],
            deny: vec![],
            disk_bytes: 1 << 20,
            file_size: 1 << 20,
            open_files: 64,
            pids: Some(10),
            uid: 0,
            gid: 0,
            user: "user".into(),
            home: "/home/user".into(),
            box_root: false,
            cwd: "/w".into(),
            proxy_port: None,
            trust_ca: None,
            wall_clock_ns: None,
        };
        let text = serde_json::to_string(&c).unwrap();
        assert!(!text.contains("trust_ca"), "absent when none: {text}");
        assert!(!text.contains("wall_clock_ns"), "absent when none: {text}");
        assert!(!text.contains("box_root"), "absent when false: {text}");
        assert_eq!(serde_json::from_str::<GuestConfig>(&text).unwrap(), c);
        let bad = text.replacen('{', r#"{"extra":1,"#, 1);
        assert!(serde_json::from_str::<GuestConfig>(&bad).is_err());
    }
}
