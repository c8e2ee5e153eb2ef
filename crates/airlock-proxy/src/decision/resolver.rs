//! Name resolution, behind a trait so that tests never touch DNS.

use std::io;
use std::net::{IpAddr, ToSocketAddrs};

/// Resolves a normalised host name to addresses. The decision checks every address returned.
pub trait Resolver: Send + Sync {
    /// The addresses of `name`, in the order a client should try them. `port` is passed for
    /// resolvers that take it into account; it does not change which addresses are allowed.
    fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<IpAddr>>;
}

/// The host's resolver (`getaddrinfo` through [`ToSocketAddrs`], so `/etc/hosts` and the host's
/// DNS configuration apply). It blocks: call [`crate::decision::decide`] with it from a blocking
/// context. Used only by the real proxy; tests use fakes.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<IpAddr>> {
        Ok((name, port).to_socket_addrs()?.map(|sa| sa.ip()).collect())
    }
}
