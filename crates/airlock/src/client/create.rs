//! `airlock sandbox create`: `POST /v1/sandboxes`.

use super::api::Api;
use super::pairs::pairs;
use super::stdout::print;
use crate::cli::CreateArgs;
use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Map, Value};

/// Creates a sandbox; prints its id and token (or its record with `--json`).
pub fn create(api: &Api, args: &CreateArgs) -> Result<i32> {
    let body = request_body(args)?;
    let record = api.json("POST", "/v1/sandboxes", Some(&body))?;
    if args.json {
        print(&format!("{}\n", serde_json::to_string_pretty(&record)?))?;
        return Ok(0);
    }
    let field = |name: &str| {
        record[name].as_str().ok_or_else(|| anyhow!("the server's answer has no sandbox {name}; check that --server points at `airlock serve`"))
    };
    print(&format!("{}\n{}\n", field("id")?, field("token")?))?;
    Ok(0)
}

/// The JSON body of the create request the flags describe.
pub(super) fn request_body(args: &CreateArgs) -> Result<Value> {
    let mut body = Map::new();
    if let Some(t) = &args.template {
        body.insert("template".into(), json!(t));
    }
    if let Some(t) = args.timeout {
        body.insert("timeout".into(), json!(t));
    }
    body.insert(
        "metadata".into(),
        json!(pairs("--metadata", &args.metadata)?),
    );
    body.insert("env".into(), json!(pairs("--env", &args.env)?));
    if !args.allow_domain.is_empty() && args.net.as_deref() != Some("proxy") {
        bail!("--allow-domain only applies to a proxied sandbox; add --net proxy");
    }
    let mut policy = Map::new();
    if args.net.is_some() || !args.allow_domain.is_empty() {
        policy.insert(
            "network".into(),
            json!({ "mode": args.net, "allow_domain": args.allow_domain }),
        );
    }
    let mut limits = Map::new();
    if let Some(m) = &args.memory {
        let bytes = airlock_policy::parse_size(m)
            .with_context(|| format!("--memory {m:?} is not a size; give e.g. 512M or 2G"))?;
        limits.insert("memory".into(), json!(bytes));
    }
    if let Some(p) = args.pids {
        limits.insert("pids".into(), json!(p));
    }
    if !limits.is_empty() {
        policy.insert("limits".into(), Value::Object(limits));
    }
    if !policy.is_empty() {
        body.insert("policy".into(), Value::Object(policy));
    }
    Ok(Value::Object(body))
}

#[cfg(test)]
#[path = "create_tests.rs"]
mod tests;
