//! How a box's writes to its workspace reach the host.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How the workspace's changes reach the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangesMode {
    /// The box writes into a change layer on its own size-capped tmpfs (one total with `/tmp`
    /// and home, `--disk`); airlock applies the layer to the host workspace when the box ends.
    Apply,
    /// The box writes the host workspace as it runs: no total cap (each file is still capped by
    /// the file-size limit).
    Direct,
}

impl ChangesMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangesMode::Apply => "apply",
            ChangesMode::Direct => "direct",
        }
    }
}

impl fmt::Display for ChangesMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ChangesMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "apply" => Ok(ChangesMode::Apply),
            "direct" => Ok(ChangesMode::Direct),
            other => Err(format!(
                "unknown changes mode {other:?}: use apply (the workspace's writes count against --disk and reach the host when the box ends) or direct (they reach the host as they happen, without a total cap)"
            )),
        }
    }
}
