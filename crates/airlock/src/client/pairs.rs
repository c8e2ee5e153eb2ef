//! `KEY=VALUE` flags (`--metadata`, `--env`) as a map.

use anyhow::{bail, Result};
use std::collections::BTreeMap;

/// The pairs given to `flag`; a missing `=`, an empty key or a key given twice is an error.
pub fn pairs(flag: &str, items: &[String]) -> Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for item in items {
        let Some((k, v)) = item.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            bail!("{flag} {item:?} is not KEY=VALUE; write it as e.g. {flag} team=alpha");
        };
        if map.insert(k.to_string(), v.to_string()).is_some() {
            bail!("{flag} gives {k:?} twice; give each key once");
        }
    }
    Ok(map)
}

#[cfg(test)]
#[path = "pairs_tests.rs"]
mod tests;
