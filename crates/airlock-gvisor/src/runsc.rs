//! The `runsc` binary: where it is, which version and platform it runs, and how it is called.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How the Sentry intercepts the box's system calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// `PTRACE_SYSEMU` on stub processes: works on any Linux host, the slowest.
    Ptrace,
    /// seccomp traps in the stub (gVisor 2023 and later): faster, no virtualization needed.
    Systrap,
    /// Hardware virtualization (`/dev/kvm`): the fastest where the host offers it.
    Kvm,
}

impl Platform {
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Ptrace => "ptrace",
            Platform::Systrap => "systrap",
            Platform::Kvm => "kvm",
        }
    }

    /// Parses a platform name as `--gvisor-platform` takes it.
    pub fn parse(name: &str) -> Result<Platform, RunscError> {
        match name {
            "ptrace" => Ok(Platform::Ptrace),
            "systrap" => Ok(Platform::Systrap),
            "kvm" => Ok(Platform::Kvm),
            other => Err(RunscError::UnknownPlatform(other.to_string())),
        }
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why runsc cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RunscError {
    #[error("runsc was not found on PATH: install gVisor (Debian: `apt-get install runsc`) or give its path with --runsc PATH")]
    NotFound,
    #[error("{0} does not exist or is not executable: give the path of a runsc binary with --runsc PATH")]
    NotExecutable(PathBuf),
    #[error("{path} --version failed: {why}")]
    Version { path: PathBuf, why: String },
    #[error("{path} flags failed: {why}; airlock reads which flags a runsc has to turn off its host-filesystem shortcuts (-directfs), so it does not start a box without knowing: check that this is a working runsc")]
    Flags { path: PathBuf, why: String },
    #[error("unknown gVisor platform {0:?}: use ptrace, systrap or kvm")]
    UnknownPlatform(String),
    #[error("this runsc has no {0} platform: use ptrace, or a newer gVisor")]
    PlatformMissing(Platform),
}

/// One runsc binary and the platform boxes run on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Runsc {
    pub path: PathBuf,
    pub platform: Platform,
    /// `runsc --version`'s first line (`runsc version 0.0~20221219.0`).
    pub version: String,
    /// This runsc has the `-directfs` flag (gVisor 2023 on; on by default), which airlock
    /// turns off: see [`Runsc::global_args`].
    #[serde(default)]
    pub directfs: bool,
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `runsc` on PATH (and the usual system directories, which a minimal PATH may lack).
fn on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/bin", "/usr/bin", "/usr/sbin", "/bin"].map(PathBuf::from))
        .map(|d| d.join("runsc"))
        .find(|p| executable(p))
}

