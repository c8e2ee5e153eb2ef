//! What the store records about a template beside its root tree.

use airlock_runtime::backend::TemplateDefaults;
use serde::{Deserialize, Serialize};

/// Where a template came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum TemplateSource {
    /// Imported from an OCI image (layout directory or `docker save` tarball).
    OciImage {
        /// The file or directory it was imported from.
        path: String,
        /// The digest of the image manifest (`sha256:…`), or of the config for a legacy
        /// `docker save` tarball that has no manifest blob.
        image_digest: String,
    },
    /// Built from a spec file.
    Spec {
        /// The digest of the spec's content and the inputs it names.
        spec_digest: String,
    },
    /// Stored from a directory tree as it was.
    Tree { path: String },
}

/// A stored template's record (`template.json` beside its root).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateMeta {
    /// The content digest of the root tree and the defaults (`sha256:…`).
    pub digest: String,
    pub source: TemplateSource,
    pub defaults: TemplateDefaults,
    /// Bytes of file content in the root tree.
    pub bytes: u64,
    /// Number of entries in the root tree.
    pub entries: u64,
    /// Seconds since the epoch when it was stored.
    pub created: u64,
}
