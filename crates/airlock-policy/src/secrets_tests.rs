#![allow(clippy::unwrap_used)]
//! Resolution of `[secrets]`: values by reference, placeholders, and every way it fails closed.

use crate::{NetworkMode, PolicyError, PolicyFile, ResolveContext, ResolvedPolicy};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

struct Host;

impl crate::HostView for Host {
    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        Ok(path.to_path_buf())
    }
    fn is_dir(&self, _: &Path) -> bool {
        true
    }
    fn read_secret(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match path.to_str() {
            Some("/keys/gh") => Ok(b"gh-value\n".to_vec()),
            _ => Err(std::io::ErrorKind::NotFound.into()),
        }
    }
}

fn resolve(toml: &str) -> Result<ResolvedPolicy, PolicyError> {
    let file = PolicyFile::from_toml(toml, Path::new("p.toml"))?;
    let env: BTreeMap<String, String> = [("OPENAI_KEY".to_string(), "sk-env-value".to_string())]
        .into_iter()
        .collect();
    crate::resolve(
        &file,
        &ResolveContext {
            cwd: "/w".into(),
            env: &env,
            host: &Host,
        },
    )
}

const PROXY: &str = "workspace = \"none\"\n[network]\nmode = \"proxy\"\n";

#[test]
fn values_come_by_reference_and_the_box_gets_a_placeholder() {
    let p = resolve(&format!(
        "{PROXY}[secrets]\nAPI = {{ hosts = [\"api.example\"], from = \"env:OPENAI_KEY\" }}\nGH = {{ hosts = [\"gh.example:8443\"], from = \"file:/keys/gh\", body = true }}\n"
    ))
    .unwrap();
    assert_eq!(p.network, NetworkMode::Proxy);
    let api = p.secrets.iter().find(|s| s.name == "API").unwrap();
    assert_eq!(api.hosts, ["api.example:443"]);
    assert_eq!(api.value.as_ref().unwrap().expose(), b"sk-env-value");
    let gh = p.secrets.iter().find(|s| s.name == "GH").unwrap();
    assert_eq!(
        gh.value.as_ref().unwrap().expose(),
        b"gh-value",
        "one newline trimmed"
    );
    assert!(gh.body);
    // The box's variable holds the placeholder; binding allowed the hosts.
    let var = p.env.iter().find(|(k, _)| k == "API").unwrap();
    assert_eq!(var.1, api.placeholder);
    assert!(api.placeholder.starts_with("airlock-secret-API-") && api.placeholder.len() > 40);
    assert!(p
        .egress
        .allow_domain
        .contains(&"api.example:443".to_string()));
    assert!(p
        .egress
        .allow_domain
        .contains(&"gh.example:8443".to_string()));
    // Serialized (store, receipts): names, hosts and placeholders, never a value.
    let json = serde_json::to_string(&p).unwrap();
    assert!(!json.contains("sk-env-value") && !json.contains("gh-value"));
    assert!(format!("{p:?}").contains("<redacted>") && !format!("{p:?}").contains("sk-env"));
}

#[test]
fn two_boxes_get_different_placeholders() {
    let toml = format!(
        "{PROXY}[secrets]\nAPI = {{ hosts = [\"a.example\"], from = \"env:OPENAI_KEY\" }}\n"
    );
    let (a, b) = (resolve(&toml).unwrap(), resolve(&toml).unwrap());
    assert_ne!(a.secrets[0].placeholder, b.secrets[0].placeholder);
}

#[test]
fn every_bad_secret_is_refused_naming_it_and_not_its_value() {
    let cases = [
        // A value written in the file.
        (format!("{PROXY}[secrets]\nA = {{ hosts = [\"a.example\"], from = \"sk-literal\" }}\n"), "env:VAR"),
        (format!("{PROXY}[secrets]\nA = {{ hosts = [], from = \"env:OPENAI_KEY\" }}\n"), "no host"),
        (format!("{PROXY}[secrets]\nA = {{ hosts = [\"a.example\"], from = \"env:MISSING\" }}\n"), "MISSING is not set"),
        (format!("{PROXY}[secrets]\nA = {{ hosts = [\"a.example\"], from = \"file:/nope\" }}\n"), "cannot read /nope"),
        (format!("{PROXY}[secrets]\n\"1A\" = {{ hosts = [\"a.example\"], from = \"env:OPENAI_KEY\" }}\n"), "letters, digits"),
        (format!("{PROXY}[env]\nset = {{ A = \"x\" }}\n[secrets]\nA = {{ hosts = [\"a.example\"], from = \"env:OPENAI_KEY\" }}\n"), "also set"),
        ("workspace = \"none\"\n[secrets]\nA = { hosts = [\"a.example\"], from = \"env:OPENAI_KEY\" }\n".to_string(), "--net proxy"),
    ];
    for (toml, want) in cases {
        let err = resolve(&toml).unwrap_err().to_string();
        assert!(err.contains(want), "{toml}: {err}");
        assert!(!err.contains("sk-env-value"), "{err}");
    }
}

#[test]
fn values_cross_to_a_host_process_only_beside_the_policy() {
    let mut p = resolve(&format!(
        "{PROXY}[secrets]\nAPI = {{ hosts = [\"api.example\"], from = \"env:OPENAI_KEY\" }}\n"
    ))
    .unwrap();
    let values = crate::SecretValues::of(&p);
    assert_eq!(format!("{values:?}"), "[\"API\"]");
    let wire = serde_json::to_string(&values).unwrap();
    let mut back: ResolvedPolicy =
        serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
    assert!(
        back.secrets[0].value.is_none(),
        "the policy alone carries no value"
    );
    serde_json::from_str::<crate::SecretValues>(&wire)
        .unwrap()
        .restore(&mut back);
    assert_eq!(
        back.secrets[0].value.as_ref().unwrap().expose(),
        b"sk-env-value"
    );
    p.secrets[0].value = None;
    assert_eq!(crate::SecretValues::of(&p), crate::SecretValues::default());
}
