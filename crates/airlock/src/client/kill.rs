//! `airlock sandbox kill`: `DELETE /v1/sandboxes/{id}` for each id.

use super::api::{segment, Api};
use super::stdout::print;
use crate::cli::KillArgs;
use anyhow::Result;

/// Kills each sandbox and prints `ID STATE`; one failure does not stop the others, but makes
/// the exit status 125.
pub fn kill(api: &Api, args: &KillArgs) -> Result<i32> {
    let mut status = 0;
    for id in &args.ids {
        match api.json("DELETE", &format!("/v1/sandboxes/{}", segment(id)), None) {
            Ok(record) => print(&format!(
                "{id} {}\n",
                record["state"].as_str().unwrap_or("unknown")
            ))?,
            Err(e) => {
                eprintln!("airlock: {id}: {e:#}");
                status = 125;
            }
        }
    }
    Ok(status)
}
