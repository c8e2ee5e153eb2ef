//! The template store under the data directory:
//!
//! ```text
//! <data-dir>/templates/images/<hex>/rootfs         the read-only root tree
//! <data-dir>/templates/images/<hex>/template.json  its TemplateMeta
//! <data-dir>/templates/names/<name>                {"digest": "sha256:<hex>"}
//! <data-dir>/templates/staging/<n>/                trees being made (never trusted)
//! ```
//!
//! A tree is made under `staging/`, digested, then renamed into `images/` in one step; a name is
//! replaced by renaming a complete file over it. A crash leaves at most a staging directory,
//! which the next open removes.

use crate::digest::tree_digest;
use crate::error::{io_err, TemplateError};
use crate::lease::{flock, open_dir};
use crate::meta::{TemplateMeta, TemplateSource};
use airlock_runtime::backend::{ImageTemplate, Template, TemplateDefaults};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A content-addressed store of templates.
#[derive(Debug, Clone)]
pub struct TemplateStore {
    root: PathBuf,
}

/// One stored template, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredTemplate {
    pub name: String,
    pub rootfs: PathBuf,
    #[serde(flatten)]
    pub meta: TemplateMeta,
}

impl StoredTemplate {
    /// What a backend starts from.
    pub fn template(&self) -> Template {
        Template::Image(ImageTemplate {
            name: self.name.clone(),
            digest: self.meta.digest.clone(),
            rootfs: self.rootfs.clone(),
            defaults: self.meta.defaults.clone(),
        })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NameRecord {
    digest: String,
}

/// A tree being made; removed on drop unless stored.
#[derive(Debug)]
pub struct Staged {
    dir: PathBuf,
}

impl Staged {
    /// Where the root tree goes.
    pub fn rootfs(&self) -> PathBuf {
        self.dir.join("rootfs")
    }

    /// A scratch directory beside the tree (removed with it), e.g. for an unpacked archive.
    pub fn scratch(&self) -> PathBuf {
        self.dir.join("scratch")
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if self.dir.exists() {
            let _ = remove_tree(&self.dir);
        }
    }
}

static STAGE_SEQ: AtomicU64 = AtomicU64::new(0);

/// Whether `name` may name a template (it becomes a file name in the store).
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'))
}

fn check_name(name: &str) -> Result<(), TemplateError> {
    if valid_name(name) && name != "host" {
        Ok(())
    } else {
        Err(TemplateError::BadName(name.to_string()))
    }
}

fn hex_of(digest: &str) -> Result<&str, TemplateError> {
    digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| TemplateError::Malformed(format!("{digest:?} is not a sha256 digest")))
}

impl TemplateStore {
    /// Opens (creating it if needed) the store under `data_dir/templates`, and removes what an
    /// earlier crash left half-made.
    pub fn open(data_dir: &Path) -> Result<TemplateStore, TemplateError> {
        let root = data_dir.join("templates");
        for sub in ["images", "names", "staging"] {
            let d = root.join(sub);
            std::fs::create_dir_all(&d).map_err(io_err("create", &d))?;
        }
        let store = TemplateStore { root };
        store.clean_staging();
        Ok(store)
    }

    /// The store under `data_dir/templates` as it is, for lookups (`run --template`, a
    /// policy's `template`): nothing is created or cleaned. A missing store has no templates,
    /// and a lookup says so; before, a lookup through a mistyped `--data-dir` made that whole
    /// path.
    pub fn existing(data_dir: &Path) -> TemplateStore {
        TemplateStore {
            root: data_dir.join("templates"),
        }
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    fn clean_staging(&self) {
        let Ok(entries) = std::fs::read_dir(self.root.join("staging")) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // Only trees of processes that are gone: `<pid>-<n>`.
            let pid = name.split('-').next().and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = pid {
                // SAFETY: kill with signal 0 only checks whether the process exists.
                let alive = unsafe { libc::kill(pid, 0) } == 0
                    || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
                if !alive {
                    let _ = remove_tree(&e.path());
                }
            }
        }
    }

