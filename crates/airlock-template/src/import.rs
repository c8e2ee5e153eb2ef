//! `airlock template import`: an OCI image (layout directory or `docker save` / `podman save`
//! tarball) becomes a stored template. Layers are applied in order into a staged tree that is
//! stored only once every layer applied and every digest matched; any failure discards it.

use crate::digest::hex;
use crate::error::{io_err, TemplateError};
use crate::layer::{self, DirModes};
use crate::meta::TemplateSource;
use crate::oci::{read_layout, ImageLayout};
use crate::store::{valid_name, StoredTemplate, TemplateStore};
use crate::tree::{relative, PlaceError, Tree};
use airlock_runtime::backend::TemplateDefaults;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::cell::{Cell, RefCell};
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// How to import.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The name to store it under (default: the image's own tag, else the file's name).
    pub name: Option<String>,
    /// The most bytes the image may unpack to, over all layers (archive headers included): a
    /// decompression bomb stops here.
    pub max_bytes: u64,
}

impl Default for ImportOptions {
    fn default() -> ImportOptions {
        ImportOptions {
            name: None,
            max_bytes: 16 << 30,
        }
    }
}

/// What an import did, including what it made harmless.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    pub layers: usize,
    pub entries: u64,
    /// Bytes of file content written.
    pub bytes: u64,
    /// Entries left out, with why (device nodes).
    pub dropped: Vec<String>,
    /// Set-user-ID and set-group-ID bits cleared.
    pub setid_cleared: u64,
    /// The image has apt (`/etc/apt/apt.conf.d`, a real directory): airlock added its
    /// configuration for the box's root (apt's downloads run as root, not `_apt`), as it does
    /// in the Debian templates it builds.
    pub apt_root_conf: bool,
}

/// Imports the image at `path` into `store`.
pub fn import(
    store: &TemplateStore,
    path: &Path,
    opts: &ImportOptions,
) -> Result<(StoredTemplate, ImportReport), TemplateError> {
    if let Some(n) = &opts.name {
        if !valid_name(n) || n == "host" {
            return Err(TemplateError::BadName(n.clone()));
        }
    }
    let meta = std::fs::metadata(path).map_err(io_err("open the image", path))?;
    let staged = store.stage()?;
    let budget = Budget::new(opts.max_bytes);
    let dir = if meta.is_dir() {
        path.to_path_buf()
    } else {
        let scratch = staged.scratch();
        unpack_archive(path, &scratch, &budget)?;
        scratch
    };
    let image = read_layout(&dir)?;
    let name = match &opts.name {
        Some(n) => n.clone(),
        None => default_name(path, image.ref_name.as_deref()),
    };
    let tree = Tree::new(staged.rootfs());
    let mut report = ImportReport::default();
    let mut dir_modes = DirModes::new();
    for (i, l) in image.layers.iter().enumerate() {
        apply_layer(
            &tree,
            i + 1,
            l,
            &image.diff_ids[i],
            &budget,
            &mut report,
            &mut dir_modes,
        )?;
        report.layers += 1;
    }
    layer::finish_dirs(&tree, &dir_modes).map_err(io_err("set modes in", tree.root()))?;
    // `user="root"` in a box has no capabilities, so apt could not switch to `_apt`: only an
    // image whose apt configuration directory is a chain of real directories gets the file
    // (one behind a symlink is left alone, never written through).
    let conf = std::path::Path::new(crate::build::APT_ROOT_CONF_PATH);
    if tree.locate(conf, false).is_ok() {
        crate::build::apt_as_box_root(&tree)?;
        report.apt_root_conf = true;
    }
    let defaults = defaults(&image);
    let source = TemplateSource::OciImage {
        path: path.display().to_string(),
        image_digest: image.image_digest.clone(),
    };
    let stored = store.commit(staged, &name, source, defaults)?;
    Ok((stored, report))
}

fn defaults(image: &ImageLayout) -> TemplateDefaults {
    let Some(c) = &image.config.config else {
        return TemplateDefaults::default();
    };
    let env = c
        .env
        .iter()
        .flatten()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut cmd: Vec<String> = c.entrypoint.clone().unwrap_or_default();
    cmd.extend(c.cmd.clone().unwrap_or_default());
    TemplateDefaults {
        env,
        cwd: c.working_dir.clone().filter(|d| d.starts_with('/')),
        user: c.user.clone().filter(|u| !u.is_empty()),
        cmd,
        backend: None,
    }
}

