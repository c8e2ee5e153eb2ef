//! What a box's root filesystem is made of.

use serde::{Deserialize, Serialize};

/// The root filesystem a box starts from. Only `host` exists so far: the host's own system
/// directories, read-only (the bubblewrap-style OS sandbox). Built and imported templates come
/// with the template store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Template {
    /// The host's `/usr`, `/bin`, `/lib*`, `/sbin` and selected `/etc` files, read-only.
    #[default]
    Host,
}

impl Template {
    pub fn name(self) -> &'static str {
        match self {
            Template::Host => "host",
        }
    }
}
