//! Templates: read-only root filesystems that boxes start from, stored once under the data
//! directory and shared by every box that uses them.
//!
//! - [`TemplateStore`] keeps them content-addressed (`<data-dir>/templates/`): a template is
//!   added from a staged tree in one rename, so a box never sees a half-written one; names map
//!   to digests; a template a running box holds cannot be removed.
//! - [`import`] turns an OCI image layout or a `docker save` tarball into a template, applying
//!   layers with whiteouts and refusing or neutralising hostile archives without ever writing
//!   outside the staged tree.
//!
//! Backends get a [`Template`](airlock_runtime::backend::Template) from [`TemplateStore::get`]
//! and mount its root read-only under a per-box writable layer.

mod apply;
mod build;
mod digest;
mod error;
mod host_config;
mod import;
mod layer;
mod lease;
mod merge;
mod meta;
mod oci;
mod rootless;
mod spec;
mod store;
mod tree;
mod zstd_layer;

pub use apply::apply_template;
pub use build::{build, BuildBox, BuildOptions, BuildOutcome, AS_ROOT_FUNCTION, ROOT_NS_FD};
pub use digest::tree_digest;
pub use error::TemplateError;
pub use import::{import, ImportOptions, ImportReport};
pub use lease::{hold, TemplateLease};
pub use meta::{TemplateMeta, TemplateSource};
pub use spec::TemplateSpec;
pub use store::{valid_name, Staged, StoredTemplate, TemplateStore};
