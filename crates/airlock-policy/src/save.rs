//! Writing a grant into a policy file (an approval answered "allow and save"): the entry is
//! added to `[network] allow_domain` or `allow_ip`, the rest of the file (comments, order,
//! other keys) is kept, and the file is replaced atomically (a new file in the same directory,
//! renamed over the old one), so a reader sees the old policy or the new one, never half.

use crate::file::PolicyFile;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Which list of `[network]` a saved grant goes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantList {
    /// `allow_domain`: `NAME:PORT`.
    AllowDomain,
    /// `allow_ip`: `CIDR[:PORT]`.
    AllowIp,
}

impl GrantList {
    /// The key in `[network]`.
    pub fn key(self) -> &'static str {
        match self {
            GrantList::AllowDomain => "allow_domain",
            GrantList::AllowIp => "allow_ip",
        }
    }
}

/// Why a grant could not be saved. The policy file is unchanged in every case.
#[derive(Debug, thiserror::Error)]
pub enum SaveGrantError {
    #[error("cannot read the policy file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the policy file {} is not TOML airlock can edit ({problem}); fix it, or add the grant by hand", path.display())]
    Edit { path: PathBuf, problem: String },
    #[error("cannot write the policy file {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Adds `entry` to `[network] <list>` of the policy file at `path` (made if missing: the table
/// and the list). `false`: it was already there, and the file was not rewritten. The edited
/// text must still parse as a policy, or nothing is written.
pub fn save_grant(path: &Path, list: GrantList, entry: &str) -> Result<bool, SaveGrantError> {
    // Written where the file really is: a symlink stays a symlink to the edited file.
    let real = std::fs::canonicalize(path).map_err(|source| SaveGrantError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let text = std::fs::read_to_string(&real).map_err(|source| SaveGrantError::Read {
        path: real.clone(),
        source,
    })?;
    let edit_err = |problem: String| SaveGrantError::Edit {
        path: real.clone(),
        problem,
    };
    let Some(edited) = with_grant(&text, list, entry).map_err(edit_err)? else {
        return Ok(false);
    };
    PolicyFile::from_toml(&edited, &real).map_err(|e| edit_err(e.to_string()))?;
    replace(&real, edited.as_bytes()).map_err(|source| SaveGrantError::Write {
        path: real.clone(),
        source,
    })?;
    Ok(true)
}

/// `text` with `entry` added to `[network] <list>`; `None` if it is there already.
pub fn with_grant(text: &str, list: GrantList, entry: &str) -> Result<Option<String>, String> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    let network = doc
        .entry("network")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    let Some(network) = network.as_table_like_mut() else {
        return Err("`network` is not a table".into());
    };
    let values = network
        .entry(list.key())
        .or_insert_with(|| toml_edit::Item::Value(toml_edit::Array::new().into()));
    let Some(values) = values.as_array_mut() else {
        return Err(format!("`network.{}` is not a list", list.key()));
    };
    if values.iter().any(|v| v.as_str() == Some(entry)) {
        return Ok(None);
    }
    values.push(entry);
    Ok(Some(doc.to_string()))
}

/// Replaces `path` with `bytes`: a new file beside it (its permissions copied), synced, renamed.
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o7777;
    let tmp = dir.join(format!(".{name}.airlock-{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
#[path = "save_tests.rs"]
mod tests;
