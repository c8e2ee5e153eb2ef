//! Protocol detection and the method-negotiation greeting: `VER NMETHODS METHODS...`.

use super::error::SocksError;

/// The SOCKS protocol version handled here.
pub const VERSION: u8 = 5;
/// "No authentication required" chosen.
pub const METHOD_NO_AUTH_REPLY: [u8; 2] = [VERSION, 0];
/// "No acceptable methods": the client must close.
pub const METHOD_NONE_ACCEPTABLE: [u8; 2] = [VERSION, 0xff];
/// A SOCKS4 "request rejected or failed" reply (VN=0, CD=91), for refusing SOCKS4 clients in
/// their own protocol.
pub const SOCKS4_REJECTED: [u8; 8] = [0, 91, 0, 0, 0, 0, 0, 0];

const NO_AUTH: u8 = 0;
const SOCKS4_VERSION: u8 = 4;

/// Whether a connection whose first byte is `first` speaks SOCKS5 (an HTTP request starts with
/// a letter, never with byte 5).
pub fn looks_like_socks5(first: u8) -> bool {
    first == VERSION
}

/// Parses the client greeting. `Ok(None)`: more bytes are needed. `Ok(Some((offers_no_auth,
/// consumed)))`: the greeting is `buf[..consumed]`; if `offers_no_auth` is false, reply
/// [`METHOD_NONE_ACCEPTABLE`] and close, else [`METHOD_NO_AUTH_REPLY`].
pub fn parse_greeting(buf: &[u8]) -> Result<Option<(bool, usize)>, SocksError> {
    let Some(&version) = buf.first() else {
        return Ok(None);
    };
    check_version(version)?;
    let Some(&count) = buf.get(1) else {
        return Ok(None);
    };
    if count == 0 {
        return Err(SocksError::NoMethods);
    }
    let consumed = 2 + usize::from(count);
    let Some(methods) = buf.get(2..consumed) else {
        return Ok(None);
    };
    Ok(Some((methods.contains(&NO_AUTH), consumed)))
}

/// Refuses a first byte other than 5, naming SOCKS4 explicitly.
pub(super) fn check_version(version: u8) -> Result<(), SocksError> {
    match version {
        VERSION => Ok(()),
        SOCKS4_VERSION => Err(SocksError::Socks4Unsupported),
        other => Err(SocksError::BadVersion(other)),
    }
}

#[cfg(test)]
#[path = "greeting_tests.rs"]
mod tests;
