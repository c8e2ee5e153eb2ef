use super::*;
use crate::secrets::BoxSecrets;
use airlock_policy::{SecretBinding, SecretValue};

fn secrets(body: bool) -> BoxSecrets {
    let binding = |name: &str, host: &str| SecretBinding {
        name: name.into(),
        hosts: vec![host.into()],
        placeholder: format!("ph-{name}-0123456789"),
        body,
        set_headers: Vec::new(),
        value: Some(SecretValue::new(format!("real-{name}").into_bytes())),
    };
    BoxSecrets::from_bindings(&[
        binding("A", "api.example:443"),
        binding("B", "other.example:443"),
    ])
    .expect("bindings")
}

fn parts(uri: &str, headers: &[(&str, &str)]) -> Parts {
    let mut b = hyper::Request::builder().uri(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).expect("request").into_parts().0
}

#[test]
fn the_bound_placeholder_becomes_the_value_in_every_header_and_the_query() {
    let s = secrets(false);
    let mut p = parts(
        "/v1/x?key=ph-A-0123456789",
        &[
            ("authorization", "Bearer ph-A-0123456789"),
            ("x-api-key", "ph-A-0123456789"),
            ("host", "api.example"),
        ],
    );
    let used = rewrite_head(&mut p, &s, "api.example", 443);
    assert_eq!(used, ["A"]);
    assert_eq!(p.headers["authorization"], "Bearer real-A");
    assert_eq!(p.headers["x-api-key"], "real-A");
    assert_eq!(p.uri.query(), Some("key=real-A"));
}

#[test]
fn another_secrets_placeholder_is_blocked_and_not_rewritten() {
    let s = secrets(false);
    let p = parts(
        "/",
        &[("x-api-key", "ph-B-0123456789"), ("host", "api.example")],
    );
    match check_head(&p, &s, "api.example", 443) {
        Err(Refusal::Leak(leak)) => assert_eq!(leak.secret, "B"),
        other => panic!("not blocked: {other:?}"),
    }
}

#[test]
fn the_authority_must_be_the_connections_host_and_port() {
    let ok = parts("/", &[("host", "API.example")]);
    assert!(check_authority(&ok, "api.example", 443).is_ok());
    let h2 = parts("https://api.example/", &[]);
    assert!(check_authority(&h2, "api.example", 443).is_ok());
    for (host, port) in [("other.example", 443), ("api.example:8443", 443)] {
        let p = parts("/", &[("host", host)]);
        assert!(
            matches!(
                check_authority(&p, "api.example", port),
                Err(Refusal::Misdirected(_))
            ),
            "{host}"
        );
    }
    let none = parts("/", &[]);
    assert!(check_authority(&none, "api.example", 443).is_err());
}

#[test]
fn bodies_are_rewritten_only_where_the_binding_says_so() {
    let on = secrets(true);
    let (body, used) = rewrite_body(
        Bytes::from_static(b"{\"k\":\"ph-A-0123456789\"}"),
        &on,
        "api.example",
        443,
    )
    .expect("rewritten");
    assert_eq!(&body[..], b"{\"k\":\"real-A\"}");
    assert_eq!(used, ["A"]);
    assert!(wants_body(&on, "api.example", 443));
    assert!(!wants_body(&secrets(false), "api.example", 443));
    let leak = rewrite_body(
        Bytes::from_static(b"ph-B-0123456789"),
        &on,
        "api.example",
        443,
    );
    assert!(matches!(leak, Err(Refusal::Leak(_))));
}

#[test]
fn requests_are_fixed_for_the_upstream_protocol() {
    let mut p = parts(
        "https://api.example/x?y=1",
        &[
            ("connection", "keep-alive"),
            ("te", "trailers"),
            ("host", "api.example"),
        ],
    );
    for_upstream(&mut p, "api.example", 443, false);
    assert_eq!(p.uri, "/x?y=1");
    assert_eq!(p.headers["host"], "api.example");
    assert!(!p.headers.contains_key("connection") && !p.headers.contains_key("te"));
    let mut q = parts("/x", &[("host", "api.example:8443")]);
    for_upstream(&mut q, "api.example", 8443, true);
    assert_eq!(q.uri, "https://api.example:8443/x");
    assert!(!q.headers.contains_key("host"));
}

