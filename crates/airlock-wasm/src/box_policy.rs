//! A WASM box's policy, checked, and the native box it runs in: the same workspace, grants,
//! limits and no network, plus two read-only grants the runner needs (airlock's binary and the
//! compiled-module cache) and, for an image template, its root at [`TEMPLATE_DIR`].

use crate::run_spec::{DirAccess, Preopen};
use airlock_policy::{Access, BackendKind, FilesystemPolicy, Mount, NetworkMode, ResolvedPolicy};
use airlock_runtime::backend::{BackendError, Template};
use std::path::{Path, PathBuf};

/// Where the runner's own files appear inside the box (not preopened: the guest never sees
/// them).
pub const INSIDE_DIR: &str = "/.airlock-wasm";
/// airlock's binary inside the box (it runs `wasm-run`).
pub const INSIDE_RUNNER: &str = "/.airlock-wasm/airlock";
/// The compiled-module cache inside the box.
pub const INSIDE_CACHE: &str = "/.airlock-wasm/cache";
/// Where an image template's root is preopened, read-only.
pub const TEMPLATE_DIR: &str = "/template";
/// The box's scratch directory, preopened read-write (a size-capped tmpfs of the box).
pub const SCRATCH_DIR: &str = "/tmp";

/// Refuses what a WASM box cannot enforce or mean; the sentence says what to do instead.
pub fn check(policy: &ResolvedPolicy) -> Result<(), BackendError> {
    if policy.backend != BackendKind::Wasm {
        return Err(BackendError::Invalid(format!(
            "the policy asks for the {} backend, not wasm",
            policy.backend
        )));
    }
    match policy.network {
        NetworkMode::None => {}
        NetworkMode::Proxy => return Err(BackendError::Invalid(
            "a wasm box has no network: WASI preview 1 has no sockets, so --net proxy cannot be given to it; drop --net proxy, or use --backend native for code that needs the proxy".into(),
        )),
        NetworkMode::Host => return Err(BackendError::Invalid(
            "a wasm box has no network: WASI preview 1 has no sockets, so --net host means nothing there; drop --net, or use --backend native".into(),
        )),
    }
    let FilesystemPolicy::Isolated {
        workspace, grants, ..
    } = &policy.filesystem
    else {
        return Err(BackendError::Invalid(
            "a wasm box sees only its preopened directories, so --profile full-access cannot be given to it; use another profile, or --backend native".into(),
        ));
    };
    for m in workspace.iter().chain(grants) {
        if !m.host.is_dir() {
            return Err(BackendError::Invalid(format!(
                "{} is not a directory: a wasm box preopens directories only; grant the directory that holds it",
                m.host.display()
            )));
        }
        if m.inside.starts_with(INSIDE_DIR) || m.inside == Path::new(TEMPLATE_DIR) {
            return Err(BackendError::Invalid(format!(
                "{} is reserved inside a wasm box: mount the grant elsewhere",
                m.inside.display()
            )));
        }
    }
    Ok(())
}

/// The directories the guest gets, with their rights: the workspace, each grant, the image
/// template's root (read-only) and the box's scratch `/tmp`.
pub fn preopens(policy: &ResolvedPolicy, template: &Template) -> Vec<Preopen> {
    let mut dirs = Vec::new();
    if let FilesystemPolicy::Isolated {
        workspace, grants, ..
    } = &policy.filesystem
    {
        for m in workspace.iter().chain(grants) {
            dirs.push(Preopen {
                path: m.inside.to_string_lossy().into_owned(),
                access: match m.access {
                    Access::ReadOnly => DirAccess::ReadOnly,
                    Access::ReadWrite => DirAccess::ReadWrite,
                },
            });
        }
    }
    if matches!(template, Template::Image(_)) {
        dirs.push(Preopen {
            path: TEMPLATE_DIR.into(),
            access: DirAccess::ReadOnly,
        });
    }
    if !dirs.iter().any(|d| d.path == SCRATCH_DIR) {
        dirs.push(Preopen {
            path: SCRATCH_DIR.into(),
            access: DirAccess::ReadWrite,
        });
    }
    dirs
}

fn read_only(host: &Path, inside: &str) -> Result<Mount, BackendError> {
    let host = host.canonicalize().map_err(|e| {
        BackendError::Start(format!(
            "{} cannot be granted to the box: {e}",
            host.display()
        ))
    })?;
    Ok(Mount {
        host,
        inside: PathBuf::from(inside),
        access: Access::ReadOnly,
        protect: false,
    })
}

/// The native box's policy for this WASM box. `cache` is granted only if it exists (a plan
/// has no side effects; a start creates it first).
pub fn confinement_policy(
    policy: &ResolvedPolicy,
    template: &Template,
    airlock_exe: &Path,
    cache: &Path,
) -> Result<ResolvedPolicy, BackendError> {
    check(policy)?;
    let mut inner = policy.clone();
    inner.backend = BackendKind::Native;
    if let FilesystemPolicy::Isolated { grants, .. } = &mut inner.filesystem {
        grants.push(read_only(airlock_exe, INSIDE_RUNNER)?);
        if cache.is_dir() {
            grants.push(read_only(cache, INSIDE_CACHE)?);
        }
        if let Template::Image(t) = template {
            grants.push(read_only(&t.rootfs, TEMPLATE_DIR)?);
        }
    }
    Ok(inner)
}
