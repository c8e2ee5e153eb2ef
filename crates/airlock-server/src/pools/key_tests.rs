#![allow(clippy::unwrap_used)]

use super::*;
use crate::pools::policy;
use crate::pools::spec::PoolSpec;
use crate::requests::{parse, CreateRequest};
use crate::template_catalog::TemplateCatalog;
use airlock_policy::BackendKind;

fn pool(text: &str) -> ResolvedPolicy {
    let spec = PoolSpec::parse(text).unwrap();
    policy::resolve(&spec, BackendKind::Native, &TemplateCatalog::empty()).unwrap()
}

/// What `POST /v1/sandboxes` with `body` resolves to.
fn native_create(body: &str) -> ResolvedPolicy {
    let mut req: CreateRequest = parse(body.as_bytes(), false).unwrap();
    let (_, cwd, root) =
        crate::template::pick(req.template.as_deref(), &TemplateCatalog::empty()).unwrap();
    let mut p = crate::template::resolve_policy(&mut req, &cwd, BackendKind::Native).unwrap();
    crate::template::apply(&mut p, &root).unwrap();
    p
}

fn same(a: &ResolvedPolicy, b: &ResolvedPolicy) -> bool {
    PoolKey::of(a).unwrap() == PoolKey::of(b).unwrap()
}

#[test]
fn env_and_the_allowlist_are_the_claims() {
    let pooled = pool("native:size=2,network=proxy");
    let claim = native_create(
        r#"{"env":{"A":"1"},"policy":{"network":{"mode":"proxy","allow_domain":["a.example"]}}}"#,
    );
    assert!(same(&pooled, &claim));
    assert!(same(&pool("native:size=1"), &native_create("{}")));
}

#[test]
fn what_a_box_is_made_of_must_match() {
    let pooled = pool("native:size=2");
    for body in [
        r#"{"policy":{"network":{"mode":"proxy"}}}"#,
        r#"{"policy":{"limits":{"memory":"256M"}}}"#,
        r#"{"policy":{"limits":{"pids":10}}}"#,
    ] {
        assert!(!same(&pooled, &native_create(body)), "{body} matched");
    }
    // The built-in templates differ only in where commands start: the same boxes.
    assert!(same(&pooled, &native_create(r#"{"template":"user"}"#)));
    let limited = pool("native:size=1,memory=256M,pids=10");
    assert!(same(
        &limited,
        &native_create(r#"{"policy":{"limits":{"memory":"256M","pids":10}}}"#)
    ));
}

#[test]
fn a_request_with_secrets_or_fixed_proxy_limits_never_matches() {
    let pooled = pool("native:size=1,network=proxy");
    for body in [
        r#"{"policy":{"network":{"mode":"proxy"}},"secrets":{"K":{"value":"v","hosts":["a.example"]}}}"#,
        r#"{"policy":{"network":{"mode":"proxy","max_connections":3}}}"#,
        r#"{"policy":{"network":{"mode":"proxy","byte_budget":"1M"}}}"#,
    ] {
        assert!(!same(&pooled, &native_create(body)), "{body} matched");
    }
}

#[test]
fn an_e2b_create_with_internet_matches_a_proxied_pool() {
    let spec = crate::e2b::control::plan_body(br#"{"envVars":{"X":"y"}}"#).unwrap();
    let claim: ResolvedPolicy = serde_json::from_value(spec.payload).unwrap();
    assert!(claim.egress.public_internet);
    assert!(same(&pool("native:size=1,network=proxy"), &claim));
}

#[test]
fn the_claims_env_replaces_the_pools() {
    let pooled_policy = pool("native:size=1,network=proxy");
    let mut pooled: BTreeMap<String, String> = pooled_policy.env.iter().cloned().collect();
    pooled.insert("HTTP_PROXY".into(), "http://10.0.0.1:1".into());
    pooled.insert("POOL_ONLY".into(), "x".into());
    let mut pool_with_var = pooled_policy.clone();
    pool_with_var.env.push(("POOL_ONLY".into(), "x".into()));
    let claim = native_create(
        r#"{"env":{"MINE":"1","HTTP_PROXY":"mine"},"policy":{"network":{"mode":"proxy"}}}"#,
    );
    let env = claim_env(&pooled, &pool_with_var, &claim);
    assert_eq!(env["MINE"], "1");
    assert_eq!(env["HTTP_PROXY"], "mine");
    assert!(!env.contains_key("POOL_ONLY"));
    let plain = native_create(r#"{"policy":{"network":{"mode":"proxy"}}}"#);
    assert_eq!(
        claim_env(&pooled, &pooled_policy, &plain)["HTTP_PROXY"],
        "http://10.0.0.1:1"
    );
}
