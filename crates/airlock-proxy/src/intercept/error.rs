//! Why interception could not be set up or a connection could not be intercepted.

/// Errors of the interception layer. Messages never contain a secret's value.
#[derive(Debug, thiserror::Error)]
pub enum InterceptError {
    #[error("the box's certificate authority could not be made: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("TLS could not be configured: {0}")]
    Tls(#[from] rustls::Error),
    #[error("the host's trust store has no usable certificate; install ca-certificates (or set SSL_CERT_FILE to a PEM bundle)")]
    NoTrustRoots,
    #[error("the test CA {path} could not be read: {reason}")]
    ExtraRoot { path: String, reason: String },
    #[error("{host}:{port}: the upstream TLS connection failed: {reason}")]
    Upstream {
        host: String,
        port: u16,
        reason: String,
    },
    #[error(transparent)]
    Secrets(#[from] crate::secrets::SecretsError),
    #[error("{host} is not a name a certificate can be made for")]
    BadName { host: String },
}
