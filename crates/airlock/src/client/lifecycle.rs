//! `airlock sandbox pause|resume|snapshot|fork`: a sandbox's lifecycle on `airlock serve`.

use super::api::{segment, Api};
use super::stdout::print;
use crate::cli::{ForkArgs, PauseArgs, ResumeArgs, SnapshotArgs};
use anyhow::Result;
use serde_json::{json, Value};

/// Prints `ID STATE` and, on stderr, what the pause or resume kept.
fn report(id: &str, answer: &Value, note: &str) -> Result<i32> {
    print(&format!(
        "{id} {}\n",
        answer["sandbox"]["state"].as_str().unwrap_or("unknown")
    ))?;
    if let Some(message) = answer[note]["message"].as_str() {
        eprintln!("airlock: {id}: {message}");
    }
    Ok(0)
}

/// `pause ID [--files-only]`.
pub fn pause(api: &Api, args: &PauseArgs) -> Result<i32> {
    let body = json!({ "memory": !args.files_only });
    let path = format!("/v1/sandboxes/{}/pause", segment(&args.id));
    let answer = api.json("POST", &path, Some(&body))?;
    report(&args.id, &answer, "kept")
}

/// `resume ID`.
pub fn resume(api: &Api, args: &ResumeArgs) -> Result<i32> {
    let path = format!("/v1/sandboxes/{}/resume", segment(&args.id));
    let answer = api.json("POST", &path, None)?;
    report(&args.id, &answer, "resumed")
}

/// `snapshot ID [--name NAME]`: prints the snapshot's id, kind and size.
pub fn snapshot(api: &Api, args: &SnapshotArgs) -> Result<i32> {
    let body = match &args.name {
        Some(n) => json!({ "name": n }),
        None => json!({}),
    };
    let path = format!("/v1/sandboxes/{}/snapshots", segment(&args.id));
    let s = api.json("POST", &path, Some(&body))?;
    print(&format!(
        "{} {} {} bytes ({})\n",
        s["id"].as_str().unwrap_or(""),
        s["kind"].as_str().unwrap_or(""),
        s["bytes"],
        s["mechanism"].as_str().unwrap_or("")
    ))?;
    Ok(0)
}

/// `fork ID [--count N] [--snapshot S]`: prints each new sandbox's id and token (or its error).
pub fn fork(api: &Api, args: &ForkArgs) -> Result<i32> {
    let mut body = json!({ "count": args.count });
    if let Some(s) = &args.snapshot {
        body["snapshot"] = json!(s);
    }
    let path = format!("/v1/sandboxes/{}/fork", segment(&args.id));
    let answer = api.json("POST", &path, Some(&body))?;
    let mut status = 0;
    for b in answer["sandboxes"].as_array().into_iter().flatten() {
        let id = b["id"].as_str().unwrap_or("");
        match b["error"].as_str() {
            Some(e) => {
                eprintln!("airlock: fork {id}: {e}");
                status = 125;
            }
            None => print(&format!("{id} {}\n", b["token"].as_str().unwrap_or("")))?,
        }
    }
    Ok(status)
}
