//! E2B's secrets: the `/secrets` routes of the Secret SDK ([`routes`]), the values kept by the
//! server ([`vault`]), and the network rules that hand them to a box's egress proxy
//! ([`rules`]): a box's requests to a rule's host get the rule's headers, with each
//! `${e2b.secrets.NAME}` filled in by the proxy on the way out. The box never sees a value.

pub(crate) mod routes;
pub(crate) mod rules;
pub(crate) mod vault;

pub use vault::Vault;
