//! Why a SOCKS5 greeting or request was refused, and the reply that says so.

use super::reply::Reply;

/// A SOCKS greeting or request the proxy refuses. Send [`SocksError::reply`] (if any) with
/// [`super::reply`], then close.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SocksError {
    /// The first byte is 4: a SOCKS4/4a client. Send [`super::SOCKS4_REJECTED`] and close.
    #[error("SOCKS4 is not supported: use SOCKS5 (e.g. socks5h://) or an HTTP proxy")]
    Socks4Unsupported,
    /// A version byte other than 5.
    #[error("not a SOCKS5 message (version byte {0})")]
    BadVersion(u8),
    /// A greeting that offers no authentication method at all.
    #[error("the SOCKS5 greeting offers no authentication method")]
    NoMethods,
    /// BIND (2), UDP ASSOCIATE (3) or an unknown command.
    #[error("SOCKS5 command {0} is not supported: only CONNECT is")]
    UnsupportedCommand(u8),
    /// The reserved byte of a request is not 0.
    #[error("the reserved byte of the SOCKS5 request is not zero")]
    NonZeroReserved,
    /// An address type other than IPv4 (1), domain name (3) and IPv6 (4).
    #[error("SOCKS5 address type {0} is not supported")]
    UnsupportedAddressType(u8),
    /// A domain name that is empty, not UTF-8, or contains control or whitespace characters.
    #[error("invalid destination domain name: {0}")]
    InvalidDomain(&'static str),
    /// Destination port 0.
    #[error("destination port 0 is refused")]
    PortZero,
}

impl SocksError {
    /// The reply to send before closing, if the client has reached the point where a SOCKS5
    /// reply is expected (a request, not a greeting or a foreign protocol).
    pub fn reply(&self) -> Option<Reply> {
        match self {
            SocksError::Socks4Unsupported | SocksError::BadVersion(_) | SocksError::NoMethods => {
                None
            }
            SocksError::UnsupportedCommand(_) => Some(Reply::CommandNotSupported),
            SocksError::UnsupportedAddressType(_) => Some(Reply::AddressTypeNotSupported),
            SocksError::NonZeroReserved | SocksError::InvalidDomain(_) | SocksError::PortZero => {
                Some(Reply::GeneralFailure)
            }
        }
    }
}
