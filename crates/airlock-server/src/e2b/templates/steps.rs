//! E2B's build request (`POST /v2/templates/{id}/builds/{build}`: a base and steps) as an
//! airlock template spec.
//!
//! - Base: `e2bdev/base` (the SDK's `from_base_image()`, and its default) is Debian bookworm;
//!   `debian:<suite>` (`from_debian_image`) is that suite; both from the host's own Debian
//!   mirror, with `python3` (and `python`, as E2B's have). A name the template store has
//!   (`from_template`, or an image name) is that template: as it is with no steps, else the
//!   build starts from a copy of its tree (a spec's `from`; apt packages are refused there, as
//!   they go into a Debian base). Anything else would need a registry: refused, naming what is
//!   supported.
//! - `RUN` is a shell command in the build box (each in its own `sh -c`, in order);
//!   `apt_install`'s command becomes Debian packages of the base and `pip_install`'s (global,
//!   named packages) the spec's pip packages, both installed before every step.
//! - `COPY`'s files are staged in the tree and moved into place by the box at the step's turn,
//!   so steps see each other's effects in order; `ENV` exports for later steps and becomes the
//!   template's environment; `WORKDIR` changes directory for later steps and becomes its
//!   working directory (a `COPY` into the home, `/home/user`, is refused: every box gets a
//!   fresh, empty home, so a template cannot carry files there); `USER` takes `user` or `root`.
//! - A `RUN` as root (its own user `root`, or after `USER root`) runs as the build box's root:
//!   uid 0 of a user namespace nested in the box's, mapping only the box user, without a
//!   capability (`airlock_template::AS_ROOT_FUNCTION`), so dpkg and `apt-get install` accept it.
//! - `startCmd` becomes the template's default command and, with `readyCmd`, is recorded;
//!   a box does not run it.

use super::archive::CopyEntry;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where a build's copied files wait in the tree until their step moves them.
pub const STAGE_DIR: &str = "/.airlock-e2b-copy";
/// The Debian suite E2B's own base image maps to.
pub const E2B_BASE_SUITE: &str = "bookworm";

/// The request body (E2B's `TemplateBuildStartV2`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildStart {
    pub from_image: Option<String>,
    pub from_template: Option<String>,
    pub from_image_registry: Option<serde_json::Value>,
    #[serde(default)]
    pub force: bool,
    #[serde(default)]
    pub steps: Vec<Step>,
    pub start_cmd: Option<String>,
    pub ready_cmd: Option<String>,
}

/// One step (E2B's `TemplateStep`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub args: Vec<String>,
    pub files_hash: Option<String>,
    #[serde(default)]
    pub force: bool,
}

/// Why a build request cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    NotFound(String),
}

/// What the template starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    Debian {
        suite: String,
    },
    /// A stored template (by its store name).
    Stored(String),
}

/// One step, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Planned {
    Run(String),
    /// A `RUN` as root (its own user, or the current `USER`): the build box's root, uid 0 by
    /// another name of the box user, through `airlock_template::AS_ROOT_FUNCTION`.
    RunAsRoot(String),
    Copy(CopyStep),
    Env(Vec<(String, String)>),
    Workdir(String),
    /// A step with nothing to do in the box (`USER user`, or a command moved into the base).
    Nothing(String),
}

/// A `COPY` step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyStep {
    pub src: String,
    /// Absolute (a relative one is taken from the working directory at that step).
    pub dest: String,
    pub files_hash: String,
    pub mode: Option<u32>,
}

/// A build request, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub base: Base,
    pub packages: Vec<String>,
    pub pip: Vec<String>,
    pub steps: Vec<Planned>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub start_cmd: Option<String>,
    pub ready_cmd: Option<String>,
    pub force: bool,
    /// The current `USER` is root: a `RUN` naming no user runs as root.
    pub user_root: bool,
}

impl Plan {
    /// The COPY steps, in order.
    pub fn copies(&self) -> impl Iterator<Item = &CopyStep> {
        self.steps.iter().filter_map(|s| match s {
            Planned::Copy(c) => Some(c),
            _ => None,
        })
    }
}

fn unsupported(why: String) -> PlanError {
    PlanError::Unsupported(why)
}

