//! Who may call the E2B surfaces.
//!
//! - Control plane: `X-API-KEY` must be the server's E2B key (`e2b_` and 40 hex digits); the
//!   store keeps only its SHA-256, under the key name [`KEY_NAME`].
//! - envd and the interpreter's `/execute`: `X-Access-Token` must be that sandbox's access token
//!   (the same token the native API hands out). `GET /health` needs nothing.
//! - envd `/files`: the token header, or a signed URL (`signature`, `signature_expiration`)
//!   made from the token. Signed URLs carry no sandbox id, so the signature is checked against
//!   every running sandbox's token, which the server keeps in memory ([`super::E2bState`]).
//! - The box user: `Authorization: Basic base64("<user>:")` (or `?username=` on `/files`):
//!   `user` (uid 1000, home `/home/user`) or `root`. Root is the box's own root where its
//!   receipt has an enforced `root` line (native, gVisor and microVM boxes: uid 0 of a nested
//!   user namespace that maps only the box user, no capabilities); elsewhere it runs as `user`.
//!   Other names are refused.

use super::error::E2bError;
use super::E2bState;
use crate::secrets::{hash, random_hex, same_hash};
use axum::http::HeaderMap;
use base64::Engine;
use sha2::{Digest, Sha256};

/// The store's name for the E2B key's hash.
pub const KEY_NAME: &str = "e2b";
/// The name of the box's user, and its home (relative paths resolve against it).
pub const BOX_USER: &str = "user";
pub const BOX_HOME: &str = airlock_policy::INSIDE_HOME;
/// The box's root's home.
pub const ROOT_HOME: &str = "/root";

/// Who a request asks to run as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum E2bUser {
    /// `user` (also when no user is named).
    User,
    /// `root`.
    Root,
}

impl E2bUser {
    /// What the box runs a command of this user as: root only where the box has one.
    pub fn exec_user(self, box_has_root: bool) -> airlock_protocol::ExecUser {
        match (self, box_has_root) {
            (E2bUser::Root, true) => airlock_protocol::ExecUser::Root,
            _ => airlock_protocol::ExecUser::User,
        }
    }

    /// The user's name, home, and the environment envd gives its commands.
    pub fn name(self) -> &'static str {
        match self {
            E2bUser::User => BOX_USER,
            E2bUser::Root => "root",
        }
    }

    /// The user's home directory.
    pub fn home(self) -> &'static str {
        match self {
            E2bUser::User => BOX_HOME,
            E2bUser::Root => ROOT_HOME,
        }
    }
}

/// A new E2B-format API key: `e2b_` and 40 hex digits.
pub fn new_key() -> std::io::Result<String> {
    Ok(format!("e2b_{}", random_hex(20)?))
}

