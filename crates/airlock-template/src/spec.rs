//! A template spec (TOML): a Debian suite and packages — or `from`, a template already stored,
//! to build on — then pip and npm packages, files and build commands. Unknown keys are an error.
//!
//! ```toml
//! name = "code-interpreter"
//! [debian]
//! suite = "bookworm"
//! packages = ["python3", "python3-pandas"]
//! [pip]
//! packages = ["tabulate"]
//! [npm]
//! packages = []
//! [[files]]
//! source = "motd"          # relative to the spec file
//! target = "/etc/motd"
//! mode = 0o644
//! [build]
//! run = ["python3 -c 'import pandas'"]
//! [defaults]
//! env = { LANG = "C.UTF-8" }
//! cwd = "/home/user"
//! ```

use crate::error::{io_err, TemplateError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// A parsed spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateSpec {
    /// The name the template is stored under.
    pub name: String,
    /// A stored template to start from (its tree and defaults), instead of a Debian base.
    #[serde(default)]
    pub from: Option<String>,
    /// The Debian base (exactly one of this and `from`).
    #[serde(default)]
    pub debian: Option<DebianSection>,
    #[serde(default)]
    pub pip: PackageSection,
    #[serde(default)]
    pub npm: PackageSection,
    #[serde(default)]
    pub files: Vec<FileSection>,
    #[serde(default)]
    pub build: BuildSection,
    #[serde(default)]
    pub defaults: DefaultsSection,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebianSection {
    /// `bookworm`, `trixie`…: the host's apt sources must name a mirror for it.
    pub suite: String,
    /// mmdebstrap's variant (default `minbase`).
    #[serde(default = "minbase")]
    pub variant: String,
    #[serde(default)]
    pub packages: Vec<String>,
}

fn minbase() -> String {
    "minbase".into()
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageSection {
    #[serde(default)]
    pub packages: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSection {
    /// A file on the host, relative to the spec's directory.
    pub source: String,
    /// Where it goes in the template (absolute).
    pub target: String,
    #[serde(default)]
    pub mode: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSection {
    /// Shell commands run in order inside a box on the template being built.
    #[serde(default)]
    pub run: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultsSection {
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub cmd: Vec<String>,
}

impl TemplateSpec {
    /// Parses `text` (from `path`, named in errors) and checks what TOML cannot.
    pub fn parse(text: &str, path: &Path) -> Result<TemplateSpec, TemplateError> {
        let spec: TemplateSpec = toml::from_str(text)
            .map_err(|e| TemplateError::Malformed(format!("the spec {}: {e}", path.display())))?;
        let bad =
            |why: String| TemplateError::Malformed(format!("the spec {}: {why}", path.display()));
        let word = |s: &str| {
            !s.is_empty()
                && !s.starts_with('-')
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-._:=<>~@/[],!".contains(c))
        };
        match (&spec.debian, &spec.from) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "give either [debian] (a new base) or `from` (a stored template to build on), not both".into(),
                ))
            }
            (None, None) => {
                return Err(bad(
                    "give a base: a [debian] section (suite and packages) or `from = \"NAME\"`, a stored template".into(),
                ))
            }
            (Some(d), None) if !word(&d.suite) || d.suite.contains('/') => {
                return Err(bad(format!("suite {:?} is not a suite name", d.suite)));
            }
            (None, Some(f)) if !crate::store::valid_name(f) || f == "host" => {
                return Err(bad(format!(
                    "from {f:?} is not a stored template's name (`airlock template ls` lists them; `host` is no tree to build on)"
                )));
            }
            _ => {}
        }
        for p in spec
            .debian
            .iter()
            .flat_map(|d| &d.packages)
            .chain(&spec.pip.packages)
            .chain(&spec.npm.packages)
        {
            if !word(p) {
                return Err(bad(format!("{p:?} is not a package name")));
            }
        }
        for f in &spec.files {
            if !f.target.starts_with('/') {
                return Err(bad(format!("file target {:?} must be absolute", f.target)));
            }
        }
        if spec
            .defaults
            .cwd
            .as_deref()
            .is_some_and(|c| !c.starts_with('/'))
        {
            return Err(bad("defaults.cwd must be absolute".into()));
        }
        Ok(spec)
    }

    /// Reads and parses the spec at `path`.
    pub fn load(path: &Path) -> Result<(TemplateSpec, String), TemplateError> {
        let text = std::fs::read_to_string(path).map_err(io_err("read the spec", path))?;
        Ok((TemplateSpec::parse(&text, path)?, text))
    }
}
