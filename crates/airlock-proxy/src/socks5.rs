//! SOCKS5 (RFC 1928) without authentication, CONNECT only: the greeting, the request and the
//! replies. SOCKS4 is not supported and is recognised only to refuse it clearly.
//!
//! The input is untrusted. Every parser is bounded by the protocol (a greeting is at most 257
//! bytes, a request at most 262), checks bytes in order, never panics, and returns `Ok(None)`
//! while more bytes are needed.
//!
//! - `greeting`: protocol detection and method negotiation.
//! - `request`: the CONNECT request and its destination.
//! - `reply`: the replies the proxy writes.

mod error;
mod greeting;
mod reply;
mod request;

pub use error::SocksError;
pub use greeting::{
    looks_like_socks5, parse_greeting, METHOD_NONE_ACCEPTABLE, METHOD_NO_AUTH_REPLY,
    SOCKS4_REJECTED, VERSION,
};
pub use reply::{reply, Reply};
pub use request::{parse_request, Destination, SocksHost, MAX_DOMAIN};
