#![allow(clippy::unwrap_used)]
use super::*;
use crate::SizeValue;

/// A fake host: a set of directories and files, and symlinks from one path to another.
struct FakeHost {
    dirs: Vec<&'static str>,
    files: Vec<&'static str>,
    links: Vec<(&'static str, &'static str)>,
}

impl HostView for FakeHost {
    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        let path = &normalize(path);
        for (from, to) in &self.links {
            if let Ok(rest) = path.strip_prefix(from) {
                return self.canonicalize(&Path::new(to).join(rest));
            }
        }
        let s = path.to_str().unwrap_or_default();
        if s == "/" || self.dirs.contains(&s) || self.files.contains(&s) {
            Ok(path.to_path_buf())
        } else {
            Err(std::io::Error::from(std::io::ErrorKind::NotFound))
        }
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.canonicalize(path)
            .map(|p| p == Path::new("/") || self.dirs.contains(&p.to_str().unwrap_or_default()))
            .unwrap_or(false)
    }
}

fn host() -> FakeHost {
    FakeHost {
        dirs: vec![
            "/home/alice/proj",
            "/home/alice/proj/sub",
            "/data",
            "/out",
            "/real",
        ],
        files: vec!["/home/alice/proj/notes.txt", "/home/alice/.ssh/id_rsa"],
        links: vec![("/link", "/real")],
    }
}

