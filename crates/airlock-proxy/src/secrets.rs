//! The secrets a box's proxy holds: which hosts each one is bound to, the placeholder the box
//! sees instead, and the tripwire that blocks a placeholder (or a value) on its way anywhere
//! else. The values never leave this process except inside a request to a bound host.
//!
//! - `binding`: the box's secrets and their host patterns (`BoxSecrets`).
//! - `tripwire`: finding a secret's placeholder or value in bytes bound for a host.

mod binding;
mod tripwire;

pub use binding::{BoxSecret, BoxSecrets, SecretsError, SetHeader};
pub(crate) use tripwire::contains as contains_bytes;
pub use tripwire::{find_leak, Leak, LeakKind};