/// What a Debian base gets besides the steps' packages: E2B's templates have a `python`
/// command too.
const DEFAULT_PACKAGES: &[&str] = &["python3", "python-is-python3"];

/// The supported bases, for messages.
const SUPPORTED_BASES: &str = "from_base_image() (Debian bookworm), from_debian_image(<suite>) \
    (a suite the host's apt sources name), or a template already stored on this server";

/// Understands `start`; `stored` answers whether a name is a stored template (and its store
/// name).
pub fn plan(
    start: &BuildStart,
    stored: &dyn Fn(&str) -> Option<String>,
) -> Result<Plan, PlanError> {
    if start.from_image_registry.is_some() {
        return Err(unsupported(format!(
            "registry credentials (fromImageRegistry) are refused: airlock's builder pulls from no registry; use {SUPPORTED_BASES}"
        )));
    }
    let base = match (&start.from_template, &start.from_image) {
        (Some(t), _) => Base::Stored(stored(t).ok_or_else(|| {
            PlanError::NotFound(format!(
                "from_template({t:?}): no stored template is named so; build it first or use {SUPPORTED_BASES}"
            ))
        })?),
        (None, image) => base_of(image.as_deref().unwrap_or("e2bdev/base"), stored)?,
    };
    let mut plan = Plan {
        base,
        packages: DEFAULT_PACKAGES.iter().map(|p| p.to_string()).collect(),
        pip: Vec::new(),
        steps: Vec::new(),
        env: BTreeMap::new(),
        cwd: None,
        start_cmd: start.start_cmd.clone(),
        ready_cmd: start.ready_cmd.clone(),
        force: start.force || start.steps.iter().any(|s| s.force),
        user_root: false,
    };
    for (i, step) in start.steps.iter().enumerate() {
        let planned = plan_step(step, &mut plan).map_err(|why| {
            unsupported(format!(
                "step {} ({} {:?}): {why}",
                i + 1,
                step.kind,
                step.args
            ))
        })?;
        plan.steps.push(planned);
    }
    if let Base::Stored(name) = &plan.base {
        if plan.packages.len() > DEFAULT_PACKAGES.len() {
            let asked = &plan.packages[DEFAULT_PACKAGES.len()..];
            return Err(unsupported(format!(
                "apt packages ({}) on the stored template {name:?}: they go into a Debian base, and a build on a stored template starts from its tree (its build box runs as the box user, who cannot run apt); add them where {name:?} was built, or start from {SUPPORTED_BASES}",
                asked.join(" ")
            )));
        }
        plan.packages.clear();
        return Ok(plan);
    }
    if !plan.pip.is_empty() && !plan.packages.iter().any(|p| p == "python3-pip") {
        plan.packages.push("python3-pip".into());
    }
    Ok(plan)
}

fn base_of(image: &str, stored: &dyn Fn(&str) -> Option<String>) -> Result<Base, PlanError> {
    let short = image.strip_prefix("docker.io/").unwrap_or(image);
    let short = short.strip_prefix("library/").unwrap_or(short);
    if matches!(short, "e2bdev/base" | "e2bdev/base:latest") {
        return Ok(Base::Debian {
            suite: E2B_BASE_SUITE.into(),
        });
    }
    if let Some(tag) = short.strip_prefix("debian:") {
        let suite = tag.strip_suffix("-slim").unwrap_or(tag);
        if !suite.is_empty() && suite.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Ok(Base::Debian {
                suite: suite.into(),
            });
        }
    }
    if let Some(name) = stored(image) {
        return Ok(Base::Stored(name));
    }
    Err(unsupported(format!(
        "the image {image:?} would be pulled from a registry, and airlock's builder pulls from none (import an image you have with `airlock template import`, then name it); use {SUPPORTED_BASES}"
    )))
}

/// The prefix of `apt_install`'s command in both SDKs.
const APT_PREFIX: &str =
    "apt-get update && DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y ";

fn package_word(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('-')
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-._:=<>~@".contains(c))
}

