use super::*;
use airlock_policy::{BackendKind, PolicyFile, ResolveContext};
use airlock_runtime::backend::{ImageTemplate, TemplateDefaults};

fn policy(
    workspace: &Path,
    network: NetworkMode,
    profile: Option<airlock_policy::Profile>,
) -> ResolvedPolicy {
    let full = profile == Some(airlock_policy::Profile::FullAccess);
    let mut file = PolicyFile {
        workspace: (!full).then(|| workspace.display().to_string()),
        backend: Some(BackendKind::Gvisor),
        profile,
        ..Default::default()
    };
    if profile.is_none() {
        file.network.mode = Some(network);
    }
    let env = std::collections::BTreeMap::new();
    airlock_policy::resolve(
        &file,
        &ResolveContext {
            cwd: "/".into(),
            env: &env,
            host: &airlock_runtime::RealHost,
        },
    )
    .unwrap()
}

/// A workspace of this test's own (tests run in parallel and each removes its own at the end).
fn workspace() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("airlock-gvisor-bundle-{}-{n}", std::process::id()));
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::write(dir.join(".git/config"), "[core]\n").unwrap();
    dir.canonicalize().unwrap()
}

fn agent() -> AgentFiles {
    AgentFiles::of_this_process().unwrap()
}

fn mount<'a>(plan: &'a BundlePlan, inside: &Path) -> Option<&'a Mount> {
    plan.spec
        .mounts
        .iter()
        .rev()
        .find(|m| m.destination == inside)
}

#[test]
fn a_host_box_runs_the_agent_as_uid_1000_without_capabilities_over_the_natives_tree() {
    let ws = workspace();
    let p = policy(&ws, NetworkMode::None, None);
    let plan = BundlePlan::new(&p, &Template::Host, &agent(), &Layout::fixed(), &[]).unwrap();
    let s = &plan.spec;
    assert_eq!((s.process.user.uid, s.process.user.gid), (1000, 1000));
    assert!(s.process.no_new_privileges);
    assert_eq!(s.process.capabilities, spec::Capabilities::default());
    // The agent confines every command with the native box's seccomp allowlist.
    assert_eq!(
        &s.process.args[s.process.args.len() - 6..],
        [
            "agent",
            "--fd",
            "0",
            "--seccomp",
            "inet",
            "--root-per-command"
        ]
    );
    assert!(s.root.readonly, "the skeleton root is read-only");
    // The host's system directories, read-only, as the native box chooses them.
    let usr = mount(&plan, Path::new("/usr")).unwrap();
    assert_eq!(usr.source, Path::new("/usr"));
    assert!(usr.options.contains(&"ro".to_string()));
    // The workspace through its idmapped view, writable; its existing protected file read-only.
    let w = mount(&plan, &ws).unwrap();
    assert_eq!(w.source, plan.user_mounts[0].view);
    assert!(w.options.contains(&"rw".to_string()));
    let cfg = mount(&plan, &ws.join(".git/config")).unwrap();
    assert!(cfg.options.contains(&"ro".to_string()), "{cfg:?}");
    // The host kernel holds the protected paths too: the pins and covers beneath the view.
    let held = plan
        .protect
        .iter()
        .find(|v| v.view == plan.user_mounts[0].view)
        .expect("the workspace's view is protected");
    assert!(
        held.pins.contains(&std::path::PathBuf::from(".git")),
        "{held:?}"
    );
    assert!(
        held.covers
            .iter()
            .any(|c| c.path == Path::new(".bashrc") && c.keep_visible),
        "{held:?}"
    );
    // Nothing of the host's /dev: gVisor makes its own.
    assert!(s.mounts.iter().all(|m| m.source != Path::new("/dev/null")));
    // No network: a network namespace of the Sentry's own.
    assert!(s.linux.namespaces.iter().any(|n| n.kind == "network"));
    assert!(s
        .process
        .rlimits
        .iter()
        .any(|r| r.kind == "RLIMIT_CORE" && r.hard == 0));
    let _ = std::fs::remove_dir_all(&ws);
}

#[test]
fn a_proxied_box_shares_airlocks_namespace_and_names_the_proxy() {
    let ws = workspace();
    let p = policy(&ws, NetworkMode::Proxy, None);
    let plan = BundlePlan::new(&p, &Template::Host, &agent(), &Layout::fixed(), &[]).unwrap();
    assert!(plan
        .spec
        .linux
        .namespaces
        .iter()
        .all(|n| n.kind != "network"));
    assert!(plan
        .spec
        .process
        .env
        .iter()
        .any(|e| e == "HTTP_PROXY=http://127.0.0.1:3128"));
    let _ = std::fs::remove_dir_all(&ws);
}

#[test]
fn an_image_box_gets_no_host_system_directory_and_a_writable_layer() {
    let ws = workspace();
    let p = policy(&ws, NetworkMode::None, None);
    let image = Template::Image(ImageTemplate {
        name: "tiny".into(),
        digest: "sha256:00".into(),
        rootfs: ws.clone(),
        defaults: TemplateDefaults::default(),
    });
    let plan = BundlePlan::new(&p, &image, &agent(), &Layout::fixed(), &[]).unwrap();
    assert!(mount(&plan, Path::new("/usr")).is_none());
    assert!(!plan.spec.root.readonly);
    assert_eq!(plan.image_root.as_deref(), Some(ws.as_path()));
    // Only the agent's own files come from the host.
    assert!(plan
        .spec
        .mounts
        .iter()
        .filter(|m| m.kind == "bind")
        .all(|m| m.destination.starts_with("/.airlock")
            || m.source.starts_with("/run/airlock-gvisor")));
    let _ = std::fs::remove_dir_all(&ws);
}

#[test]
fn what_gvisor_cannot_do_is_refused_with_what_to_use_instead() {
    let ws = workspace();
    let full = policy(
        &ws,
        NetworkMode::None,
        Some(airlock_policy::Profile::FullAccess),
    );
    let err = BundlePlan::new(&full, &Template::Host, &agent(), &Layout::fixed(), &[]).unwrap_err();
    assert!(err.to_string().contains("--backend native"), "{err}");
    let mut apply = policy(&ws, NetworkMode::None, None);
    apply.changes = airlock_policy::ChangesMode::Apply;
    let err =
        BundlePlan::new(&apply, &Template::Host, &agent(), &Layout::fixed(), &[]).unwrap_err();
    assert!(err.to_string().contains("--changes direct"), "{err}");
    let _ = std::fs::remove_dir_all(&ws);
}

#[test]
fn no_two_mounts_share_a_destination_and_none_is_hidden_by_a_later_one() {
    // runsc restore pairs mounts by destination, so the bundle keeps only what the box would
    // see: a mount is never followed by another at or above its place (which would hide it).
    let ws = workspace();
    let p = policy(&ws, NetworkMode::None, None);
    let plan = BundlePlan::new(&p, &Template::Host, &agent(), &Layout::fixed(), &[]).unwrap();
    let mounts = &plan.spec.mounts;
    for (i, m) in mounts.iter().enumerate() {
        for later in &mounts[i + 1..] {
            assert!(
                !m.destination.starts_with(&later.destination),
                "{} is hidden by a later mount at {}",
                m.destination.display(),
                later.destination.display()
            );
        }
    }
    // The protected config under the workspace's .git is still there, read-only.
    let config = mount(&plan, &ws.join(".git/config")).unwrap();
    assert!(config.options.iter().any(|o| o == "ro"), "{config:?}");
    std::fs::remove_dir_all(&ws).unwrap();
}