    /// A new empty staging tree.
    pub fn stage(&self) -> Result<Staged, TemplateError> {
        let n = STAGE_SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = self
            .root
            .join("staging")
            .join(format!("{}-{n}", std::process::id()));
        if dir.exists() {
            remove_tree(&dir)?;
        }
        std::fs::create_dir(&dir).map_err(io_err("create", &dir))?;
        // Searchable, not listable: a build box (another uid when root starts it) opens its
        // kept layer below.
        set_mode(&dir, 0o711)?;
        let rootfs = dir.join("rootfs");
        std::fs::create_dir(&rootfs).map_err(io_err("create", &rootfs))?;
        set_mode(&rootfs, 0o755)?;
        Ok(Staged { dir })
    }

    /// Stores the staged tree under `name` (replacing what the name meant before). An identical
    /// tree already stored is reused.
    pub fn commit(
        &self,
        staged: Staged,
        name: &str,
        source: TemplateSource,
        defaults: TemplateDefaults,
    ) -> Result<StoredTemplate, TemplateError> {
        check_name(name)?;
        let rootfs = staged.rootfs();
        let sum = tree_digest(&rootfs, &defaults)?;
        let meta = TemplateMeta {
            digest: sum.digest.clone(),
            source,
            defaults,
            bytes: sum.bytes,
            entries: sum.entries,
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        };
        let image = self.image_dir(&sum.digest)?;
        if !image.exists() {
            let scratch = staged.scratch();
            if scratch.exists() {
                remove_tree(&scratch)?;
            }
            write_json(&staged.dir.join("template.json"), &meta)?;
            std::fs::rename(&staged.dir, &image).map_err(io_err("store", &image))?;
        }
        drop(staged);
        let previous = self.digest_of(name).ok();
        write_json(
            &self.name_file(name),
            &NameRecord {
                digest: sum.digest.clone(),
            },
        )?;
        if let Some(old) = previous.filter(|d| *d != sum.digest) {
            // The old tree goes once nothing names or holds it.
            let _ = self.collect(&old);
        }
        self.inspect(name)
    }

    /// Makes `name` mean the template `existing` means (one more name for the same tree;
    /// what `name` meant before is collected when nothing else names or holds it).
    pub fn name_as(&self, existing: &str, name: &str) -> Result<StoredTemplate, TemplateError> {
        check_name(name)?;
        let digest = self.digest_of(existing)?;
        let previous = self.digest_of(name).ok();
        write_json(
            &self.name_file(name),
            &NameRecord {
                digest: digest.clone(),
            },
        )?;
        if let Some(old) = previous.filter(|d| *d != digest) {
            let _ = self.collect(&old);
        }
        self.inspect(name)
    }

    /// The template `name` as a backend needs it; `host` is the host's own system dirs.
    pub fn get(&self, name: &str) -> Result<Template, TemplateError> {
        if name == "host" {
            return Ok(Template::Host);
        }
        Ok(self.inspect(name)?.template())
    }

    /// What the store knows about `name`.
    pub fn inspect(&self, name: &str) -> Result<StoredTemplate, TemplateError> {
        if !valid_name(name) {
            return Err(TemplateError::BadName(name.to_string()));
        }
        let digest = self.digest_of(name)?;
        let image = self.image_dir(&digest)?;
        let meta_path = image.join("template.json");
        let meta: TemplateMeta = read_json(&meta_path)?;
        let rootfs = image.join("rootfs");
        if meta.digest != digest || !rootfs.is_dir() {
            return Err(TemplateError::Damaged {
                path: image,
                why: "its record does not match its name".into(),
            });
        }
        Ok(StoredTemplate {
            name: name.to_string(),
            rootfs,
            meta,
        })
    }

    /// Every stored template, by name.
    pub fn list(&self) -> Result<Vec<StoredTemplate>, TemplateError> {
        let mut out = Vec::new();
        for name in self.names()? {
            out.push(self.inspect(&name)?);
        }
        Ok(out)
    }

