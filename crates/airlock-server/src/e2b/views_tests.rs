#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn times_are_rfc3339_utc() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    assert_eq!(rfc3339_secs(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339_secs(-1), "1969-12-31T23:59:59Z");
}

#[test]
fn sandboxes_show_the_required_fields() {
    let rec = SandboxRecord {
        id: "abc123".into(),
        template: "base".into(),
        policy: serde_json::json!({"network": "proxy", "limits": {"memory": 1u64 << 30, "disk": 512u64 << 20, "cpus": 1.5}, "egress": {"allow_domain": ["a.example"], "allow_ip": ["1.2.3.4"], "deny_domain": [], "public_internet": true}}),
        metadata: [("k".to_string(), "v".to_string())].into(),
        token_hash: String::new(),
        created_ms: 0,
        deadline_ms: 300_000,
        state: SandboxState::Running,
        reason: None,
        ended_ms: None,
        supervisor_pid: None,
        boot_id: None,
    };
    let s = sandbox(&rec, Some("tok"), None);
    assert!(s["domain"].is_null(), "no served domain: the SDK's own");
    assert_eq!(
        sandbox(&rec, Some("tok"), Some("localhost"))["domain"],
        "localhost"
    );
    for k in [
        "templateID",
        "sandboxID",
        "clientID",
        "envdVersion",
        "envdAccessToken",
    ] {
        assert!(!s[k].is_null(), "{k}");
    }
    let d = detail(&rec, Some(1000), Some("tok"), Some("localhost"));
    assert_eq!(d["domain"], "localhost");
    for k in [
        "templateID",
        "sandboxID",
        "clientID",
        "startedAt",
        "endAt",
        "envdVersion",
        "cpuCount",
        "memoryMB",
        "diskSizeMB",
        "state",
    ] {
        assert!(!d[k].is_null(), "{k}");
    }
    assert_eq!(d["cpuCount"], 2);
    assert_eq!(d["memoryMB"], 1024);
    assert_eq!(d["diskSizeMB"], 512);
    assert_eq!(d["state"], "running");
    assert_eq!(d["startedAt"], "1970-01-01T00:00:01.000Z");
    assert_eq!(d["allowInternetAccess"], true);
    assert_eq!(
        d["network"]["allowOut"],
        serde_json::json!(["a.example", "1.2.3.4"])
    );
    assert_eq!(e2b_state(SandboxState::Killed), None);
}

#[test]
fn rfc3339_times_parse_back() {
    for ms in [0i64, 1_700_000_000_123, 951_782_400_000, -86_400_000] {
        assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms), "{}", rfc3339(ms));
    }
    // What Python's isoformat() and JS's toISOString() send.
    assert_eq!(
        parse_rfc3339("2023-11-14T22:13:20.123456+00:00"),
        Some(1_700_000_000_123)
    );
    assert_eq!(
        parse_rfc3339("2023-11-15T00:13:20+02:00"),
        Some(1_700_000_000_000)
    );
    assert_eq!(
        parse_rfc3339("2023-11-14T22:13:20"),
        Some(1_700_000_000_000)
    );
    for bad in [
        "",
        "yesterday",
        "2023-13-01T00:00:00Z",
        "2023-11-14T22:13:20+2",
        "2023-11-14",
    ] {
        assert_eq!(parse_rfc3339(bad), None, "{bad}");
    }
}

#[test]
fn rules_show_the_secret_names_and_never_a_placeholder_or_value() {
    let policy = json!({
        "egress": {"allow_domain": ["api.test"]},
        "secrets": [
            {"name": "key-a", "hosts": ["api.test:443"], "placeholder": "airlock-secret-key-a-00", "body": false,
             "set_headers": [{"host": "api.test:443", "name": "Authorization", "value": "Bearer airlock-secret-key-a-00"}]},
            {"name": "key-b", "hosts": ["v.test:8443"], "placeholder": "airlock-secret-key-b-11", "body": false,
             "set_headers": [{"host": "v.test:8443", "name": "X-Key", "value": "airlock-secret-key-b-11:airlock-secret-key-a-00"}]}
        ]
    });
    let v = network_view(&policy);
    assert_eq!(
        v["rules"],
        json!({
            "api.test": [{"transform": {"headers": {"Authorization": "Bearer ${e2b.secrets.key-a}"}}}],
            "v.test:8443": [{"transform": {"headers": {"X-Key": "${e2b.secrets.key-b}:${e2b.secrets.key-a}"}}}]
        })
    );
    assert!(!v.to_string().contains("airlock-secret-"), "{v}");
}
