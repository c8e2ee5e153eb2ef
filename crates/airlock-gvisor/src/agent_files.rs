//! What the box needs to run airlock's agent as its init whatever the template holds: the
//! airlock executable and the host's dynamic loader and libraries it was linked against, each
//! bound read-only under `/.airlock/` and started through that loader, so an image with another
//! libc (or none) still runs the same agent. Commands the agent starts use the image's own.

use crate::spec::Mount;
use std::path::{Path, PathBuf};

/// Where the agent executable appears inside the box.
pub const AGENT_INSIDE: &str = "/.airlock/agent";
/// Where the host's library directories appear inside the box (`/.airlock/lib/0`, …).
const LIBS_INSIDE: &str = "/.airlock/lib";

/// The host files the in-box agent runs from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFiles {
    exe: PathBuf,
    /// The dynamic loader (`None`: a static executable).
    loader: Option<PathBuf>,
    lib_dirs: Vec<PathBuf>,
}

impl AgentFiles {
    /// The running executable (airlock itself) and the shared objects this process has mapped,
    /// read from `/proc/self/maps`. (airlock itself, not the smaller `airlock-agent`: only
    /// airlock carries the seccomp allowlist the agent installs in each command.)
    pub fn of_this_process() -> std::io::Result<AgentFiles> {
        let exe = std::fs::read_link("/proc/self/exe")?;
        let maps = std::fs::read_to_string("/proc/self/maps")?;
        Ok(AgentFiles::from_maps(exe, &maps))
    }

    fn from_maps(exe: PathBuf, maps: &str) -> AgentFiles {
        let mut loader = None;
        let mut lib_dirs: Vec<PathBuf> = Vec::new();
        for path in maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .map(Path::new)
            .filter(|p| p.is_absolute())
        {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !name.contains(".so") {
                continue;
            }
            if name.starts_with("ld-") {
                loader = Some(path.to_path_buf());
            }
            if let Some(dir) = path.parent() {
                if !lib_dirs.iter().any(|d| d == dir) {
                    lib_dirs.push(dir.to_path_buf());
                }
            }
        }
        AgentFiles {
            exe,
            loader,
            lib_dirs,
        }
    }

    /// The read-only binds that put the agent in the box, each with whether it is a directory.
    pub fn mounts(&self) -> Vec<(Mount, bool)> {
        let mut m = vec![(Mount::bind(&self.exe, AGENT_INSIDE, false), false)];
        for (i, dir) in self.lib_dirs.iter().enumerate() {
            m.push((Mount::bind(dir, format!("{LIBS_INSIDE}/{i}"), false), true));
        }
        m
    }

    /// The box's init: the agent serving its connection on descriptor `fd`, confining each
    /// command with airlock's seccomp allowlist (`unix` or `inet` sockets).
    pub fn init_args(&self, fd: u32, sockets: &str) -> Vec<String> {
        let mut args = Vec::new();
        if let (Some(loader), Some(index)) = (
            self.loader.as_ref(),
            self.loader
                .as_ref()
                .and_then(|l| l.parent())
                .and_then(|d| self.lib_dirs.iter().position(|x| x == d)),
        ) {
            let name = loader
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let libs: Vec<String> = (0..self.lib_dirs.len())
                .map(|i| format!("{LIBS_INSIDE}/{i}"))
                .collect();
            args.push(format!("{LIBS_INSIDE}/{index}/{name}"));
            args.push("--library-path".into());
            args.push(libs.join(":"));
        }
        args.push(AGENT_INSIDE.into());
        args.push("agent".into());
        args.push("--fd".into());
        args.push(fd.to_string());
        args.push("--seccomp".into());
        args.push(sockets.into());
        // The Sentry cannot join a user namespace, so each root command makes its own.
        args.push("--root-per-command".into());
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_starts_through_the_hosts_loader_from_its_own_read_only_binds() {
        let maps = "\
5581-5582 r--p 00000000 08:01 1 /usr/bin/airlock
7f00-7f01 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libc.so.6
7f01-7f02 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1
7f02-7f03 r-xp 00000000 08:01 4 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7f03-7f04 rw-p 00000000 00:00 0 [heap]
";
        let files = AgentFiles::from_maps("/usr/bin/airlock".into(), maps);
        assert_eq!(
            files.init_args(0, "unix"),
            [
                "/.airlock/lib/0/ld-linux-x86-64.so.2",
                "--library-path",
                "/.airlock/lib/0",
                "/.airlock/agent",
                "agent",
                "--fd",
                "0",
                "--seccomp",
                "unix",
                "--root-per-command"
            ]
        );
        let mounts = files.mounts();
        assert_eq!(mounts.len(), 2);
        assert!(mounts
            .iter()
            .all(|(m, _)| m.options.contains(&"ro".to_string())));
        // A static executable needs no loader.
        let static_exe = AgentFiles::from_maps("/a".into(), "");
        assert_eq!(static_exe.init_args(3, "inet")[0], "/.airlock/agent");
    }
}
