#![allow(clippy::unwrap_used)]

use super::*;
use crate::requests::parse;

fn store_with(tag: &str, names: &[&str]) -> (std::path::PathBuf, TemplateStore) {
    let dir = std::env::temp_dir().join(format!("airlock-catalog-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = TemplateStore::open(&dir).unwrap();
    for n in names {
        let s = store.stage().unwrap();
        std::fs::write(s.rootfs().join("marker"), n).unwrap();
        let mut defaults = airlock_runtime::backend::TemplateDefaults::default();
        defaults.env.insert("FROM".into(), n.to_string());
        store
            .commit(
                s,
                n,
                airlock_template::TemplateSource::Tree { path: "t".into() },
                defaults,
            )
            .unwrap();
    }
    (dir, store)
}

#[test]
fn stored_templates_and_aliases_are_picked_and_unknown_names_list_what_exists() {
    let (dir, store) = store_with("pick", &["code-interpreter", "tiny"]);
    let aliases = BTreeMap::from([("base".to_string(), "tiny".to_string())]);
    let catalog = TemplateCatalog::new(store.clone(), aliases).unwrap();
    let Some(Template::Image(t)) = catalog.lookup("base").unwrap() else {
        panic!("base is not the aliased template")
    };
    assert_eq!(t.name, "tiny");
    assert!(catalog.lookup("user").unwrap().is_none());
    // Through the REST create path: the policy names the template and takes its env.
    let mut req: crate::requests::CreateRequest =
        parse(br#"{"template":"code-interpreter"}"#, true).unwrap();
    let (name, cwd, root) = crate::template::pick(req.template.as_deref(), &catalog).unwrap();
    assert_eq!(name, "code-interpreter");
    let mut policy =
        crate::template::resolve_policy(&mut req, &cwd, airlock_policy::BackendKind::Native)
            .unwrap();
    crate::template::apply(&mut policy, &root).unwrap();
    assert_eq!(policy.template.as_ref().unwrap().name, "code-interpreter");
    assert!(policy
        .env
        .iter()
        .any(|(k, v)| k == "FROM" && v == "code-interpreter"));
    let err = crate::template::pick(Some("gpu"), &catalog)
        .unwrap_err()
        .to_string();
    assert!(err.contains("base, user, code-interpreter, tiny"), "{err}");
    let e2b = crate::e2b::control::template(Some("gpu"), &catalog).unwrap_err();
    assert_eq!(e2b.http_status().as_u16(), 404);
    assert!(
        e2b.to_string()
            .contains("code-interpreter-v1, code-interpreter, tiny"),
        "{e2b}"
    );
    // The served OpenAPI document lists exactly these names (and null).
    let doc: serde_json::Value = serde_json::from_str(&crate::routes::openapi::with_templates(
        &catalog.known(crate::template::BUILTIN),
    ))
    .unwrap();
    assert_eq!(
        doc.pointer("/components/schemas/CreateRequest/properties/template/enum")
            .unwrap(),
        &serde_json::json!(["base", "user", "code-interpreter", "tiny", null])
    );
    // An alias of a template the store lacks is refused at start.
    let bad = BTreeMap::from([("base".to_string(), "missing".to_string())]);
    assert!(TemplateCatalog::new(store, bad)
        .unwrap_err()
        .contains("missing"));
    let _ = std::fs::remove_dir_all(&dir);
}
