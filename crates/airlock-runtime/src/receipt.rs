//! What a box actually enforces, layer by layer; and what this host can enforce (`airlock check`).

use serde::{Deserialize, Serialize};
use std::fmt;

/// How well one layer is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayerStatus {
    /// Enforced by the kernel as the policy asks.
    Enforced,
    /// Enforced by a weaker fallback (said in the detail).
    Fallback,
    /// Not enforced on this host (said why in the detail).
    NotEnforced,
    /// The policy does not ask for it.
    Off,
}

/// One layer of a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layer {
    pub layer: String,
    pub status: LayerStatus,
    pub mechanism: String,
    pub detail: String,
}

/// The receipt line of a long-lived box that says what `user="root"` runs as there.
pub const ROOT_LAYER: &str = "root";

/// The receipt line that says how a box's memory is capped (a cgroup where one is delegated,
/// else an address-space rlimit per process): a WASM runner inside chooses its memory layout
/// by it.
pub const MEMORY_LAYER: &str = "memory";

/// What a box enforces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    pub layers: Vec<Layer>,
}

impl Receipt {
    /// Appends one layer's line (a backend builds its receipt this way while planning).
    pub fn add(
        &mut self,
        layer: &'static str,
        status: LayerStatus,
        mechanism: impl Into<String>,
        detail: impl Into<String>,
    ) {
        self.layers.push(Layer {
            layer: layer.to_string(),
            status,
            mechanism: mechanism.into(),
            detail: detail.into(),
        });
    }

    /// Whether the box has a root of its own (its [`ROOT_LAYER`] line is enforced): a root
    /// request then runs as uid 0 there, and as the box user otherwise.
    pub fn has_root(&self) -> bool {
        self.layers
            .iter()
            .any(|l| l.layer == ROOT_LAYER && l.status == LayerStatus::Enforced)
    }

    /// Layers the policy asked for that are not fully enforced.
    pub fn gaps(&self) -> impl Iterator<Item = &Layer> {
        self.layers
            .iter()
            .filter(|l| matches!(l.status, LayerStatus::Fallback | LayerStatus::NotEnforced))
    }
}

impl fmt::Display for LayerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LayerStatus::Enforced => "enforced",
            LayerStatus::Fallback => "fallback",
            LayerStatus::NotEnforced => "NOT ENFORCED",
            LayerStatus::Off => "off",
        })
    }
}

impl fmt::Display for Receipt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in &self.layers {
            writeln!(
                f,
                "{:<11} {:<13} {}",
                l.layer,
                l.status.to_string(),
                l.mechanism
            )?;
            if !l.detail.is_empty() {
                writeln!(f, "{:<25} {}", "", l.detail)?;
            }
        }
        Ok(())
    }
}

/// What this host can enforce (the answer of `airlock check`).
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub receipt: Receipt,
    /// Whether a default box (workspace-write, no network) can start here.
    pub can_run: bool,
    /// Every kind of box, and whether this host can run it.
    pub backends: Vec<crate::backend::BackendReport>,
}