/// `library/python:3.12` → `python-3.12`… made a valid name; else the file's stem.
fn default_name(path: &Path, tag: Option<&str>) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':') {
                    c
                } else {
                    '-'
                }
            })
            .collect::<String>()
            .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
            .chars()
            .take(128)
            .collect()
    };
    let from_tag = tag.map(|t| clean(t.rsplit('/').next().unwrap_or(t)));
    let from_file = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .map(|n| clean(n.trim_end_matches(".tar").trim_end_matches(".tar.gz")));
    from_tag
        .filter(|n| valid_name(n))
        .or(from_file.filter(|n| valid_name(n) && n != "host"))
        .unwrap_or_else(|| "image".into())
}

fn apply_layer(
    tree: &Tree,
    index: usize,
    l: &crate::oci::LayerRef,
    diff_id: &str,
    budget: &Budget,
    report: &mut ImportReport,
    dir_modes: &mut DirModes,
) -> Result<(), TemplateError> {
    let file = std::fs::File::open(&l.path).map_err(io_err("read layer", &l.path))?;
    let blob_hash = Rc::new(RefCell::new(Sha256::new()));
    let diff_hash = Rc::new(RefCell::new(Sha256::new()));
    // A compressed layer is told by its first bytes (gzip or zstd), whatever its media type
    // says. An uncompressed layer's blob is its tar stream: one digest serves as both.
    let mut probe = BufReader::with_capacity(1 << 16, file);
    let head = probe.fill_buf().map_err(io_err("read layer", &l.path))?;
    let gzip = head.starts_with(&[0x1f, 0x8b]);
    let zstd = head.starts_with(&crate::zstd_layer::MAGIC);
    let compressed = gzip || zstd;
    let blob = BufReader::with_capacity(
        1 << 16,
        Hashing::new(probe, if compressed { &blob_hash } else { &diff_hash }).or_skip(!compressed),
    );
    let plain: Box<dyn Read> = match (gzip, zstd) {
        (true, _) => Box::new(flate2::read::GzDecoder::new(blob)),
        (_, true) => Box::new(crate::zstd_layer::ZstdFrames::new(blob)),
        _ => Box::new(blob),
    };
    let mut stream = budget.reader(Hashing::new(plain, &diff_hash));
    let applied = layer::apply(tree, index, &mut stream, report, dir_modes);
    let drained = applied.and_then(|()| {
        // The rest (end-of-archive blocks, padding) is part of both digests.
        io::copy(&mut stream, &mut io::sink())
            .map(|_| ())
            .map_err(|e| TemplateError::Malformed(format!("layer {index}: {e}")))
    });
    if budget.tripped() {
        return Err(TemplateError::TooLarge { cap: budget.cap });
    }
    drained?;
    drop(stream);
    let diff = format!("sha256:{}", hex(&diff_hash.take().finalize()));
    if let Some(expected) = &l.digest {
        let actual = match compressed {
            true => format!("sha256:{}", hex(&blob_hash.take().finalize())),
            false => diff.clone(),
        };
        if &actual != expected {
            return Err(TemplateError::DigestMismatch {
                what: format!("layer {index}"),
                expected: expected.clone(),
                actual,
            });
        }
    }
    let actual = diff;
    if actual != diff_id {
        return Err(TemplateError::DigestMismatch {
            what: format!("layer {index} (uncompressed, rootfs.diff_ids)"),
            expected: diff_id.to_string(),
            actual,
        });
    }
    Ok(())
}

