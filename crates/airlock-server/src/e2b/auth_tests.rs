#![allow(clippy::unwrap_used)]

use super::*;
use axum::http::HeaderValue;

fn state_with(id: &str, token: &str) -> E2bState {
    let key = "e2b_0123456789abcdef0123456789abcdef01234567";
    let s = E2bState::new(hash(key), super::super::DefaultNetwork::None);
    s.remember_token(id, token);
    s
}

#[test]
fn keys_have_e2b_format() {
    let k = new_key().unwrap();
    assert!(is_key_format(&k), "{k}");
    assert_eq!(k.len(), 44);
    for bad in [
        "",
        "e2b_",
        "e2b_0123",
        "al_0123456789abcdef0123456789abcdef01234567",
        "e2b_0123456789ABCDEF0123456789abcdef01234567",
        "e2b_0123456789abcdef0123456789abcdef0123456z",
    ] {
        assert!(!is_key_format(bad), "{bad}");
    }
}

#[test]
fn the_api_key_is_checked() {
    let s = state_with("a", "t");
    let mut h = HeaderMap::new();
    assert_eq!(
        require_api_key(&s, &h).unwrap_err().http_status().as_u16(),
        401
    );
    h.insert(
        "x-api-key",
        HeaderValue::from_static("e2b_0123456789abcdef0123456789abcdef01234560"),
    );
    assert!(matches!(
        require_api_key(&s, &h),
        Err(E2bError::Unauthenticated(_))
    ));
    h.insert(
        "x-api-key",
        HeaderValue::from_static("e2b_0123456789abcdef0123456789abcdef01234567"),
    );
    require_api_key(&s, &h).unwrap();
}

#[test]
fn tokens_act_on_their_own_sandbox_only() {
    let s = state_with("a", "token-a");
    s.remember_token("b", "token-b");
    check_token(&s, "a", "token-a").unwrap();
    assert!(matches!(
        check_token(&s, "a", "token-b"),
        Err(E2bError::Unauthenticated(_))
    ));
    assert!(matches!(
        check_token(&s, "gone", "token-a"),
        Err(E2bError::SandboxGone(_))
    ));
}

#[test]
fn users_are_user_and_root() {
    let mut h = HeaderMap::new();
    assert_eq!(user_from_headers(&h).unwrap(), E2bUser::User);
    h.insert("authorization", HeaderValue::from_static("Basic cm9vdDo=")); // root:
    assert_eq!(user_from_headers(&h).unwrap(), E2bUser::Root);
    h.insert("authorization", HeaderValue::from_static("Basic dXNlcjo=")); // user:
    assert_eq!(user_from_headers(&h).unwrap(), E2bUser::User);
    h.insert("authorization", HeaderValue::from_static("Basic YWRtaW46")); // admin:
    assert!(matches!(
        user_from_headers(&h),
        Err(E2bError::Unauthenticated(_))
    ));
    h.insert("authorization", HeaderValue::from_static("Basic !!!"));
    assert!(user_from_headers(&h).is_err());
    assert!(user_named(Some("nobody")).is_err());
    // Root runs as root only in a box that has one.
    use airlock_protocol::ExecUser;
    assert_eq!(E2bUser::Root.exec_user(true), ExecUser::Root);
    assert_eq!(E2bUser::Root.exec_user(false), ExecUser::User);
    assert_eq!(E2bUser::User.exec_user(true), ExecUser::User);
    assert_eq!(
        (E2bUser::Root.name(), E2bUser::Root.home()),
        ("root", "/root")
    );
}

#[test]
fn relative_paths_resolve_against_home() {
    let resolve_path = |p| resolve_path_as(E2bUser::User, p);
    assert_eq!(resolve_path("/etc/x").unwrap(), "/etc/x");
    assert_eq!(resolve_path("a/b").unwrap(), format!("{BOX_HOME}/a/b"));
    assert_eq!(resolve_path("~/a").unwrap(), format!("{BOX_HOME}/a"));
    assert_eq!(resolve_path("~").unwrap(), BOX_HOME);
    assert!(resolve_path("a\0b").is_err());
    // Root's relative paths resolve against root's home.
    assert_eq!(resolve_path_as(E2bUser::Root, "a/b").unwrap(), "/root/a/b");
    assert_eq!(resolve_path_as(E2bUser::Root, "~").unwrap(), "/root");
    assert_eq!(resolve_path_as(E2bUser::Root, "/etc/x").unwrap(), "/etc/x");
}

#[test]
fn signatures_match_the_sdks() {
    // Python: "v1_" + base64.b64encode(sha256(b"/tmp/a.txt:read::tok").digest()).rstrip(b"=")
    let sig = signature("/tmp/a.txt", "read", "", "tok", None);
    let expected = {
        let d = Sha256::digest(b"/tmp/a.txt:read::tok");
        format!(
            "v1_{}",
            base64::engine::general_purpose::STANDARD
                .encode(d)
                .trim_end_matches('=')
        )
    };
    assert_eq!(sig, expected);
    assert_ne!(signature("/tmp/a.txt", "read", "", "tok", Some(5)), sig);
}

#[test]
fn signed_urls_find_their_sandbox_and_nothing_else() {
    let s = state_with("a", "token-a");
    s.remember_token("b", "token-b");
    let now = 1_000;
    let sig = signature("/tmp/f", "read", "", "token-b", Some(now + 60));
    let req = SignedRequest {
        path: "/tmp/f",
        operation: "read",
        user: "",
        signature: &sig,
        expiration: Some(now + 60),
    };
    assert_eq!(check_signature(&s, &req, None, now).unwrap(), "b");
    assert_eq!(check_signature(&s, &req, Some("b"), now).unwrap(), "b");
    // Named for another sandbox: refused.
    assert!(check_signature(&s, &req, Some("a"), now).is_err());
    // Another path, operation, user or expiration: refused.
    for (path, op, user, exp) in [
        ("/tmp/g", "read", "", now + 60),
        ("/tmp/f", "write", "", now + 60),
        ("/tmp/f", "read", "user", now + 60),
        ("/tmp/f", "read", "", now + 61),
    ] {
        let r = SignedRequest {
            path,
            operation: op,
            user,
            signature: &sig,
            expiration: Some(exp),
        };
        assert!(
            check_signature(&s, &r, None, now).is_err(),
            "{path} {op} {user} {exp}"
        );
    }
    // Expired: refused.
    let old = signature("/tmp/f", "read", "", "token-a", Some(now - 1));
    let r = SignedRequest {
        path: "/tmp/f",
        operation: "read",
        user: "",
        signature: &old,
        expiration: Some(now - 1),
    };
    // envd's words first (users and scripts compare them), then what to do.
    assert!(check_signature(&s, &r, None, now)
        .unwrap_err()
        .to_string()
        .starts_with("signature is already expired ("));
    // Garbage: refused.
    let r = SignedRequest {
        path: "/tmp/f",
        operation: "read",
        user: "",
        signature: "v1_nope",
        expiration: None,
    };
    assert!(check_signature(&s, &r, None, now)
        .unwrap_err()
        .to_string()
        .starts_with("invalid signature ("));
}
