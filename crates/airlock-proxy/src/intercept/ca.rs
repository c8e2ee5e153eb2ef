//! The box's own certificate authority: made when the box starts, constrained to the names the
//! box's secrets are bound to, and kept in this process only. It issues one leaf certificate
//! per intercepted host (cached), valid for that name alone.

use super::InterceptError;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
    GeneralSubtree, IsCa, KeyPair, KeyUsagePurpose, NameConstraints,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the CA and its leaves are valid (a box lives far less; an expired CA fails closed).
const VALIDITY: Duration = Duration::from_secs(7 * 24 * 3600);
/// Backdating, for clocks slightly behind the host's.
const BACKDATE: Duration = Duration::from_secs(3600);

/// A per-box CA. Its private key has no accessor: it never leaves this value.
pub struct BoxCa {
    cert: rcgen::Certificate,
    key: KeyPair,
    pem: String,
    leaves: Mutex<HashMap<(String, bool), Arc<rustls::ServerConfig>>>,
}

impl BoxCa {
    /// A fresh CA whose certificates are valid only for `names` and their subdomains (X.509
    /// name constraints, which TLS clients enforce).
    pub fn new(names: &[String]) -> Result<BoxCa, InterceptError> {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "airlock box CA (this box only)");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.name_constraints = Some(NameConstraints {
            permitted_subtrees: names
                .iter()
                .map(|n| GeneralSubtree::DnsName(n.clone()))
                .collect(),
            excluded_subtrees: Vec::new(),
        });
        set_validity(&mut params);
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        let pem = cert.pem();
        Ok(BoxCa {
            cert,
            key,
            pem,
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.pem
    }

    /// The TLS server configuration for `host` (a certificate for that name only), offering
    /// HTTP/2 only when `h2` (the upstream speaks it).
    pub(crate) fn server_config(
        &self,
        host: &str,
        h2: bool,
    ) -> Result<Arc<rustls::ServerConfig>, InterceptError> {
        let key = (host.to_string(), h2);
        if let Some(c) = self.leaves.lock().ok().and_then(|l| l.get(&key).cloned()) {
            return Ok(c);
        }
        let mut params = CertificateParams::new(vec![host.to_string()]).map_err(|_| {
            InterceptError::BadName {
                host: host.to_string(),
            }
        })?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, host);
        params.distinguished_name = dn;
        params.is_ca = IsCa::NoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        set_validity(&mut params);
        let leaf_key = KeyPair::generate()?;
        let leaf = params.signed_by(&leaf_key, &self.cert, &self.key)?;
        let chain = vec![
            leaf.der().clone(),
            CertificateDer::from(self.cert.der().to_vec()),
        ];
        let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let mut config = rustls::ServerConfig::builder_with_provider(super::trust::provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, private)?;
        config.alpn_protocols = if h2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        let config = Arc::new(config);
        if let Ok(mut l) = self.leaves.lock() {
            l.insert(key, config.clone());
        }
        Ok(config)
    }
}

fn set_validity(params: &mut CertificateParams) {
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - BACKDATE;
    params.not_after = now + VALIDITY;
}
