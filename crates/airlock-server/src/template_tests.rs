#![allow(clippy::unwrap_used)]

use super::*;
use crate::requests::parse;
use airlock_policy::BackendKind;
use airlock_policy::FilesystemPolicy;

#[test]
fn templates_pick_the_working_directory() {
    assert_eq!(template(None).unwrap(), ("base".to_string(), "/tmp"));
    assert_eq!(template(Some("user")).unwrap().1, "/home/user");
    assert_eq!(template(Some("gpu")).unwrap_err().code(), "invalid");
}

#[test]
fn a_request_policy_resolves_without_host_paths() {
    let mut req: CreateRequest = parse(
        br#"{"env":{"A":"1"},"policy":{"limits":{"memory":"256M"}}}"#,
        false,
    )
    .unwrap();
    let p = resolve_policy(&mut req, "/tmp", BackendKind::Native).unwrap();
    assert_eq!(p.limits.memory, Some(256 << 20));
    assert!(p.env.iter().any(|(k, v)| k == "A" && v == "1"));
    assert_eq!(p.cwd, std::path::PathBuf::from("/tmp"));
    match p.filesystem {
        FilesystemPolicy::Isolated {
            workspace, grants, ..
        } => assert!(workspace.is_none() && grants.is_empty()),
        FilesystemPolicy::Host => panic!("host filesystem"),
    }
}

#[test]
fn filesystem_grants_and_unknown_fields_are_refused() {
    let mut req: CreateRequest =
        parse(br#"{"policy":{"filesystem":{"read":["/etc"]}}}"#, false).unwrap();
    assert_eq!(
        resolve_policy(&mut req, "/tmp", BackendKind::Native)
            .unwrap_err()
            .code(),
        "invalid"
    );
    assert!(parse::<CreateRequest>(br#"{"templat":"base"}"#, false).is_err());
    assert!(parse::<CreateRequest>(b"{", false).is_err());
    assert!(parse::<CreateRequest>(b"", true).is_ok());
}

#[test]
fn the_hosts_unfiltered_network_is_refused_over_the_api() {
    let mut req: CreateRequest =
        parse(br#"{"policy":{"network":{"mode":"host"}}}"#, false).unwrap();
    let err = resolve_policy(&mut req, "/tmp", BackendKind::Native).unwrap_err();
    assert_eq!(err.code(), "invalid");
    let text = err.to_string();
    assert!(
        text.contains("policy.network.mode") && text.contains("proxy"),
        "{text}"
    );
    for ok in ["none", "proxy"] {
        let body = format!(r#"{{"policy":{{"network":{{"mode":"{ok}"}}}}}}"#);
        let mut req: CreateRequest = parse(body.as_bytes(), false).unwrap();
        assert!(
            resolve_policy(&mut req, "/tmp", BackendKind::Native).is_ok(),
            "{ok}"
        );
    }
}

#[test]
fn an_approver_program_is_refused_over_the_api_and_on_request_only_where_the_server_can_ask() {
    // An approver program would run on the server's host: never the caller's to name.
    let body = br#"{"policy":{"network":{"mode":"proxy","approval":"on-request","approver":"touch /tmp/pwned"}}}"#;
    let mut req: CreateRequest = parse(body, false).unwrap();
    let text = resolve_policy(&mut req, "/tmp", BackendKind::Native)
        .unwrap_err()
        .to_string();
    assert!(text.contains("policy.network.approver"), "{text}");
    // The server answers held connections of native, gVisor and microVM boxes.
    for kind in [
        BackendKind::Native,
        BackendKind::Gvisor,
        BackendKind::Microvm,
    ] {
        let body = br#"{"policy":{"network":{"mode":"proxy","approval":"on-request","approval_timeout":"5s"}}}"#;
        let mut req: CreateRequest = parse(body, false).unwrap();
        let policy = resolve_policy(&mut req, "/tmp", kind).unwrap();
        assert_eq!(policy.egress.approval.timeout_ms, 5000);
    }
    // A wasm box has no network to ask about: refused, naming the field.
    let body = br#"{"policy":{"network":{"mode":"proxy","approval":"on-request"}}}"#;
    let mut req: CreateRequest = parse(body, false).unwrap();
    let text = resolve_policy(&mut req, "/tmp", BackendKind::Wasm)
        .unwrap_err()
        .to_string();
    assert!(text.contains("policy.network"), "{text}");
    let body = br#"{"policy":{"network":{"mode":"proxy","approval":"never"}}}"#;
    let mut req: CreateRequest = parse(body, false).unwrap();
    assert!(resolve_policy(&mut req, "/tmp", BackendKind::Microvm).is_ok());
}

#[test]
fn an_env_entry_and_a_secret_of_one_name_are_a_conflict() {
    let mut req: CreateRequest = parse(
        br#"{"env":{"A":"v"},"secrets":{"A":{"value":"s","hosts":["api.example"]}},"policy":{"network":{"mode":"proxy"}}}"#,
        false,
    )
    .unwrap();
    let err = resolve_policy(&mut req, "/tmp", BackendKind::Native).unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    assert!(err.to_string().contains("env.A and secrets.A"), "{err}");
}
