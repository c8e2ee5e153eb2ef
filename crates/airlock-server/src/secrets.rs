//! API keys, sandbox tokens and ids: random values from /dev/urandom, kept only as SHA-256
//! hashes.

use sha2::{Digest, Sha256};
use std::io::Read;

/// `n` random bytes from the kernel, as lowercase hex.
pub fn random_hex(n: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; n];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(hex(&buf))
}

/// A new API key: `al_` and 64 hex digits.
pub fn new_api_key() -> std::io::Result<String> {
    Ok(format!("al_{}", random_hex(32)?))
}

/// A new sandbox access token: `sbt_` and 64 hex digits.
pub fn new_token() -> std::io::Result<String> {
    Ok(format!("sbt_{}", random_hex(32)?))
}

/// A new sandbox id: `sb_` and 20 hex digits.
pub fn new_sandbox_id() -> std::io::Result<String> {
    Ok(format!("sb_{}", random_hex(10)?))
}

/// The SHA-256 of `secret`, as lowercase hex: what the store keeps.
pub fn hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// Compares two hashes in time independent of where they differ.
pub fn same_hash(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;