impl Runsc {
    /// The runsc at `explicit`, or on PATH; `platform` or the best this runsc offers without
    /// virtualization (systrap where it exists, else ptrace: KVM is chosen only when asked,
    /// since a host may expose `/dev/kvm` without it working).
    pub fn find(explicit: Option<&Path>, platform: Option<Platform>) -> Result<Runsc, RunscError> {
        let path = match explicit {
            Some(p) if executable(p) => p.to_path_buf(),
            Some(p) => return Err(RunscError::NotExecutable(p.to_path_buf())),
            None => on_path().ok_or(RunscError::NotFound)?,
        };
        // Both questions at once: each is a start of the Go binary (~20 ms here), and a
        // one-shot `airlock run` asks them on every start.
        let ask = |arg: &str| {
            Command::new(&path)
                .arg(arg)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        };
        let version_child = ask("--version").map_err(|e| RunscError::Version {
            path: path.clone(),
            why: e.to_string(),
        })?;
        let flags_child = ask("flags");
        let out = version_child
            .wait_with_output()
            .map_err(|e| RunscError::Version {
                path: path.clone(),
                why: e.to_string(),
            });
        let flags = flags_child.and_then(|c| c.wait_with_output());
        let out = out?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text.lines().next().unwrap_or("").trim().to_string();
        if !out.status.success() || version.is_empty() {
            return Err(RunscError::Version {
                path,
                why: format!("exit status {}", out.status),
            });
        }
        // Which flags this runsc has decides what airlock must turn off (`-directfs`): an
        // answer that cannot be read fails the start rather than guess "no such flag".
        let flags = match flags {
            Ok(o) if o.status.success() => {
                let mut t = String::from_utf8_lossy(&o.stdout).into_owned();
                t.push_str(&String::from_utf8_lossy(&o.stderr));
                t
            }
            Ok(o) => {
                return Err(RunscError::Flags {
                    path,
                    why: format!("exit status {}", o.status),
                })
            }
            Err(e) => {
                return Err(RunscError::Flags {
                    path,
                    why: e.to_string(),
                })
            }
        };
        if !flags
            .lines()
            .any(|l| l.trim_start().starts_with("-platform "))
        {
            return Err(RunscError::Flags {
                path,
                why: "its answer lists no -platform flag, so which flags it has cannot be told"
                    .into(),
            });
        }
        let platform_help = flags
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("-platform "))
            .nth(1)
            .unwrap_or("")
            .to_string();
        let offers = |p: Platform| platform_help.contains(p.as_str());
        let directfs = flags.lines().any(|l| l.trim() == "-directfs");
        let platform = match platform {
            Some(p) if p == Platform::Ptrace || offers(p) => p,
            Some(p) => return Err(RunscError::PlatformMissing(p)),
            None if offers(Platform::Systrap) => Platform::Systrap,
            None => Platform::Ptrace,
        };
        Ok(Runsc {
            path,
            platform,
            version,
            directfs,
        })
    }

    /// A `runsc` command with the global flags every call of one box shares: its state
    /// directory, platform and network mode.
    pub fn command(&self, state: &Path, network: RunscNetwork) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.args(self.global_args(state, network));
        cmd
    }

    /// The global flags, as [`Runsc::command`] passes them.
    pub fn global_args(&self, state: &Path, network: RunscNetwork) -> Vec<OsString> {
        let mut root = OsString::from("--root=");
        root.push(state);
        let mut args = vec![
            root,
            format!("--platform={}", self.platform).into(),
            format!("--network={}", network.as_str()).into(),
            // airlock puts runsc and everything it starts in a cgroup of its own.
            "--ignore-cgroups".into(),
            // The box reaches no host unix socket.
            "--host-uds=none".into(),
        ];
        if self.directfs {
            // With directfs the Sentry opens the box's files itself: it then runs as host
            // root (not nobody in a user namespace of its own) with file capabilities, and in
            // its own mount namespace, where the host mounts that cover protected paths are
            // not mount points, so `rm .bashrc` in the box removed the host's file. Without
            // it the gofer, in the namespace with those covers, does every file operation.
            args.push("--directfs=false".into());
        }
        args
    }
}

/// The oldest runsc release seen to restore an airlock box: checkpoint and restore of a bundle
/// with a read-only root, a tmpfs and tens of read-only binds, after which the process
/// continues and new lookups in the root and the binds work, on systrap and ptrace (Debian
/// trixie's 0.0~20240729.0). The release before it tried here (0.0~20221219.0, bookworm's)
/// restores, but every new path lookup through a gofer mount then fails with EINVAL.
pub const RESTORE_SINCE: u32 = 20240729;
/// The oldest release seen to accept `AT_NO_AUTOMOUNT` in statx and fstatat (the same
/// trixie release; bookworm's answers EINVAL, so `ls -l` fails without the shim).
pub const STATX_SINCE: u32 = 20240729;
/// Up to which release commands get the xattr shim (gVisor #11049, `lgetxattr` on a symlink
/// answers EBADF): the tests' 20240729 has the bug; it was reported on 2024-10-16 and fixed
/// upstream, in a release not pinned here, so every release of 2024 and before gets the shim
/// (harmless where the bug is gone: it only rewrites an EBADF).
pub const XATTR_BUG_UNTIL: u32 = 20241231;

impl Runsc {
    /// The release date in the version line (`runsc version 0.0~20221219.0` as Debian
    /// builds it, `runsc version release-20240729.0` as gVisor does), `None` when it has none.
    pub fn release(&self) -> Option<u32> {
        release_of(&self.version)
    }

    /// Why this runsc cannot bring a checkpointed airlock box back, or `None` when it can.
    pub fn restore_gap(&self) -> Option<String> {
        match self.release() {
            Some(r) if r >= RESTORE_SINCE => None,
            Some(_) => Some(format!(
                "this runsc ({}) cannot restore an airlock box: after `runsc restore`, every new path lookup through a gofer mount (the root, each bind) fails with EINVAL; use gVisor release {RESTORE_SINCE} or later (scripts/gvisor-runsc.sh fetches one) with --runsc PATH, or the microVM backend",
                self.version
            )),
            None => Some(format!(
                "the release of this runsc cannot be told from its version line ({:?}), so whether it restores an airlock box is unknown; use a gVisor release build ({RESTORE_SINCE} or later) with --runsc PATH",
                self.version
            )),
        }
    }

    /// Whether commands need the statx shim (`compat/`): releases before [`STATX_SINCE`],
    /// and any runsc whose release is unknown (the shim only clears a flag the Sentry ignores).
    pub fn needs_statx_shim(&self) -> bool {
        self.release().is_none_or(|r| r < STATX_SINCE)
    }

