//! API keys, sandbox tokens and ids: random values from the kernel (getrandom(2)), kept only
//! as SHA-256 hashes.

use sha2::{Digest, Sha256};

/// `n` random bytes from the kernel, as lowercase hex: getrandom(2) (the `getrandom` crate, as
/// the policy's placeholders), not /dev/urandom: no descriptor (it cannot fail for want of one,
/// nor be swapped by a mount), one call instead of three on every create.
pub fn random_hex(n: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; n];
    getrandom::getrandom(&mut buf).map_err(|e| std::io::Error::other(e.to_string()))?;
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
