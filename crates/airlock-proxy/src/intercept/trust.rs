//! What upstream servers of intercepted connections are verified against: the host's trust
//! store (the system bundle, or what `SSL_CERT_FILE` / `SSL_CERT_DIR` name, as for OpenSSL),
//! plus — for tests only, set explicitly — extra roots. Verification is never turned off.

use super::InterceptError;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;
use std::sync::Arc;

/// The crypto provider used for both sides (ring: no C toolchain beyond what rustls needs).
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Upstream verification settings.
#[derive(Debug, Clone, Default)]
pub struct UpstreamTrust {
    extra_roots: Vec<CertificateDer<'static>>,
}

impl UpstreamTrust {
    /// The host's trust store only.
    pub fn host() -> UpstreamTrust {
        UpstreamTrust::default()
    }

    /// Test only: also trust the CA certificates in `pem` (a test server's own CA).
    pub fn with_extra_roots_pem(mut self, pem: &[u8]) -> Result<UpstreamTrust, InterceptError> {
        let mut reader = std::io::Cursor::new(pem);
        for cert in rustls_pemfile_certs(&mut reader)? {
            self.extra_roots.push(cert);
        }
        Ok(self)
    }

    /// The client configuration: the host's roots (read once per process) and the extra ones.
    pub(crate) fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, InterceptError> {
        let mut roots = RootCertStore::empty();
        for cert in host_roots() {
            let _ = roots.add(cert.clone());
        }
        for cert in &self.extra_roots {
            roots.add(cert.clone())?;
        }
        if roots.is_empty() {
            return Err(InterceptError::NoTrustRoots);
        }
        let mut config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// The host's trust roots, loaded once (unreadable entries are skipped, as OpenSSL does).
fn host_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: std::sync::OnceLock<Vec<CertificateDer<'static>>> = std::sync::OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

fn rustls_pemfile_certs(
    reader: &mut dyn std::io::BufRead,
) -> Result<Vec<CertificateDer<'static>>, InterceptError> {
    use rustls::pki_types::pem::PemObject;
    let mut out = Vec::new();
    let mut text = Vec::new();
    reader
        .read_to_end(&mut text)
        .map_err(|e| InterceptError::ExtraRoot {
            path: "(PEM)".into(),
            reason: e.to_string(),
        })?;
    for cert in CertificateDer::pem_slice_iter(&text) {
        out.push(cert.map_err(|e| InterceptError::ExtraRoot {
            path: "(PEM)".into(),
            reason: e.to_string(),
        })?);
    }
    Ok(out)
}
