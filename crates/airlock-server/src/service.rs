//! What both APIs do, below their wire formats: the native routes (`routes/`) and the E2B
//! gateway (`e2b/`) call these, and neither calls the other.

pub(crate) mod contexts;
pub(crate) mod lifecycle;
pub(crate) mod sandboxes;
pub(crate) mod snapshots;
