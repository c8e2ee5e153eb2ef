//! The reply to a request: `VER REP RSV ATYP BND.ADDR BND.PORT`.

use std::net::SocketAddr;

use super::greeting::VERSION;

/// The REP field of a reply (RFC 1928 section 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Reply {
    Succeeded = 0,
    GeneralFailure = 1,
    NotAllowedByRuleset = 2,
    NetworkUnreachable = 3,
    HostUnreachable = 4,
    ConnectionRefused = 5,
    TtlExpired = 6,
    CommandNotSupported = 7,
    AddressTypeNotSupported = 8,
}

/// A reply with `code` and the bound address (`0.0.0.0:0` when `None`): 10 bytes for IPv4,
/// 22 for IPv6.
pub fn reply(code: Reply, bound: Option<SocketAddr>) -> Vec<u8> {
    let mut out = Vec::with_capacity(22);
    out.extend_from_slice(&[VERSION, code as u8, 0]);
    let port = match bound {
        None => {
            out.extend_from_slice(&[1, 0, 0, 0, 0]);
            0
        }
        Some(SocketAddr::V4(addr)) => {
            out.push(1);
            out.extend_from_slice(&addr.ip().octets());
            addr.port()
        }
        Some(SocketAddr::V6(addr)) => {
            out.push(4);
            out.extend_from_slice(&addr.ip().octets());
            addr.port()
        }
    };
    out.extend_from_slice(&port.to_be_bytes());
    out
}

#[cfg(test)]
#[path = "reply_tests.rs"]
mod tests;
