use super::*;
use crate::secrets::BoxSecrets;
use airlock_policy::{SecretBinding, SecretValue};

fn secrets() -> BoxSecrets {
    let binding = |name: &str, host: &str, value: &str| SecretBinding {
        name: name.into(),
        hosts: vec![host.into()],
        placeholder: format!("airlock-secret-{name}-0123456789abcdef"),
        body: false,
        set_headers: Vec::new(),
        value: Some(SecretValue::new(value.as_bytes().to_vec())),
    };
    BoxSecrets::from_bindings(&[
        binding("A", "api.example:443", "value-of-a"),
        binding("B", "*.other.example:8443", "value-of-b"),
    ])
    .expect("bindings")
}

#[test]
fn a_placeholder_to_a_host_it_is_not_bound_to_is_found_and_named() {
    let s = secrets();
    let head = b"GET / HTTP/1.1\r\nAuthorization: Bearer airlock-secret-A-0123456789abcdef\r\n\r\n";
    let leak = find_leak(&s, head, "evil.example", 443).expect("a leak");
    assert_eq!(leak.secret, "A");
    assert_eq!(leak.kind, LeakKind::Placeholder);
    assert_eq!(leak.rule, "secret A -> api.example:443");
    let message = leak.message("evil.example", 443);
    assert!(message.contains("secret A") && message.contains("evil.example:443"));
    assert!(!message.contains("value-of-a"));
}

#[test]
fn the_bound_host_on_its_port_is_not_a_leak_but_another_port_is() {
    let s = secrets();
    let head = b"x-api-key: airlock-secret-A-0123456789abcdef";
    assert_eq!(find_leak(&s, head, "api.example", 443), None);
    assert!(find_leak(&s, head, "api.example", 8443).is_some());
    let b = b"x: airlock-secret-B-0123456789abcdef";
    assert_eq!(find_leak(&s, b, "deep.sub.other.example", 8443), None);
    assert!(
        find_leak(&s, b, "other.example", 8443).is_some(),
        "*. is subdomains only"
    );
}

#[test]
fn the_real_value_is_found_too() {
    let s = secrets();
    let leak = find_leak(&s, b"token=value-of-b", "api.example", 443).expect("a leak");
    assert_eq!((leak.secret.as_str(), leak.kind), ("B", LeakKind::Value));
}

#[test]
fn a_binding_without_its_value_is_refused() {
    let b = SecretBinding {
        name: "A".into(),
        hosts: vec!["api.example:443".into()],
        placeholder: "p".into(),
        body: false,
        set_headers: Vec::new(),
        value: None,
    };
    assert!(matches!(
        BoxSecrets::from_bindings(&[b]),
        Err(crate::secrets::SecretsError::NoValue { .. })
    ));
}