fn env() -> BTreeMap<String, String> {
    [
        ("PATH", "/root/.pyenv/shims:/usr/bin"),
        ("HOME", "/home/alice"),
        ("USER", "alice"),
        ("LANG", "C.UTF-8"),
        ("AWS_SECRET_ACCESS_KEY", "hunter2"),
        ("CI", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn run(file: PolicyFile, cwd: &str) -> Result<ResolvedPolicy, PolicyError> {
    let h = host();
    let e = env();
    resolve(
        &file,
        &ResolveContext {
            cwd: cwd.into(),
            env: &e,
            host: &h,
        },
    )
}

#[test]
fn default_is_workspace_write_on_cwd_without_network() {
    let p = run(PolicyFile::default(), "/home/alice/proj/sub").unwrap();
    assert_eq!(p.profile, Profile::WorkspaceWrite);
    assert_eq!(p.network, NetworkMode::None);
    let FilesystemPolicy::Isolated {
        workspace: Some(ws),
        grants,
        deny,
    } = &p.filesystem
    else {
        panic!("expected isolated fs: {:?}", p.filesystem)
    };
    assert_eq!(ws.host, Path::new("/home/alice/proj/sub"));
    assert_eq!(ws.inside, ws.host);
    assert_eq!(ws.access, Access::ReadWrite);
    assert!(ws.protect);
    assert!(grants.is_empty() && deny.is_empty());
    assert_eq!(p.cwd, Path::new("/home/alice/proj/sub"));
    assert_eq!(p.limits.memory, Some(DEFAULT_MEMORY));
    assert_eq!(p.limits.disk, DEFAULT_DISK);
}

#[test]
fn env_is_an_allowlist() {
    let mut f = PolicyFile::default();
    f.env.pass.push("CI".into());
    f.env.pass.push("NOT_SET_ANYWHERE".into());
    f.env.set.insert("FOO".into(), "bar".into());
    let p = run(f, "/home/alice/proj").unwrap();
    let names: Vec<&str> = p.env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["CI", "FOO", "HOME", "LANG", "PATH", "USER"]);
    let get = |k: &str| p.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("PATH"), Some(DEFAULT_PATH));
    assert_eq!(get("HOME"), Some(INSIDE_HOME));
    assert_eq!(get("USER"), Some("user"));
    assert!(!p.env.iter().any(|(_, v)| v.contains("hunter2")));
}

#[test]
fn bad_env_names_are_refused() {
    for bad in ["", "1X", "A-B", "A B", "A=B"] {
        let mut f = PolicyFile::default();
        f.env.pass.push(bad.into());
        assert!(
            matches!(run(f, "/home/alice/proj"), Err(PolicyError::EnvName { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn read_only_profile_makes_workspace_read_only() {
    let f = PolicyFile {
        profile: Some(Profile::ReadOnly),
        ..Default::default()
    };
    let p = run(f, "/home/alice/proj").unwrap();
    let FilesystemPolicy::Isolated {
        workspace: Some(ws),
        ..
    } = &p.filesystem
    else {
        panic!()
    };
    assert_eq!(ws.access, Access::ReadOnly);
    assert!(!ws.protect);
}

#[test]
fn workspace_inside_path_and_cwd_mapping() {
    let f = PolicyFile {
        workspace: Some("/home/alice/proj:/workspace".into()),
        ..Default::default()
    };
    let p = run(f, "/home/alice/proj/sub").unwrap();
    let FilesystemPolicy::Isolated {
        workspace: Some(ws),
        ..
    } = &p.filesystem
    else {
        panic!()
    };
    assert_eq!(ws.inside, Path::new("/workspace"));
    assert_eq!(p.cwd, Path::new("/workspace/sub"));
    let f = PolicyFile {
        workspace: Some("none".into()),
        ..Default::default()
    };
    let p = run(f, "/home/alice/proj").unwrap();
    assert_eq!(p.cwd, Path::new(INSIDE_HOME));
}

#[test]
fn dangerous_or_broken_paths_are_refused() {
    for (ws, want) in [
        ("/", "whole host"),
        ("/nope", "cannot be granted"),
        ("/home/alice/proj/notes.txt", "not a directory"),
        ("/home/alice/proj:/proc/x", "/proc"),
        ("/home/alice/proj:/", "cannot be /"),
        ("/home/alice/proj:/a/../etc", "'..'"),
    ] {
        let f = PolicyFile {
            workspace: Some(ws.into()),
            ..Default::default()
        };
        let err = run(f, "/home/alice/proj").unwrap_err().to_string();
        assert!(err.contains(want), "{ws}: {err}");
    }
    let mut f = PolicyFile::default();
    f.filesystem.read.push("/".into());
    assert!(run(f, "/home/alice/proj").is_err());
}

#[test]
fn grants_are_canonical() {
    let mut f = PolicyFile::default();
    f.filesystem.read.push("/link".into());
    f.filesystem.write.push("../../../out".into());
    let p = run(f, "/home/alice/proj").unwrap();
    let FilesystemPolicy::Isolated { grants, .. } = &p.filesystem else {
        panic!()
    };
    assert_eq!(grants[0].host, Path::new("/real"));
    assert_eq!(grants[0].access, Access::ReadOnly);
    assert_eq!(grants[1].host, Path::new("/out"));
    assert_eq!(grants[1].access, Access::ReadWrite);
    assert!(grants[1].protect);
}

#[test]
fn the_same_path_granted_twice_is_one_mount_and_write_wins() {
    let mut f = PolicyFile::default();
    f.filesystem.read.push("/link".into());
    f.filesystem.read.push("/real".into());
    f.filesystem.write.push("/real/".into());
    f.filesystem.read.push(".".into());
    let p = run(f, "/home/alice/proj").unwrap();
    let FilesystemPolicy::Isolated {
        workspace, grants, ..
    } = &p.filesystem
    else {
        panic!()
    };
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0].host, Path::new("/real"));
    assert_eq!(grants[0].access, Access::ReadWrite);
    assert!(grants[0].protect);
    // `--read .` is the workspace itself: it stays writable, one mount.
    let ws = workspace.as_ref().unwrap();
    assert_eq!(ws.access, Access::ReadWrite);

    // In a read-only run, `--write` of the workspace makes the workspace writable (and protected).
    let mut f = PolicyFile {
        profile: Some(Profile::ReadOnly),
        ..Default::default()
    };
    f.filesystem.write.push("/home/alice/proj".into());
    let p = run(f, "/home/alice/proj").unwrap();
    let FilesystemPolicy::Isolated {
        workspace, grants, ..
    } = &p.filesystem
    else {
        panic!()
    };
    assert!(grants.is_empty(), "{grants:?}");
    let ws = workspace.as_ref().unwrap();
    assert_eq!((ws.access, ws.protect), (Access::ReadWrite, true));
}

#[test]
fn grants_through_a_symlink_are_reported_with_where_they_lead() {
    let mut f = PolicyFile::default();
    f.filesystem.read.push("/link".into());
    f.filesystem.read.push("/data".into());
    f.filesystem.write.push("../../../link/".into());
    f.filesystem.write.push("/missing".into());
    let h = host();
    let e = env();
    let ctx = ResolveContext {
        cwd: "/home/alice/proj".into(),
        env: &e,
        host: &h,
    };
    let found = redirected_grants(&f, &ctx);
    assert_eq!(
        found,
        vec![
            ("--read", "/link".to_string(), PathBuf::from("/real")),
            (
                "--write",
                "../../../link/".to_string(),
                PathBuf::from("/real")
            )
        ]
    );
}

#[test]
fn deny_maps_into_the_workspace() {
    let mut f = PolicyFile {
        workspace: Some("/home/alice/proj:/w".into()),
        ..Default::default()
    };
    f.filesystem.deny.push("sub".into());
    f.filesystem.deny.push("/data/../gone".into());
    let p = run(f, "/home/alice/proj").unwrap();
    let FilesystemPolicy::Isolated { deny, .. } = &p.filesystem else {
        panic!()
    };
    assert_eq!(deny, &[PathBuf::from("/w/sub"), PathBuf::from("/gone")]);
}

#[test]
fn limits_are_validated() {
    let mut f = PolicyFile::default();
    f.limits.memory = Some(SizeValue(1));
    assert!(run(f, "/home/alice/proj")
        .unwrap_err()
        .to_string()
        .contains("--memory"));
    let mut f = PolicyFile::default();
    f.limits.pids = Some(0);
    assert!(run(f, "/home/alice/proj").is_err());
    let mut f = PolicyFile::default();
    f.limits.pids = Some(crate::resolve::MAX_PIDS + 1);
    let err = run(f, "/home/alice/proj").unwrap_err().to_string();
    assert!(err.contains("--pids") && err.contains("4194304"), "{err}");
    let mut f = PolicyFile::default();
    f.limits.pids = Some(crate::resolve::MAX_PIDS);
    assert_eq!(
        run(f, "/home/alice/proj").unwrap().limits.pids,
        Some(crate::resolve::MAX_PIDS)
    );
    let mut f = PolicyFile::default();
    f.limits.cpus = Some(0.0);
    assert!(run(f, "/home/alice/proj").is_err());
    let mut f = PolicyFile::default();
    f.limits.cpus = Some(f64::NAN);
    assert!(run(f, "/home/alice/proj").is_err());
}

#[test]
fn full_access_uses_host_and_refuses_grants() {
    let f = PolicyFile {
        profile: Some(Profile::FullAccess),
        ..Default::default()
    };
    let p = run(f, "/home/alice/proj").unwrap();
    assert_eq!(p.filesystem, FilesystemPolicy::Host);
    assert_eq!(p.network, NetworkMode::Host);
    let get = |k: &str| p.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("HOME").as_deref(), Some("/home/alice"));
    let mut f = PolicyFile {
        profile: Some(Profile::FullAccess),
        ..Default::default()
    };
    f.filesystem.deny.push("/x".into());
    assert!(matches!(
        run(f, "/home/alice/proj"),
        Err(PolicyError::Conflict(_))
    ));
}

#[test]
fn allowlist_needs_proxy_mode() {
    let mut f = PolicyFile::default();
    f.network.allow_domain.push("pypi.example".into());
    let err = run(f, "/home/alice/proj").unwrap_err();
    assert!(
        matches!(
            err,
            PolicyError::NeedsProxy {
                flag: "--allow-domain"
            }
        ),
        "{err}"
    );
    let mut f = PolicyFile::default();
    f.network.mode = Some(NetworkMode::Proxy);
    f.network.allow_domain.push("pypi.example".into());
    f.network.map_host.push("svc.test=127.0.0.1".into());
    let p = run(f, "/home/alice/proj").unwrap();
    assert_eq!(p.network, NetworkMode::Proxy);
    assert_eq!(p.egress.allow_domain, ["pypi.example"]);
    assert_eq!(p.egress.max_connections, DEFAULT_MAX_CONNECTIONS);
    let mut f = PolicyFile::default();
    f.network.mode = Some(NetworkMode::Proxy);
    f.network.max_connections = Some(0);
    assert!(run(f, "/home/alice/proj").is_err());
}

#[test]
fn public_internet_is_an_explicit_proxy_key() {
    let mut f = PolicyFile::default();
    f.network.public_internet = Some(true);
    let err = run(f, "/home/alice/proj").unwrap_err();
    assert!(
        matches!(
            err,
            PolicyError::NeedsProxy {
                flag: "public_internet"
            }
        ),
        "{err}"
    );
    let mut f = PolicyFile::default();
    f.network.mode = Some(NetworkMode::Proxy);
    f.network.public_internet = Some(true);
    let p = run(f.clone(), "/home/alice/proj").unwrap();
    assert!(p.egress.public_internet);
    assert!(p.egress.allow_domain.is_empty());
    // Off unless asked for; an old serialised policy without the key reads as off.
    f.network.public_internet = None;
    assert!(!run(f, "/home/alice/proj").unwrap().egress.public_internet);
    let old: Egress = serde_json::from_str(r#"{"allow_domain":[],"deny_domain":[],"allow_ip":[],"map_host":[],"max_connections":1,"byte_budget":null}"#).unwrap();
    assert!(!old.public_internet);
}

#[test]
fn resolved_policy_round_trips_through_json() {
    let mut f = PolicyFile::default();
    f.filesystem.read.push("/data".into());
    f.network.mode = Some(NetworkMode::Proxy);
    f.network.allow_domain.push("pypi.example".into());
    let p = run(f, "/home/alice/proj").unwrap();
    let text = serde_json::to_string(&p).unwrap();
    let back: ResolvedPolicy = serde_json::from_str(&text).unwrap();
    assert_eq!(back, p);
}

#[test]
fn approval_is_a_proxy_key_that_defaults_to_never() {
    use crate::{ApprovalMode, DurationValue};
    let mut f = PolicyFile::default();
    f.network.approval = Some(ApprovalMode::OnRequest);
    let err = run(f, "/home/alice/proj").unwrap_err();
    assert!(
        matches!(err, PolicyError::NeedsProxy { flag: "--approval" }),
        "{err}"
    );
    let mut f = PolicyFile::default();
    f.network.mode = Some(NetworkMode::Proxy);
    let p = run(f.clone(), "/home/alice/proj").unwrap();
    assert_eq!(p.egress.approval.mode, ApprovalMode::Never);
    assert_eq!(p.egress.approval.timeout_ms, 30_000);
    f.network.approval = Some(ApprovalMode::OnRequest);
    f.network.approver = Some("./approve.py".into());
    f.network.approval_timeout = Some(DurationValue(std::time::Duration::from_millis(1500)));
    let p = run(f.clone(), "/home/alice/proj").unwrap();
    assert_eq!(p.egress.approval.mode, ApprovalMode::OnRequest);
    assert_eq!(p.egress.approval.approver.as_deref(), Some("./approve.py"));
    assert_eq!(p.egress.approval.timeout_ms, 1500);
    // An approver that nothing would ask, an empty one, or a wait of 0 are refused.
    f.network.approval = Some(ApprovalMode::Never);
    let err = run(f.clone(), "/home/alice/proj").unwrap_err().to_string();
    assert!(err.contains("--approval on-request"), "{err}");
    let mut quiet = f.clone();
    quiet.network.approver = None;
    let err = run(quiet, "/home/alice/proj").unwrap_err().to_string();
    assert!(err.contains("--approval-timeout"), "{err}");
    f.network.approval = Some(ApprovalMode::OnRequest);
    f.network.approver = Some("  ".into());
    assert!(run(f.clone(), "/home/alice/proj").is_err());
    f.network.approver = None;
    f.network.approval_timeout = Some(DurationValue(std::time::Duration::ZERO));
    let err = run(f, "/home/alice/proj").unwrap_err().to_string();
    assert!(err.contains("approval_timeout"), "{err}");
    // A policy serialised before approvals existed reads as `never`.
    let old: Egress = serde_json::from_str(r#"{"allow_domain":[],"deny_domain":[],"allow_ip":[],"map_host":[],"max_connections":1,"byte_budget":null}"#).unwrap();
    assert_eq!(old.approval, crate::ApprovalPolicy::default());
    // The file key parses, and an unknown value names the choices.
    let parsed: PolicyFile = toml::from_str("[network]\napproval = \"untrusted\"\n").unwrap();
    assert_eq!(parsed.network.approval, Some(ApprovalMode::Untrusted));
    let bad = toml::from_str::<PolicyFile>("[network]\napproval = \"sometimes\"\n");
    assert!(bad.is_err());
}
