//! The request: `VER CMD RSV ATYP DST.ADDR DST.PORT`, CONNECT only.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::error::SocksError;
use super::greeting::check_version;

/// The longest domain name a request can carry (its length is one byte).
pub const MAX_DOMAIN: usize = 255;

const CMD_CONNECT: u8 = 1;
const ATYP_IPV4: u8 = 1;
const ATYP_DOMAIN: u8 = 3;
const ATYP_IPV6: u8 = 4;

/// The destination of a CONNECT request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocksHost {
    /// A domain name as sent: 1..=255 bytes of UTF-8 without control characters or
    /// whitespace. Not normalised (case, trailing dot, IDNA, IP literals written as names are
    /// the decision layer's job).
    Domain(String),
    /// An IPv4 or IPv6 address.
    Ip(IpAddr),
}

/// A CONNECT destination: host and port (never 0).
pub type Destination = (SocksHost, u16);

/// Parses the request that follows the greeting. `Ok(None)`: more bytes are needed.
/// `Ok(Some(((host, port), consumed)))`: the request is `buf[..consumed]`. Bytes are checked in
/// order, so an error found in a prefix is the error the whole request would get.
pub fn parse_request(buf: &[u8]) -> Result<Option<(Destination, usize)>, SocksError> {
    let Some(&version) = buf.first() else {
        return Ok(None);
    };
    check_version(version)?;
    let Some(&command) = buf.get(1) else {
        return Ok(None);
    };
    if command != CMD_CONNECT {
        return Err(SocksError::UnsupportedCommand(command));
    }
    let Some(&reserved) = buf.get(2) else {
        return Ok(None);
    };
    if reserved != 0 {
        return Err(SocksError::NonZeroReserved);
    }
    let Some(&address_type) = buf.get(3) else {
        return Ok(None);
    };
    let rest = &buf[4..];
    let (host, address_len) = match address_type {
        ATYP_IPV4 => match rest.first_chunk::<4>() {
            Some(octets) => (SocksHost::Ip(IpAddr::V4(Ipv4Addr::from(*octets))), 4),
            None => return Ok(None),
        },
        ATYP_IPV6 => match rest.first_chunk::<16>() {
            Some(octets) => (SocksHost::Ip(IpAddr::V6(Ipv6Addr::from(*octets))), 16),
            None => return Ok(None),
        },
        ATYP_DOMAIN => {
            let Some(&len) = rest.first() else {
                return Ok(None);
            };
            if len == 0 {
                return Err(SocksError::InvalidDomain("the name is empty"));
            }
            let len = usize::from(len);
            let Some(name) = rest.get(1..1 + len) else {
                return Ok(None);
            };
            (SocksHost::Domain(parse_domain(name)?), 1 + len)
        }
        other => return Err(SocksError::UnsupportedAddressType(other)),
    };
    let Some(&[high, low]) = rest[address_len..].first_chunk::<2>() else {
        return Ok(None);
    };
    let port = u16::from_be_bytes([high, low]);
    if port == 0 {
        return Err(SocksError::PortZero);
    }
    Ok(Some(((host, port), 4 + address_len + 2)))
}

fn parse_domain(name: &[u8]) -> Result<String, SocksError> {
    let name = std::str::from_utf8(name)
        .map_err(|_| SocksError::InvalidDomain("the name is not UTF-8"))?;
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(SocksError::InvalidDomain(
            "the name contains a control or whitespace character",
        ));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
