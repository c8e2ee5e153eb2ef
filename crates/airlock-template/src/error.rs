//! What can go wrong with templates, in sentences that say how to fix it.

use std::io;
use std::path::PathBuf;

/// A template could not be stored, found, imported or removed.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("no template named {name:?}; the templates that exist are: {}", list(.known))]
    NotFound { name: String, known: Vec<String> },
    #[error("{0:?} is not a valid template name: use letters, digits, '.', '_', '-' and ':' (at most 128, starting with a letter or digit)")]
    BadName(String),
    #[error(
        "template {name:?} is in use by a running box; end the box first (`airlock sandbox list`)"
    )]
    InUse { name: String },
    #[error("the template store entry {} is damaged ({why}); remove it with `airlock template rm`", path.display())]
    Damaged { path: PathBuf, why: String },
    #[error("{} is neither an OCI image layout (a directory with index.json) nor a `docker save` tarball", .0.display())]
    NotAnImage(PathBuf),
    #[error("the image is malformed: {0}")]
    Malformed(String),
    #[error("{what} does not match its digest (expected {expected}, got {actual}): the image is corrupt or was tampered with")]
    DigestMismatch {
        what: String,
        expected: String,
        actual: String,
    },
    #[error("layer {layer}: entry {entry:?} refused: {why}")]
    Hostile {
        layer: usize,
        entry: String,
        why: String,
    },
    #[error("the image unpacks to more than the size cap of {cap} bytes (a decompression bomb, or a large image: raise --max-size)")]
    TooLarge { cap: u64 },
    #[error("{0}")]
    Unsupported(String),
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none (add one with `airlock template import` or `airlock template build`)".into()
    } else {
        names.join(", ")
    }
}

/// Wraps an io error with what was being done and where.
pub(crate) fn io_err(
    what: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(io::Error) -> TemplateError {
    let path = path.into();
    move |source| TemplateError::Io { what, path, source }
}
