//! `airlock template import|ls|inspect|rm`.

use crate::cli::{TemplateCommand, TemplateStoreArgs};
use crate::commands::data_dir;
use airlock_template::{import, ImportOptions, TemplateStore};
use anyhow::{Context, Result};

fn open(args: &TemplateStoreArgs) -> Result<TemplateStore> {
    Ok(TemplateStore::open(&data_dir(args.data_dir.clone())?)?)
}

pub fn cmd_template(cmd: TemplateCommand) -> Result<i32> {
    match cmd {
        TemplateCommand::Build(args) => return cmd_build(args),
        TemplateCommand::Import(args) => {
            let store = open(&args.store)?;
            let max_bytes = airlock_policy::parse_size(&args.max_size).context("--max-size")?;
            let opts = ImportOptions {
                name: args.name.clone(),
                max_bytes,
            };
            let (stored, report) = import(&store, &args.path, &opts)?;
            if args.store.json {
                let doc = serde_json::json!({"template": stored, "import": report});
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                println!(
                    "imported {} {} ({} layers, {} entries, {} bytes)",
                    stored.name, stored.meta.digest, report.layers, report.entries, report.bytes
                );
                for d in &report.dropped {
                    eprintln!("airlock: left out {d}");
                }
                if report.apt_root_conf {
                    eprintln!(
                        "airlock: added /etc/apt/apt.conf.d/99airlock-box-root (apt's downloads run as the box's root, which cannot switch to _apt)"
                    );
                }
                if report.setid_cleared > 0 {
                    eprintln!(
                        "airlock: cleared the set-ID bits of {} entries",
                        report.setid_cleared
                    );
                }
            }
        }
        TemplateCommand::Ls(args) => {
            let list = open(&args)?.list()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                for t in list {
                    println!(
                        "{}\t{}\t{} bytes\t{}",
                        t.name,
                        t.meta.digest,
                        t.meta.bytes,
                        serde_json::to_value(&t.meta.source)?["kind"]
                            .as_str()
                            .unwrap_or("")
                    );
                }
            }
        }
        TemplateCommand::Inspect(args) => {
            let t = open(&args.store)?.inspect(&args.name)?;
            println!("{}", serde_json::to_string_pretty(&t)?);
        }
        TemplateCommand::Rm(args) => {
            open(&args.store)?.remove(&args.name)?;
            println!("removed {}", args.name);
        }
    }
    Ok(0)
}

/// Runs a template build's commands in a native box: the tree being built read-only under a
/// root layer kept on the host, network only through the egress proxy to the index hosts.
struct NativeBuildBox;

impl airlock_template::BuildBox for NativeBuildBox {
    fn run(
        &self,
        rootfs: &std::path::Path,
        layer: &std::path::Path,
        script: &str,
        hosts: &[String],
        env: &[(String, String)],
    ) -> std::result::Result<(), String> {
        use airlock_policy::{
            DurationValue, NetworkMode, PolicyFile, ResolveContext, RootTemplate, SizeValue,
        };
        let mut file = PolicyFile {
            workspace: Some("none".into()),
            ..Default::default()
        };
        file.network.mode = Some(NetworkMode::Proxy);
        file.network.allow_domain = hosts.to_vec();
        file.limits.memory = Some(SizeValue(4 << 30));
        file.limits.disk = Some(SizeValue(4 << 30));
        file.limits.pids = Some(2048);
        file.limits.file_size = Some(SizeValue(4 << 30));
        file.limits.timeout = Some(DurationValue(std::time::Duration::from_secs(3600)));
        file.env.set = env.iter().cloned().collect();
        let host_env = std::collections::BTreeMap::new();
        let ctx = ResolveContext {
            cwd: "/".into(),
            env: &host_env,
            host: &airlock_runtime::RealHost,
        };
        let mut policy = airlock_policy::resolve(&file, &ctx).map_err(|e| e.to_string())?;
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            // A root-started box's user is this unused host id: it must own its kept layer.
            let id = airlock_jail::idmap::BOX_HOST_ID;
            std::os::unix::fs::chown(layer, Some(id), Some(id)).map_err(|e| e.to_string())?;
        }
        policy.template = Some(RootTemplate {
            name: "(being built)".into(),
            digest: "(being built)".into(),
            rootfs: rootfs.to_path_buf(),
            keep_layer: Some(layer.to_path_buf()),
        });
        let argv = ["sh".to_string(), "-c".to_string(), script.to_string()];
        let opts = airlock_native::RunOptions {
            stdin: airlock_native::StdinMode::Null,
            audit: None,
            control_fd: None,
            ask_on_terminal: None,
            asker: None,
            // The build box's root, for the commands' `airlock_as_root`.
            root_at: Some(airlock_template::ROOT_NS_FD),
        };
        let result = airlock_native::run(&policy, &argv, &opts).map_err(|e| e.to_string())?;
        match result.exit_code {
            0 => Ok(()),
            code => Err(format!(
                "exit status {code}{}",
                result.error.map(|e| format!(": {e}")).unwrap_or_default()
            )),
        }
    }
}

pub fn cmd_build(args: crate::cli::TemplateBuildArgs) -> Result<i32> {
    let store = open(&args.store)?;
    let opts = airlock_template::BuildOptions {
        name: args.name.clone(),
        force: args.force,
    };
    let started = std::time::Instant::now();
    let out = airlock_template::build(&store, &args.spec, &opts, &NativeBuildBox)?;
    let t = &out.template;
    if args.store.json {
        let doc = serde_json::json!({"template": t, "cached": out.cached, "spec_digest": out.spec_digest});
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "{} {} {} ({} bytes, {:.1} s)",
            if out.cached { "cached" } else { "built" },
            t.name,
            t.meta.digest,
            t.meta.bytes,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(0)
}
