use airlock_policy::HostView;
use std::path::{Path, PathBuf};

/// The real host, for policy resolution.
pub struct RealHost;

impl HostView for RealHost {
    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
    fn read_secret(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }
}
