//! IP addresses as the proxy must see them: literals in every notation a URL parser or libc
//! accepts (so an address cannot pass as a name), the canonical form used for every check, and
//! the special-purpose ranges (loopback, private, link-local/metadata, ...) that a name may not
//! resolve to without an explicit grant.

mod class;
mod literal;

pub use class::{classify, AddrClass};
pub use literal::{canonical, embedded_ipv4, parse_ip_literal};