    /// The names in the store, sorted.
    pub fn names(&self) -> Result<Vec<String>, TemplateError> {
        let dir = self.root.join("names");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map_err(io_err("list", &dir))?
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| valid_name(n))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Removes the name `name`, and its tree when no other name uses it. Refused while a running
    /// box holds the template.
    pub fn remove(&self, name: &str) -> Result<(), TemplateError> {
        let digest = self.digest_of(name)?;
        let others = self
            .names()?
            .into_iter()
            .filter(|n| n != name)
            .any(|n| self.digest_of(&n).is_ok_and(|d| d == digest));
        if others {
            let f = self.name_file(name);
            return std::fs::remove_file(&f).map_err(io_err("remove", f));
        }
        let image = self.image_dir(&digest)?;
        let dir = open_dir(&image.join("rootfs"))?;
        if flock(&dir, libc::LOCK_EX | libc::LOCK_NB).is_err() {
            return Err(TemplateError::InUse {
                name: name.to_string(),
            });
        }
        let f = self.name_file(name);
        std::fs::remove_file(&f).map_err(io_err("remove", f))?;
        self.discard(&image)
    }

    /// Removes the tree of `digest` if no name refers to it and no box holds it.
    fn collect(&self, digest: &str) -> Result<(), TemplateError> {
        let named = self
            .names()?
            .into_iter()
            .any(|n| self.digest_of(&n).is_ok_and(|d| d == digest));
        if named {
            return Ok(());
        }
        let image = self.image_dir(digest)?;
        let dir = open_dir(&image.join("rootfs"))?;
        if flock(&dir, libc::LOCK_EX | libc::LOCK_NB).is_err() {
            // A box still runs on it; a later removal of a template collects it.
            return Ok(());
        }
        self.discard(&image)
    }

    /// Moves an image out of `images/` in one step, then deletes it.
    fn discard(&self, image: &Path) -> Result<(), TemplateError> {
        let n = STAGE_SEQ.fetch_add(1, Ordering::Relaxed);
        let trash = self
            .root
            .join("staging")
            .join(format!("{}-{n}", std::process::id()));
        std::fs::rename(image, &trash).map_err(io_err("remove", image))?;
        remove_tree(&trash)
    }

    fn digest_of(&self, name: &str) -> Result<String, TemplateError> {
        let f = self.name_file(name);
        match std::fs::read(&f) {
            Ok(bytes) => serde_json::from_slice::<NameRecord>(&bytes)
                .map(|r| r.digest)
                .map_err(|e| TemplateError::Damaged {
                    path: f,
                    why: e.to_string(),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(TemplateError::NotFound {
                name: name.to_string(),
                known: self.names().unwrap_or_default(),
            }),
            Err(e) => Err(io_err("read", f)(e)),
        }
    }

    fn name_file(&self, name: &str) -> PathBuf {
        self.root.join("names").join(name)
    }

    fn image_dir(&self, digest: &str) -> Result<PathBuf, TemplateError> {
        Ok(self.root.join("images").join(hex_of(digest)?))
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<(), TemplateError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(io_err("chmod", path))
}

/// Writes `value` to `path` through a temporary file renamed over it.
fn write_json(path: &Path, value: &impl Serialize) -> Result<(), TemplateError> {
    let bytes =
        serde_json::to_vec_pretty(value).map_err(|e| TemplateError::Malformed(e.to_string()))?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(io_err("write", &tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err("write", path))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, TemplateError> {
    let bytes = std::fs::read(path).map_err(io_err("read", path))?;
    serde_json::from_slice(&bytes).map_err(|e| TemplateError::Damaged {
        path: path.to_path_buf(),
        why: e.to_string(),
    })
}

/// Deletes a tree the store made, first making its directories writable (images keep the
/// read-only directories they came with). Never follows a symlink.
pub(crate) fn remove_tree(path: &Path) -> Result<(), TemplateError> {
    fn open_up(dir: &Path) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    open_up(&e.path());
                }
            }
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            open_up(path);
            std::fs::remove_dir_all(path).map_err(io_err("remove", path))
        }
        Ok(_) => std::fs::remove_file(path).map_err(io_err("remove", path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("remove", path)(e)),
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