fn plan_step(step: &Step, plan: &mut Plan) -> Result<Planned, String> {
    let arg = |i: usize| step.args.get(i).map(String::as_str).unwrap_or("");
    match step.kind.as_str() {
        "RUN" => {
            box_user(arg(1))?;
            let as_root = match arg(1) {
                "" => plan.user_root,
                user => user == "root",
            };
            let cmd = arg(0);
            if cmd.is_empty() {
                return Err("the command is empty".into());
            }
            if let Some(rest) = cmd.strip_prefix(APT_PREFIX) {
                let pkgs: Vec<&str> = rest
                    .split_whitespace()
                    .filter(|w| !matches!(*w, "--no-install-recommends" | "--fix-missing"))
                    .collect();
                if !pkgs.is_empty() && pkgs.iter().all(|p| package_word(p)) {
                    plan.packages.extend(pkgs.iter().map(|p| p.to_string()));
                    return Ok(Planned::Nothing(format!(
                        "apt packages {} go into the Debian base",
                        pkgs.join(" ")
                    )));
                }
            }
            if let Some(rest) = cmd.strip_prefix("pip install ") {
                let pkgs: Vec<&str> = rest.split_whitespace().collect();
                if !pkgs.is_empty() && pkgs.iter().all(|p| package_word(p) && *p != ".") {
                    plan.pip.extend(pkgs.iter().map(|p| p.to_string()));
                    return Ok(Planned::Nothing(format!(
                        "pip packages {} are installed after the base",
                        pkgs.join(" ")
                    )));
                }
            }
            Ok(match as_root {
                true => Planned::RunAsRoot(cmd.to_string()),
                false => Planned::Run(cmd.to_string()),
            })
        }
        "COPY" => {
            let (src, dest) = (arg(0), arg(1));
            if src.is_empty() || dest.is_empty() {
                return Err("COPY needs a source and a destination".into());
            }
            box_user(arg(2).split(':').next().unwrap_or(""))?;
            let mode = match arg(3) {
                "" => None,
                m => Some(
                    u32::from_str_radix(m, 8)
                        .ok()
                        .filter(|m| *m <= 0o7777)
                        .ok_or_else(|| format!("mode {m:?} is not an octal file mode"))?,
                ),
            };
            let files_hash = step
                .files_hash
                .clone()
                .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                .ok_or("COPY needs the filesHash of its upload (64 hex digits)")?;
            let dest = absolute(dest, plan.cwd.as_deref());
            let home = airlock_policy::INSIDE_HOME;
            if dest == home || dest.starts_with(&format!("{home}/")) {
                // Every box (the build's too) gets a fresh home of its own (a tmpfs): files
                // put there would silently not be in the template.
                return Err(format!(
                    "{dest} is in the box's home, which every box gets fresh and empty (its own scratch space), so a template cannot carry files there; copy them elsewhere, e.g. /opt/app"
                ));
            }
            Ok(Planned::Copy(CopyStep {
                src: src.to_string(),
                dest,
                files_hash,
                mode,
            }))
        }
        "ENV" => {
            if !step.args.len().is_multiple_of(2) || step.args.is_empty() {
                return Err("ENV needs name, value pairs".into());
            }
            let mut pairs = Vec::new();
            for kv in step.args.chunks(2) {
                let name = &kv[0];
                let valid = name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid || kv[1].contains('\0') {
                    return Err(format!(
                        "{name:?} is not an environment variable name (letters, digits, `_`)"
                    ));
                }
                plan.env.insert(name.clone(), kv[1].clone());
                pairs.push((name.clone(), kv[1].clone()));
            }
            Ok(Planned::Env(pairs))
        }
        "WORKDIR" => {
            let dir = absolute(arg(0), plan.cwd.as_deref());
            if arg(0).is_empty() {
                return Err("WORKDIR needs a directory".into());
            }
            plan.cwd = Some(dir.clone());
            Ok(Planned::Workdir(dir))
        }
        "USER" => {
            box_user(arg(0))?;
            plan.user_root = arg(0) == "root";
            Ok(Planned::Nothing(match plan.user_root {
                true => "USER root: later commands run as the build box's root (the box user by another name)".into(),
                false => format!("USER {}: the box's user", arg(0)),
            }))
        }
        other => Err(format!(
            "the step type {other:?} is not known; airlock builds RUN, COPY, ENV, WORKDIR and USER"
        )),
    }
}

