//! `airlock template build SPEC`: a Debian base from mmdebstrap (as a tarball, applied like an
//! image layer, so ownership is flattened and set-ID bits and devices go) or a copy of a stored
//! template's tree (`from`; the stored one is never written), files copied in,
//! then pip, npm and the spec's commands run inside a box on the tree being built — network
//! only through the egress proxy, only to the package indexes the host's own configuration
//! names — and the box's root layer folded into the tree. Cached by the digest of the spec and
//! every input it names: an unchanged spec is answered from the store without any work.

use crate::digest::hex;
use crate::error::{io_err, TemplateError};
use crate::host_config::{apt_sources, mirror_lines, npm_registry, pip_index, url_host};
use crate::import::ImportReport;
use crate::layer::{self, DirModes};
use crate::merge::merge_upper;
use crate::meta::TemplateSource;
use crate::spec::{DebianSection, TemplateSpec};
use crate::store::{StoredTemplate, TemplateStore};
use crate::tree::{PlaceError, Tree};
use airlock_runtime::backend::TemplateDefaults;
use sha2::{Digest, Sha256};
use std::io::BufReader;
use std::path::Path;
use std::process::Command;

/// The revision of what [`build`] adds to a tree besides the spec (2: apt's sandbox user).
const BUILDER_REVISION: &str = "2";

/// Runs a build's commands in a box. The CLI provides one on the native backend.
pub trait BuildBox {
    /// Runs `sh -c script` in a box whose root is `rootfs` (read-only) under a writable layer
    /// kept in the host directory `layer`, whose network reaches only `hosts` through the
    /// egress proxy, with `env` added. Ok when the script exits 0.
    fn run(
        &self,
        rootfs: &Path,
        layer: &Path,
        script: &str,
        hosts: &[String],
        env: &[(String, String)],
    ) -> Result<(), String>;
}

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Store under this name instead of the spec's.
    pub name: Option<String>,
    /// Build even when the store has this spec's result.
    pub force: bool,
}

/// What a build did.
#[derive(Debug, Clone)]
pub struct BuildOutcome {
    pub template: StoredTemplate,
    /// `true`: answered from the store, nothing was built or downloaded.
    pub cached: bool,
    pub spec_digest: String,
}