/// Unpacks the outer archive of a `docker save` tarball: its regular files (and symlinks
/// between them, as links to the same content), nothing that leaves `dest`.
fn unpack_archive(path: &Path, dest: &Path, budget: &Budget) -> Result<(), TemplateError> {
    std::fs::create_dir_all(dest).map_err(io_err("create", dest))?;
    let file = std::fs::File::open(path).map_err(io_err("read", path))?;
    let mut buf = BufReader::new(file);
    let head = buf.fill_buf().map_err(io_err("read", path))?;
    let plain: Box<dyn Read> = if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(buf))
    } else {
        Box::new(buf)
    };
    let tree = Tree::new(dest.to_path_buf());
    let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
    let not_image = || TemplateError::NotAnImage(path.to_path_buf());
    let mut archive = tar::Archive::new(budget.reader(plain));
    let entries = archive.entries().map_err(|_| not_image())?;
    for entry in entries {
        if budget.tripped() {
            return Err(TemplateError::TooLarge { cap: budget.cap });
        }
        let mut entry = entry.map_err(|_| {
            if budget.tripped() {
                TemplateError::TooLarge { cap: budget.cap }
            } else {
                not_image()
            }
        })?;
        let raw = entry.path_bytes().into_owned();
        let refused = |why: String| {
            TemplateError::Malformed(format!(
                "the tarball's member {:?} is refused: {why}",
                String::from_utf8_lossy(&raw)
            ))
        };
        let Some(rel) = relative(&raw).map_err(|e| match e {
            PlaceError::Refused(why) => refused(why),
            PlaceError::Io(e) => refused(e.to_string()),
        })?
        else {
            continue;
        };
        let host = tree.locate(&rel, true).map_err(|e| match e {
            PlaceError::Refused(why) => refused(why),
            PlaceError::Io(e) => io_err("unpack", dest)(e),
        })?;
        match entry.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                Tree::clear(&host).map_err(io_err("unpack", &host))?;
                let mut f = std::fs::File::create_new(&host).map_err(io_err("unpack", &host))?;
                io::copy(&mut entry, &mut f).map_err(|e| {
                    if budget.tripped() {
                        TemplateError::TooLarge { cap: budget.cap }
                    } else {
                        io_err("unpack", &host)(e)
                    }
                })?;
            }
            tar::EntryType::Directory if !host.is_dir() => {
                std::fs::create_dir(&host).map_err(io_err("unpack", &host))?;
            }
            tar::EntryType::Symlink | tar::EntryType::Link => {
                let target = entry.link_name_bytes().unwrap_or_default().into_owned();
                let base = if entry.header().entry_type() == tar::EntryType::Link {
                    PathBuf::new()
                } else {
                    rel.parent().map(Path::to_path_buf).unwrap_or_default()
                };
                let joined = base.join(std::ffi::OsStr::new(
                    std::str::from_utf8(&target)
                        .map_err(|_| refused("a link to a non-UTF-8 path".into()))?,
                ));
                let resolved = lexical(&joined)
                    .ok_or_else(|| refused("a link that leaves the tarball".into()))?;
                links.push((rel, resolved));
            }
            _ => {}
        }
    }
    if budget.tripped() {
        return Err(TemplateError::TooLarge { cap: budget.cap });
    }
    for (link, target) in links {
        let t = dest.join(&target);
        let l = dest.join(&link);
        if std::fs::symlink_metadata(&t).is_ok_and(|m| m.is_file()) {
            Tree::clear(&l).map_err(io_err("unpack", &l))?;
            std::fs::hard_link(&t, &l).map_err(io_err("unpack", &l))?;
        }
    }
    Ok(())
}

/// `a/b/../c` → `a/c`; `None` when it climbs above the start.
fn lexical(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::Normal(n) => out.push(n),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The bytes an import may still unpack.
struct Budget {
    cap: u64,
    left: Rc<Cell<u64>>,
    tripped: Rc<Cell<bool>>,
}

impl Budget {
    fn new(cap: u64) -> Budget {
        Budget {
            cap,
            left: Rc::new(Cell::new(cap)),
            tripped: Rc::new(Cell::new(false)),
        }
    }

    fn reader<R: Read>(&self, inner: R) -> Capped<R> {
        Capped {
            inner,
            left: Rc::clone(&self.left),
            tripped: Rc::clone(&self.tripped),
        }
    }

    fn tripped(&self) -> bool {
        self.tripped.get()
    }
}

struct Capped<R> {
    inner: R,
    left: Rc<Cell<u64>>,
    tripped: Rc<Cell<bool>>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.left.get();
        if left == 0 {
            // One byte more would be over the cap: find out whether there is one.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.tripped.set(true);
                    Err(io::Error::other("the size cap was reached"))
                }
            };
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left.set(left - n as u64);
        Ok(n)
    }
}

struct Hashing<R> {
    inner: R,
    hash: Option<Rc<RefCell<Sha256>>>,
}

impl<R> Hashing<R> {
    fn new(inner: R, hash: &Rc<RefCell<Sha256>>) -> Hashing<R> {
        Hashing {
            inner,
            hash: Some(Rc::clone(hash)),
        }
    }

    /// Hashes nothing when `skip` (the same bytes are hashed further along).
    fn or_skip(mut self, skip: bool) -> Hashing<R> {
        if skip {
            self.hash = None;
        }
        self
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = &self.hash {
            h.borrow_mut().update(&buf[..n]);
        }
        Ok(n)
    }
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;
