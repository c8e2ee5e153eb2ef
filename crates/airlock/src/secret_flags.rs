//! `--secret NAME[=@FILE|=@-]` and `--secret-host [NAME=]PATTERN`: secrets by reference only.

use airlock_policy::{PolicyFile, SecretEntry, SecretSource, SecretValue};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::Read;

/// The `[secrets]` entries the flags give. A `--secret-host` for a secret of the policy file
/// adds to that secret's hosts.
pub fn secrets(
    secret: &[String],
    hosts: &[String],
    file: &PolicyFile,
) -> Result<BTreeMap<String, SecretEntry>> {
    let mut out: BTreeMap<String, SecretEntry> = BTreeMap::new();
    let mut stdin_used = false;
    for spec in secret {
        let (name, from) = match spec.split_once('=') {
            None => (spec.as_str(), SecretSource::Env(spec.clone())),
            Some((name, "@-")) => {
                if stdin_used {
                    bail!("--secret {name}=@-: only one secret can be read from stdin");
                }
                stdin_used = true;
                let mut bytes = Vec::new();
                std::io::stdin()
                    .read_to_end(&mut bytes)
                    .with_context(|| format!("--secret {name}=@-: cannot read stdin"))?;
                (name, SecretSource::Value(SecretValue::new(bytes)))
            }
            Some((name, v)) if v.starts_with('@') => (name, SecretSource::File(v[1..].into())),
            Some((name, _)) => bail!(
                "--secret {name}=…: a secret's value is never given on the command line (ps shows it); use --secret {name} (the value of ${name}), --secret {name}=@FILE or --secret {name}=@- (stdin)"
            ),
        };
        if out.contains_key(name) {
            bail!("--secret {name} is given twice");
        }
        out.insert(
            name.to_string(),
            SecretEntry {
                hosts: Vec::new(),
                from,
                body: false,
            },
        );
    }
    for spec in hosts {
        let (name, pattern) = match spec.split_once('=') {
            Some((name, pattern)) => (name.to_string(), pattern.to_string()),
            None if out.len() == 1 => (
                out.keys().next().cloned().unwrap_or_default(),
                spec.clone(),
            ),
            None => bail!(
                "--secret-host {spec}: say which secret it is for (--secret-host NAME={spec}) when there is not exactly one --secret"
            ),
        };
        match out.get_mut(&name) {
            Some(entry) => entry.hosts.push(pattern),
            None => match file.secrets.get(&name) {
                Some(entry) => {
                    let mut entry = entry.clone();
                    entry.hosts.push(pattern);
                    out.insert(name, entry);
                }
                None => {
                    bail!("--secret-host {spec}: there is no secret {name}; add --secret {name}")
                }
            },
        }
    }
    Ok(out)
}
