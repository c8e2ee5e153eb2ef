//! Limits on what callers may store, so one request cannot bloat the file or a listing.

use std::collections::BTreeMap;

use super::error::StoreError;

/// Most metadata pairs on one sandbox (and in one filter).
pub const MAX_METADATA_PAIRS: usize = 64;
/// Longest metadata key, in bytes: room for 128 characters of any UTF-8 (the APIs count
/// characters, as JSON Schema's `maxLength` does).
pub const MAX_METADATA_KEY_BYTES: usize = 4 * 128;
/// Longest metadata value, in bytes: room for 1024 characters of any UTF-8.
pub const MAX_METADATA_VALUE_BYTES: usize = 4 * 1024;
/// Largest event detail or audit summary, as encoded JSON, in bytes.
pub const MAX_DETAIL_BYTES: usize = 64 * 1024;
/// Largest policy, as encoded JSON, in bytes.
pub const MAX_POLICY_BYTES: usize = 1024 * 1024;
/// Longest id, template name, event or audit kind, actor or API key name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// Longest token or API key hash, in bytes.
pub const MAX_HASH_BYTES: usize = 1024;
/// Most records one listing returns, whatever limit is asked for.
pub const MAX_PAGE: u32 = 1000;

/// Refuses an empty string or one longer than `max` bytes.
pub(super) fn check_name(what: &'static str, s: &str, max: usize) -> Result<(), StoreError> {
    if s.is_empty() {
        return Err(StoreError::Empty { what });
    }
    check_len(what, s.len(), max)
}

/// Refuses a length over `max`.
pub(super) fn check_len(what: &'static str, len: usize, max: usize) -> Result<(), StoreError> {
    if len > max {
        return Err(StoreError::TooLong { what, len, max });
    }
    Ok(())
}

/// Refuses metadata with too many pairs, an empty or long key, or a long value.
pub(super) fn check_metadata(metadata: &BTreeMap<String, String>) -> Result<(), StoreError> {
    if metadata.len() > MAX_METADATA_PAIRS {
        return Err(StoreError::TooManyMetadata {
            count: metadata.len(),
            max: MAX_METADATA_PAIRS,
        });
    }
    for (k, v) in metadata {
        check_name("a metadata key", k, MAX_METADATA_KEY_BYTES)?;
        check_len("a metadata value", v.len(), MAX_METADATA_VALUE_BYTES)?;
    }
    Ok(())
}

/// Encodes `value` as JSON no longer than `max` bytes.
pub(super) fn encode_json(
    what: &'static str,
    value: &serde_json::Value,
    max: usize,
) -> Result<String, StoreError> {
    let text = serde_json::to_string(value).map_err(|source| StoreError::Json { what, source })?;
    check_len(what, text.len(), max)?;
    Ok(text)
}

/// The row limit for a listing: the asked-for limit, capped at [`MAX_PAGE`].
pub(super) fn page_limit(limit: u32) -> i64 {
    i64::from(limit.min(MAX_PAGE))
}