    /// Whether commands need the xattr shim (`compat/`, gVisor #11049): every release up to
    /// [`XATTR_BUG_UNTIL`] and any whose release is unknown (on a runsc without the bug the
    /// shim never acts: it only rewrites an EBADF).
    pub fn needs_xattr_shim(&self) -> bool {
        self.release().is_none_or(|r| r <= XATTR_BUG_UNTIL)
    }
}

/// The first run of eight digits in a version line, as a `YYYYMMDD` number.
fn release_of(version: &str) -> Option<u32> {
    let bytes = version.as_bytes();
    (0..bytes.len().saturating_sub(7))
        .find(|&i| {
            bytes[i..i + 8].iter().all(u8::is_ascii_digit)
                && (i == 0 || !bytes[i - 1].is_ascii_digit())
                && bytes.get(i + 8).is_none_or(|b| !b.is_ascii_digit())
        })
        .and_then(|i| version[i..i + 8].parse().ok())
}

/// runsc's `--network`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunscNetwork {
    /// The Sentry has no network at all (its own loopback only).
    None,
    /// The Sentry uses the host sockets of the network namespace runsc runs in (airlock's, with
    /// only loopback and the proxy's listener, for `--net proxy`).
    Host,
}

impl RunscNetwork {
    pub fn as_str(self) -> &'static str {
        match self {
            RunscNetwork::None => "none",
            RunscNetwork::Host => "host",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runsc(version: &str) -> Runsc {
        Runsc {
            path: "/usr/bin/runsc".into(),
            platform: Platform::Ptrace,
            version: version.into(),
            directfs: false,
        }
    }

    #[test]
    fn the_release_comes_from_debian_and_upstream_version_lines() {
        assert_eq!(
            runsc("runsc version 0.0~20221219.0").release(),
            Some(20221219)
        );
        assert_eq!(
            runsc("runsc version release-20240729.0").release(),
            Some(20240729)
        );
        assert_eq!(runsc("runsc version VERSION_MISSING").release(), None);
        // Nine digits are not a date.
        assert_eq!(runsc("runsc version 202407290").release(), None);
    }

    #[test]
    fn restore_and_the_shim_follow_the_release_and_an_unknown_one_fails_closed() {
        let old = runsc("runsc version 0.0~20221219.0");
        assert!(old.restore_gap().is_some_and(|w| w.contains("EINVAL")));
        assert!(old.needs_statx_shim());
        let new = runsc("runsc version 0.0~20240729.0");
        assert_eq!(new.restore_gap(), None);
        assert!(!new.needs_statx_shim());
        assert!(old.needs_xattr_shim() && new.needs_xattr_shim());
        assert!(!runsc("runsc version release-20250113.0").needs_xattr_shim());
        let unknown = runsc("runsc version VERSION_MISSING");
        assert!(unknown.restore_gap().is_some_and(|w| w.contains("unknown")));
        assert!(unknown.needs_statx_shim());
    }

    #[test]
    fn directfs_is_turned_off_where_the_runsc_has_it() {
        let mut r = runsc("runsc version 0.0~20240729.0");
        let args = |r: &Runsc| r.global_args(Path::new("/s"), RunscNetwork::None);
        assert!(!args(&r)
            .iter()
            .any(|a| a.to_string_lossy().contains("directfs")));
        r.directfs = true;
        assert!(args(&r).contains(&OsString::from("--directfs=false")));
    }

    /// A stand-in runsc: a shell script that answers `--version` and runs `flags_body` for
    /// `flags`.
    fn fake_runsc(dir: &Path, flags_body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("runsc");
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\ncase \"$1\" in\n--version) echo 'runsc version 0.0~20240729.0';;\n\
                 flags) {flags_body};;\nesac\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn a_runsc_whose_flags_cannot_be_read_is_refused_not_taken_for_one_without_directfs() {
        let dir = std::env::temp_dir().join(format!("airlock-fake-runsc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let listing = "printf '  -directfs\\n    \\tdirectfs\\n  -platform string\\n    \\tptrace, systrap\\n' >&2";
        let good = fake_runsc(&dir, listing);
        let r = Runsc::find(Some(&good), None).unwrap();
        assert!(r.directfs, "the listing names -directfs");
        assert_eq!(r.platform, Platform::Systrap);
        for broken in [
            "exit 2",
            "echo 'flag provided but not defined: flags' >&2",
            "kill -9 $$",
        ] {
            let bad = fake_runsc(&dir, broken);
            match Runsc::find(Some(&bad), None) {
                Err(RunscError::Flags { path, why }) => {
                    assert_eq!(path, bad);
                    assert!(!why.is_empty());
                }
                other => panic!("{broken:?}: expected a flags error, got {other:?}"),
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
