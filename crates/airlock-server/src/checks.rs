//! The rules a request must meet beyond its JSON shape: ranges, path forms, names. Each refusal
//! is a [`FieldError`] naming the field and what it may be, answered as a 400. The OpenAPI
//! document (`routes/openapi.json`) states the same rules; `routes_tests.rs` checks that the two
//! agree, bound by bound.

use crate::ApiError;
use std::collections::BTreeMap;

/// The longest life a create or extension may ask for, in seconds (one day).
pub const MAX_SANDBOX_TIMEOUT_S: u64 = 24 * 3600;
/// The longest per-command or per-execution timeout, in seconds (one day).
pub const MAX_RUN_TIMEOUT_S: f64 = 24.0 * 3600.0;
/// Most metadata pairs on one sandbox or in one list filter.
pub const MAX_METADATA_PAIRS: usize = airlock_store::MAX_METADATA_PAIRS;
/// Longest metadata key, in characters (the store's byte bound holds any such key).
pub const MAX_METADATA_KEY_CHARS: usize = airlock_store::MAX_METADATA_KEY_BYTES / 4;
/// Longest metadata value, in characters (the store's byte bound holds any such value).
pub const MAX_METADATA_VALUE_CHARS: usize = airlock_store::MAX_METADATA_VALUE_BYTES / 4;
/// Deepest directory listing.
pub const MAX_LIST_DEPTH: u32 = 32;

/// A request field that breaks its rule.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field} is invalid: {rule}; see GET /openapi.json")]
pub struct FieldError {
    /// The field, as the request names it (`timeout`, `policy.limits.memory`, `?path=`).
    pub field: String,
    /// What the field may be.
    pub rule: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, rule: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            rule: rule.into(),
        }
    }
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> ApiError {
        ApiError::Invalid(e.to_string())
    }
}

/// A sandbox's life in whole seconds, 1 to one day; returns milliseconds.
pub fn sandbox_timeout_ms(field: &str, seconds: u64) -> Result<i64, FieldError> {
    if seconds == 0 || seconds > MAX_SANDBOX_TIMEOUT_S {
        return Err(FieldError::new(
            field,
            format!("give whole seconds from 1 to {MAX_SANDBOX_TIMEOUT_S}, not {seconds}"),
        ));
    }
    // In range: at most 86_400_000.
    Ok(seconds as i64 * 1000)
}

/// A command's or execution's timeout: seconds, more than 0 and at most one day.
pub fn run_timeout(
    field: &str,
    seconds: Option<f64>,
) -> Result<Option<std::time::Duration>, FieldError> {
    match seconds {
        None => Ok(None),
        Some(t) if t.is_finite() && t > 0.0 && t <= MAX_RUN_TIMEOUT_S => {
            Ok(Some(std::time::Duration::from_secs_f64(t)))
        }
        Some(t) => Err(FieldError::new(
            field,
            format!("give seconds more than 0 and at most {MAX_RUN_TIMEOUT_S}, not {t}"),
        )),
    }
}

/// An absolute path inside the box: starts with `/`, holds no NUL byte.
pub fn absolute_path(field: &str, path: &str) -> Result<(), FieldError> {
    if !path.starts_with('/') || path.contains('\0') {
        return Err(FieldError::new(
            field,
            format!("give an absolute path inside the sandbox without NUL bytes, e.g. /tmp/data.txt, not {path:?}"),
        ));
    }
    Ok(())
}

/// A command line: at least the program, no NUL byte in any argument.
pub fn argv(field: &str, argv: &[String]) -> Result<(), FieldError> {
    if argv.first().is_none_or(String::is_empty) {
        return Err(FieldError::new(
            field,
            "give the program (non-empty) and its arguments, e.g. [\"sh\", \"-c\", \"echo hi\"]",
        ));
    }
    if let Some(i) = argv.iter().position(|a| a.contains('\0')) {
        return Err(FieldError::new(
            format!("{field}[{i}]"),
            "an argument cannot hold a NUL byte",
        ));
    }
    Ok(())
}

/// Environment variables set for one command or execution: names non-empty without `=` or NUL,
/// values without NUL.
pub fn run_env(field: &str, env: &BTreeMap<String, String>) -> Result<(), FieldError> {
    for (name, value) in env {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(FieldError::new(
                format!("{field}.{name}"),
                "a variable's name must be non-empty, without '=' or NUL bytes",
            ));
        }
        if value.contains('\0') {
            return Err(FieldError::new(
                format!("{field}.{name}"),
                "a variable's value cannot hold a NUL byte",
            ));
        }
    }
    Ok(())
}

/// A sandbox's box environment (`env` of a create): names `[A-Za-z_][A-Za-z0-9_]*`, values
/// without NUL.
pub fn box_env(field: &str, env: &BTreeMap<String, String>) -> Result<(), FieldError> {
    for (name, value) in env {
        let mut chars = name.chars();
        let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(FieldError::new(
                format!("{field}.{name}"),
                "a variable's name must match [A-Za-z_][A-Za-z0-9_]*",
            ));
        }
        if value.contains('\0') {
            return Err(FieldError::new(
                format!("{field}.{name}"),
                "a variable's value cannot hold a NUL byte",
            ));
        }
    }
    Ok(())
}

/// Metadata labels: at most [`MAX_METADATA_PAIRS`], keys 1 to [`MAX_METADATA_KEY_CHARS`]
/// characters, values at most [`MAX_METADATA_VALUE_CHARS`].
pub fn metadata(field: &str, metadata: &BTreeMap<String, String>) -> Result<(), FieldError> {
    if metadata.len() > MAX_METADATA_PAIRS {
        return Err(FieldError::new(
            field,
            format!(
                "give at most {MAX_METADATA_PAIRS} pairs, not {}",
                metadata.len()
            ),
        ));
    }
    for (k, v) in metadata {
        let key_chars = k.chars().count();
        if key_chars == 0 || key_chars > MAX_METADATA_KEY_CHARS {
            return Err(FieldError::new(
                field,
                format!("key {k:?} must be 1 to {MAX_METADATA_KEY_CHARS} characters"),
            ));
        }
        if v.chars().count() > MAX_METADATA_VALUE_CHARS {
            return Err(FieldError::new(
                format!("{field}.{k}"),
                format!("a value must be at most {MAX_METADATA_VALUE_CHARS} characters"),
            ));
        }
    }
    Ok(())
}

/// A directory listing's depth: 1 to [`MAX_LIST_DEPTH`].
pub fn list_depth(field: &str, depth: u32) -> Result<u32, FieldError> {
    if depth == 0 || depth > MAX_LIST_DEPTH {
        return Err(FieldError::new(
            field,
            format!("give a depth from 1 to {MAX_LIST_DEPTH}, not {depth}"),
        ));
    }
    Ok(depth)
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
