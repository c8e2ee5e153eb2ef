//! A COPY step's uploaded archive (the SDK's tar, gzipped or not), read once as data: no path
//! from it ever names a host file. Regular files are written to numbered files in the build's
//! own directory; directories and symlinks are kept as records, recreated later *inside* the
//! build box. Refused: `..`, absolute paths, hard links, devices, FIFOs, an entry below a
//! symlink of the same archive, a path twice, and more unpacked bytes than the cap.
//!
//! The SDK names the upload by a SHA-256 it computed over the files it archived (E2B's
//! `filesHash`: `COPY <src> <dest>`, then per file its relative path, `st_mode` in decimal,
//! size and content, or a symlink's target). The same hash is recomputed here from the
//! archive, so an upload that does not hold what its hash claims is refused. The Python SDK
//! leaves a directory's size out; the JS SDK hashes the directory's on-disk size, which a tar
//! does not carry: the common 4096 is tried for it.

use flate2::read::GzDecoder;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// Why an archive is refused.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("the uploaded archive is refused: entry {path:?} {why}")]
    Entry { path: String, why: String },
    #[error(
        "the uploaded archive is not a readable tar ({0}); upload the SDK's archive as it made it"
    )]
    Unreadable(String),
    #[error("the uploaded archive unpacks to more than {max} bytes; copy fewer or smaller files")]
    TooBig { max: u64 },
    #[error("the uploaded files do not match the step's filesHash {expected}: upload them again (the archive must hold exactly the files the hash was computed over)")]
    HashMismatch { expected: String },
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What one archive entry becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyEntry {
    Dir {
        rel: String,
        mode: u32,
    },
    /// A regular file, its content kept in `stored` (a numbered file of the build's).
    File {
        rel: String,
        mode: u32,
        stored: PathBuf,
    },
    Symlink {
        rel: String,
        target: String,
    },
}

impl CopyEntry {
    /// The entry's path relative to the SDK's context directory.
    pub fn rel(&self) -> &str {
        match self {
            CopyEntry::Dir { rel, .. }
            | CopyEntry::File { rel, .. }
            | CopyEntry::Symlink { rel, .. } => rel,
        }
    }
}

/// The two ways the SDKs hash a directory (see the module doc).
struct FilesHash {
    python: Sha256,
    js: Sha256,
}

impl FilesHash {
    fn new(src: &str, dest: &str) -> FilesHash {
        let head = format!("COPY {src} {dest}");
        let mut h = Sha256::new();
        h.update(head.as_bytes());
        FilesHash {
            python: h.clone(),
            js: h,
        }
    }

    fn both(&mut self, bytes: &[u8]) {
        self.python.update(bytes);
        self.js.update(bytes);
    }

    fn entry(&mut self, rel: &str, st_mode: u32, size: Option<u64>) {
        self.both(rel.as_bytes());
        self.both(st_mode.to_string().as_bytes());
        match size {
            Some(n) => self.both(n.to_string().as_bytes()),
            None => self.js.update(b"4096"),
        }
    }

