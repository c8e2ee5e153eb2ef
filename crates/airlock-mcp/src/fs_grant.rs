//! `request_filesystem_grant`: the model asks to see (or change) one host path its box does not
//! have, with a reason. As with `request_network_grant`, the model only asks: the person at the
//! client or the approver program says yes. A mount cannot be added to a running box, so a yes
//! applies to the session's next box: the box is ended, and the next tool call starts one with
//! the grant (its processes and interpreter state end; the workspace and grants keep their
//! files). The path is checked as a `--read`/`--write` path is, before anyone is asked.

use airlock_policy::{
    grant_mount, Access, BackendKind, Mount, Profile, ResolveContext, ResolvedPolicy, INSIDE_HOME,
};
use airlock_runtime::RealHost;
use rmcp::model::JsonObject;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What the model asked for, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsGrantAsk {
    /// The mount it becomes (canonical host path, seen at the same path inside).
    pub mount: Mount,
    pub reason: String,
}

impl FsGrantAsk {
    /// The request in the tool's arguments for a box under `policy`, or why it cannot be asked
    /// about. `off_limits`: files the box must never be able to change (the session's audit log).
    pub fn parse(
        args: &JsonObject,
        policy: &ResolvedPolicy,
        off_limits: &[PathBuf],
    ) -> Result<FsGrantAsk, String> {
        let raw = args
            .get("path")
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .ok_or("give `path`: the absolute host path the task needs")?;
        if !Path::new(raw).is_absolute() {
            return Err(format!(
                "{raw:?} is not absolute: give the host path from / (a grant appears in the sandbox at the same path)"
            ));
        }
        let access = match args.get("access").and_then(|v| v.as_str()) {
            Some("read") => Access::ReadOnly,
            Some("write") => Access::ReadWrite,
            _ => {
                return Err("give `access`: \"read\" (see it) or \"write\" (also change it)".into())
            }
        };
        let reason = crate::grant_request::reason_of(args)?;
        if policy.profile == Profile::FullAccess {
            return Err(
                "the sandbox already sees the whole host filesystem (profile full-access)".into(),
            );
        }
        if access == Access::ReadWrite && policy.profile == Profile::ReadOnly {
            return Err("this session's profile is read-only: nothing in it is writable, and a request cannot change the profile; ask for read access".into());
        }
        let env = BTreeMap::new();
        let ctx = ResolveContext {
            cwd: PathBuf::from("/"),
            env: &env,
            host: &RealHost,
        };
        let mount = grant_mount(raw, access, &ctx).map_err(|e| e.to_string())?;
        if let Some(own) = box_own(&mount.host) {
            return Err(format!(
                "{} is {own}, which the sandbox makes for itself; a request cannot lay the host's over it (a person may still pass --read or --write when starting the session)",
                mount.host.display()
            ));
        }
        if access == Access::ReadWrite {
            if let Some(f) = off_limits.iter().find(|f| f.starts_with(&mount.host)) {
                return Err(format!(
                    "{} holds {}, which the sandbox must never change; ask for a directory that does not contain it, or for read access",
                    mount.host.display(),
                    f.display()
                ));
            }
        }
        if policy.backend == BackendKind::Microvm && !mount.host.is_dir() {
            return Err(format!(
                "{} is not a directory: a microVM box gets directories only (its share cannot export a single file); ask for the directory that holds it",
                mount.host.display()
            ));
        }
        Ok(FsGrantAsk { mount, reason })
    }

    /// The grant as the approver program and the audit log name it: `read:PATH` or
    /// `write:PATH`.
    pub fn grant(&self) -> String {
        format!("{}:{}", self.verb(), self.mount.host.display())
    }

    fn verb(&self) -> &'static str {
        match self.mount.access {
            Access::ReadOnly => "read",
            Access::ReadWrite => "write",
        }
    }

    /// The flag and policy-file line that allow it, for a person to add.
    pub fn remedy(&self) -> String {
        let path = self.mount.host.display();
        format!(
            "--{} {path} (in a policy file: [filesystem] {} = [\"{path}\"])",
            self.verb(),
            self.verb()
        )
    }

    /// The question the person is asked.
    pub fn question(&self) -> String {
        let path = self.mount.host.display();
        let what = match self.mount.access {
            Access::ReadOnly => format!("read {path}"),
            Access::ReadWrite => format!(
                "read and change {path} (code in the sandbox could then change or delete anything under it)"
            ),
        };
        format!(
            "The model asks to {what} from the airlock sandbox, for the rest of this session. The sandbox restarts to get it: its running processes and interpreter state end.\n\nIts reason: {}\n\nAllow it?",
            self.reason
        )
    }
}

/// The system directories the box gets from its template or makes itself: a grant over them
/// (or in them) would lay the host's own files (its `/etc`, its libraries, its `/run`
/// sockets) over the box's.
const BOX_OWN: &[&str] = &[
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/run",
    "/root",
];

/// Directories the box has its own of (or that hold everyone's files): never granted whole,
/// though a directory in them may be (`/tmp/data`, `/home/alice/project`).
const WHOLE: &[&str] = &[
    "/tmp", "/var/tmp", "/var", "/home", "/opt", "/srv", "/mnt", "/media",
];

/// What `path` is of the box's own, if it is.
fn box_own(path: &Path) -> Option<String> {
    if let Some(d) = BOX_OWN.iter().find(|d| path.starts_with(d)) {
        return Some(format!("under {d}"));
    }
    if path.starts_with(INSIDE_HOME) {
        return Some(format!("under {INSIDE_HOME}, the sandbox user's home"));
    }
    WHOLE
        .iter()
        .find(|d| path == Path::new(d))
        .map(|d| format!("{d} as a whole"))
}

#[cfg(test)]
#[path = "fs_grant_tests.rs"]
mod tests;
