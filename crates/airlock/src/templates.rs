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