    fn matches(self, expected: &str) -> bool {
        let hex = |h: Sha256| {
            h.finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        let expected = expected.to_ascii_lowercase();
        hex(self.python) == expected || hex(self.js) == expected
    }
}

/// Reads the archive at `upload` for the COPY step `src` → `dest` whose SDK hash is
/// `files_hash`, writing file contents under `store_dir` (numbered from `first`), at most
/// `max_bytes` of them. The entries come back in the archive's order.
pub fn read(
    upload: &Path,
    store_dir: &Path,
    first: usize,
    copy: (&str, &str, &str),
    max_bytes: u64,
) -> Result<Vec<CopyEntry>, ArchiveError> {
    let file = std::fs::File::open(upload).map_err(|source| ArchiveError::Io {
        what: "read",
        path: upload.to_path_buf(),
        source,
    })?;
    read_from(file, store_dir, first, copy, max_bytes)
}

/// [`read`] from any reader (the fuzz target's way in).
pub fn read_from(
    input: impl Read,
    store_dir: &Path,
    first: usize,
    copy: (&str, &str, &str),
    max_bytes: u64,
) -> Result<Vec<CopyEntry>, ArchiveError> {
    let (src, dest, files_hash) = copy;
    let io = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| ArchiveError::Io { what, path, source }
    };
    let mut reader = BufReader::new(input);
    let gzipped = reader
        .fill_buf()
        .map_err(|e| ArchiveError::Unreadable(e.to_string()))?
        .starts_with(&[0x1f, 0x8b]);
    let input: Box<dyn Read + '_> = match gzipped {
        true => Box::new(GzDecoder::new(reader)),
        false => Box::new(reader),
    };
    let mut archive = tar::Archive::new(input);
    let mut hash = FilesHash::new(src, dest);
    let mut out: Vec<CopyEntry> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut links: Vec<String> = Vec::new();
    let mut total = 0u64;
    let entries = archive
        .entries()
        .map_err(|e| ArchiveError::Unreadable(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| ArchiveError::Unreadable(e.to_string()))?;
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let refuse = |why: &str| ArchiveError::Entry {
            path: shown.clone(),
            why: why.to_string(),
        };
        let kind = entry.header().entry_type();
        if matches!(
            kind,
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader
        ) {
            continue;
        }
        let rel = relative(&raw).map_err(&refuse)?;
        if links
            .iter()
            .any(|l| rel.starts_with(l.as_str()) && rel.as_bytes().get(l.len()) == Some(&b'/'))
        {
            return Err(refuse("lies below a symlink of the same archive"));
        }
        if !seen.insert(rel.clone()) {
            return Err(refuse("appears twice"));
        }
        let perm = entry
            .header()
            .mode()
            .map_err(|e| ArchiveError::Unreadable(e.to_string()))?
            & 0o7777;
        match kind {
            tar::EntryType::Directory => {
                hash.entry(&rel, 0o040000 | perm, None);
                out.push(CopyEntry::Dir { rel, mode: perm });
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = entry.size();
                total = total.saturating_add(size);
                if total > max_bytes {
                    return Err(ArchiveError::TooBig { max: max_bytes });
                }
                hash.entry(&rel, 0o100000 | perm, Some(size));
                let stored = store_dir.join(format!("{}", first + out.len()));
                let mut f = std::fs::File::create(&stored).map_err(io("write", &stored))?;
                let mut buf = [0u8; 64 * 1024];
                let mut copied = 0u64;
                loop {
                    let n = entry
                        .read(&mut buf)
                        .map_err(|e| ArchiveError::Unreadable(e.to_string()))?;
                    if n == 0 {
                        break;
                    }
                    copied += n as u64;
                    hash.both(&buf[..n]);
                    f.write_all(&buf[..n]).map_err(io("write", &stored))?;
                }
                if copied != size {
                    return Err(refuse("is shorter than its header says"));
                }
                out.push(CopyEntry::File {
                    rel,
                    mode: perm,
                    stored,
                });
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name_bytes()
                    .map(|t| String::from_utf8_lossy(&t).into_owned())
                    .ok_or_else(|| refuse("is a symlink without a target"))?;
                if target.is_empty() || target.contains('\0') {
                    return Err(refuse("is a symlink without a usable target"));
                }
                hash.entry(&rel, 0o120000 | perm, Some(target.len() as u64));
                hash.both(target.as_bytes());
                links.push(rel.clone());
                out.push(CopyEntry::Symlink { rel, target });
            }
            tar::EntryType::Link => {
                return Err(refuse(
                    "is a hard link; copy it as a file (the SDKs' archives hold none)",
                ))
            }
            _ => return Err(refuse("is not a file, directory or symlink")),
        }
    }
    if !hash.matches(files_hash) {
        return Err(ArchiveError::HashMismatch {
            expected: files_hash.to_string(),
        });
    }
    Ok(out)
}

/// An archive path as the SDK made it (relative to its context directory), checked: no
/// absolute path, no `..`, no empty or NUL-holding path; `./` and a trailing `/` dropped.
fn relative(raw: &[u8]) -> Result<String, &'static str> {
    let text = std::str::from_utf8(raw).map_err(|_| "is not UTF-8")?;
    if text.contains('\0') {
        return Err("holds a NUL byte");
    }
    if text.starts_with('/') {
        return Err("is an absolute path; the SDKs archive paths relative to the context");
    }
    let mut parts = Vec::new();
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("climbs out of the context with `..`"),
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err("is the context directory itself");
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