/// Builds (or finds) the template `spec_path` describes.
pub fn build(
    store: &TemplateStore,
    spec_path: &Path,
    opts: &BuildOptions,
    runner: &dyn BuildBox,
) -> Result<BuildOutcome, TemplateError> {
    let (spec, text) = TemplateSpec::load(spec_path)?;
    let name = opts.name.clone().unwrap_or_else(|| spec.name.clone());
    let mirrors = match &spec.debian {
        Some(d) => mirror_lines(&apt_sources(Path::new("/etc/apt")), &d.suite)?,
        None => Vec::new(),
    };
    // The template built on, held (a shared lock: not removed) until the copy is made.
    let parent = match &spec.from {
        Some(from) => {
            let t = store.inspect(from)?;
            let lease = crate::lease::hold(&t.rootfs)?;
            Some((t, lease))
        }
        None => None,
    };
    let pip = match spec.pip.packages.is_empty() {
        true => None,
        false => Some(pip_index()?),
    };
    let npm = match spec.npm.packages.is_empty() {
        true => None,
        false => Some(npm_registry()?),
    };
    let base_dir = spec_path.parent().unwrap_or(Path::new("."));
    // The digest of everything the result depends on.
    let mut h = Sha256::new();
    let mut part = |label: &str, bytes: &[u8]| {
        h.update(label.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part("spec", text.as_bytes());
    // What the builder itself adds to every tree (bump when that changes: cached builds made
    // without it are then made again).
    part("builder", BUILDER_REVISION.as_bytes());
    part("arch", std::env::consts::ARCH.as_bytes());
    if let Some((t, _)) = &parent {
        part("from", t.meta.digest.as_bytes());
    }
    for m in &mirrors {
        part("mirror", m.as_bytes());
    }
    if let Some((url, _)) = &pip {
        part("pip", url.as_bytes());
    }
    if let Some((url, _)) = &npm {
        part("npm", url.as_bytes());
    }
    for f in &spec.files {
        let src = base_dir.join(&f.source);
        let bytes = std::fs::read(&src).map_err(io_err("read the spec's file", &src))?;
        part("file", f.target.as_bytes());
        part("content", &bytes);
    }
    let spec_digest = format!("sha256:{}", hex(&h.finalize()));
    if !opts.force {
        if let Ok(t) = store.inspect(&name) {
            if t.meta.source
                == (TemplateSource::Spec {
                    spec_digest: spec_digest.clone(),
                })
            {
                return Ok(BuildOutcome {
                    template: t,
                    cached: true,
                    spec_digest,
                });
            }
        }
    }

    let staged = store.stage()?;
    let scratch = staged.scratch();
    std::fs::create_dir_all(&scratch).map_err(io_err("create", &scratch))?;
    let tree = Tree::new(staged.rootfs());
    let mut report = ImportReport::default();
    match (&spec.debian, &parent) {
        (Some(debian), _) => debootstrap(store, debian, &mirrors, &tree, &mut report)?,
        (None, Some((t, _))) => copy_tree(&t.rootfs, tree.root())?,
        (None, None) => {
            return Err(TemplateError::Malformed(
                "the spec names no base ([debian] or `from`)".into(),
            ))
        }
    }
    let inherited = parent
        .map(|(t, _lease)| t.meta.defaults)
        .unwrap_or_default();
    for f in &spec.files {
        copy_in(&base_dir.join(&f.source), &f.target, f.mode, &tree)?;
    }
    let script = build_script(&spec);
    if !script.is_empty() {
        let mut hosts: Vec<String> = mirrors
            .iter()
            .filter_map(|l| l.split_whitespace().nth(1).and_then(url_host))
            .collect();
        let mut env = Vec::new();
        if let Some((url, h)) = &pip {
            hosts.extend(h.iter().cloned());
            env.push(("PIP_INDEX_URL".to_string(), url.clone()));
        }
        if let Some((url, h)) = &npm {
            hosts.push(h.clone());
            env.push(("npm_config_registry".to_string(), url.clone()));
        }
        hosts.sort();
        hosts.dedup();
        let layer = scratch.join("layer");
        std::fs::create_dir_all(&layer).map_err(io_err("create", &layer))?;
        set_mode(&scratch, 0o711)?;
        runner
            .run(tree.root(), &layer, &script, &hosts, &env)
            .map_err(|why| {
                TemplateError::Unsupported(format!("the build's commands failed: {why}"))
            })?;
        merge_upper(&layer.join(".root-upper"), &tree, &mut report).map_err(|e| match e {
            PlaceError::Refused(why) => {
                TemplateError::Malformed(format!("the build's layer: {why}"))
            }
            PlaceError::Io(e) => io_err("fold the build's layer into", tree.root())(e),
        })?;
    }
    // A layered build keeps what it built on, the spec's own defaults on top.
    let mut env = inherited.env;
    env.extend(spec.defaults.env.clone());
    let defaults = TemplateDefaults {
        env,
        cwd: spec.defaults.cwd.clone().or(inherited.cwd),
        user: inherited.user,
        cmd: match spec.defaults.cmd.is_empty() {
            true => inherited.cmd,
            false => spec.defaults.cmd.clone(),
        },
        backend: inherited.backend,
    };
    let template = store.commit(
        staged,
        &name,
        TemplateSource::Spec {
            spec_digest: spec_digest.clone(),
        },
        defaults,
    )?;
    Ok(BuildOutcome {
        template,
        cached: false,
        spec_digest,
    })
}

/// The descriptor at which a build's commands hold the build box's root namespace (a user
/// namespace nested in the box's, mapping only the box user to uid 0).
pub const ROOT_NS_FD: i32 = 3;

/// The shell function every build's commands have: `airlock_as_root CMD [ARG…]` runs CMD as
/// the build box's root — uid 0 of [`ROOT_NS_FD`]'s namespace, which is the box user by
/// another name, with `HOME=/root` — without a capability (bounding set emptied, securebits
/// locked so exec grants none back), under the box's seccomp filter and Landlock domain. For
/// what checks for uid 0 (dpkg, `apt-get install`). It uses the tree's own `nsenter`
/// and `setpriv` (util-linux, in every Debian base).
pub const AS_ROOT_FUNCTION: &str = "airlock_as_root";

fn as_root_prelude() -> String {
    format!(
        "{AS_ROOT_FUNCTION}() {{ if ! command -v nsenter >/dev/null || ! command -v setpriv >/dev/null; then \
echo '[airlock] a root step needs nsenter and setpriv (util-linux) in the template being built' >&2; return 127; fi; \
nsenter --user=/proc/self/fd/{ROOT_NS_FD} --preserve-credentials -- setpriv --bounding-set=-all --inh-caps=-all \
--ambient-caps=-all --securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked,+keep_caps_locked \
-- env HOME=/root USER=root LOGNAME=root \"$@\"; }}"
    )
}

/// The commands run in the build box, in order: pip, npm, then the spec's own.
fn build_script(spec: &TemplateSpec) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut lines = Vec::new();
    if !spec.pip.packages.is_empty() {
        let pkgs: Vec<String> = spec.pip.packages.iter().map(|p| quote(p)).collect();
        lines.push(format!(
            "python3 -m pip install --no-cache-dir --break-system-packages --root-user-action=ignore {}",
            pkgs.join(" ")
        ));
    }
    if !spec.npm.packages.is_empty() {
        let pkgs: Vec<String> = spec.npm.packages.iter().map(|p| quote(p)).collect();
        lines.push(format!(
            "npm install --global --no-fund --no-audit {}",
            pkgs.join(" ")
        ));
    }
    lines.extend(spec.build.run.iter().cloned());
    if lines.is_empty() {
        return String::new();
    }
    format!("set -e\n{}\n{}\n", as_root_prelude(), lines.join("\n"))
}

/// The Debian base: mmdebstrap writes a tarball (rootless: `--mode=unshare`), applied to the
/// tree like an image layer. The tarball is kept in the store's base cache, keyed by suite,
/// variant, packages and mirrors, so a spec that changes only its later steps downloads nothing.
fn debootstrap(
    store: &TemplateStore,
    debian: &DebianSection,
    mirrors: &[String],
    tree: &Tree,
    report: &mut ImportReport,
) -> Result<(), TemplateError> {
    let key = {
        let mut h = Sha256::new();
        for part in [&debian.suite, &debian.variant]
            .into_iter()
            .chain(&debian.packages)
            .chain(mirrors)
        {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        hex(&h.finalize())
    };
    let bases = store.path().join("bases");
    std::fs::create_dir_all(&bases).map_err(io_err("create", &bases))?;
    let tarball = bases.join(format!("{key}.tar"));
    if !tarball.is_file() {
        let partial = bases.join(format!("{key}.tar.partial-{}", std::process::id()));
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        let mode = if uid == 0 { "root" } else { "unshare" };
        if uid != 0 {
            crate::rootless::check(uid)?;
        }
        let mut cmd = Command::new("mmdebstrap");
        cmd.arg("--quiet")
            .arg(format!("--mode={mode}"))
            .arg(format!("--variant={}", debian.variant))
            .arg("--format=tar");
        if !debian.packages.is_empty() {
            cmd.arg(format!("--include={}", debian.packages.join(",")));
        }
        cmd.arg(&debian.suite).arg(&partial).args(mirrors);
        let status = cmd.status().map_err(|e| {
            TemplateError::Unsupported(format!(
                "cannot run mmdebstrap ({e}): install it (`apt-get install mmdebstrap`)"
            ))
        })?;
        if !status.success() {
            let _ = std::fs::remove_file(&partial);
            return Err(TemplateError::Unsupported(format!(
                "mmdebstrap failed ({status}) building suite {} with {:?}",
                debian.suite, debian.packages
            )));
        }
        std::fs::rename(&partial, &tarball).map_err(io_err("store", &tarball))?;
    }
    let file = std::fs::File::open(&tarball).map_err(io_err("read", &tarball))?;
    let mut dir_modes = DirModes::new();
    layer::apply(tree, 1, BufReader::new(file), report, &mut dir_modes)?;
    layer::finish_dirs(tree, &dir_modes).map_err(io_err("set modes in", tree.root()))?;
    // mmdebstrap leaves the host's own resolver config and host name in the tree: not the
    // template's to keep.
    for leak in ["etc/resolv.conf", "etc/hostname"] {
        let p = tree.root().join(leak);
        Tree::clear(&p).map_err(io_err("remove", &p))?;
    }
    apt_as_box_root(tree)?;
    report.layers += 1;
    Ok(())
}

/// Where [`APT_ROOT_CONF`] goes in a Debian template.
pub(crate) const APT_ROOT_CONF_PATH: &str = "etc/apt/apt.conf.d/99airlock-box-root";

/// `root` in an airlock box (`user="root"`) holds no capability, so apt cannot switch to its
/// `_apt` sandbox user (setgroups fails and `apt-get install` stops): it runs its downloads as
/// the box's root instead, which is no one on the host.
const APT_ROOT_CONF: &str =
    "// Written by airlock: root in an airlock box has no capabilities, so apt cannot switch\n\
// to the _apt user. The box itself is the sandbox.\n\
APT::Sandbox::User \"root\";\n";

pub(crate) fn apt_as_box_root(tree: &Tree) -> Result<(), TemplateError> {
    let rel = Path::new(APT_ROOT_CONF_PATH);
    let dest = tree.locate(rel, true).map_err(|e| {
        TemplateError::Malformed(format!("{APT_ROOT_CONF_PATH}: {}", std::io::Error::from(e)))
    })?;
    Tree::clear(&dest).map_err(io_err("replace", &dest))?;
    std::fs::write(&dest, APT_ROOT_CONF).map_err(io_err("write", &dest))
}

/// Copies the stored tree `from` into the (empty) tree being built: every entry as it is —
/// symbolic links as links, never followed; modes, times and extended attributes kept (a
/// stored tree holds no devices or set-ID files). Copy on write where the filesystem can.
fn copy_tree(from: &Path, to: &Path) -> Result<(), TemplateError> {
    let out = Command::new("cp")
        .args(["-a", "--reflink=auto", "--no-target-directory"])
        .arg(from)
        .arg(to)
        .output()
        .map_err(|e| {
            TemplateError::Unsupported(format!("cannot run cp to copy the base template ({e})"))
        })?;
    if !out.status.success() {
        return Err(TemplateError::Io {
            what: "copy the base template",
            path: from.to_path_buf(),
            source: std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        });
    }
    Ok(())
}

fn set_mode(path: &Path, mode: u32) -> Result<(), TemplateError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(io_err("chmod", path))
}

fn copy_in(src: &Path, target: &str, mode: Option<u32>, tree: &Tree) -> Result<(), TemplateError> {
    use std::os::unix::fs::PermissionsExt;
    let refused = |why: String| TemplateError::Malformed(format!("file target {target:?}: {why}"));
    let rel = crate::tree::relative(target.as_bytes())
        .map_err(|e| refused(format!("{:?}", std::io::Error::from(e))))?
        .ok_or_else(|| refused("is the root".into()))?;
    let dest = tree
        .locate(&rel, true)
        .map_err(|e| refused(std::io::Error::from(e).to_string()))?;
    Tree::clear(&dest).map_err(io_err("replace", &dest))?;
    std::fs::copy(src, &dest).map_err(io_err("copy", src))?;
    let mode = mode.unwrap_or(0o644) & 0o777;
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode | 0o400))
        .map_err(io_err("chmod", &dest))
}
