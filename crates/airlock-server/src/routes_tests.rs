#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn the_openapi_document_lists_every_route() {
    let doc: serde_json::Value = serde_json::from_str(openapi::DOCUMENT).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for (method, path) in ROUTES {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} is missing from openapi.json"
        );
    }
    let listed: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|p| p.as_object().unwrap().len())
        .sum();
    assert_eq!(
        listed,
        ROUTES.len(),
        "openapi.json lists routes the server does not have"
    );
}

#[test]
fn list_filters_parse_states_and_metadata() {
    let f = sandboxes::list_filter("state=running&metadata.team=a%20b&metadata.x=1").unwrap();
    assert_eq!(f.states, vec![airlock_store::SandboxState::Running]);
    assert_eq!(f.metadata.get("team").map(String::as_str), Some("a b"));
    assert_eq!(f.metadata.len(), 2);
    assert_eq!(
        sandboxes::list_filter("state=sleeping").unwrap_err().code(),
        "invalid"
    );
}

/// The names of the fields a `Deserialize` struct reads, as serde's derive lists them.
fn fields_of<T: serde::de::DeserializeOwned>() -> Vec<&'static str> {
    use serde::de::value::Error;
    struct Probe(Option<&'static [&'static str]>);
    impl<'de> serde::Deserializer<'de> for &mut Probe {
        type Error = Error;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
            Err(serde::de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Error> {
            self.0 = Some(fields);
            Err(serde::de::Error::custom("probed"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut probe = Probe(None);
    let _ = T::deserialize(&mut probe);
    let mut fields = probe.0.unwrap().to_vec();
    fields.sort_unstable();
    fields
}

fn doc() -> serde_json::Value {
    serde_json::from_str(openapi::DOCUMENT).unwrap()
}

fn schema(name: &str) -> serde_json::Value {
    doc()["components"]["schemas"][name].clone()
}

/// Whether the server takes `body` for the request named `name`: parsed as that route parses
/// it, then checked as that route checks it.
fn takes(name: &str, body: &serde_json::Value) -> Result<(), String> {
    use crate::requests::*;
    let bytes = body.to_string();
    let b = bytes.as_bytes();
    let r: Result<(), crate::ApiError> = match name {
        "CreateRequest" => crate::untrusted::create_body(b),
        "TimeoutRequest" => parse::<TimeoutRequest>(b, false)
            .and_then(|r| r.check().map(|_| ()).map_err(Into::into)),
        "ExecRequest" => {
            parse::<ExecRequest>(b, false).and_then(|r| r.check().map(|_| ()).map_err(Into::into))
        }
        "CodeRequest" => parse::<CodeRequest>(b, false).and_then(|r| {
            r.check().map_err(crate::ApiError::from)?;
            crate::service::contexts::language_of(r.language.as_deref()).map(|_| ())
        }),
        "ContextRequest" => parse::<ContextRequest>(b, true).and_then(|r| {
            r.check().map_err(crate::ApiError::from)?;
            crate::service::contexts::language_of(r.language.as_deref()).map(|_| ())
        }),
        other => panic!("no request {other}"),
    };
    r.map_err(|e| e.to_string())
}

/// Each request body with every required field, as little as the server takes.
const MINIMAL: &[(&str, &str)] = &[
    ("CreateRequest", "{}"),
    ("TimeoutRequest", r#"{"timeout": 60}"#),
    ("ExecRequest", r#"{"cmd": ["true"]}"#),
    ("CodeRequest", r#"{"code": "1"}"#),
    ("ContextRequest", "{}"),
];

#[test]
fn each_request_schema_lists_exactly_the_fields_the_server_reads() {
    use crate::requests::*;
    let read = [
        ("CreateRequest", fields_of::<CreateRequest>()),
        ("TimeoutRequest", fields_of::<TimeoutRequest>()),
        ("ExecRequest", fields_of::<ExecRequest>()),
        ("CodeRequest", fields_of::<CodeRequest>()),
        ("ContextRequest", fields_of::<ContextRequest>()),
        ("RequestPolicy", fields_of::<RequestPolicy>()),
        (
            "NetworkPolicy",
            // `approver` is a policy-file key the server reads only to refuse it (an approver
            // program would run on the server's host), so the document leaves it out and
            // `approval` says so.
            fields_of::<airlock_policy::NetworkSection>()
                .into_iter()
                .filter(|f| *f != "approver")
                .collect(),
        ),
        ("LimitsPolicy", fields_of::<airlock_policy::LimitsSection>()),
    ];
    for (name, fields) in read {
        let s = schema(name);
        let mut listed: Vec<&str> = s["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        listed.sort_unstable();
        assert_eq!(
            listed, fields,
            "{name}: the document's fields differ from the server's"
        );
        assert_eq!(
            s["additionalProperties"], false,
            "{name}: the server refuses unknown fields"
        );
    }
    // Required in the document exactly when the server refuses the body without it.
    for (name, minimal) in MINIMAL {
        let s = schema(name);
        let minimal: serde_json::Value = serde_json::from_str(minimal).unwrap();
        assert_eq!(takes(name, &minimal), Ok(()), "{name}: {minimal}");
        let required: Vec<&str> = s["required"]
            .as_array()
            .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        let given: Vec<&str> = minimal
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            given, required,
            "{name}: the minimal body is the required fields"
        );
        for field in required {
            let mut without = minimal.clone();
            without.as_object_mut().unwrap().remove(field);
            assert!(takes(name, &without).is_err(), "{name} without {field}");
        }
    }
}

/// `body` with `field` set to `value`.
fn with(body: &serde_json::Value, field: &str, value: serde_json::Value) -> serde_json::Value {
    let mut b = body.clone();
    b[field] = value;
    b
}

#[test]
fn each_bound_in_the_request_schemas_is_the_servers() {
    use serde_json::json;
    let mut checked = 0;
    for (name, minimal) in MINIMAL {
        let minimal: serde_json::Value = serde_json::from_str(minimal).unwrap();
        let s = schema(name);
        for (field, p) in s["properties"].as_object().unwrap() {
            let t = |v: serde_json::Value| takes(name, &with(&minimal, field, v));
            let is_int = p["type"] == "integer" || p["type"][0] == "integer";
            if let Some(min) = p["minimum"].as_f64() {
                assert_eq!(t(json!(min)), Ok(()), "{name}.{field} = minimum {min}");
                let below = if is_int {
                    json!(min - 1.0)
                } else {
                    json!(min - 1e-9)
                };
                let e = t(below.clone()).expect_err(&format!("{name}.{field} = {below}"));
                assert!(e.contains(field.as_str()), "{e} should name {field}");
                checked += 1;
            }
            if let Some(min) = p["exclusiveMinimum"].as_f64() {
                let e = t(json!(min)).expect_err(&format!("{name}.{field} = {min}"));
                assert!(e.contains(field.as_str()), "{e} should name {field}");
                assert_eq!(
                    t(json!(min + 1e-3)),
                    Ok(()),
                    "{name}.{field} just above {min}"
                );
                checked += 1;
            }
            if let Some(max) = p["maximum"].as_f64() {
                assert_eq!(t(json!(max)), Ok(()), "{name}.{field} = maximum {max}");
                let above = if is_int {
                    json!(max + 1.0)
                } else {
                    json!(max + 1e-3)
                };
                let e = t(above.clone()).expect_err(&format!("{name}.{field} = {above}"));
                assert!(e.contains(field.as_str()), "{e} should name {field}");
                checked += 1;
            }
            if let Some(values) = p["enum"].as_array() {
                for v in values {
                    assert_eq!(t(v.clone()), Ok(()), "{name}.{field} = {v}");
                }
                let e = t(json!("bogus")).expect_err(&format!("{name}.{field} = bogus"));
                assert!(e.contains(field.as_str()), "{e} should name {field}");
                checked += 1;
            }
            if p["pattern"] == "^/[^\\u0000]*$" {
                assert_eq!(t(json!("/tmp")), Ok(()));
                for bad in ["", "tmp", "/a\u{0}b"] {
                    let e = t(json!(bad)).expect_err(&format!("{name}.{field} = {bad:?}"));
                    assert!(e.contains(field.as_str()), "{e} should name {field}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "only {checked} bounds found in the document");
    // The bounds of query parameters and nested parts, against the server's constants.
    let d = doc();
    let param = |path: &str, method: &str, name: &str| {
        d["paths"][path][method]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["schema"]
            .clone()
    };
    let depth = param("/v1/sandboxes/{id}/files/list", "get", "depth");
    assert_eq!(depth["minimum"], 1);
    assert_eq!(depth["maximum"], crate::checks::MAX_LIST_DEPTH);
    let after = param("/v1/sandboxes/{id}/events", "get", "after");
    assert_eq!(
        (after["minimum"].as_i64(), after["maximum"].as_i64()),
        (Some(0), Some(i64::MAX))
    );
    let meta = schema("Metadata");
    assert_eq!(meta["maxProperties"], crate::checks::MAX_METADATA_PAIRS);
    assert_eq!(
        meta["propertyNames"]["maxLength"],
        crate::checks::MAX_METADATA_KEY_CHARS
    );
    assert_eq!(
        meta["additionalProperties"]["maxLength"],
        crate::checks::MAX_METADATA_VALUE_CHARS
    );
    let timeout = &schema("CreateRequest")["properties"]["timeout"];
    assert_eq!(timeout["maximum"], crate::checks::MAX_SANDBOX_TIMEOUT_S);
    let timeout = &schema("ExecRequest")["properties"]["timeout"];
    assert_eq!(
        timeout["maximum"].as_f64(),
        Some(crate::checks::MAX_RUN_TIMEOUT_S)
    );
    // Limits and egress bounds, through the whole create path.
    let create = |policy: serde_json::Value| takes("CreateRequest", &json!({"policy": policy}));
    let limits = schema("LimitsPolicy");
    for (field, p) in limits["properties"].as_object().unwrap() {
        let bounds = p["oneOf"].get(0).unwrap_or(p);
        if let Some(min) = bounds["minimum"].as_f64() {
            let is_int = bounds["type"] == "integer" || bounds["type"][0] == "integer";
            if min > 0.0 {
                let below = if is_int {
                    json!(min as u64 - 1)
                } else {
                    json!(min / 2.0)
                };
                assert!(
                    create(json!({"limits": {field: below}})).is_err(),
                    "{field} below"
                );
            }
            let at = if is_int {
                json!(min as u64)
            } else {
                json!(min)
            };
            assert_eq!(
                create(json!({"limits": {field: at}})),
                Ok(()),
                "{field} at min"
            );
        }
    }
    assert!(create(json!({"network": {"allow_domain": ["a.test"]}})).is_err());
    assert_eq!(
        create(
            json!({"network": {"mode": "proxy", "allow_domain": ["*.a.test:8080"], "allow_ip": ["127.0.0.1:80"], "map_host": ["a.test=127.0.0.1"]}})
        ),
        Ok(())
    );
    let e = create(json!({"network": {"mode": "proxy", "allow_ip": ["10.0.0.1/8"]}})).unwrap_err();
    assert!(e.contains("policy.network"), "{e}");
}

#[test]
fn list_queries_take_exactly_the_documented_forms() {
    assert!(sandboxes::list_filter("state=running,paused&state=dead").is_ok());
    for bad in ["state=", "state=running,", "state=Running"] {
        let e = sandboxes::list_filter(bad).unwrap_err();
        assert!(e.to_string().contains("?state="), "{bad}: {e}");
    }
    let f = sandboxes::list_filter("metadata%5Bteam%5D=a&metadata.x=1").unwrap();
    assert_eq!(f.metadata.len(), 2);
    assert!(sandboxes::list_filter("metadata%5B%5D=a").is_err());
}
