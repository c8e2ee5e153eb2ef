//! The hashes of the server's API keys, by name. Only hashes are stored; the keys never are.

use rusqlite::{params, OptionalExtension};

use super::bounds::{check_name, MAX_HASH_BYTES, MAX_NAME_BYTES};
use super::clock::now_ms;
use super::error::StoreError;
use super::Store;

impl Store {
    /// Stores `hash` as the hash of the API key called `name`, replacing any earlier one.
    pub fn set_api_key_hash(&self, name: &str, hash: &str) -> Result<(), StoreError> {
        check_name("the API key name", name, MAX_NAME_BYTES)?;
        check_name("the API key hash", hash, MAX_HASH_BYTES)?;
        self.conn.execute(
            "INSERT INTO api_keys (name, hash, updated_ms) VALUES (?1, ?2, ?3) \
             ON CONFLICT (name) DO UPDATE SET hash = excluded.hash, updated_ms = excluded.updated_ms",
            params![name, hash, now_ms()],
        )?;
        Ok(())
    }

    /// The stored hash of the API key called `name`, if any.
    pub fn api_key_hash(&self, name: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT hash FROM api_keys WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .optional()?)
    }
}

#[cfg(test)]
#[path = "api_keys_tests.rs"]
mod tests;
