use super::*;
use crate::secrets::BoxSecrets;
use airlock_policy::{SecretBinding, SecretValue};

fn secrets(body: bool) -> BoxSecrets {
    let binding = |name: &str, host: &str| SecretBinding {
        name: name.into(),
        hosts: vec![host.into()],
        placeholder: format!("ph-{name}-0123456789"),
        body,
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
