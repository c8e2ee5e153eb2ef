//! Interception of the connections that carry a box's secrets. Only a CONNECT (or SOCKS5
//! connection) to a host:port some secret is bound to is intercepted; every other connection
//! stays an opaque tunnel.
//!
//! For an intercepted connection the proxy first makes the real TLS connection upstream,
//! verifying the server against the host's trust store; then it terminates the box's TLS with
//! a certificate for that host alone, issued by a CA made for this box (its key never leaves
//! this process), checks every request's SNI and authority, blocks other secrets'
//! placeholders, puts the bound secrets' values in place of their placeholders and forwards
//! the request over HTTP/1.1 or HTTP/2 (hyper).
//!
//! - `ca`: the box's CA and the leaf certificates it issues.
//! - `trust`: what upstream servers are verified against.
//! - `upstream`: the verified TLS connection and its HTTP client.
//! - `rewrite`: checks and rewriting of one request.
//! - `serve`: one intercepted connection, request by request.
//! - `metered`: byte counts and the box's budget on the intercepted stream.

mod ca;
mod error;
mod metered;
mod rewrite;
mod serve;
mod trust;
mod upstream;

pub use ca::BoxCa;
pub use error::InterceptError;
pub use trust::UpstreamTrust;

use crate::secrets::BoxSecrets;
use std::sync::Arc;

/// Where a box's trust bundle is: the path Debian-family TLS stacks (OpenSSL, curl, Python's
/// ssl, git) read by default. The box's copy is the host's bundle plus the box's CA.
pub const BOX_TRUST_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The variables that point TLS clients at a CA bundle (OpenSSL and Python's ssl/httpx,
/// requests, Node, pip, curl, git), each set to [`BOX_TRUST_BUNDLE`] in a box with secrets.
pub const TRUST_VARS: &[&str] = &[
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "PIP_CERT",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
];

/// The environment that makes a box's TLS clients trust its bundle.
pub fn box_trust_env() -> Vec<(String, String)> {
    TRUST_VARS
        .iter()
        .map(|v| (v.to_string(), BOX_TRUST_BUNDLE.to_string()))
        .collect()
}

/// Everything a box's proxy needs to intercept: its secrets, its CA, and the upstream trust.
pub struct Interceptor {
    secrets: Arc<BoxSecrets>,
    ca: BoxCa,
    client: Arc<rustls::ClientConfig>,
}

impl Interceptor {
    /// Makes the box's CA (constrained to the names its secrets are bound to) and the upstream
    /// client configuration.
    pub fn new(secrets: BoxSecrets, trust: &UpstreamTrust) -> Result<Interceptor, InterceptError> {
        let ca = BoxCa::new(&secrets.ca_names())?;
        let client = trust.client_config()?;
        Ok(Interceptor {
            secrets: Arc::new(secrets),
            ca,
            client,
        })
    }

    /// The interceptor of a box with these secrets (upstream verified against the host's trust
    /// store), or `None` when it has none.
    pub fn for_box(
        bindings: &[airlock_policy::SecretBinding],
    ) -> Result<Option<Arc<Interceptor>>, InterceptError> {
        if bindings.is_empty() {
            return Ok(None);
        }
        let secrets = BoxSecrets::from_bindings(bindings)?;
        Ok(Some(Arc::new(Interceptor::new(
            secrets,
            &UpstreamTrust::host(),
        )?)))
    }

    /// The CA's certificate (PEM), for the box's trust store. Its key is not exported.
    pub fn ca_pem(&self) -> &str {
        self.ca.cert_pem()
    }

    /// The secrets held.
    pub fn secrets(&self) -> &Arc<BoxSecrets> {
        &self.secrets
    }

    /// Whether a connection to `host` (normalised) on `port` is intercepted.
    pub fn intercepts(&self, host: &str, port: u16) -> bool {
        self.secrets.intercepts(host, port)
    }

    /// The upstream client configuration.
    pub(crate) fn client(&self) -> Arc<rustls::ClientConfig> {
        self.client.clone()
    }
}

pub(crate) use metered::Counters;
pub(crate) use serve::{intercept_connection, InterceptedConn};
pub(crate) use upstream::connect as connect_upstream;