/// A build box has one user, `user`, and its root (the same user by another name).
fn box_user(name: &str) -> Result<(), String> {
    match name {
        "" | "user" | "root" => Ok(()),
        other => Err(format!(
            "user {other:?} does not exist: a box has one user, `user`, and `root` (the same user by another name)"
        )),
    }
}

fn absolute(path: &str, cwd: Option<&str>) -> String {
    if path.starts_with('/') {
        return path.to_string();
    }
    let base = cwd
        .unwrap_or(airlock_policy::INSIDE_HOME)
        .trim_end_matches('/');
    format!("{base}/{}", path.trim_start_matches("./"))
}

/// `s` as one shell word.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A file staged in the tree: the build directory's numbered file and where it is staged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedFile {
    pub stored: PathBuf,
    pub staged: String,
}

/// The name in every spec this module writes (the builder is told the store name): the
/// builder's cache is keyed by the spec's text, and a store tree records the spec it was first
/// built from, so the same steps under another name must be the same text.
const SPEC_NAME: &str = "e2b-template";

/// The spec (TOML) a plan amounts to, with each COPY step's archive entries (`copies`, in step
/// order), and the files it stages.
pub fn render(
    plan: &Plan,
    copies: &[Vec<CopyEntry>],
) -> Result<(String, Vec<StagedFile>), PlanError> {
    let total = plan.steps.len();
    let mut run = Vec::new();
    let mut staged = Vec::new();
    let mut copy_no = 0;
    for (i, step) in plan.steps.iter().enumerate() {
        let n = i + 1;
        let (label, body) = match step {
            Planned::Run(cmd) => (format!("RUN {cmd}"), format!("sh -c {}", quote(cmd))),
            Planned::RunAsRoot(cmd) => (
                format!("RUN {cmd} (as root)"),
                format!(
                    "{} sh -c {}",
                    airlock_template::AS_ROOT_FUNCTION,
                    quote(cmd)
                ),
            ),
            Planned::Env(pairs) => {
                let names: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
                let lines: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("export {k}={}", quote(v)))
                    .collect();
                (format!("ENV {}", names.join(" ")), lines.join("\n"))
            }
            Planned::Workdir(dir) => (
                format!("WORKDIR {dir}"),
                format!("mkdir -p {0} && cd {0}", quote(dir)),
            ),
            Planned::Nothing(what) => (what.clone(), ":".into()),
            Planned::Copy(c) => {
                let entries = copies
                    .get(copy_no)
                    .ok_or_else(|| unsupported(format!("step {n}: its files were not uploaded")))?;
                copy_no += 1;
                let lines = copy_lines(c, entries, &mut staged)
                    .map_err(|why| unsupported(format!("step {n} (COPY {}): {why}", c.src)))?;
                (format!("COPY {} {}", c.src, c.dest), lines.join("\n"))
            }
        };
        let shown: String = label.chars().take(200).collect();
        run.push(format!(
            "printf '%s\\n' {}\n{body}",
            quote(&format!("[airlock] step {n}/{total}: {shown}"))
        ));
    }
    if !staged.is_empty() {
        run.push(format!("rm -rf {STAGE_DIR}"));
    }
    let mut defaults = toml_table();
    if !plan.env.is_empty() {
        let env: toml::Table = plan
            .env
            .iter()
            .map(|(k, v)| (k.clone(), toml::Value::String(v.clone())))
            .collect();
        defaults.insert("env".into(), toml::Value::Table(env));
    }
    if let Some(cwd) = &plan.cwd {
        defaults.insert("cwd".into(), cwd.clone().into());
    }
    if let Some(cmd) = &plan.start_cmd {
        defaults.insert(
            "cmd".into(),
            toml::Value::Array(vec!["sh".into(), "-c".into(), cmd.clone().into()]),
        );
    }
    let strings = |v: &[String]| toml::Value::Array(v.iter().cloned().map(Into::into).collect());
    let mut doc = toml_table();
    doc.insert("name".into(), SPEC_NAME.into());
    match &plan.base {
        Base::Debian { suite } => {
            let mut debian = toml_table();
            debian.insert("suite".into(), suite.clone().into());
            debian.insert("packages".into(), strings(&plan.packages));
            doc.insert("debian".into(), toml::Value::Table(debian));
        }
        Base::Stored(name) => {
            doc.insert("from".into(), name.clone().into());
        }
    }
    if !plan.pip.is_empty() {
        let mut pip = toml_table();
        pip.insert("packages".into(), strings(&plan.pip));
        doc.insert("pip".into(), toml::Value::Table(pip));
    }
    let files: Vec<toml::Value> = staged
        .iter()
        .map(|f| {
            let mut t = toml_table();
            let source = f
                .stored
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            t.insert(
                "source".into(),
                format!("files/{}", source.unwrap_or_default()).into(),
            );
            t.insert("target".into(), f.staged.clone().into());
            t.insert("mode".into(), toml::Value::Integer(0o644));
            toml::Value::Table(t)
        })
        .collect();
    if !files.is_empty() {
        doc.insert("files".into(), toml::Value::Array(files));
    }
    let mut build = toml_table();
    build.insert("run".into(), strings(&run));
    doc.insert("build".into(), toml::Value::Table(build));
    if !defaults.is_empty() {
        doc.insert("defaults".into(), toml::Value::Table(defaults));
    }
    let text = toml::to_string(&doc)
        .map_err(|e| unsupported(format!("the spec cannot be written: {e}")))?;
    Ok((text, staged))
}

