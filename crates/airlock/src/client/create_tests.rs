#![allow(clippy::unwrap_used)]

use super::*;

fn args() -> CreateArgs {
    CreateArgs {
        template: None,
        timeout: None,
        metadata: vec![],
        env: vec![],
        net: None,
        allow_domain: vec![],
        memory: None,
        pids: None,
        json: false,
    }
}

#[test]
fn the_body_holds_only_what_was_asked() {
    assert_eq!(
        request_body(&args()).unwrap(),
        json!({"metadata": {}, "env": {}})
    );
    let a = CreateArgs {
        template: Some("user".into()),
        timeout: Some(60),
        metadata: vec!["team=a".into()],
        env: vec!["X=1".into()],
        net: Some("proxy".into()),
        allow_domain: vec!["example.com".into()],
        memory: Some("512M".into()),
        pids: Some(64),
        json: true,
    };
    assert_eq!(
        request_body(&a).unwrap(),
        json!({
            "template": "user", "timeout": 60, "metadata": {"team": "a"}, "env": {"X": "1"},
            "policy": {"network": {"mode": "proxy", "allow_domain": ["example.com"]}, "limits": {"memory": 512u64 << 20, "pids": 64}}
        })
    );
}

#[test]
fn allow_domain_needs_the_proxy_and_sizes_must_parse() {
    let a = CreateArgs {
        allow_domain: vec!["example.com".into()],
        ..args()
    };
    assert!(request_body(&a)
        .unwrap_err()
        .to_string()
        .contains("--net proxy"));
    let a = CreateArgs {
        memory: Some("lots".into()),
        ..args()
    };
    assert!(request_body(&a)
        .unwrap_err()
        .to_string()
        .contains("--memory"));
}
