//! The content digest of a template: one sha256 over every entry of its root tree (path, kind,
//! permission bits, file contents, link target) in a fixed order, then its defaults. Owners and
//! times are not part of it: the store flattens owners and a template's identity is its content.

use crate::error::{io_err, TemplateError};
use airlock_runtime::backend::TemplateDefaults;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// What [`tree_digest`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeSummary {
    /// `sha256:<hex>`.
    pub digest: String,
    /// Bytes of regular-file content.
    pub bytes: u64,
    /// Entries below the root (the root itself not counted).
    pub entries: u64,
}

/// Digests the tree at `root` and `defaults`. Never follows a symlink.
pub fn tree_digest(root: &Path, defaults: &TemplateDefaults) -> Result<TreeSummary, TemplateError> {
    let mut h = Sha256::new();
    let mut sum = TreeSummary {
        digest: String::new(),
        bytes: 0,
        entries: 0,
    };
    let meta = std::fs::symlink_metadata(root).map_err(io_err("read", root))?;
    h.update(format!("root {:o}\n", meta.mode() & 0o7777));
    walk(root, Path::new(""), &mut h, &mut sum)?;
    let d = serde_json::to_vec(defaults).map_err(|e| TemplateError::Malformed(e.to_string()))?;
    h.update(b"defaults ");
    h.update((d.len() as u64).to_le_bytes());
    h.update(&d);
    sum.digest = format!("sha256:{}", hex(&h.finalize()));
    Ok(sum)
}

fn walk(
    dir: &Path,
    rel: &Path,
    h: &mut Sha256,
    sum: &mut TreeSummary,
) -> Result<(), TemplateError> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(io_err("list", dir))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(io_err("list", dir))?;
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    for name in names {
        let path = dir.join(&name);
        let rel = rel.join(&name);
        let meta = std::fs::symlink_metadata(&path).map_err(io_err("read", &path))?;
        let ft = meta.file_type();
        let kind = if ft.is_dir() {
            b'd'
        } else if ft.is_symlink() {
            b'l'
        } else if ft.is_file() {
            b'f'
        } else if ft.is_fifo() {
            b'p'
        } else {
            b'?'
        };
        sum.entries += 1;
        let rel_bytes = rel.as_os_str().as_bytes();
        h.update([kind]);
        h.update((rel_bytes.len() as u64).to_le_bytes());
        h.update(rel_bytes);
        h.update((meta.mode() & 0o7777).to_le_bytes());
        match kind {
            b'f' => {
                sum.bytes += meta.len();
                h.update(file_digest(&path)?);
            }
            b'l' => {
                let t = std::fs::read_link(&path).map_err(io_err("read link", &path))?;
                let t = t.as_os_str().as_bytes();
                h.update((t.len() as u64).to_le_bytes());
                h.update(t);
            }
            b'd' => walk(&path, &rel, h, sum)?,
            _ => {}
        }
    }
    Ok(())
}

fn file_digest(path: &Path) -> Result<[u8; 32], TemplateError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io_err("read", path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(io_err("read", path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().into())
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