/// E2B's network rules: a binding sets a header on one of its hosts, replacing the box's own,
/// and the placeholder in it becomes the value; another host gets neither.
fn header_setting() -> BoxSecrets {
    BoxSecrets::from_bindings(&[SecretBinding {
        name: "api-key".into(),
        hosts: vec!["api.example:443".into(), "other.example:443".into()],
        placeholder: "ph-e2b-0123456789".into(),
        body: false,
        set_headers: vec![airlock_policy::HeaderSet {
            host: "api.example:443".into(),
            name: "Authorization".into(),
            value: "Bearer ph-e2b-0123456789".into(),
        }],
        value: Some(SecretValue::new(b"sk-real".to_vec())),
    }])
    .expect("bindings")
}

#[test]
fn a_set_header_replaces_the_boxs_and_carries_the_value_on_its_host_only() {
    let s = header_setting();
    let mut p = parts(
        "/v1/x",
        &[("authorization", "Bearer made-up"), ("host", "api.example")],
    );
    set_headers(&mut p, &s, "api.example", 443);
    let used = rewrite_head(&mut p, &s, "api.example", 443);
    assert_eq!(used, ["api-key"]);
    let all: Vec<_> = p.headers.get_all("authorization").iter().collect();
    assert_eq!(all, ["Bearer sk-real"]);

    let mut q = parts(
        "/",
        &[("authorization", "Bearer mine"), ("host", "other.example")],
    );
    set_headers(&mut q, &s, "other.example", 443);
    assert!(rewrite_head(&mut q, &s, "other.example", 443).is_empty());
    assert_eq!(q.headers["authorization"], "Bearer mine");
}

#[test]
fn a_binding_may_not_set_a_framing_header_or_a_bad_one() {
    for (name, value) in [
        ("Host", "x"),
        ("content-length", "1"),
        ("Transfer-Encoding", "chunked"),
        ("bad name", "x"),
        ("x-ok", "line\nbreak"),
    ] {
        let err = BoxSecrets::from_bindings(&[SecretBinding {
            name: "k".into(),
            hosts: vec!["api.example:443".into()],
            placeholder: "ph".into(),
            body: false,
            set_headers: vec![airlock_policy::HeaderSet {
                host: "api.example:443".into(),
                name: name.into(),
                value: value.into(),
            }],
            value: Some(SecretValue::new(b"v".to_vec())),
        }])
        .expect_err(name);
        assert!(err.to_string().contains(name), "{err}");
    }
}

#[test]
fn of_several_matching_rule_hosts_only_the_most_specific_sets_headers() {
    let set = |host: &str, name: &str, value: &str| airlock_policy::HeaderSet {
        host: host.into(),
        name: name.into(),
        value: value.into(),
    };
    let s = BoxSecrets::from_bindings(&[SecretBinding {
        name: "k".into(),
        hosts: vec![
            "*.example.com:443".into(),
            "*.api.example.com:443".into(),
            "v1.api.example.com:443".into(),
        ],
        placeholder: "ph-k".into(),
        body: false,
        set_headers: vec![
            set("*.example.com:443", "x-wide", "ph-k"),
            set("*.api.example.com:443", "x-narrow", "ph-k"),
            set("v1.api.example.com:443", "x-exact", "ph-k"),
        ],
        value: Some(SecretValue::new(b"v".to_vec())),
    }])
    .expect("bindings");
    for (host, only) in [
        ("v1.api.example.com", "x-exact"),
        ("v2.api.example.com", "x-narrow"),
        ("www.example.com", "x-wide"),
    ] {
        let mut p = parts("/", &[("host", host)]);
        set_headers(&mut p, &s, host, 443);
        let names: Vec<&str> = p
            .headers
            .keys()
            .map(|k| k.as_str())
            .filter(|k| k.starts_with("x-"))
            .collect();
        assert_eq!(names, [only], "{host}");
    }
}