fn toml_table() -> toml::Table {
    toml::Table::new()
}

/// The box's commands that put one COPY step's entries in place (Docker's rules: a single
/// file to a destination ending in `/` keeps its name inside it, otherwise it becomes the
/// destination; a directory's content goes into the destination; a glob's matches keep their
/// paths below the glob's directory).
fn copy_lines(
    c: &CopyStep,
    entries: &[CopyEntry],
    staged: &mut Vec<StagedFile>,
) -> Result<Vec<String>, String> {
    let src = c.src.trim_start_matches("./").trim_end_matches('/');
    let globbed = src.contains(['*', '?', '[']);
    let root = match globbed {
        true => {
            let first_glob = src.find(['*', '?', '[']).unwrap_or(0);
            src[..first_glob]
                .rsplit_once('/')
                .map(|(d, _)| d)
                .unwrap_or("")
        }
        false => src,
    };
    let dest = c.dest.trim_end_matches('/');
    let into_dir = c.dest.ends_with('/') || globbed;
    let mut lines = Vec::new();
    for e in entries {
        let rel = e.rel();
        let target = if rel == root && !globbed {
            match (e, into_dir) {
                (CopyEntry::Dir { .. }, _) | (_, false) => c.dest.clone(),
                (_, true) => format!("{dest}/{}", rel.rsplit('/').next().unwrap_or(rel)),
            }
        } else if root.is_empty() {
            format!("{dest}/{rel}")
        } else if let Some(tail) = rel.strip_prefix(root).and_then(|t| t.strip_prefix('/')) {
            format!("{dest}/{tail}")
        } else {
            return Err(format!(
                "the archive holds {rel:?}, which the source does not name"
            ));
        };
        let target = if target.is_empty() {
            "/".to_string()
        } else {
            target
        };
        let parent = target
            .rsplit_once('/')
            .map(|(p, _)| p)
            .filter(|p| !p.is_empty());
        let mkparent = parent
            .map(|p| format!("mkdir -p {} && ", quote(p)))
            .unwrap_or_default();
        match e {
            CopyEntry::Dir { mode, .. } => lines.push(format!(
                "mkdir -p {0} && chmod {mode:o} {0}",
                quote(&target)
            )),
            CopyEntry::File { mode, stored, .. } => {
                let at = format!("{STAGE_DIR}/{}", staged.len());
                let mode = c.mode.unwrap_or(*mode);
                lines.push(format!(
                    "{mkparent}cp {} {1} && chmod {mode:o} {1}",
                    quote(&at),
                    quote(&target)
                ));
                staged.push(StagedFile {
                    stored: stored.clone(),
                    staged: at,
                });
            }
            CopyEntry::Symlink { target: link, .. } => lines.push(format!(
                "{mkparent}ln -sfn {} {}",
                quote(link),
                quote(&target)
            )),
        }
    }
    Ok(lines)
}

#[cfg(test)]
#[path = "steps_tests.rs"]
mod tests;
