//! IP literals in every notation, and the canonical form used for checks.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Parses `host` as an IP literal in any notation that a URL parser (WHATWG) or libc
/// (`inet_aton`, `getaddrinfo`) would accept as an address, so that a literal can never be
/// mistaken for a host name:
///
/// - IPv4 dotted quad, and the `inet_aton` forms: one to four parts, each decimal, octal
///   (leading `0`) or hex (`0x`), the last part filling the remaining bytes (`2130706433`,
///   `0x7f000001`, `017700000001`, `0177.0.0.1`, `127.1`, `127.0.1`); one trailing dot is allowed;
/// - IPv6, bare or in brackets; a zone id (`fe80::1%eth0`) is refused (`None`);
/// - IPv6 forms that embed an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated,
///   IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) are returned as that IPv4 address.
///
/// Returns `None` for anything that is not an address (host names, garbage).
pub fn parse_ip_literal(host: &str) -> Option<IpAddr> {
    if let Some(inner) = host.strip_prefix('[') {
        return parse_ipv6(inner.strip_suffix(']')?);
    }
    if host.contains(':') {
        return parse_ipv6(host);
    }
    parse_inet_aton(host).map(IpAddr::V4)
}

/// The canonical form used for every check: an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
/// becomes the IPv4 address it denotes; every other address is returned unchanged.
pub fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

/// The IPv4 address embedded in an IPv6 address by one of the transition forms that reach an
/// IPv4 destination: IPv4-mapped (`::ffff:0:0/96`), IPv4-translated (`::ffff:0:0:0/96`),
/// IPv4-compatible (`::/96`, except `::` and `::1`) and the NAT64 well-known prefix
/// (`64:ff9b::/96`). `None` for any other IPv6 address.
pub fn embedded_ipv4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let o = v6.octets();
    let tail = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    match s {
        // IPv4-mapped.
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(tail),
        // IPv4-translated (RFC 2765).
        [0, 0, 0, 0, 0xffff, 0, _, _] => Some(tail),
        // IPv4-compatible (deprecated); `::` and `::1` are IPv6's own unspecified/loopback.
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 || lo > 1 => Some(tail),
        // NAT64 well-known prefix (RFC 6052).
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail),
        _ => None,
    }
}

fn parse_ipv6(text: &str) -> Option<IpAddr> {
    if text.contains('%') {
        return None;
    }
    let v6: Ipv6Addr = text.parse().ok()?;
    Some(match embedded_ipv4(v6) {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    })
}

/// `inet_aton` (and WHATWG URL "IPv4 parser") semantics.
fn parse_inet_aton(text: &str) -> Option<Ipv4Addr> {
    let text = text.strip_suffix('.').unwrap_or(text);
    if text.is_empty() {
        return None;
    }
    let mut parts = [0u64; 4];
    let mut count = 0;
    for piece in text.split('.') {
        let slot = parts.get_mut(count)?;
        *slot = parse_aton_number(piece)?;
        count += 1;
    }
    let (last, init) = parts[..count].split_last()?;
    if init.iter().any(|&part| part > 255) {
        return None;
    }
    // The last part fills the bytes the others left: 4 bytes for one part, 1 byte for four.
    let last_bits = 8 * (5 - count as u32);
    if *last >= 1u64 << last_bits {
        return None;
    }
    let mut value: u64 = 0;
    for (i, part) in init.iter().enumerate() {
        value |= part << (24 - 8 * i as u32);
    }
    value |= last;
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

/// One `inet_aton` number: `0x`/`0X` hex (an empty `0x` is 0, as in the URL standard), a leading
/// `0` octal, else decimal. Only digits of the radix; no sign. Overflow is `None`.
fn parse_aton_number(piece: &str) -> Option<u64> {
    let (digits, radix) = if let Some(hex) = piece
        .strip_prefix("0x")
        .or_else(|| piece.strip_prefix("0X"))
    {
        if hex.is_empty() {
            return Some(0);
        }
        (hex, 16)
    } else if piece.len() > 1 && piece.starts_with('0') {
        (&piece[1..], 8)
    } else {
        (piece, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

#[cfg(test)]
#[path = "literal_tests.rs"]
mod tests;
