#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn plain_json_reads_as_serde_json_reads_it() {
    let raw = br#" {"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"read_\u0078","arguments":{"n":[1,-2,3e2,true,null,"\u00e9"],"big":18446744073709551615}}} "#;
    assert_eq!(
        parse_strict(raw).unwrap(),
        serde_json::from_slice::<Value>(raw).unwrap()
    );
}

#[test]
fn duplicate_keys_are_refused_at_any_depth_naming_where() {
    let cases: [(&[u8], &str, &str); 4] = [
        (br#"{"method":"a","method":"b"}"#, "the message", "method"),
        (
            br#"{"params":{"name":"read_x","name":"delete_everything"}}"#,
            "params",
            "name",
        ),
        (
            br#"{"params":{"arguments":{"list":[{},{"p":1,"p":2}]}}}"#,
            "params.arguments.list[1]",
            "p",
        ),
        // Escapes are decoded before the comparison.
        (br#"[{"na\u006de":1,"name":2}]"#, "the message[0]", "name"),
    ];
    for (raw, at, key) in cases {
        assert_eq!(
            parse_strict(raw),
            Err(Malformed::DuplicateKey {
                at: at.into(),
                key: key.into()
            }),
            "{}",
            String::from_utf8_lossy(raw)
        );
    }
    let why = parse_strict(br#"{"a":{"b":1,"b":1}}"#)
        .unwrap_err()
        .to_string();
    assert!(
        why.contains("\"b\" appears twice in a") && why.contains("once"),
        "{why}"
    );
}

#[test]
fn what_is_not_one_json_value_is_refused() {
    for raw in [
        &b"{\"id\":1} {\"id\":2}"[..],
        b"{\"id\":1}junk",
        b"{\"id\":1,}",
        b"\xff{}",
        br#"{"s":"\ud800"}"#,
        b"",
        b"NaN",
    ] {
        assert_eq!(
            parse_strict(raw),
            Err(Malformed::NotJson),
            "{}",
            String::from_utf8_lossy(raw)
        );
    }
    // Nesting is bounded (no stack overflow on hostile depth).
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(parse_strict(deep.as_bytes()), Err(Malformed::NotJson));
}

#[test]
fn keys_that_differ_from_a_known_key_only_by_case_are_refused() {
    let known = ["name", "arguments", "_meta"];
    for key in ["Name", "NAME", "nAmE", "ARGUMENTſ", "_META"] {
        let o = obj(json!({ key: "x" }));
        assert!(
            matches!(check_keys(&o, "params", &known), Err(Malformed::CaseVariant { key: k, .. }) if k == key),
            "{key}"
        );
    }
    // The Kelvin sign folds to k, as Go's encoding/json folds it.
    let o = obj(json!({"\u{212a}ind": 1}));
    assert!(check_keys(&o, "x", &["kind"]).is_err());
    let why = check_keys(&obj(json!({"Name": 1})), "params", &known)
        .unwrap_err()
        .to_string();
    assert!(
        why.contains("\"Name\" in params") && why.contains("spell it \"name\""),
        "{why}"
    );
}

#[test]
fn two_keys_that_fold_together_are_refused_even_if_unknown() {
    let o = obj(json!({"path": "a", "PATH": "b"}));
    assert!(matches!(
        check_keys(&o, "params", &["name"]),
        Err(Malformed::CaseCollision { .. })
    ));
    // Exact known keys and unrelated keys pass.
    let o = obj(json!({"name": "read_x", "arguments": {}, "_meta": {}, "other": 1, "names": 2}));
    assert_eq!(
        check_keys(&o, "params", &["name", "arguments", "_meta"]),
        Ok(())
    );
}

#[test]
fn the_canonical_line_is_compact_sorted_and_reads_back_the_same() {
    let raw = br#"{ "params" : {"name":"read_\u0078", "arguments":{"b":1,"a":"\u00e9\n"}}, "id":1, "method":"tools/call" }"#;
    let v = parse_strict(raw).unwrap();
    let out = canonical_line(&v);
    assert_eq!(
        String::from_utf8(out.clone()).unwrap(),
        "{\"id\":1,\"method\":\"tools/call\",\"params\":{\"arguments\":{\"a\":\"é\\n\",\"b\":1},\"name\":\"read_x\"}}\n"
    );
    assert_eq!(parse_strict(&out[..out.len() - 1]).unwrap(), v);
}
