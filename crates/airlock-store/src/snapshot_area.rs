//! Where snapshots live on disk: one directory per snapshot under `<data-dir>/snapshots`, mode
//! 0700, holding the backend's files under `data/` and their [`Manifest`] beside them. A snapshot
//! is written into a staging directory (`.staging-<id>`) and renamed into place only once its
//! manifest is complete, so a crash never leaves a half-written snapshot that looks whole; stale
//! staging directories are removed when the area is opened.

use std::fs::DirBuilder;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::manifest::{self, Manifest, SnapshotOrigin, MANIFEST_VERSION};
use super::snapshot_error::{io_err, SnapshotError};

const DIR_MODE: u32 = 0o700;
const STAGING_PREFIX: &str = ".staging-";
const MANIFEST: &str = "manifest.json";
const DATA: &str = "data";

/// The snapshots directory of one server.
#[derive(Debug, Clone)]
pub struct SnapshotArea {
    root: PathBuf,
}

/// A snapshot being written: the backend writes into [`Staging::data_dir`]. Dropped without
/// [`SnapshotArea::commit`], it is removed.
#[derive(Debug)]
pub struct Staging {
    id: String,
    dir: PathBuf,
    committed: bool,
}

impl Staging {
    /// The empty directory (0700) the backend writes its checkpoint into.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join(DATA)
    }

    /// The snapshot's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn check_id(id: &str) -> Result<(), SnapshotError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(SnapshotError::BadId(id.to_string()))
    }
}

fn make_private_dir(path: &Path) -> Result<(), SnapshotError> {
    DirBuilder::new()
        .mode(DIR_MODE)
        .create(path)
        .map_err(io_err("create", path))
}

impl SnapshotArea {
    /// Opens (creating, 0700) the snapshots directory `root` and removes what an interrupted
    /// snapshot left behind.
    pub fn open(root: &Path) -> Result<SnapshotArea, SnapshotError> {
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(root)
            .map_err(io_err("create", root))?;
        for item in std::fs::read_dir(root).map_err(io_err("list", root))? {
            let item = item.map_err(io_err("list", root))?;
            if item
                .file_name()
                .to_string_lossy()
                .starts_with(STAGING_PREFIX)
            {
                let _ = std::fs::remove_dir_all(item.path());
            }
        }
        Ok(SnapshotArea {
            root: root.to_path_buf(),
        })
    }

    /// Starts snapshot `id`: an empty private staging directory.
    pub fn stage(&self, id: &str) -> Result<Staging, SnapshotError> {
        check_id(id)?;
        if self.root.join(id).exists() {
            return Err(SnapshotError::Exists(id.to_string()));
        }
        let dir = self.root.join(format!("{STAGING_PREFIX}{id}"));
        make_private_dir(&dir)?;
        let staging = Staging {
            id: id.to_string(),
            dir,
            committed: false,
        };
        make_private_dir(&staging.data_dir())?;
        Ok(staging)
    }

    /// Finishes a snapshot: hashes every file the backend wrote, writes the manifest (synced),
    /// and renames the staging directory into place. Returns the manifest and its SHA-256 (keep
    /// it in the record: [`SnapshotArea::verified`] checks the manifest against it).
    pub fn commit(
        &self,
        mut staging: Staging,
        origin: SnapshotOrigin,
        created_ms: i64,
    ) -> Result<(Manifest, String), SnapshotError> {
        sync_tree(&staging.data_dir())?;
        let entries = manifest::scan(&staging.data_dir())?;
        let manifest = Manifest {
            version: MANIFEST_VERSION,
            snapshot_id: staging.id.clone(),
            origin,
            created_ms,
            entries,
        };
        let bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| SnapshotError::Io {
            what: "encode the manifest of",
            path: staging.dir.clone(),
            source: std::io::Error::other(e),
        })?;
        let path = staging.dir.join(MANIFEST);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err("write", &path))?;
        file.write_all(&bytes).map_err(io_err("write", &path))?;
        file.sync_all().map_err(io_err("sync", &path))?;
        let dest = self.root.join(&staging.id);
        std::fs::rename(&staging.dir, &dest).map_err(io_err("move into place", &dest))?;
        staging.committed = true;
        if let Ok(dir) = std::fs::File::open(&self.root) {
            let _ = dir.sync_all();
        }
        Ok((manifest, manifest::sha256_hex(&bytes)))
    }

    /// The data directory of snapshot `id` once it has been checked: its manifest's SHA-256 is
    /// `manifest_sha256` (from the record), and its tree is exactly what the manifest lists.
    /// Anything else (a file truncated, grown, rewritten, added or removed; the manifest
    /// edited) is [`SnapshotError::Tampered`].
    pub fn verified(
        &self,
        id: &str,
        manifest_sha256: &str,
    ) -> Result<(PathBuf, Manifest), SnapshotError> {
        check_id(id)?;
        let dir = self.root.join(id);
        if !dir.is_dir() {
            return Err(SnapshotError::Missing { id: id.to_string() });
        }
        let path = dir.join(MANIFEST);
        let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SnapshotError::Tampered {
                id: id.to_string(),
                why: "its manifest is gone".into(),
            },
            _ => SnapshotError::Io {
                what: "read",
                path: path.clone(),
                source: e,
            },
        })?;
        if manifest::sha256_hex(&bytes) != manifest_sha256 {
            return Err(SnapshotError::Tampered {
                id: id.to_string(),
                why: "its manifest is not the one recorded when it was taken".into(),
            });
        }
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|e| SnapshotError::Tampered {
                id: id.to_string(),
                why: format!("its manifest cannot be read ({e})"),
            })?;
        if manifest.version != MANIFEST_VERSION || manifest.snapshot_id != id {
            return Err(SnapshotError::Tampered {
                id: id.to_string(),
                why: "its manifest names another snapshot or format".into(),
            });
        }
        let data = dir.join(DATA);
        manifest::verify(id, &data, &manifest)?;
        Ok((data, manifest))
    }

    /// Deletes snapshot `id` (nothing if it does not exist).
    pub fn remove(&self, id: &str) -> Result<(), SnapshotError> {
        check_id(id)?;
        let dir = self.root.join(id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(SnapshotError::Io {
                what: "delete",
                path: dir,
                source: e,
            }),
        }
    }

    /// The snapshot directories on disk (ids), for checks and tests.
    pub fn ids_on_disk(&self) -> Result<Vec<String>, SnapshotError> {
        let mut ids = Vec::new();
        for item in std::fs::read_dir(&self.root).map_err(io_err("list", &self.root))? {
            let item = item.map_err(io_err("list", &self.root))?;
            ids.push(item.file_name().to_string_lossy().into_owned());
        }
        ids.sort();
        Ok(ids)
    }

    /// The snapshots directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Syncs every regular file under `root` (a backend may not have), so the rename publishes
/// durable data.
fn sync_tree(root: &Path) -> Result<(), SnapshotError> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for item in std::fs::read_dir(&dir).map_err(io_err("list", &dir))? {
            let item = item.map_err(io_err("list", &dir))?;
            let kind = item.file_type().map_err(io_err("inspect", &dir))?;
            let path = item.path();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let f = std::fs::File::open(&path).map_err(io_err("read", &path))?;
                f.sync_all().map_err(io_err("sync", &path))?;
            }
        }
    }
    Ok(())
}
