//! airlock's egress proxy. It runs on the host side of a box; the box's only way out is a
//! listening socket created inside the box's network namespace and handed to the proxy, which
//! checks every destination against the policy before it makes the outbound connection itself.
//!
//! - `approval`: connections the rules refuse, held while an approver is asked; the grants a
//!   yes makes.
//! - `rules`: the allowlist (domain patterns, IP grants, host mappings), parsed and normalised.
//! - `addr`: IP literals in every notation, and special-purpose address ranges.
//! - `decision`: one decision per connection: deny list, allow list, resolution on the host,
//!   refusal of private/loopback/metadata addresses, and the exact address to connect to.
//! - `http`, `socks5`: the request parsers (untrusted input: bounded, fuzzed).
//! - `server`: the proxy itself; `relay`: the bytes of allowed connections (splice for bulk
//!   transfers); `exchange`: the one request and one response of a plain-HTTP connection;
//!   `audit`: decision events; `denial`: a refusal as the structured value the agent acts on.
//! - `secrets`: the secrets a box's proxy holds and the tripwire; `intercept`: the TLS
//!   termination (per-box CA) and upstream connection of the connections that carry them.

pub mod addr;
pub mod approval;
pub mod audit;
pub mod decision;
pub mod denial;
mod exchange;
pub mod http;
pub mod intercept;
mod relay;
pub mod rules;
pub mod secrets;
pub mod server;
pub mod socks5;