/// Whether `key` has the E2B key format (`e2b_` and 40 lowercase hex digits).
pub fn is_key_format(key: &str) -> bool {
    key.strip_prefix("e2b_").is_some_and(|hex| {
        hex.len() == 40
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Requires the E2B API key in `X-API-KEY`.
pub fn require_api_key(e2b: &E2bState, headers: &HeaderMap) -> Result<(), E2bError> {
    let key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .ok_or_else(|| E2bError::Unauthenticated("no API key: send X-API-KEY (E2B_API_KEY) with the e2b_ key `airlock serve` printed".into()))?;
    if !is_key_format(key) {
        return Err(E2bError::Unauthenticated("the API key is not in E2B's format (e2b_ and 40 hex digits); use the e2b_ key `airlock serve` printed".into()));
    }
    if !same_hash(&hash(key), &e2b.key_hash) {
        return Err(E2bError::Unauthenticated(
            "the API key is wrong; use the e2b_ key `airlock serve` printed on its first start"
                .into(),
        ));
    }
    Ok(())
}

/// The access token a request carries in `X-Access-Token`, if any.
pub fn access_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("x-access-token")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// envd's words for a request to a secured route without the right access token.
pub const ENVD_UNAUTHORIZED: &str =
    "unauthorized access, please provide a valid access token or method signing if supported";
/// envd's words for a `/files` request with neither a token nor a signature.
pub const ENVD_MISSING_SIGNATURE: &str = "missing signature query parameter";
/// envd's words for a signature that matches no sandbox's token.
pub const ENVD_INVALID_SIGNATURE: &str = "invalid signature";
/// envd's words for a signed URL past its expiration.
pub const ENVD_EXPIRED_SIGNATURE: &str = "signature is already expired";

/// Requires sandbox `id`'s own access token in `X-Access-Token`.
pub fn require_token(e2b: &E2bState, headers: &HeaderMap, id: &str) -> Result<(), E2bError> {
    let given = access_token(headers).ok_or_else(|| {
        E2bError::Unauthenticated(format!(
            "{ENVD_UNAUTHORIZED} (no access token: send X-Access-Token with the sandbox's envdAccessToken)"
        ))
    })?;
    check_token(e2b, id, given)
}

/// Checks `given` against sandbox `id`'s token.
pub fn check_token(e2b: &E2bState, id: &str, given: &str) -> Result<(), E2bError> {
    match e2b.token_of(id) {
        Some(own) if same_hash(&hash(&own), &hash(given)) => Ok(()),
        Some(_) => Err(E2bError::Unauthenticated(format!(
            "{ENVD_UNAUTHORIZED} (the access token is not sandbox {id}'s; use its envdAccessToken)"
        ))),
        None => Err(E2bError::SandboxGone(format!(
            "sandbox {id} was not found: it ended, was killed or never existed"
        ))),
    }
}

/// The box user a request asks for: `user` or `root`, from the Basic authorization header;
/// `user` when absent.
pub fn user_from_headers(headers: &HeaderMap) -> Result<E2bUser, E2bError> {
    let Some(value) = headers.get(axum::http::header::AUTHORIZATION) else {
        return Ok(E2bUser::User);
    };
    let text = value
        .to_str()
        .map_err(|_| E2bError::Unauthenticated("the Authorization header is not text".into()))?;
    let Some(encoded) = text.strip_prefix("Basic ") else {
        return Err(E2bError::Unauthenticated(
            "the Authorization header must be `Basic base64(<user>:)`".into(),
        ));
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| {
            E2bError::Unauthenticated("the Basic authorization is not valid base64".into())
        })?;
    let decoded = String::from_utf8(decoded)
        .map_err(|_| E2bError::Unauthenticated("the Basic authorization is not UTF-8".into()))?;
    let name = decoded.split(':').next().unwrap_or("");
    user_named(Some(name))
}

/// The box user named `name` (`user` when absent or empty).
pub fn user_named(name: Option<&str>) -> Result<E2bUser, E2bError> {
    match name.unwrap_or("") {
        "" | "user" => Ok(E2bUser::User),
        "root" => Ok(E2bUser::Root),
        other => Err(E2bError::Unauthenticated(format!(
            "user {other:?} does not exist in the sandbox; its users are `user` and `root`"
        ))),
    }
}

/// Resolves a path as envd does: relative paths (and `~`) are taken from `user`'s home.
pub fn resolve_path_as(user: E2bUser, path: &str) -> Result<String, E2bError> {
    if path.contains('\0') {
        return Err(E2bError::InvalidArgument(
            "the path contains a NUL byte".into(),
        ));
    }
    if path.starts_with('/') {
        return Ok(path.to_string());
    }
    let rest = path
        .strip_prefix("~/")
        .or(if path == "~" { Some("") } else { None })
        .unwrap_or(path);
    if rest.is_empty() {
        return Ok(user.home().to_string());
    }
    Ok(format!("{}/{rest}", user.home()))
}

/// A file URL signature as the SDKs make it:
/// `"v1_" + base64_nopad(sha256("<path>:<operation>:<user>:<token>[:<expiration>]"))`.
pub fn signature(
    path: &str,
    operation: &str,
    user: &str,
    token: &str,
    expiration: Option<i64>,
) -> String {
    let raw = match expiration {
        None => format!("{path}:{operation}:{user}:{token}"),
        Some(exp) => format!("{path}:{operation}:{user}:{token}:{exp}"),
    };
    let digest = Sha256::digest(raw.as_bytes());
    format!(
        "v1_{}",
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(digest)
    )
}

/// What a signed URL claims.
#[derive(Debug, Clone)]
pub struct SignedRequest<'a> {
    /// The `path` query parameter exactly as sent.
    pub path: &'a str,
    /// `read` or `write`.
    pub operation: &'a str,
    /// The `username` query parameter as sent (empty when absent).
    pub user: &'a str,
    pub signature: &'a str,
    pub expiration: Option<i64>,
}

/// Finds the sandbox whose token made `req`'s signature: only `candidate` when the request
/// names one, else every running sandbox. Refuses an unknown signature and an expired one.
pub fn check_signature(
    e2b: &E2bState,
    req: &SignedRequest<'_>,
    candidate: Option<&str>,
    now_s: i64,
) -> Result<String, E2bError> {
    let tokens = e2b.tokens_snapshot();
    let found = tokens
        .iter()
        .filter(|(id, _)| candidate.is_none_or(|c| c == id.as_str()))
        .find(|(_, token)| {
            let expected = signature(req.path, req.operation, req.user, token, req.expiration);
            same_hash(&expected, req.signature)
        })
        .map(|(id, _)| id.clone());
    let Some(id) = found else {
        return Err(E2bError::Unauthenticated(format!(
            "{ENVD_INVALID_SIGNATURE} (it matches no {} URL for this path and user of any running sandbox; ask the SDK for a new URL)",
            req.operation
        )));
    };
    if let Some(exp) = req.expiration {
        if exp < now_s {
            return Err(E2bError::Unauthenticated(format!(
                "{ENVD_EXPIRED_SIGNATURE} (ask the SDK for a new signed URL)"
            )));
        }
    }
    Ok(id)
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
