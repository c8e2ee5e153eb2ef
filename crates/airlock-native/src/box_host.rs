//! Which program holds a native box: `airlock-sandbox-host` beside the airlock executable when
//! it is there and from the same build, else `airlock sandbox-host` (the same code, inside the
//! whole airlock binary).
//!
//! The separate program is there for memory: every idle box keeps its host and two copies of
//! it (the box's init and its cleanup sentinel), and an `exec` of a position-independent
//! executable dirties all of its relocated read-only data, which no two boxes share. The
//! program that links only the native box has a quarter of airlock's.
//!
//! The two speak a control protocol that changes between builds, so airlock asks the program
//! for its [`BUILD_ID`] once and uses it only on a match (both are built together: `cargo
//! build` and `cargo install` make both).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The program's name, looked for beside the airlock executable.
pub const PROGRAM: &str = "airlock-sandbox-host";
/// Its only argument when asked for its build: it prints [`BUILD_ID`] and exits.
pub const BUILD_ID_ARG: &str = "--build-id";
/// This build of the native box (its version and when it was built).
pub const BUILD_ID: &str = env!("AIRLOCK_NATIVE_BUILD_ID");

/// Why the program beside airlock is not used.
#[derive(Debug, thiserror::Error)]
pub enum BoxHostError {
    #[error("{0} cannot tell its build: {1}")]
    Unanswered(PathBuf, String),
    #[error("{path} is from another build of airlock (it says {theirs:?}, this airlock is {ours:?}): install both programs from one build")]
    OtherBuild {
        path: PathBuf,
        theirs: String,
        ours: &'static str,
    },
}

/// The box host beside `exe`: `None` when there is none, an error when it is not from this
/// build.
pub fn beside(exe: &Path) -> Result<Option<PathBuf>, BoxHostError> {
    let path = exe.with_file_name(PROGRAM);
    if !is_executable(&path) {
        return Ok(None);
    }
    let out = Command::new(&path)
        .arg(BUILD_ID_ARG)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| BoxHostError::Unanswered(path.clone(), e.to_string()))?;
    if !out.status.success() {
        return Err(BoxHostError::Unanswered(
            path,
            format!("exit status {}", out.status),
        ));
    }
    let theirs = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if theirs != BUILD_ID {
        return Err(BoxHostError::OtherBuild {
            path,
            theirs,
            ours: BUILD_ID,
        });
    }
    Ok(Some(path))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn program_saying(dir: &Path, script: &str) -> PathBuf {
        let p = dir.join(PROGRAM);
        std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn only_a_host_program_of_this_build_is_used() {
        let dir = std::env::temp_dir().join(format!("airlock-box-host-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("airlock");
        assert!(beside(&exe).unwrap().is_none(), "none there: none used");
        let p = program_saying(
            &dir,
            &format!("[ \"$1\" = {BUILD_ID_ARG} ] && echo {BUILD_ID}"),
        );
        assert_eq!(beside(&exe).unwrap(), Some(p));
        program_saying(&dir, "echo 0.1.0-1234");
        match beside(&exe) {
            Err(e @ BoxHostError::OtherBuild { .. }) => {
                assert!(e.to_string().contains("install both"), "{e}")
            }
            other => panic!("another build's program was taken: {other:?}"),
        }
        program_saying(&dir, "exit 3");
        assert!(matches!(beside(&exe), Err(BoxHostError::Unanswered(..))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
