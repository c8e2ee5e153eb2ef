//! Secrets on `POST /v1/sandboxes` (issue 20), through a real `airlock serve`: the box's proxy
//! puts the value in requests to the bound loopback origin; the box, every API answer and the
//! server's store show only the placeholder; a bad secret is refused with a 400 that names it
//! and not its value.

mod common;
mod secrets_support;

use common::{airlock_bin, ServeProcess, TempDir};
use secrets_support::{contents, Origin, TestCa};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::Command;

fn call(base: &str, key: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    let req = ureq::request(method, &format!("{base}{path}"))
        .set("Authorization", &format!("Bearer {key}"));
    let res = match body {
        Some(b) => req
            .set("Content-Type", "application/json")
            .send_string(&b.to_string()),
        None => req.call(),
    };
    match res {
        Ok(r) => (r.status(), r.into_string().expect("body")),
        Err(ureq::Error::Status(code, r)) => (code, r.into_string().expect("body")),
        Err(e) => panic!("{method} {path}: {e}"),
    }
}

#[test]
fn a_rest_sandbox_gets_its_secret_through_the_proxy_and_no_answer_shows_the_value() {
    let ca = TestCa::new("secrets test CA");
    let origin = Origin::https(&ca, "api.test");
    let dir = TempDir::new("secrets-rest");
    let ca_file = dir.join("test-ca.pem");
    std::fs::write(&ca_file, &ca.pem).expect("CA");
    let data = TempDir::new("secrets-rest-data");
    let mut cmd = Command::new(airlock_bin());
    cmd.env("SSL_CERT_FILE", &ca_file);
    let mut serve = ServeProcess::start_with(cmd, data.path(), &[]);
    let key = serve.printed_key.clone().expect("api key");
    let base = serve.base.clone();
    let value = format!("sk-rest-{}", std::process::id());
    let p = origin.port;
    let network =
        json!({"mode": "proxy", "allow_ip": ["127.0.0.1"], "map_host": ["api.test=127.0.0.1"]});

    // A bad secret: 400, naming the secret, never echoing the value.
    let bad = json!({"policy": {"network": network},
        "secrets": {"API_KEY": {"value": value, "hosts": []}}});
    let (status, answer) = call(&base, &key, "POST", "/v1/sandboxes", Some(&bad));
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.contains("API_KEY") && !answer.contains(&value),
        "{answer}"
    );

    let body = json!({"policy": {"network": network},
        "secrets": {"API_KEY": {"value": value, "hosts": [format!("api.test:{p}")]}}});
    let (status, created) = call(&base, &key, "POST", "/v1/sandboxes", Some(&body));
    assert_eq!(status, 201, "{created}");
    let id = serde_json::from_str::<Value>(&created).expect("json")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let script = format!(
        r#"echo "placeholder=$API_KEY"; curl -sS --fail -H "Authorization: Bearer $API_KEY" https://api.test:{p}/rest"#
    );
    let exec = json!({"cmd": ["sh", "-c", script]});
    let (status, stream) = call(
        &base,
        &key,
        "POST",
        &format!("/v1/sandboxes/{id}/exec"),
        Some(&exec),
    );
    assert_eq!(status, 200, "{stream}");
    let lines: Vec<Value> = BufReader::new(stream.as_bytes())
        .lines()
        .map(|l| serde_json::from_str(&l.expect("line")).expect("json line"))
        .collect();
    let stdout: String = lines
        .iter()
        .filter(|l| l["type"] == "stdout")
        .filter_map(|l| l["data"].as_str())
        .collect();
    assert!(
        stdout.contains("placeholder=airlock-secret-API_KEY-"),
        "{lines:?}"
    );
    assert!(stdout.contains("ok HTTP/2.0 /rest"), "{lines:?}");
    let seen = origin.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {value}").as_str())
    );

    // Every answer about the sandbox, and every file of the store, without the value.
    let mut answers = vec![created, stream];
    for path in [
        format!("/v1/sandboxes/{id}"),
        "/v1/sandboxes".into(),
        format!("/v1/sandboxes/{id}/events"),
    ] {
        let (status, text) = call(&base, &key, "GET", &path, None);
        assert_eq!(status, 200, "{path}: {text}");
        answers.push(text);
    }
    let events = answers.last().cloned().unwrap_or_default();
    assert!(
        events.contains("\"secrets\":[\"API_KEY\"]"),
        "the use is in the events: {events}"
    );
    for a in &answers {
        assert!(!a.contains(&value), "an API answer holds the value: {a}");
    }
    let (status, _) = call(&base, &key, "DELETE", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(status, 200);
    serve.stop();
    for (path, bytes) in contents(data.path()) {
        assert!(
            !bytes.windows(value.len()).any(|w| w == value.as_bytes()),
            "the store file {} holds the value",
            path.display()
        );
    }
}
