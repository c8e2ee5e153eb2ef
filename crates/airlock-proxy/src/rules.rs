//! The egress allowlist as the user writes it on the command line (`--allow-domain`,
//! `--deny-domain`, `--allow-ip`, `--map-host`), parsed, validated and normalised so that the
//! decision code only ever compares canonical values. Defaults deny: an empty rule set allows
//! nothing.

mod domain;
mod egress;
mod error;
mod host;
mod ip_grant;

pub use domain::DomainPattern;
pub use egress::{parse_map_host, EgressRules};
pub use error::{NameProblem, RuleError};
pub(crate) use host::printable;
pub use host::{normalize_host, parse_host, Host};
pub use ip_grant::IpGrant;
