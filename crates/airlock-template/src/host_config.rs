//! What the host's package managers are configured to use, read at build time: apt's sources
//! (the mirror mmdebstrap installs from), pip's index and npm's registry (the only hosts a
//! build's box may reach). Nothing here names a host itself.

use crate::error::TemplateError;
use std::path::Path;
use std::process::Command;

/// One `deb` source of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AptSource {
    pub uri: String,
    pub suites: Vec<String>,
    pub components: Vec<String>,
}

/// The host's apt sources (`/etc/apt/sources.list`, `sources.list.d/*.list` and `*.sources`).
pub fn apt_sources(etc_apt: &Path) -> Vec<AptSource> {
    let mut out = Vec::new();
    let mut files = vec![etc_apt.join("sources.list")];
    if let Ok(d) = std::fs::read_dir(etc_apt.join("sources.list.d")) {
        let mut more: Vec<_> = d.flatten().map(|e| e.path()).collect();
        more.sort();
        files.extend(more);
    }
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        match f.extension().and_then(|e| e.to_str()) {
            Some("sources") => out.extend(parse_deb822(&text)),
            Some("list") => out.extend(parse_one_line(&text)),
            _ => {}
        }
    }
    out
}

fn parse_one_line(text: &str) -> Vec<AptSource> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        let mut words = line.split_whitespace();
        if words.next() != Some("deb") {
            continue;
        }
        let mut rest: Vec<&str> = words.collect();
        if rest.first().is_some_and(|w| w.starts_with('[')) {
            let end = rest.iter().position(|w| w.ends_with(']')).unwrap_or(0);
            rest.drain(..=end);
        }
        if rest.len() >= 2 {
            out.push(AptSource {
                uri: rest[0].to_string(),
                suites: vec![rest[1].to_string()],
                components: rest[2..].iter().map(|s| s.to_string()).collect(),
            });
        }
    }
    out
}

fn parse_deb822(text: &str) -> Vec<AptSource> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n") {
        let mut types = Vec::new();
        let (mut uris, mut suites, mut comps) = (Vec::new(), Vec::new(), Vec::new());
        let mut enabled = true;
        for line in stanza.lines() {
            if line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let vals: Vec<String> = v.split_whitespace().map(str::to_string).collect();
            match k.trim().to_ascii_lowercase().as_str() {
                "types" => types = vals,
                "uris" => uris = vals,
                "suites" => suites = vals,
                "components" => comps = vals,
                "enabled" => enabled = v.trim() != "no",
                _ => {}
            }
        }
        if enabled && types.iter().any(|t| t == "deb") {
            for u in uris {
                out.push(AptSource {
                    uri: u,
                    suites: suites.clone(),
                    components: comps.clone(),
                });
            }
        }
    }
    out
}

/// The `deb` lines for `suite` (and its -updates and -security suites) that mmdebstrap installs
/// from, or why there are none.
pub fn mirror_lines(sources: &[AptSource], suite: &str) -> Result<Vec<String>, TemplateError> {
    let mut lines = Vec::new();
    for s in sources {
        for su in &s.suites {
            let ours = su == suite
                || su
                    .strip_prefix(suite)
                    .is_some_and(|rest| matches!(rest, "-updates" | "-security"));
            if ours {
                let comps = if s.components.is_empty() {
                    "main".to_string()
                } else {
                    s.components.join(" ")
                };
                lines.push(format!("deb {} {su} {comps}", s.uri));
            }
        }
    }
    if lines
        .iter()
        .all(|l| !l.split_whitespace().nth(2).is_some_and(|s| s == suite))
    {
        return Err(TemplateError::Unsupported(format!(
            "the host's apt sources name no mirror for the suite {suite:?}: add one under /etc/apt/sources.list.d (a build installs from the mirror the host uses)"
        )));
    }
    Ok(lines)
}

/// The host part of a URL (`scheme://host[:port]/…`).
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// pip's index as the host configures it: `PIP_INDEX_URL`, else `index-url` of pip's own
/// configuration, else pip's default; with the host serving its files when pip says so.
/// Returns (index URL, hosts to allow).
pub fn pip_index() -> Result<(String, Vec<String>), TemplateError> {
    let py = "import sys\n\
try:\n    from pip._internal.configuration import Configuration\n    c = Configuration(isolated=False); c.load()\n    url = dict(c.items()).get('global.index-url') or dict(c.items()).get(':env:.index-url')\nexcept Exception:\n    url = None\n\
from pip._internal.models.index import PyPI\n\
print(url or PyPI.simple_url)\nprint('' if url else PyPI.file_storage_domain)\n";
    let out = Command::new("python3").args(["-c", py]).output().map_err(|e| {
        TemplateError::Unsupported(format!(
            "cannot ask the host's pip for its index (python3: {e}); install python3-pip on the host"
        ))
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let url = lines.next().unwrap_or_default().trim().to_string();
    let files = lines.next().unwrap_or_default().trim().to_string();
    let Some(host) = url_host(&url).filter(|_| out.status.success()) else {
        return Err(TemplateError::Unsupported(format!(
            "the host's pip names no usable index ({}); set PIP_INDEX_URL or install python3-pip on the host",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    };
    let mut hosts = vec![host];
    if !files.is_empty() {
        hosts.push(files);
    }
    Ok((url, hosts))
}

/// npm's registry as the host configures it (`npm config get registry`), and its host.
pub fn npm_registry() -> Result<(String, String), TemplateError> {
    let out = Command::new("npm")
        .args(["config", "get", "registry"])
        .output()
        .map_err(|e| {
            TemplateError::Unsupported(format!(
                "cannot ask the host's npm for its registry ({e}); install npm on the host"
            ))
        })?;
    let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match url_host(&url) {
        Some(h) if out.status.success() => Ok((url, h)),
        _ => Err(TemplateError::Unsupported(
            "the host's npm names no registry (`npm config get registry`)".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_in_both_formats_give_the_mirror_lines_of_a_suite() {
        let dir = std::env::temp_dir().join(format!("airlock-apt-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sources.list.d")).unwrap();
        std::fs::write(
            dir.join("sources.list"),
            "# comment\ndeb [arch=amd64] http://mirror.example/debian bookworm main contrib\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("sources.list.d/d.sources"),
            "Types: deb\nURIs: http://m2.example/debian-security\nSuites: bookworm-security\nComponents: main\n\nTypes: deb\nURIs: http://other.example/x\nSuites: nodistro\n",
        )
        .unwrap();
        let src = apt_sources(&dir);
        assert_eq!(src.len(), 3);
        assert_eq!(
            mirror_lines(&src, "bookworm").unwrap(),
            vec![
                "deb http://mirror.example/debian bookworm main contrib",
                "deb http://m2.example/debian-security bookworm-security main"
            ]
        );
        let err = mirror_lines(&src, "trixie").unwrap_err().to_string();
        assert!(err.contains("no mirror for the suite \"trixie\""), "{err}");
        assert_eq!(
            url_host("https://u:p@Reg.example:8443/simple/").as_deref(),
            Some("reg.example")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
