//! The native box's `root`: uid 0 of the user namespace its init nests in the box's own (see
//! `airlock_jail::box_root`; the agent joins it through `airlock_agent::standalone::WithRoot`),
//! and the receipt line that says so.

use airlock_jail::spawn::IdMap;
use airlock_runtime::{LayerStatus, Receipt};

/// Adds the `root` line: what `user="root"` is in this box.
/// `why_not` says why the box has none.
pub(crate) fn add_receipt_line(receipt: &mut Receipt, why_not: Option<&str>, ids: &IdMap) {
    if let Some(why) = why_not {
        receipt.add(
            airlock_runtime::ROOT_LAYER,
            LayerStatus::Off,
            "none",
            format!("{why}: a root request runs as the box user"),
        );
    } else {
        receipt.add(
            airlock_runtime::ROOT_LAYER,
            LayerStatus::Enforced,
            "uid 0 of a user namespace nested in the box's, mapping only the box user",
            format!(
                "root is uid {} inside (host uid {}) by another name: no capabilities, owns exactly what the box user owns; \
                 files of other users, mounts, the network and the host stay out of its reach",
                ids.inside_uid, ids.host_uid
            ),
        );
    }
}
