//! `airlock sandbox ls`: `GET /v1/sandboxes`, as a table or JSON.

use super::api::Api;
use super::pairs::pairs;
use super::stdout::print;
use crate::cli::LsArgs;
use anyhow::{anyhow, Result};
use serde_json::Value;

/// The table's columns.
const HEADER: [&str; 6] = ["ID", "STATE", "TEMPLATE", "CREATED", "DEADLINE", "METADATA"];

/// Lists sandboxes (filtered by state and metadata), newest first.
pub fn list(api: &Api, args: &LsArgs) -> Result<i32> {
    let mut req = api.request("GET", "/v1/sandboxes");
    for s in &args.state {
        req = req.query("state", s);
    }
    for (k, v) in pairs("--metadata", &args.metadata)? {
        req = req.query(&format!("metadata.{k}"), &v);
    }
    let resp = api.answer(req.call())?;
    let text = resp
        .into_string()
        .map_err(|e| anyhow::Error::new(e).context("the server's answer broke off; retry"))?;
    let doc: Value = serde_json::from_str(&text).map_err(|_| {
        anyhow!(
            "the server did not answer with JSON; check that --server points at `airlock serve`"
        )
    })?;
    let records = doc.as_array().ok_or_else(|| anyhow!("the server's answer is not a list of sandboxes; check that --server points at `airlock serve`"))?;
    if args.json {
        print(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else {
        print(&table(records))?;
    }
    Ok(0)
}

/// The records as an aligned table with a header line.
pub(super) fn table(records: &[Value]) -> String {
    let mut rows: Vec<[String; 6]> = vec![HEADER.map(String::from)];
    for r in records {
        let text = |k: &str| r[k].as_str().unwrap_or("-").to_string();
        let time = |k: &str| r[k].as_i64().map(utc).unwrap_or_else(|| "-".into());
        let metadata = match r["metadata"].as_object() {
            Some(m) if !m.is_empty() => m
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(","),
            _ => "-".into(),
        };
        rows.push([
            text("id"),
            text("state"),
            text("template"),
            time("created_ms"),
            time("deadline_ms"),
            metadata,
        ]);
    }
    let mut widths = [0usize; 6];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS` UTC.
pub(super) fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
#[path = "list_tests.rs"]
mod tests;
