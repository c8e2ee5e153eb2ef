//! Errors in user-written egress rules. Every message names the bad value and says how to
//! write it correctly.

use std::net::IpAddr;

use thiserror::Error;

/// An egress rule, or a host name in one, that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RuleError {
    /// The value is empty.
    #[error("the host name is empty; write a name such as `api.example.com`")]
    EmptyName,
    /// An IP address was given where a host name is expected.
    #[error(
        "`{value}` is the IP address {ip}, not a host name; IP destinations are granted with \
         --allow-ip (e.g. `--allow-ip {ip}`)"
    )]
    IpLiteral {
        /// The text as written.
        value: String,
        /// The address it denotes.
        ip: IpAddr,
    },
    /// The name is not a valid DNS host name.
    #[error("`{value}` is not a valid host name: {problem}")]
    InvalidName {
        /// The text as written.
        value: String,
        /// What is wrong and how to fix it.
        problem: NameProblem,
    },
    /// `*`, `*.` or similar: a pattern that names no domain.
    #[error(
        "`{value}` names no domain; write `*.example.com` for the subdomains of example.com, or \
         `example.com` for the name itself"
    )]
    BareWildcard {
        /// The text as written.
        value: String,
    },
    /// `*` somewhere other than as the whole first label.
    #[error(
        "`{value}`: `*` may only be the whole first label, as in `*.example.com` (which matches \
         every subdomain at any depth)"
    )]
    WildcardPlacement {
        /// The text as written.
        value: String,
    },
    /// `*.com`: a wildcard over a whole top-level domain.
    #[error(
        "`{value}` would allow every name under the top-level domain `{suffix}`; name a domain \
         instead, e.g. `*.example.{suffix}`"
    )]
    WildcardTooBroad {
        /// The text as written.
        value: String,
        /// The single-label suffix.
        suffix: String,
    },
    /// The `:PORT` suffix is not a port number.
    #[error(
        "`{value}`: `{port}` is not a port from 1 to 65535; write e.g. `:443`, or leave the port \
         out to allow every port"
    )]
    InvalidPort {
        /// The text as written.
        value: String,
        /// The port text.
        port: String,
    },
    /// An `--allow-ip` value that is not an address or CIDR range.
    #[error(
        "`{value}` is not an IP address or CIDR range; write e.g. `10.0.0.0/8`, `127.0.0.1`, \
         `127.0.0.1:8080`, `::1/128` or `[::1]:443` (IPv6 with a port needs brackets)"
    )]
    InvalidIpGrant {
        /// The text as written.
        value: String,
    },
    /// A CIDR range with bits set after the prefix, e.g. `10.1.2.3/8`.
    #[error(
        "`{value}` has address bits set after the prefix; write `{network}` for the range, or \
         the address alone for that single address"
    )]
    GrantHostBits {
        /// The text as written.
        value: String,
        /// The range the prefix denotes.
        network: String,
    },
    /// A `--map-host` value that is not `NAME=IP`.
    #[error("`{value}` is not NAME=IP; write e.g. `svc.test=127.0.0.1` or `svc.test=::1`")]
    InvalidMapHost {
        /// The text as written.
        value: String,
    },
    /// A `--map-host` address that cannot be a connection's destination.
    #[error("`{value}`: {ip} is a {class} and cannot be a destination; map the name to a unicast address")]
    MapHostNotDestination {
        /// The text as written.
        value: String,
        /// The address.
        ip: IpAddr,
        /// What kind of address it is.
        class: &'static str,
    },
    /// The same name mapped to two addresses.
    #[error(
        "`{name}` is mapped to both {first} and {second}; give one --map-host address per name"
    )]
    MapHostConflict {
        /// The normalised name.
        name: String,
        /// The first address.
        first: IpAddr,
        /// The conflicting address.
        second: IpAddr,
    },
    /// One of the values of a flag is wrong; the message says which flag.
    #[error("{flag}: {problem}")]
    Flag {
        /// The flag, e.g. `--allow-domain`.
        flag: &'static str,
        /// What is wrong with its value.
        problem: Box<RuleError>,
    },
}

/// Why a host name is not a valid DNS name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NameProblem {
    /// Two dots in a row, a leading dot, or more than one trailing dot.
    #[error("it has an empty label; remove the extra dot")]
    EmptyLabel,
    /// A label longer than 63 characters (after punycode).
    #[error("the label `{label}` is {len} characters long; a label has at most 63")]
    LabelTooLong {
        /// The label.
        label: String,
        /// Its length.
        len: usize,
    },
    /// A name longer than 253 characters (after punycode).
    #[error("it is {len} characters long; a name has at most 253")]
    TooLong {
        /// The length.
        len: usize,
    },
    /// A character other than letters, digits and hyphens.
    #[error(
        "the label `{label}` has a character other than letters, digits and hyphens (`_`, `*`, \
         `:`, `@`, `/`, spaces and the like are not allowed)"
    )]
    BadCharacter {
        /// The label, with control characters escaped.
        label: String,
    },
    /// A label starting or ending with a hyphen.
    #[error("the label `{label}` starts or ends with a hyphen")]
    HyphenAtEdge {
        /// The label.
        label: String,
    },
    /// The last label is a number, which resolvers and URL parsers read as an IPv4 address.
    #[error(
        "its last label is a number, so URL parsers and resolvers read it as an IP address; \
         grant addresses with --allow-ip in dotted-quad form"
    )]
    NumericLastLabel,
    /// The name is rejected by IDNA (UTS #46) processing.
    #[error(
        "it is not a valid internationalised domain name (UTS #46); write it in punycode \
         (`xn--...`) or remove the stray characters"
    )]
    Idna,
}

impl RuleError {
    /// Wraps the error with the flag whose value caused it.
    pub fn in_flag(self, flag: &'static str) -> Self {
        RuleError::Flag {
            flag,
            problem: Box::new(self),
        }
    }
}
