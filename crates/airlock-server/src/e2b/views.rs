//! Sandboxes as E2B's control plane shows them (`Sandbox`, `SandboxDetail`, `ListedSandbox`),
//! and the time format they use.

use super::ENVD_VERSION;
use airlock_store::{SandboxRecord, SandboxState};
use serde_json::{json, Map, Value};

/// The `clientID` every sandbox reports (E2B's id of the node; one node here).
pub const CLIENT_ID: &str = "airlock";

/// The E2B state of a store state: live sandboxes are `running` (queued and starting ones
/// too: they will be), paused ones `paused`; ended ones have no E2B state.
pub fn e2b_state(state: SandboxState) -> Option<&'static str> {
    match state {
        SandboxState::Queued | SandboxState::Starting | SandboxState::Running => Some("running"),
        SandboxState::Paused | SandboxState::Resuming => Some("paused"),
        _ => None,
    }
}

/// What a box is sized to, from its resolved policy: (cpus, memory MiB, disk MiB).
fn sizes(policy: &Value) -> (u64, u64, u64) {
    let limits = &policy["limits"];
    let host_cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1);
    let cpus = limits["cpus"]
        .as_f64()
        .map(|c| c.ceil().max(1.0) as u64)
        .unwrap_or(host_cpus);
    let mib = |v: &Value| v.as_u64().map(|b| b >> 20).unwrap_or(0);
    (cpus, mib(&limits["memory"]), mib(&limits["disk"]))
}

/// `Sandbox`: the answer to create and connect. `token` is the sandbox's access token,
/// `domain` the one its ports are served under (the SDKs' `get_host` builds
/// `{port}-{sandboxID}.{domain}` from it).
pub fn sandbox(rec: &SandboxRecord, token: Option<&str>, domain: Option<&str>) -> Value {
    json!({
        "templateID": rec.template,
        "sandboxID": rec.id,
        "alias": rec.template,
        "clientID": CLIENT_ID,
        "envdVersion": ENVD_VERSION,
        "envdAccessToken": token,
        // The interpreter SDKs send it to the code interpreter's /contexts routes, which have
        // no other credential: it is the same token.
        "trafficAccessToken": token,
        "domain": domain,
    })
}

/// `ListedSandbox`: one entry of a list.
pub fn listed(rec: &SandboxRecord, started_ms: Option<i64>) -> Value {
    let (cpus, memory, disk) = sizes(&rec.policy);
    json!({
        "templateID": rec.template,
        "alias": rec.template,
        "sandboxID": rec.id,
        "clientID": CLIENT_ID,
        "startedAt": rfc3339(started_ms.unwrap_or(rec.created_ms)),
        "endAt": rfc3339(rec.deadline_ms),
        "cpuCount": cpus,
        "memoryMB": memory,
        "diskSizeMB": disk,
        "metadata": rec.metadata,
        "state": e2b_state(rec.state).unwrap_or("running"),
        "envdVersion": ENVD_VERSION,
    })
}

/// `SandboxDetail`: one sandbox, with its token.
pub fn detail(
    rec: &SandboxRecord,
    started_ms: Option<i64>,
    token: Option<&str>,
    domain: Option<&str>,
) -> Value {
    let mut v = listed(rec, started_ms);
    if let Value::Object(map) = &mut v {
        map.insert("envdAccessToken".into(), json!(token));
        map.insert("domain".into(), json!(domain));
        let internet = rec.policy["network"].as_str() != Some("none");
        map.insert("allowInternetAccess".into(), json!(internet));
        map.insert(
            "lifecycle".into(),
            json!({"autoResume": false, "onTimeout": "kill"}),
        );
        map.insert("volumeMounts".into(), Value::Array(Vec::new()));
        map.insert("network".into(), network_view(&rec.policy));
    }
    v
}

fn network_view(policy: &Value) -> Value {
    let egress = &policy["egress"];
    let list = |k: &str| egress[k].as_array().cloned().unwrap_or_default();
    let mut out = Map::new();
    let mut allow = list("allow_domain");
    allow.extend(list("allow_ip"));
    if !allow.is_empty() {
        out.insert("allowOut".into(), Value::Array(allow));
    }
    let mut deny = list("deny_domain");
    deny.extend(list("deny_ip"));
    if !deny.is_empty() {
        out.insert("denyOut".into(), Value::Array(deny));
    }
    let rules = rules_view(policy);
    if !rules.is_empty() {
        out.insert("rules".into(), Value::Object(rules));
    }
    Value::Object(out)
}

/// The sandbox's `network.rules` as E2B shows them: each header set by a secret binding, its
/// proxy placeholders written back as `${e2b.secrets.NAME}` (never a value; the proxy's own
/// placeholders do not leave the server either), hosts without the default port.
fn rules_view(policy: &Value) -> Map<String, Value> {
    let bindings = policy["secrets"].as_array().cloned().unwrap_or_default();
    let names: Vec<(&str, &str)> = bindings
        .iter()
        .filter_map(|b| Some((b["placeholder"].as_str()?, b["name"].as_str()?)))
        .collect();
    let mut by_host: Map<String, Value> = Map::new();
    for set in bindings
        .iter()
        .flat_map(|b| b["set_headers"].as_array().cloned().unwrap_or_default())
    {
        let (Some(host), Some(name), Some(value)) = (
            set["host"].as_str(),
            set["name"].as_str(),
            set["value"].as_str(),
        ) else {
            continue;
        };
        let mut shown = value.to_string();
        for (placeholder, secret) in &names {
            shown = shown.replace(placeholder, &format!("${{e2b.secrets.{secret}}}"));
        }
        let host = host.strip_suffix(":443").unwrap_or(host);
        let rule = by_host
            .entry(host.to_string())
            .or_insert_with(|| json!([{"transform": {"headers": {}}}]));
        if let Some(headers) = rule[0]["transform"]["headers"].as_object_mut() {
            headers.insert(name.to_string(), Value::String(shown));
        }
    }
    by_host
}

/// Milliseconds since the Unix epoch as RFC 3339 UTC with milliseconds
/// (`2024-01-02T03:04:05.678Z`).
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Seconds since the Unix epoch as RFC 3339 UTC without fractions.
pub fn rfc3339_secs(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// An RFC 3339 / ISO 8601 time (`2024-01-02T03:04:05[.frac][Z|±hh:mm]`, what the SDKs send
/// for `startedAfter`) as milliseconds since the Unix epoch; no offset is UTC. `None` when it
/// is not one.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let t = text.trim();
    let b = t.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = t.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let frac = t.get(start..i)?;
        if frac.is_empty() {
            return None;
        }
        millis = format!("{frac:0<3}").get(..3)?.parse().ok()?;
    }
    let offset_s = match t.get(i..)? {
        "" | "Z" | "z" => 0,
        rest => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hm = rest.get(1..)?;
            let (oh, om) = match hm.split_once(':') {
                Some((oh, om)) => (oh, om),
                None if hm.len() == 4 => hm.split_at(2),
                None => return None,
            };
            if oh.len() != 2 || om.len() != 2 {
                return None;
            }
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60)
        }
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 86_400 + h * 3600 + mi * 60 + sec) - offset_s) * 1000 + millis)
}

/// (year, month, day) in the proleptic Gregorian calendar to days since 1970-01-01 (Howard
/// Hinnant's algorithm, the inverse of [`civil_from_days`]).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
