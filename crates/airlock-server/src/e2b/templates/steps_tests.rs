use super::*;

fn step(kind: &str, args: &[&str]) -> Step {
    Step {
        kind: kind.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn none(_: &str) -> Option<String> {
    None
}

fn start(image: &str, steps: Vec<Step>) -> BuildStart {
    BuildStart {
        from_image: Some(image.into()),
        steps,
        ..Default::default()
    }
}

#[test]
fn e2b_bases_map_to_debian_and_registry_images_are_refused_naming_what_works() {
    let p = plan(&start("e2bdev/base", vec![]), &none).unwrap();
    assert_eq!(
        p.base,
        Base::Debian {
            suite: "bookworm".into()
        }
    );
    assert_eq!(p.packages, vec!["python3", "python-is-python3"]);
    let p = plan(&start("debian:trixie-slim", vec![]), &none).unwrap();
    assert_eq!(
        p.base,
        Base::Debian {
            suite: "trixie".into()
        }
    );
    let err = plan(&start("docker.io/library/ubuntu:24.04", vec![]), &none).unwrap_err();
    assert!(
        err.to_string().contains("registry") && err.to_string().contains("from_debian_image"),
        "{err}"
    );
    // A stored name is that template, with no steps; with steps a spec built on it (`from`,
    // no Debian base, none of a Debian base's packages), where apt packages are refused.
    let stored = |n: &str| (n == "alpine").then(|| n.to_string());
    let p = plan(&start("alpine", vec![]), &stored).unwrap();
    assert_eq!(p.base, Base::Stored("alpine".into()));
    let p = plan(
        &start(
            "alpine",
            vec![
                step("RUN", &["echo on top > /srv/x"]),
                step("RUN", &["pip install tabulate"]),
            ],
        ),
        &stored,
    )
    .unwrap();
    assert_eq!(
        (p.base.clone(), p.packages.len()),
        (Base::Stored("alpine".into()), 0)
    );
    let (spec, _) = render(&p, &[]).unwrap();
    let doc: toml::Table = toml::from_str(&spec).unwrap();
    assert_eq!(doc["from"].as_str(), Some("alpine"), "{spec}");
    assert!(!doc.contains_key("debian"), "{spec}");
    assert_eq!(
        doc["pip"]["packages"][0].as_str(),
        Some("tabulate"),
        "{spec}"
    );
    assert!(spec.contains("echo on top"), "{spec}");
    let apt = format!("{APT_PREFIX}curl");
    let err = plan(&start("alpine", vec![step("RUN", &[&apt])]), &stored).unwrap_err();
    assert!(
        err.to_string()
            .contains("apt packages (curl) on the stored template \"alpine\""),
        "{err}"
    );
    let t = BuildStart {
        from_template: Some("nope".into()),
        ..Default::default()
    };
    assert!(matches!(plan(&t, &none), Err(PlanError::NotFound(_))));
}

#[test]
fn apt_and_pip_installs_go_into_the_spec_root_steps_run_as_root_and_other_users_are_refused() {
    let steps = vec![
        step("RUN", &["apt-get update && DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y --no-install-recommends curl git", "root"]),
        step("RUN", &["pip install tabulate", "root"]),
        step("RUN", &["echo hi", ""]),
    ];
    let p = plan(&start("e2bdev/base", steps), &none).unwrap();
    assert_eq!(
        p.packages,
        vec!["python3", "python-is-python3", "curl", "git", "python3-pip"]
    );
    assert_eq!(p.pip, vec!["tabulate"]);
    assert_eq!(p.steps[2], Planned::Run("echo hi".into()));
    // A root RUN, or any RUN after `USER root` that names no user, runs as the build box's
    // root; `USER user` switches back.
    let steps = vec![
        step("RUN", &["dpkg -i x.deb", "root"]),
        step("USER", &["root"]),
        step("RUN", &["whoami", ""]),
        step("RUN", &["id -u", "user"]),
        step("USER", &["user"]),
        step("RUN", &["whoami", ""]),
    ];
    let p = plan(&start("e2bdev/base", steps), &none).unwrap();
    assert_eq!(
        p.steps
            .iter()
            .filter(|s| !matches!(s, Planned::Nothing(_)))
            .cloned()
            .collect::<Vec<_>>(),
        vec![
            Planned::RunAsRoot("dpkg -i x.deb".into()),
            Planned::RunAsRoot("whoami".into()),
            Planned::Run("id -u".into()),
            Planned::Run("whoami".into()),
        ]
    );
    let (script, _) = render(&p, &[]).unwrap();
    assert!(
        script.contains("airlock_as_root sh -c 'dpkg -i x.deb'"),
        "{script}"
    );
    let err = plan(
        &start("e2bdev/base", vec![step("RUN", &["id", "postgres"])]),
        &none,
    )
    .unwrap_err();
    assert!(err.to_string().contains("one user"), "{err}");
    let mut home = step("COPY", &["a.txt", "app/", "", ""]);
    home.files_hash = Some("ab".repeat(32));
    let err = plan(&start("e2bdev/base", vec![home]), &none).unwrap_err();
    assert!(
        err.to_string()
            .contains("/home/user/app/ is in the box's home"),
        "{err}"
    );
    let err = plan(&start("e2bdev/base", vec![step("HEALTHCHECK", &[])]), &none).unwrap_err();
    assert!(err.to_string().contains("RUN, COPY"), "{err}");
}

#[test]
fn steps_render_in_order_with_env_workdir_and_copies_staged_then_moved() {
    let mut copy = step("COPY", &["app", "/srv/", "", "0755"]);
    copy.files_hash = Some("ab".repeat(32));
    let steps = vec![
        step("ENV", &["GREETING", "it's me"]),
        step("WORKDIR", &["/work"]),
        copy,
        step("RUN", &["cat /srv/run.sh > out"]),
    ];
    let mut s = start("e2bdev/base", steps);
    s.start_cmd = Some("sleep 1".into());
    let p = plan(&s, &none).unwrap();
    assert_eq!(p.cwd.as_deref(), Some("/work"));
    let entries = vec![
        CopyEntry::Dir {
            rel: "app".into(),
            mode: 0o755,
        },
        CopyEntry::File {
            rel: "app/run.sh".into(),
            mode: 0o644,
            stored: "/b/files/0".into(),
        },
        CopyEntry::Symlink {
            rel: "app/etc".into(),
            target: "/etc".into(),
        },
    ];
    let (spec, staged) = render(&p, &[entries]).unwrap();
    assert_eq!(
        staged,
        vec![StagedFile {
            stored: "/b/files/0".into(),
            staged: format!("{STAGE_DIR}/0")
        }]
    );
    let parsed = airlock_template::TemplateSpec::parse(&spec, std::path::Path::new("x")).unwrap();
    let run = parsed.build.run.join("\n");
    let at = |s: &str| run.find(s).unwrap_or_else(|| panic!("{s:?} not in {run}"));
    assert!(at("export GREETING='it'\\''s me'") < at("cd '/work'"));
    assert!(at("cd '/work'") < at("cp '/.airlock-e2b-copy/0' '/srv/run.sh' && chmod 755"));
    assert!(at("ln -sfn '/etc' '/srv/etc'") < at("sh -c 'cat /srv/run.sh > out'"));
    assert!(run.ends_with(&format!("rm -rf {STAGE_DIR}")), "{run}");
    assert_eq!(parsed.files[0].target, format!("{STAGE_DIR}/0"));
    assert_eq!(parsed.defaults.env["GREETING"], "it's me");
    assert_eq!(parsed.defaults.cmd, vec!["sh", "-c", "sleep 1"]);
}

#[test]
fn a_single_file_keeps_its_name_in_a_directory_destination_or_becomes_the_destination() {
    let file = || {
        vec![CopyEntry::File {
            rel: "conf/a.txt".into(),
            mode: 0o600,
            stored: "/b/files/0".into(),
        }]
    };
    for (dest, want) in [("/etc/", "/etc/a.txt"), ("/etc/b.txt", "/etc/b.txt")] {
        let c = CopyStep {
            src: "conf/a.txt".into(),
            dest: dest.into(),
            files_hash: String::new(),
            mode: None,
        };
        let lines = copy_lines(&c, &file(), &mut Vec::new()).unwrap();
        assert!(
            lines[0].contains(&format!("'{want}' && chmod 600")),
            "{lines:?}"
        );
    }
}
