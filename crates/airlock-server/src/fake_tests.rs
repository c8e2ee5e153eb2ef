//! The routes over the fake backend: the server's own logic (API keys, the session manager, the
//! store, exec streaming, files, the E2B control plane, metrics through the seam) tested in
//! milliseconds, without namespaces or root. The end-to-end tests in `crates/airlock/tests`
//! run the same routes against real boxes.
#![allow(clippy::unwrap_used)]

use crate::routes::router;
use crate::secrets::hash;
use crate::server::{app_state, AppSettings};
use crate::state::AppState;
use airlock_runtime::backend::fake::FakeBackend;
use airlock_runtime::backend::Backends;
use airlock_store::Store;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use tower::ServiceExt;

const KEY: &str = "al_fake_test_key";
const E2B_KEY: &str = "e2b_0123456789abcdef0123456789abcdef01234567";
/// The domain the fake server serves sandbox ports under.
const FAKE_DOMAIN: &str = "fake.localhost";

/// A temporary directory, removed on drop.
struct TestDir(PathBuf);

impl TestDir {
    fn new(tag: &str) -> TestDir {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("airlock-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        TestDir(path)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct App {
    router: Router,
    state: AppState,
    _dir: TestDir,
}

fn app() -> App {
    let dir = TestDir::new("fake-routes");
    let store = Store::open(&dir.path().join("airlock.db")).unwrap();
    let backends = Backends::new(vec![Arc::new(
        FakeBackend::beside_test_binary().unwrap_or_else(|e| panic!("{e}")),
    )]);
    let settings = AppSettings {
        max_running: 4,
        default_backend: airlock_policy::BackendKind::Native,
        e2b_default_network: crate::E2bDefaultNetwork::None,
        e2b_domain: Some(FAKE_DOMAIN.into()),
        e2b_map_host: Vec::new(),
        e2b_secrets_dir: None,
        templates: crate::template_catalog::TemplateCatalog::empty(),
        snapshots_dir: dir.path().join("snapshots"),
        idle_pause_ms: None,
        pools: Vec::new(),
        pool_memory: crate::DEFAULT_POOL_MEMORY,
        template_builds: None,
    };
    let state = app_state(store, backends, &settings, hash(KEY), hash(E2B_KEY)).unwrap();
    App {
        router: router(state.clone()),
        state,
        _dir: dir,
    }
}

impl App {
    async fn call(&self, method: &str, path: &str, body: Option<&str>) -> (StatusCode, Vec<u8>) {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {KEY}"))
            .header("content-type", "application/json")
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
            .unwrap();
        self.send(req).await
    }

    async fn send(&self, req: Request<Body>) -> (StatusCode, Vec<u8>) {
        let resp = self.router.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 64 << 20)
            .await
            .unwrap();
        (status, bytes.to_vec())
    }

    async fn json(&self, method: &str, path: &str, body: Option<&str>) -> (StatusCode, Value) {
        let (status, bytes) = self.call(method, path, body).await;
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.state.manager.shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_exec_files_and_kill_through_the_routes() {
    let app = app();
    let (status, v) = app.json("POST", "/v1/sandboxes", Some("{}")).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    assert!(v.get("init_pid").is_none(), "{v}");
    // Exec streams NDJSON: start, output, end.
    let body = r#"{"cmd": ["sh", "-c", "echo hello; echo oops >&2; exit 3"]}"#;
    let (status, bytes) = app
        .call("POST", &format!("/v1/sandboxes/{id}/exec"), Some(body))
        .await;
    assert_eq!(status, StatusCode::OK);
    let lines: Vec<Value> = String::from_utf8(bytes)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.first().unwrap()["type"], "start", "{lines:?}");
    assert!(lines
        .iter()
        .any(|l| l["type"] == "stdout" && l["data"] == "hello\n"));
    assert!(lines
        .iter()
        .any(|l| l["type"] == "stderr" && l["data"] == "oops\n"));
    assert_eq!(lines.last().unwrap()["exit_code"], 3, "{lines:?}");
    // Files round-trip.
    let dir = TestDir::new("fake-files");
    let path = dir.path().join("f.txt");
    let url = format!("/v1/sandboxes/{id}/files?path={}", path.display());
    let req = Request::builder()
        .method("PUT")
        .uri(&url)
        .header("authorization", format!("Bearer {KEY}"))
        .body(Body::from("file body"))
        .unwrap();
    let (status, _) = app.send(req).await;
    assert!(status.is_success(), "{status}");
    let (status, bytes) = app.call("GET", &url, None).await;
    assert_eq!(
        (status, bytes.as_slice()),
        (StatusCode::OK, &b"file body"[..])
    );
    // Kill: the state is final and a second kill is a conflict.
    let (status, v) = app
        .json("DELETE", &format!("/v1/sandboxes/{id}"), None)
        .await;
    assert_eq!(
        (status, v["state"].as_str()),
        (StatusCode::OK, Some("killed")),
        "{v}"
    );
    let (status, _) = app
        .json("DELETE", &format!("/v1/sandboxes/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_backends_and_the_e2b_control_plane() {
    let app = app();
    let req = Request::builder()
        .method("GET")
        .uri("/v1/sandboxes")
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.send(req).await.0, StatusCode::UNAUTHORIZED);
    let (status, v) = app
        .json("POST", "/v1/sandboxes", Some(r#"{"backend": "wasm"}"#))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not built yet"));
    // E2B's control plane on the same router: create, metrics through the seam, kill.
    let e2b = |method: &str, path: &str, body: &str| {
        Request::builder()
            .method(method)
            .uri(path)
            .header("x-api-key", E2B_KEY)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    let (status, bytes) = app
        .send(e2b("POST", "/sandboxes", r#"{"templateID": "base"}"#))
        .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    let id = v["sandboxID"].as_str().unwrap().to_string();
    let (status, bytes) = app
        .send(e2b("GET", &format!("/sandboxes/{id}/metrics"), ""))
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    let m: Value = serde_json::from_slice(&bytes).unwrap();
    // The fake measures nothing, and the gateway says 0 rather than inventing a figure.
    assert_eq!(
        (m[0]["memUsed"].as_u64(), m[0]["cpuUsedPct"].as_f64()),
        (Some(0), Some(0.0))
    );
    // The gateway's per-sandbox state is keyed by id (not hung on the box's handle) and goes
    // when the sandbox ends.
    let (state, key) = (app.state.clone(), id.clone());
    tokio::task::spawn_blocking(move || {
        let (e2b, name) = (Arc::clone(&state.e2b), key.clone());
        crate::e2b::boxio::with_box_blocking(&state, &key, move |_| Ok(e2b.box_state(&name)))
    })
    .await
    .unwrap()
    .unwrap();
    assert!(app.state.e2b.has_box(&id));
    let (status, _) = app
        .send(e2b("DELETE", &format!("/sandboxes/{id}"), ""))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(
        !app.state.e2b.has_box(&id),
        "forgotten when the sandbox ended"
    );
}

/// An HTTP server on the host's loopback (the fake box's agent shares the host's network) that
/// answers one request with the Host it received; returns its port and what it got.
fn one_shot_server() -> (u16, std::thread::JoinHandle<String>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        let host = head
            .lines()
            .find_map(|l| {
                l.strip_prefix("host: ")
                    .or_else(|| l.strip_prefix("Host: "))
            })
            .unwrap_or_default()
            .to_string();
        let body = format!("seen host={host}");
        let mut out = stream;
        write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        head
    });
    (port, handle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_ports_are_relayed_by_host_with_e2b_traffic_rules() {
    let app = app();
    let create = |body: &str| {
        Request::builder()
            .method("POST")
            .uri("/sandboxes")
            .header("x-api-key", E2B_KEY)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    let to_port = |host: String, token: Option<&str>| {
        let mut b = Request::builder().uri("/hello?x=1").header("host", host);
        if let Some(t) = token {
            b = b.header("e2b-traffic-access-token", t);
        }
        b.body(Body::empty()).unwrap()
    };
    // Public (E2B's default), with the Host the box's server sees masked.
    let (status, bytes) = app
        .send(create(
            r#"{"templateID": "base", "network": {"maskRequestHost": "${PORT}-app.example.com"}}"#,
        ))
        .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["domain"], FAKE_DOMAIN);
    let public = v["sandboxID"].as_str().unwrap().to_string();
    let (port, server) = one_shot_server();
    let (status, body) = app
        .send(to_port(format!("{port}-{public}.{FAKE_DOMAIN}:7777"), None))
        .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        String::from_utf8_lossy(&body),
        format!("seen host={port}-app.example.com")
    );
    let head = server.join().unwrap();
    assert!(head.starts_with("GET /hello?x=1 HTTP/1.1"), "{head}");

    // Nothing listens: E2B's edge's 502, naming the port. The port stays bound (never
    // listening) for the whole check, so a parallel test's `bind(0)` cannot be handed it.
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let closed = held.local_addr().unwrap().as_socket().unwrap().port();
    let (status, body) = app
        .send(to_port(format!("{closed}-{public}.{FAKE_DOMAIN}"), None))
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        v["message"].as_str().unwrap().contains("port is not open"),
        "{v}"
    );
    assert_eq!(v["port"], closed);
    drop(held);

    // Private: the token is required, and never reaches the box.
    let (status, bytes) = app
        .send(create(
            r#"{"templateID": "base", "network": {"allowPublicTraffic": false}}"#,
        ))
        .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    let private = v["sandboxID"].as_str().unwrap().to_string();
    let token = v["trafficAccessToken"].as_str().unwrap().to_string();
    let (port, server) = one_shot_server();
    for bad in [None, Some("not-the-token")] {
        let (status, body) = app
            .send(to_port(format!("{port}-{private}.{FAKE_DOMAIN}"), bad))
            .await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "{}",
            String::from_utf8_lossy(&body)
        );
    }
    // The public box's token does not open the private one.
    let host = format!("{port}-{private}.{FAKE_DOMAIN}");
    let (status, body) = app.send(to_port(host.clone(), Some(&token))).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(String::from_utf8_lossy(&body), format!("seen host={host}"));
    let head = server.join().unwrap().to_ascii_lowercase();
    assert!(!head.contains("e2b-traffic-access-token"), "{head}");

    // An unknown sandbox: 502, as E2B's edge.
    let (status, _) = app
        .send(to_port(format!("{port}-nosuchbox.{FAKE_DOMAIN}"), None))
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_maps_hold_only_live_sandboxes() {
    // Each create once left its token in the server's map for good: a server making sandboxes
    // for months grew by every one it ever made. Ended sandboxes' tokens go at the next create.
    let app = app();
    for _ in 0..5 {
        let (status, v) = app.json("POST", "/v1/sandboxes", Some("{}")).await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        let id = v["id"].as_str().unwrap().to_string();
        let (status, _) = app
            .json("DELETE", &format!("/v1/sandboxes/{id}"), None)
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let (status, v) = app.json("POST", "/v1/sandboxes", Some("{}")).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let live = v["id"].as_str().unwrap().to_string();
    let tokens: Vec<String> = app.state.tokens.lock().unwrap().values().cloned().collect();
    assert_eq!(tokens, vec![live.clone()]);
    let e2b: Vec<String> = app
        .state
        .e2b
        .tokens_snapshot()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(e2b, vec![live]);
}
