#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn templates_map_to_boxes_in_the_home() {
    let none = crate::template_catalog::TemplateCatalog::empty();
    assert_eq!(
        template(None, &none).unwrap(),
        ("base".to_string(), INSIDE_HOME, Template::Host)
    );
    assert_eq!(
        template(Some("code-interpreter-v1"), &none).unwrap().0,
        "code-interpreter-v1"
    );
    let e = template(Some("nope"), &none).unwrap_err();
    assert_eq!(e.http_status().as_u16(), 404);
    assert!(e.to_string().contains("base"));
}

#[test]
fn create_requests_plan_a_session() {
    let req: NewSandbox = serde_json::from_str(
        r#"{"templateID":"base","timeout":60,"metadata":{"a":"b"},"envVars":{"FOO":"bar"},"allow_internet_access":false,"secure":true,"autoPause":false}"#,
    )
    .unwrap();
    let spec = plan(
        req,
        super::super::DefaultNetwork::Internet,
        airlock_policy::BackendKind::Native,
        &crate::template_catalog::TemplateCatalog::empty(),
        &[],
    )
    .unwrap();
    assert_eq!(spec.timeout_ms, Some(60_000));
    assert_eq!(spec.metadata.get("a").map(String::as_str), Some("b"));
    assert_eq!(spec.payload["network"], "none");
    assert!(spec.payload["env"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p == &serde_json::json!(["FOO", "bar"])));
    let default: NewSandbox = serde_json::from_str("{}").unwrap();
    let spec = plan(
        default,
        super::super::DefaultNetwork::Internet,
        airlock_policy::BackendKind::Native,
        &crate::template_catalog::TemplateCatalog::empty(),
        &[],
    )
    .unwrap();
    assert_eq!(spec.timeout_ms, Some(300_000));
    assert_eq!(spec.payload["network"], "proxy");
    for bad in [
        r#"{"timeout":-1}"#,
        r#"{"timeout":999999999}"#,
        r#"{"autoPause":true,"autoPauseMemory":false}"#,
        r#"{"volumeMounts":[{"name":"v","path":"/v"}]}"#,
        r#"{"templateID":"gpu"}"#,
        r#"{"allow_internet_access":false,"network":{"rules":{"api.test":[{"transform":{"headers":{"A":"${e2b.secrets.k}"}}}]}}}"#,
    ] {
        let req: NewSandbox = serde_json::from_str(bad).unwrap();
        assert!(
            plan(
                req,
                super::super::DefaultNetwork::Internet,
                airlock_policy::BackendKind::Native,
                &crate::template_catalog::TemplateCatalog::empty(),
                &[],
            )
            .is_err(),
            "{bad}"
        );
    }
}

#[test]
fn list_queries_parse() {
    let q = list_query("metadata=team%3Da%26env%3Dprod&state=running,paused&limit=2&nextToken=4")
        .unwrap();
    assert_eq!(q.metadata.get("team").map(String::as_str), Some("a"));
    assert_eq!(q.metadata.get("env").map(String::as_str), Some("prod"));
    assert_eq!(q.states, vec!["running", "paused"]);
    assert_eq!((q.limit, q.offset), (2, 4));
    assert!(list_query("state=sleeping").is_err());
    assert!(list_query("limit=0").is_err());
    assert!(list_query("nextToken=abc").is_err());
    assert_eq!(list_query("limit=100000").unwrap().limit, 100);
}

#[test]
fn network_rules_bind_their_secrets_without_allowing_hosts_and_map_hosts_are_added() {
    let req: NewSandbox = serde_json::from_str(
        r#"{"network":{"allowOut":["127.0.0.1","api.test"],"denyOut":["0.0.0.0/0"],
            "rules":{"api.test:8443":[{"transform":{"headers":{"Authorization":"Bearer ${e2b.secrets.key}"}}}]}}}"#,
    )
    .unwrap();
    let spec = plan(
        req,
        super::super::DefaultNetwork::Internet,
        airlock_policy::BackendKind::Native,
        &crate::template_catalog::TemplateCatalog::empty(),
        &["api.test=127.0.0.1".to_string()],
    )
    .unwrap();
    let secrets = spec.payload["secrets"].as_array().unwrap();
    assert_eq!(secrets.len(), 1);
    assert_eq!(secrets[0]["name"], "key");
    assert_eq!(secrets[0]["hosts"], serde_json::json!(["api.test:8443"]));
    assert_eq!(
        spec.payload["egress"]["allow_domain"],
        serde_json::json!(["api.test"])
    );
    assert_eq!(
        spec.payload["egress"]["map_host"],
        serde_json::json!(["api.test=127.0.0.1"])
    );
    assert!(
        spec.payload["env"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p[0] != "key"),
        "the box gets no variable for a rule's secret"
    );
}
