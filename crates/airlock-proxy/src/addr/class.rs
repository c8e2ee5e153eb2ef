//! Special-purpose address ranges. The tables are policy data: every range a name may not
//! resolve to without an explicit `--allow-ip` grant, with the reason it is special.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;

use super::literal::{canonical, embedded_ipv4};

/// What kind of destination an address is. Only [`AddrClass::Public`] is reachable without an
/// explicit `--allow-ip` grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AddrClass {
    /// Globally routable unicast.
    Public,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// RFC 1918 (10/8, 172.16/12, 192.168/16) and IPv6 unique local (fc00::/7).
    Private,
    /// 169.254.0.0/16 (including the cloud metadata service 169.254.169.254) and fe80::/10.
    LinkLocal,
    /// Carrier-grade NAT shared space 100.64.0.0/10 (also some cloud metadata services).
    Cgnat,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 0.0.0.0, :: (connecting to it reaches this host).
    Unspecified,
    /// 255.255.255.255.
    Broadcast,
    /// Every other special-purpose or unallocated range (0/8, 240/4, benchmarking,
    /// documentation, IETF protocol assignments, 6to4, Teredo, site-local, outside 2000::/3, ...).
    Reserved,
}

impl AddrClass {
    /// True only for globally routable unicast addresses.
    pub fn is_public(self) -> bool {
        self == AddrClass::Public
    }

    /// True for classes that no grant can make a destination: they are not one unicast peer
    /// (multicast, broadcast) or they are an alias for this host (unspecified).
    pub fn is_never_destination(self) -> bool {
        matches!(
            self,
            AddrClass::Multicast | AddrClass::Broadcast | AddrClass::Unspecified
        )
    }

    /// A short noun phrase for messages, e.g. "link-local address (cloud metadata range)".
    pub fn describe(self) -> &'static str {
        match self {
            AddrClass::Public => "public address",
            AddrClass::Loopback => "loopback address",
            AddrClass::Private => "private-network address",
            AddrClass::LinkLocal => "link-local address (includes cloud metadata 169.254.169.254)",
            AddrClass::Cgnat => "carrier-grade NAT address (100.64.0.0/10)",
            AddrClass::Multicast => "multicast address",
            AddrClass::Unspecified => "unspecified address (means this host)",
            AddrClass::Broadcast => "broadcast address",
            AddrClass::Reserved => "reserved or special-purpose address",
        }
    }
}

/// Classifies `ip` after [`canonical`]. IPv6 forms that embed an IPv4 destination (NAT64,
/// IPv4-compatible/translated) take the class of the embedded address.
pub fn classify(ip: IpAddr) -> AddrClass {
    match canonical(ip) {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// IPv4 special-purpose ranges, most specific first (first match wins).
const V4_RANGES: &[([u8; 4], u8, AddrClass)] = &[
    ([0, 0, 0, 0], 32, AddrClass::Unspecified),
    ([255, 255, 255, 255], 32, AddrClass::Broadcast),
    // "This network" (RFC 791); Linux routes parts of it to the host.
    ([0, 0, 0, 0], 8, AddrClass::Reserved),
    ([10, 0, 0, 0], 8, AddrClass::Private),
    ([100, 64, 0, 0], 10, AddrClass::Cgnat),
    ([127, 0, 0, 0], 8, AddrClass::Loopback),
    // Includes the metadata service of AWS, GCP, Azure, ... at 169.254.169.254.
    ([169, 254, 0, 0], 16, AddrClass::LinkLocal),
    ([172, 16, 0, 0], 12, AddrClass::Private),
    // IETF protocol assignments (RFC 6890), incl. DS-Lite and NAT64 discovery.
    ([192, 0, 0, 0], 24, AddrClass::Reserved),
    // TEST-NET-1 documentation.
    ([192, 0, 2, 0], 24, AddrClass::Reserved),
    // 6to4 relay anycast (deprecated, RFC 7526).
    ([192, 88, 99, 0], 24, AddrClass::Reserved),
    ([192, 168, 0, 0], 16, AddrClass::Private),
    // Benchmarking (RFC 2544).
    ([198, 18, 0, 0], 15, AddrClass::Reserved),
    // TEST-NET-2 documentation.
    ([198, 51, 100, 0], 24, AddrClass::Reserved),
    // TEST-NET-3 documentation.
    ([203, 0, 113, 0], 24, AddrClass::Reserved),
    ([224, 0, 0, 0], 4, AddrClass::Multicast),
    // Future use (RFC 1112).
    ([240, 0, 0, 0], 4, AddrClass::Reserved),
];

/// IPv6 special-purpose ranges, most specific first (first match wins). Addresses embedding an
/// IPv4 destination are handled before this table; anything outside 2000::/3 that is not listed
/// here is unallocated and therefore reserved.
const V6_RANGES: &[([u16; 8], u8, AddrClass)] = &[
    ([0, 0, 0, 0, 0, 0, 0, 0], 128, AddrClass::Unspecified),
    ([0, 0, 0, 0, 0, 0, 0, 1], 128, AddrClass::Loopback),
    // Local-use NAT64 prefix (RFC 8215): the translator's IPv4 side is unknown.
    ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, AddrClass::Reserved),
    // Discard-only (RFC 6666).
    ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, AddrClass::Reserved),
    // IETF protocol assignments, incl. Teredo 2001::/32 (embeds an IPv4 peer) and
    // benchmarking 2001:2::/48.
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, AddrClass::Reserved),
    // Documentation (RFC 3849).
    ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, AddrClass::Reserved),
    // 6to4 (deprecated; embeds an IPv4 peer).
    ([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, AddrClass::Reserved),
    // Documentation (RFC 9637).
    ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, AddrClass::Reserved),
    // SRv6 SIDs (RFC 9602).
    ([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, AddrClass::Reserved),
    // Unique local (RFC 4193), e.g. AWS's IPv6 metadata fd00:ec2::254.
    ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, AddrClass::Private),
    ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, AddrClass::LinkLocal),
    // Site-local (deprecated, RFC 3879).
    ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, AddrClass::Reserved),
    ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, AddrClass::Multicast),
];

fn classify_v4(ip: Ipv4Addr) -> AddrClass {
    let bits = u32::from(ip);
    V4_RANGES
        .iter()
        .find(|(net, len, _)| prefix_matches_v4(bits, u32::from(Ipv4Addr::from(*net)), *len))
        .map_or(AddrClass::Public, |(_, _, class)| *class)
}

fn classify_v6(ip: Ipv6Addr) -> AddrClass {
    if let Some(v4) = embedded_ipv4(ip) {
        return classify_v4(v4);
    }
    let bits = u128::from(ip);
    if let Some((_, _, class)) = V6_RANGES
        .iter()
        .find(|(net, len, _)| prefix_matches_v6(bits, u128::from(Ipv6Addr::from(*net)), *len))
    {
        return *class;
    }
    // Global unicast is 2000::/3; everything else is unallocated.
    if prefix_matches_v6(bits, 0x2000_u128 << 112, 3) {
        AddrClass::Public
    } else {
        AddrClass::Reserved
    }
}

fn prefix_matches_v4(addr: u32, net: u32, len: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    addr & mask == net & mask
}

fn prefix_matches_v6(addr: u128, net: u128, len: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    addr & mask == net & mask
}

#[cfg(test)]
#[path = "class_tests.rs"]
mod tests;
