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
