//! The cache of built guest pieces: a file appears whole (written beside, then renamed) or not
//! at all, so two boxes building the same piece at once never see half of it.

use crate::MicrovmError;
use std::path::Path;

/// Writes `data` to `path` atomically.
pub fn put(path: &Path, data: &[u8]) -> Result<(), MicrovmError> {
    let tmp = temp_beside(path)?;
    std::fs::write(&tmp, data)
        .map_err(|e| MicrovmError::io(format!("cannot write {}", tmp.display()), e))?;
    commit(&tmp, path)
}

/// A temporary name beside `path` (its directory made), unique to this process and moment.
pub fn temp_beside(path: &Path) -> Result<std::path::PathBuf, MicrovmError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| MicrovmError::io(format!("cannot make {}", dir.display()), e))?;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("piece");
    Ok(path.with_file_name(format!(".{name}.{}.{nanos}.tmp", std::process::id())))
}

/// Renames a finished temporary into place (removing it if that fails).
pub fn commit(tmp: &Path, path: &Path) -> Result<(), MicrovmError> {
    std::fs::rename(tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(tmp);
        MicrovmError::io(format!("cannot place {}", path.display()), e)
    })
}

/// Keeps the `keep` most recently used files of `dir` whose names end with `suffix`, removing
/// the rest (template snapshots are large: the cache must not grow with every layout seen).
pub fn prune(dir: &Path, suffix: &str, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut found: Vec<(std::time::SystemTime, std::path::PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    for (_, path) in found.into_iter().skip(keep) {
        let _ = std::fs::remove_file(path);
    }
}

/// Marks `path` as just used (for [`prune`]).
pub fn touch(path: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}
