//! Opening the files airlock writes on the host for the user (`--result`, `--audit`) without
//! letting a box choose which file that is.
//!
//! Such a path often lies in the workspace, which the box can write: the box can leave a symlink
//! there (to `~/.bashrc`, or to `/etc/shadow` when airlock runs as root), or make a directory on
//! the way a symlink, and airlock would then overwrite or append to that file with the host
//! user's rights. So where a box can write (this run's workspace and grants, read-only ones too:
//! another run may have had them writable), nothing on the way is followed: the directory must
//! resolve inside that tree and the last component must not be a symlink.
//! Elsewhere (`/dev/stdout`, a shell's `>(…)`, a path outside every writable grant) the path is
//! the caller's and is followed as usual. A FIFO is opened without waiting for a reader (a box
//! can leave one too). Callers open the file before the box starts and write through the
//! descriptor, so swapping the path during the run changes nothing.

use airlock_policy::{FilesystemPolicy, ResolvedPolicy};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// How an output file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// Created or emptied (a result document).
    Truncate,
    /// Created or appended to (an audit log).
    Append,
}

/// Why an output file was not opened.
#[derive(Debug, thiserror::Error)]
pub enum OutputFileError {
    #[error("{path} is a symlink in a directory a box can write: airlock does not write through it, because a box could have made it to choose which host file gets overwritten; remove it or give another path")]
    Symlink { path: PathBuf },
    #[error("{path} leads out of the box's writable tree through a symlink ({resolved}): airlock does not write there, because a box could have made that symlink; give the real path")]
    Escapes { path: PathBuf, resolved: PathBuf },
    #[error("{path} is a FIFO with no reader: start the reader first, or give a regular file")]
    NoReader { path: PathBuf },
    #[error("{path}: {source}; check that its directory exists and that you may write there")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The host directories a box under `policy` sees (workspace and grants): it can write them
/// now, or could in an earlier run with another policy, so what lies there may be the box's.
/// None for `full-access`, where the box can write whatever the user can anyway.
pub fn box_writable_roots(policy: &ResolvedPolicy) -> Vec<PathBuf> {
    match &policy.filesystem {
        FilesystemPolicy::Isolated {
            workspace, grants, ..
        } => workspace
            .iter()
            .chain(grants.iter())
            .map(|m| m.host.clone())
            .collect(),
        FilesystemPolicy::Host => Vec::new(),
    }
}

/// Opens `path` for writing as described in the module documentation; `box_writable` are the
/// canonical host directories a box can write (see [`box_writable_roots`]).
pub fn open_output(
    path: &Path,
    mode: OutputMode,
    box_writable: &[PathBuf],
) -> Result<File, OutputFileError> {
    let io_err = |source: io::Error| OutputFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let absolute = std::path::absolute(path).map_err(io_err)?;
    let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        return Err(io_err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file path",
        )));
    };
    let inside = |p: &Path| box_writable.iter().any(|root| p.starts_with(root));
    let resolved = std::fs::canonicalize(parent).map_err(io_err)?;
    if inside(&resolved) {
        // The box can write this directory: open the last component itself, never a symlink.
        return open(&resolved.join(name), mode, libc::O_NOFOLLOW).map_err(|e| {
            match e.raw_os_error() {
                Some(libc::ELOOP) => OutputFileError::Symlink {
                    path: path.to_path_buf(),
                },
                _ => classify(path, e),
            }
        });
    }
    if inside(&absolute) {
        // Written as a path in the box's tree, but a symlink on the way leads out of it.
        return Err(OutputFileError::Escapes {
            path: path.to_path_buf(),
            resolved,
        });
    }
    open(path, mode, 0).map_err(|e| classify(path, e))
}

fn classify(path: &Path, e: io::Error) -> OutputFileError {
    if e.raw_os_error() == Some(libc::ENXIO) {
        OutputFileError::NoReader {
            path: path.to_path_buf(),
        }
    } else {
        OutputFileError::Io {
            path: path.to_path_buf(),
            source: e,
        }
    }
}

fn open(path: &Path, mode: OutputMode, extra: libc::c_int) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.create(true)
        .mode(0o644)
        .custom_flags(extra | libc::O_NONBLOCK | libc::O_CLOEXEC);
    match mode {
        OutputMode::Truncate => o.write(true).truncate(true),
        OutputMode::Append => o.append(true),
    };
    let file = o.open(path)?;
    // O_NONBLOCK was only for the open (a FIFO without a reader fails instead of waiting);
    // writes to a pipe wait for room.
    set_blocking(&file)?;
    Ok(file)
}

fn set_blocking(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor owned by `file`, with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
#[path = "output_file_tests.rs"]
mod tests;
