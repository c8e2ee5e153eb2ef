use super::*;
use serde_json::json;

#[test]
fn a_rule_binds_each_secret_it_names_to_its_host_and_sets_its_headers() {
    let rules = json!({
        "api.test:8443": [
            {"transform": {"headers": {"Authorization": "Bearer ${e2b.secrets.key-a}"}}},
            {"transform": {"headers": {"authorization": "Token ${e2b.secrets.key-a}",
                                       "X-Pair": "${e2b.secrets.key-b}:${e2b.secrets.key-a}"}}}
        ],
        "other.test": [{"transform": {"headers": {"X-Key": "${e2b.secrets.key-b}"}}}, {}]
    });
    let mut b = bindings(&rules).expect("bindings");
    b.sort_by(|x, y| x.name.cmp(&y.name));
    let names: Vec<&str> = b.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["key-a", "key-b"]);
    assert_eq!(b[0].hosts, ["api.test:8443"]);
    assert_eq!(b[1].hosts, ["api.test:8443", "other.test:443"]);
    let (pa, pb) = (&b[0].placeholder, &b[1].placeholder);
    assert!(pa.starts_with("airlock-secret-key-a-") && pa != pb, "{pa}");
    // The later rule's header of the same name wins; a header goes with its first secret.
    let mut sets: Vec<(&str, &str, String)> = b
        .iter()
        .flat_map(|x| x.set_headers.iter())
        .map(|h| (h.host.as_str(), h.name.as_str(), h.value.clone()))
        .collect();
    sets.sort();
    assert_eq!(
        sets,
        [
            ("api.test:8443", "X-Pair", format!("{pb}:{pa}")),
            ("api.test:8443", "authorization", format!("Token {pa}")),
            ("other.test:443", "X-Key", pb.clone()),
        ]
    );
    assert!(b.iter().all(|x| x.value.is_none() && !x.body));
}

#[test]
fn what_airlock_cannot_honour_is_refused_by_name() {
    for (rules, says) in [
        (
            json!({"api.test": [{"transform": {"headers": {"X-Team": "blue"}}}]}),
            "names no secret",
        ),
        (
            json!({"api.test": [{"transform": {"headers": {"Authorization": "Bearer ${e2b.identity.tokens.aws}"}}}]}),
            "workload identity",
        ),
        (
            json!({"api.test": [{"transform": {"headers": {"A": "${e2b.other}"}}}]}),
            "not a placeholder",
        ),
        (
            json!({"api.test": [{"transform": {"headers": {"A": "${e2b.secrets.k"}}}]}),
            "not closed",
        ),
        (
            json!({"10.0.0.1": [{"transform": {"headers": {"A": "${e2b.secrets.k}"}}}]}),
            "address",
        ),
        (json!({"10.0.0.0/8": []}), "address"),
        (
            json!({"api.test": [{"transform": {"headers": {"Host": "${e2b.secrets.k}"}}}]}),
            "framing",
        ),
        (
            json!({"api.test": [{"transform": {"headers": {"bad name": "${e2b.secrets.k}"}}}]}),
            "not a valid header name",
        ),
        (
            json!({"bad host!": [{"transform": {"headers": {"A": "${e2b.secrets.k}"}}}]}),
            "bad host!",
        ),
        (json!(["api.test"]), "object"),
    ] {
        let err = bindings(&rules).expect_err(says).to_string();
        assert!(err.contains(says), "{rules}: {err}");
    }
}
