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
    assert_eq!(
        f.states,
        vec![airlock_runtime::store::SandboxState::Running]
    );
    assert_eq!(f.metadata.get("team").map(String::as_str), Some("a b"));
    assert_eq!(f.metadata.len(), 2);
    assert_eq!(
        sandboxes::list_filter("state=sleeping").unwrap_err().code(),
        "invalid"
    );
}
