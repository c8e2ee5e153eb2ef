//! The E2B-compatible gateway at the protocol level: a real `airlock serve`, real boxes, plain
//! HTTP as E2B's SDKs send it (control plane with `X-API-KEY`; envd's Connect JSON and
//! `/files` with `E2b-Sandbox-Id` / `X-Access-Token`; the interpreter's NDJSON `/execute`).
//! The SDK conformance suite drives the same server with E2B's own SDKs.
#![allow(clippy::unwrap_used)]

mod common;

use base64::Engine;
use common::{ServeProcess, TempDir};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::time::Duration;

struct Gw {
    _serve: ServeProcess,
    _data: TempDir,
    base: String,
    key: String,
    native_key: String,
}

/// A sandbox as the control plane handed it out.
struct Sb {
    id: String,
    token: String,
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&self.body).into_owned()))
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn send(req: ureq::Request, body: Option<&[u8]>) -> Reply {
    let res = match body {
        Some(b) => req.send_bytes(b),
        None => req.call(),
    };
    let resp = match res {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("request failed: {e}"),
    };
    let status = resp.status();
    let headers = resp
        .headers_names()
        .into_iter()
        .map(|n| (n.clone(), resp.header(&n).unwrap_or("").to_string()))
        .collect();
    let mut body = Vec::new();
    resp.into_reader().read_to_end(&mut body).unwrap();
    Reply {
        status,
        headers,
        body,
    }
}

impl Gw {
    fn start() -> Gw {
        let data = TempDir::new("e2b");
        let serve = ServeProcess::start(data.path(), &[]);
        let key = serve
            .printed_e2b_key
            .clone()
            .expect("the first start prints the E2B key");
        let native_key = serve
            .printed_key
            .clone()
            .expect("the first start prints the API key");
        assert!(key.starts_with("e2b_") && key.len() == 44, "{key}");
        Gw {
            base: serve.base.clone(),
            _serve: serve,
            _data: data,
            key,
            native_key,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A control-plane call with the E2B key.
    fn api(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        self.api_with(Some(&self.key), method, path, body)
    }

    fn api_with(&self, key: Option<&str>, method: &str, path: &str, body: Option<Value>) -> Reply {
        let mut req = ureq::request(method, &self.url(path));
        if let Some(k) = key {
            req = req.set("X-API-KEY", k);
        }
        match body {
            Some(b) => send(
                req.set("Content-Type", "application/json"),
                Some(b.to_string().as_bytes()),
            ),
            None => send(req, None),
        }
    }

    fn create(&self, body: Value) -> Sb {
        let r = self.api("POST", "/v2/sandboxes", Some(body));
        assert_eq!(r.status, 201, "{}", r.json());
        let v = r.json();
        Sb {
            id: v["sandboxID"].as_str().unwrap().to_string(),
            token: v["envdAccessToken"].as_str().unwrap().to_string(),
        }
    }

    /// A request to sandbox `sb`'s `port` with its token.
    fn sandbox_req(
        &self,
        sb: &Sb,
        token: Option<&str>,
        port: u16,
        method: &str,
        path: &str,
    ) -> ureq::Request {
        let mut req = ureq::request(method, &self.url(path))
            .set("E2b-Sandbox-Id", &sb.id)
            .set("E2b-Sandbox-Port", &port.to_string());
        if let Some(t) = token {
            req = req.set("X-Access-Token", t);
        }
        req
    }

    /// A unary Connect call to envd.
    fn rpc_as(&self, sb: &Sb, token: &str, method: &str, msg: Value) -> Reply {
        let req = self
            .sandbox_req(sb, Some(token), 49983, "POST", &format!("/{method}"))
            .set("Content-Type", "application/json")
            .set("Connect-Protocol-Version", "1");
        send(req, Some(msg.to_string().as_bytes()))
    }

    fn rpc(&self, sb: &Sb, method: &str, msg: Value) -> Reply {
        self.rpc_as(sb, &sb.token.clone(), method, msg)
    }

    fn upload(&self, sb: &Sb, path: &str, data: &[u8]) -> Reply {
        let req = self
            .sandbox_req(
                sb,
                Some(&sb.token),
                49983,
                "POST",
                &format!("/files?path={path}"),
            )
            .set("Content-Type", "application/octet-stream");
        send(req, Some(data))
    }

    fn download(&self, sb: &Sb, path: &str) -> Reply {
        send(
            self.sandbox_req(
                sb,
                Some(&sb.token),
                49983,
                "GET",
                &format!("/files?path={path}"),
            ),
            None,
        )
    }

    /// Runs code through `/execute`; returns its NDJSON lines.
    fn execute(&self, sb: &Sb, body: Value) -> (u16, Vec<Value>) {
        let req = self
            .sandbox_req(sb, Some(&sb.token), 49999, "POST", "/execute")
            .set("Content-Type", "application/json");
        let r = send(req, Some(body.to_string().as_bytes()));
        let lines = String::from_utf8_lossy(&r.body)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or(Value::String(l.into())))
            .collect();
        (r.status, lines)
    }
}

fn signature(path: &str, op: &str, user: &str, token: &str, exp: Option<i64>) -> String {
    let raw = match exp {
        Some(e) => format!("{path}:{op}:{user}:{token}:{e}"),
        None => format!("{path}:{op}:{user}:{token}"),
    };
    format!(
        "v1_{}",
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(Sha256::digest(raw.as_bytes()))
    )
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn control_plane_lifecycle_list_and_errors() {
    let gw = Gw::start();
    // Credentials: none, the wrong format, a wrong key, the native key: all 401, nothing made.
    for key in [
        None,
        Some("e2b_123"),
        Some("e2b_0000000000000000000000000000000000000000"),
        Some(gw.native_key.as_str()),
    ] {
        let r = gw.api_with(key, "POST", "/v2/sandboxes", Some(json!({})));
        assert_eq!(r.status, 401, "{key:?}: {}", r.json());
        assert_eq!(r.json()["code"], 401);
        assert!(r.json()["message"].as_str().unwrap().contains("key"));
    }
    assert_eq!(gw.api("GET", "/v2/sandboxes", None).json(), json!([]));

    // Create (v2 and v1) with every required field.
    let r = gw.api("POST", "/v2/sandboxes", Some(json!({"templateID": "base", "timeout": 120, "metadata": {"team": "a"}, "envVars": {"FOO": "bar"}})));
    assert_eq!(r.status, 201, "{}", r.json());
    let v = r.json();
    for k in [
        "templateID",
        "sandboxID",
        "clientID",
        "envdVersion",
        "envdAccessToken",
    ] {
        assert!(v[k].is_string(), "{k} in {v}");
    }
    let a = Sb {
        id: v["sandboxID"].as_str().unwrap().into(),
        token: v["envdAccessToken"].as_str().unwrap().into(),
    };
    assert!(
        a.id.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
        "{}",
        a.id
    );
    let r = gw.api("POST", "/sandboxes", Some(json!({"templateID": "code-interpreter-v1", "timeout": 300, "secure": true, "metadata": {"team": "b"}})));
    assert_eq!(r.status, 201, "{}", r.json());
    let b_id = r.json()["sandboxID"].as_str().unwrap().to_string();

    // The box got the env vars.
    let r = send(
        gw.sandbox_req(&a, Some(&a.token), 49983, "GET", "/envs"),
        None,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["FOO"], "bar");

    // Get: the detail's required fields.
    let d = gw.api("GET", &format!("/sandboxes/{}", a.id), None).json();
    for k in [
        "templateID",
        "sandboxID",
        "clientID",
        "startedAt",
        "endAt",
        "envdVersion",
        "cpuCount",
        "memoryMB",
        "diskSizeMB",
        "state",
    ] {
        assert!(!d[k].is_null(), "{k} in {d}");
    }
    assert_eq!(d["state"], "running");
    assert_eq!(d["metadata"]["team"], "a");

    // Lists: metadata filter, state filter, pages with X-Next-Token, the v1 list.
    let only_a = gw
        .api(
            "GET",
            &format!("/v2/sandboxes?metadata={}", enc("team=a")),
            None,
        )
        .json();
    assert_eq!(only_a.as_array().unwrap().len(), 1);
    assert_eq!(only_a[0]["sandboxID"], a.id.as_str());
    let page = gw.api("GET", "/v2/sandboxes?limit=1&state=running", None);
    assert_eq!(page.json().as_array().unwrap().len(), 1);
    let next = page
        .header("x-next-token")
        .expect("a next-page token")
        .to_string();
    let page2 = gw.api(
        "GET",
        &format!("/v2/sandboxes?limit=1&nextToken={next}"),
        None,
    );
    assert_eq!(page2.json().as_array().unwrap().len(), 1);
    assert_ne!(page.json()[0]["sandboxID"], page2.json()[0]["sandboxID"]);
    assert!(page2.header("x-next-token").is_none());
    assert!(gw
        .api("GET", "/v2/sandboxes?state=paused", None)
        .json()
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(
        gw.api("GET", "/sandboxes", None)
            .json()
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // The native API sees E2B sandboxes, and E2B sees native ones.
    let native = send(
        ureq::get(&gw.url(&format!("/v1/sandboxes/{}", a.id)))
            .set("Authorization", &format!("Bearer {}", gw.native_key)),
        None,
    );
    assert_eq!(native.status, 200, "{}", native.json());
    assert_eq!(native.json()["template"], "base");
    let made = send(
        ureq::post(&gw.url("/v1/sandboxes"))
            .set("Authorization", &format!("Bearer {}", gw.native_key)),
        Some(b"{}"),
    );
    assert_eq!(made.status, 201, "{}", made.json());
    let n = Sb {
        id: made.json()["id"].as_str().unwrap().into(),
        token: made.json()["token"].as_str().unwrap().into(),
    };
    assert_eq!(
        gw.api("GET", &format!("/sandboxes/{}", n.id), None).status,
        200
    );
    assert_eq!(gw.upload(&n, "/tmp/n.txt", b"native").status, 200);
    assert_eq!(gw.download(&n, "/tmp/n.txt").body, b"native");

    // Timeout, connect (extends only), pause/resume (501), metrics.
    assert_eq!(
        gw.api(
            "POST",
            &format!("/sandboxes/{}/timeout", a.id),
            Some(json!({"timeout": 600}))
        )
        .status,
        204
    );
    let end1 = gw.api("GET", &format!("/sandboxes/{}", a.id), None).json()["endAt"].clone();
    let c = gw.api(
        "POST",
        &format!("/sandboxes/{}/connect", a.id),
        Some(json!({"timeout": 10})),
    );
    assert_eq!(c.status, 200);
    assert_eq!(c.json()["envdAccessToken"], a.token.as_str());
    assert_eq!(
        gw.api("GET", &format!("/sandboxes/{}", a.id), None).json()["endAt"],
        end1,
        "connect never shortens a sandbox's life"
    );
    assert_eq!(
        gw.api(
            "POST",
            &format!("/v2/sandboxes/{}/connect", a.id),
            Some(json!({}))
        )
        .status,
        200
    );
    // Pause (204), a second pause (409: already paused), the deprecated resume (201), and a
    // resume of a running box (409): E2B's answers, not the 501 these were before.
    let before = gw
        .api("GET", &format!("/sandboxes/{}/metrics", a.id), None)
        .json();
    assert_eq!(before.as_array().map(Vec::len), Some(1), "{before}");
    let p = gw.api(
        "POST",
        &format!("/sandboxes/{}/pause", a.id),
        Some(json!({})),
    );
    assert_eq!(p.status, 204, "pause");
    // A paused sandbox's metrics are its history so far (no 502 as before), and no new
    // sample is taken while it is paused (a running one gets one per call, each with its own
    // timestamp): two calls 50 ms apart give the same. Asking does not resume it.
    let paused = gw.api("GET", &format!("/sandboxes/{}/metrics", a.id), None);
    assert_eq!(paused.status, 200, "metrics of a paused sandbox");
    let paused = paused.json();
    assert!(paused[0]["memTotal"].as_u64().unwrap() > 0, "{paused}");
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        gw.api("GET", &format!("/sandboxes/{}/metrics", a.id), None)
            .json(),
        paused
    );
    assert_eq!(
        gw.api("GET", &format!("/sandboxes/{}", a.id), None).json()["state"],
        "paused"
    );
    for (op, status) in [("resume", 201), ("resume", 409)] {
        let p = gw.api(
            "POST",
            &format!("/sandboxes/{}/{op}", a.id),
            Some(json!({})),
        );
        assert_eq!(p.status, status, "{op}");
    }
    let m = gw
        .api("GET", &format!("/sandboxes/{}/metrics", a.id), None)
        .json();
    assert!(m[0]["memTotal"].as_u64().unwrap() > 0, "{m}");
    assert!(m[0]["cpuCount"].as_u64().unwrap() >= 1);

    // Errors: unknown template, unknown sandbox, bad body.
    let t = gw.api(
        "POST",
        "/v2/sandboxes",
        Some(json!({"templateID": "gpu-cluster"})),
    );
    assert_eq!(t.status, 404);
    assert!(t.json()["message"]
        .as_str()
        .unwrap()
        .contains("gpu-cluster"));
    for (method, path) in [
        ("GET", "/sandboxes/nosuch"),
        ("DELETE", "/sandboxes/nosuch"),
        ("POST", "/sandboxes/nosuch/connect"),
        ("POST", "/sandboxes/nosuch/pause"),
    ] {
        let r = gw.api(method, path, Some(json!({"timeout": 5})));
        assert_eq!(r.status, 404, "{method} {path}");
        assert_eq!(r.json()["code"], 404);
    }
    assert_eq!(
        gw.api("POST", "/v2/sandboxes", Some(json!({"timeout": "soon"})))
            .status,
        400
    );

    // Kill: 204, then 404; envd's health says the sandbox is gone (502).
    assert_eq!(
        send(gw.sandbox_req(&a, None, 49983, "GET", "/health"), None).status,
        204
    );
    assert_eq!(
        gw.api("DELETE", &format!("/sandboxes/{}", a.id), None)
            .status,
        204
    );
    assert_eq!(
        gw.api("DELETE", &format!("/sandboxes/{}", a.id), None)
            .status,
        404
    );
    assert_eq!(
        gw.api("GET", &format!("/sandboxes/{}", a.id), None).status,
        404
    );
    assert_eq!(
        send(gw.sandbox_req(&a, None, 49983, "GET", "/health"), None).status,
        502
    );
    assert_eq!(
        gw.rpc(&a, "filesystem.Filesystem/Stat", json!({"path": "/tmp"}))
            .status,
        502
    );
    assert_eq!(
        gw.api("DELETE", &format!("/sandboxes/{b_id}"), None).status,
        204
    );
    // An unknown port is a clear error.
    let r = send(gw.sandbox_req(&n, Some(&n.token), 8080, "GET", "/"), None);
    assert_eq!(r.status, 502);
    assert!(r.json()["message"].as_str().unwrap().contains("49983"));
}

#[test]
fn expiry_at_the_timeout_ends_the_sandbox() {
    let gw = Gw::start();
    let sb = gw.create(json!({"timeout": 1}));
    assert_eq!(
        send(gw.sandbox_req(&sb, None, 49983, "GET", "/health"), None).status,
        204
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while gw.api("GET", &format!("/sandboxes/{}", sb.id), None).status != 404 {
        assert!(
            std::time::Instant::now() < deadline,
            "the sandbox outlived its timeout"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        send(gw.sandbox_req(&sb, None, 49983, "GET", "/health"), None).status,
        502
    );
}

#[test]
fn envd_filesystem_and_files() {
    let gw = Gw::start();
    let sb = gw.create(json!({}));
    // Stat: not_found, then the entry as proto3 JSON.
    let r = gw.rpc(
        &sb,
        "filesystem.Filesystem/Stat",
        json!({"path": "/tmp/none"}),
    );
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["code"], "not_found");
    let r = gw.rpc(&sb, "filesystem.Filesystem/Stat", json!({"path": "/tmp"}));
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["entry"]["type"], "FILE_TYPE_DIRECTORY");
    // MakeDir (relative: under the home), twice: already_exists.
    let r = gw.rpc(
        &sb,
        "filesystem.Filesystem/MakeDir",
        json!({"path": "proj/src"}),
    );
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["entry"]["path"], "/home/user/proj/src");
    let r = gw.rpc(
        &sb,
        "filesystem.Filesystem/MakeDir",
        json!({"path": "proj/src"}),
    );
    assert_eq!(
        (r.status, r.json()["code"].clone()),
        (409, json!("already_exists"))
    );
    // Files: octet-stream and multipart (several files, the filename is the path).
    let r = gw.upload(&sb, "/home/user/proj/a.txt", b"alpha");
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(
        r.json(),
        json!([{"path": "/home/user/proj/a.txt", "name": "a.txt", "type": "file"}])
    );
    let boundary = "XbOuNdArY";
    let mut mp = Vec::new();
    for (path, data) in [
        ("/home/user/proj/src/b.py", "print(1)\n"),
        ("proj/c.bin", "\u{0}\u{1}"),
    ] {
        mp.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path}\"\r\nContent-Type: application/octet-stream\r\n\r\n{data}\r\n").as_bytes());
    }
    mp.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let req = gw
        .sandbox_req(&sb, Some(&sb.token), 49983, "POST", "/files")
        .set(
            "Content-Type",
            &format!("multipart/form-data; boundary={boundary}"),
        );
    let r = send(req, Some(&mp));
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json().as_array().unwrap().len(), 2);
    assert_eq!(r.json()[1]["path"], "/home/user/proj/c.bin");
    assert_eq!(
        gw.download(&sb, "/home/user/proj/src/b.py").body,
        b"print(1)\n"
    );
    assert_eq!(gw.download(&sb, "proj/c.bin").body, b"\x00\x01");
    // Download errors: a directory (400), a missing file (404), an unknown user (401).
    assert_eq!(gw.download(&sb, "/home/user/proj").status, 400);
    let r = gw.download(&sb, "/home/user/none");
    assert_eq!((r.status, r.json()["code"].clone()), (404, json!(404)));
    assert_eq!(
        gw.download(&sb, "/home/user/proj/a.txt&username=admin")
            .status,
        401
    );
    assert_eq!(
        gw.download(&sb, "/home/user/proj/a.txt&username=root").body,
        b"alpha"
    );
    // ListDir with depth, Move, Remove.
    let r = gw.rpc(
        &sb,
        "filesystem.Filesystem/ListDir",
        json!({"path": "/home/user/proj", "depth": 2}),
    );
    let names: Vec<String> = r.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    for p in [
        "/home/user/proj/a.txt",
        "/home/user/proj/src",
        "/home/user/proj/src/b.py",
    ] {
        assert!(names.contains(&p.to_string()), "{p} not in {names:?}");
    }
    let one = gw
        .rpc(
            &sb,
            "filesystem.Filesystem/ListDir",
            json!({"path": "/home/user/proj"}),
        )
        .json();
    assert!(one["entries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["path"] != "/home/user/proj/src/b.py"));
    let file = one["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "a.txt")
        .unwrap()
        .clone();
    assert_eq!(file["size"], "5");
    assert_eq!(file["type"], "FILE_TYPE_FILE");
    assert!(file["permissions"].as_str().unwrap().starts_with("-rw"));
    let r = gw.rpc(
        &sb,
        "filesystem.Filesystem/Move",
        json!({"source": "/home/user/proj/a.txt", "destination": "/home/user/proj/z.txt"}),
    );
    assert_eq!(r.json()["entry"]["name"], "z.txt");
    assert_eq!(
        gw.rpc(
            &sb,
            "filesystem.Filesystem/Remove",
            json!({"path": "/home/user/proj"})
        )
        .status,
        200
    );
    assert_eq!(
        gw.rpc(
            &sb,
            "filesystem.Filesystem/Stat",
            json!({"path": "/home/user/proj"})
        )
        .status,
        404
    );
    // Users: root maps to the box user; others are refused.
    let as_user = |name: &str| {
        let auth = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{name}:"))
        );
        let req = gw
            .sandbox_req(
                &sb,
                Some(&sb.token),
                49983,
                "POST",
                "/filesystem.Filesystem/Stat",
            )
            .set("Content-Type", "application/json")
            .set("Authorization", &auth);
        send(req, Some(br#"{"path":"/tmp"}"#)).status
    };
    assert_eq!(as_user("root"), 200);
    assert_eq!(as_user("user"), 200);
    assert_eq!(as_user("admin"), 401);
    // Bad input: a clear Connect error, never a crash.
    let req = gw
        .sandbox_req(
            &sb,
            Some(&sb.token),
            49983,
            "POST",
            "/filesystem.Filesystem/Stat",
        )
        .set("Content-Type", "application/json");
    let r = send(req, Some(b"{not json"));
    assert_eq!(
        (r.status, r.json()["code"].clone()),
        (400, json!("invalid_argument"))
    );
    assert_eq!(
        gw.rpc(&sb, "filesystem.Filesystem/Chmod", json!({})).json()["code"],
        "unimplemented"
    );
    // A streaming method that does not exist answers a Connect error.
    assert_eq!(
        gw.rpc(&sb, "process.Process/Frobnicate", json!({})).json()["code"],
        "unimplemented"
    );
    // gzip upload.
    let gz = gzip_stored(b"zipped");
    let req = gw
        .sandbox_req(
            &sb,
            Some(&sb.token),
            49983,
            "POST",
            "/files?path=/tmp/g.txt",
        )
        .set("Content-Type", "application/octet-stream")
        .set("Content-Encoding", "gzip");
    assert_eq!(send(req, Some(&gz)).status, 200);
    assert_eq!(gw.download(&sb, "/tmp/g.txt").body, b"zipped");
}

/// A gzip member with stored (uncompressed) deflate blocks, made by hand so the test needs no
/// compression library.
fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.push(1); // final stored block
    let len = data.len() as u16;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn tokens_and_signed_urls_cannot_cross_sandboxes_or_paths() {
    let gw = Gw::start();
    let a = gw.create(json!({}));
    let b = gw.create(json!({}));
    assert_eq!(gw.upload(&b, "/tmp/secret.txt", b"b's secret").status, 200);
    assert_eq!(gw.upload(&a, "/tmp/public.txt", b"a's file").status, 200);
    // A's token on B: refused everywhere.
    let r = gw.rpc_as(
        &b,
        &a.token,
        "filesystem.Filesystem/Stat",
        json!({"path": "/tmp/secret.txt"}),
    );
    assert_eq!(
        (r.status, r.json()["code"].clone()),
        (401, json!("unauthenticated"))
    );
    assert_eq!(
        send(
            gw.sandbox_req(
                &b,
                Some(&a.token),
                49983,
                "GET",
                "/files?path=/tmp/secret.txt"
            ),
            None
        )
        .status,
        401
    );
    assert_eq!(
        send(
            gw.sandbox_req(&b, None, 49983, "GET", "/files?path=/tmp/secret.txt"),
            None
        )
        .status,
        401
    );
    let req = gw
        .sandbox_req(&b, Some(&a.token), 49999, "POST", "/execute")
        .set("Content-Type", "application/json");
    assert_eq!(send(req, Some(br#"{"code":"1"}"#)).status, 401);
    let req = gw
        .sandbox_req(&b, None, 49999, "POST", "/contexts")
        .set("E2B-Traffic-Access-Token", &a.token);
    assert_eq!(send(req, Some(b"{}")).status, 401);
    assert_eq!(
        send(gw.sandbox_req(&b, None, 49999, "GET", "/contexts"), None).status,
        401
    );
    // Signed URLs (no sandbox id, no token header): the right one works...
    let exp = now_s() + 60;
    let sig = signature("/tmp/public.txt", "read", "", &a.token, Some(exp));
    let url = format!(
        "/files?path={}&signature={}&signature_expiration={exp}",
        enc("/tmp/public.txt"),
        enc(&sig)
    );
    let r = send(ureq::get(&gw.url(&url)), None);
    assert_eq!((r.status, r.body.as_slice()), (200, b"a's file".as_slice()));
    // ...but not for another path, another sandbox's file, or another operation.
    let other = format!(
        "/files?path={}&signature={}&signature_expiration={exp}",
        enc("/tmp/secret.txt"),
        enc(&sig)
    );
    assert_eq!(send(ureq::get(&gw.url(&other)), None).status, 401);
    let r = send(ureq::get(&gw.url(&url)).set("E2b-Sandbox-Id", &b.id), None);
    assert_eq!(r.status, 401, "a's signature names b");
    assert_eq!(
        send(
            ureq::post(&gw.url(&url)).set("Content-Type", "application/octet-stream"),
            Some(b"overwrite")
        )
        .status,
        401
    );
    // Expired: refused.
    let old = now_s() - 5;
    let sig = signature("/tmp/public.txt", "read", "", &a.token, Some(old));
    let url = format!(
        "/files?path={}&signature={}&signature_expiration={old}",
        enc("/tmp/public.txt"),
        enc(&sig)
    );
    let r = send(ureq::get(&gw.url(&url)), None);
    assert_eq!(r.status, 401);
    assert!(r.json()["message"].as_str().unwrap().contains("expired"));
    // A write URL writes, into the box only; the host is untouched.
    let marker = format!("/tmp/airlock-e2b-attack-{}", std::process::id());
    let sig = signature(&marker, "write", "", &a.token, None);
    let url = format!("/files?path={}&signature={}", enc(&marker), enc(&sig));
    assert_eq!(
        send(
            ureq::post(&gw.url(&url)).set("Content-Type", "application/octet-stream"),
            Some(b"x")
        )
        .status,
        200
    );
    assert_eq!(gw.download(&a, &marker).body, b"x");
    assert!(
        !std::path::Path::new(&marker).exists(),
        "a box's write reached the host"
    );
    // Reading the host's secrets from inside reads the box's view, not the host's.
    assert_ne!(gw.download(&a, "/etc/shadow").status, 200);
    // B's file is intact.
    assert_eq!(gw.download(&b, "/tmp/secret.txt").body, b"b's secret");
}

#[test]
fn interpreter_execute_streams_and_contexts() {
    let gw = Gw::start();
    let sb = gw.create(json!({"templateID": "code-interpreter-v1"}));
    let health = send(gw.sandbox_req(&sb, None, 49999, "GET", "/health"), None);
    assert_eq!((health.status, health.json()), (200, json!("OK")));
    // State across calls, stdout with a timestamp, the main result, the execution count.
    let (status, lines) = gw.execute(&sb, json!({"code": "x = 41\nprint('hi')", "context_id": null, "language": null, "env_vars": null}));
    assert_eq!(status, 200, "{lines:?}");
    let out = lines.iter().find(|l| l["type"] == "stdout").unwrap();
    assert_eq!(out["text"], "hi\n");
    assert!(out["timestamp"].as_i64().unwrap() > 1_000_000_000_000_000_000);
    assert_eq!(lines.last().unwrap()["type"], "end_of_execution");
    let (_, lines) = gw.execute(&sb, json!({"code": "x + 1"}));
    let result = lines.iter().find(|l| l["type"] == "result").unwrap();
    assert_eq!(
        (result["text"].clone(), result["is_main_result"].clone()),
        (json!("42"), json!(true))
    );
    assert_eq!(
        lines
            .iter()
            .find(|l| l["type"] == "number_of_executions")
            .unwrap()["execution_count"],
        2
    );
    // An error with its traceback; env vars.
    let (_, lines) = gw.execute(&sb, json!({"code": "1/0"}));
    let err = lines.iter().find(|l| l["type"] == "error").unwrap();
    assert_eq!(err["name"], "ZeroDivisionError");
    assert!(err["traceback"]
        .as_str()
        .unwrap()
        .contains("ZeroDivisionError"));
    let (_, lines) = gw.execute(
        &sb,
        json!({"code": "import os; os.environ['ZZ']", "env_vars": {"ZZ": "zz"}}),
    );
    assert_eq!(
        lines.iter().find(|l| l["type"] == "result").unwrap()["text"],
        "zz"
    );
    // The default Python context is the native API's too.
    let native = send(
        ureq::post(&gw.url(&format!("/v1/sandboxes/{}/code", sb.id)))
            .set("Authorization", &format!("Bearer {}", gw.native_key)),
        Some(br#"{"code":"x"}"#),
    );
    assert!(
        String::from_utf8_lossy(&native.body).contains("41"),
        "{}",
        String::from_utf8_lossy(&native.body)
    );
    // Languages.
    let (_, lines) = gw.execute(
        &sb,
        json!({"code": "[1,2].map(v => v * 2)", "language": "js"}),
    );
    assert_eq!(
        lines.iter().find(|l| l["type"] == "result").unwrap()["text"],
        "[ 2, 4 ]"
    );
    let (_, lines) = gw.execute(&sb, json!({"code": "echo $((6*7))", "language": "bash"}));
    assert_eq!(
        lines.iter().find(|l| l["type"] == "stdout").unwrap()["text"],
        "42\n"
    );
    // TypeScript: the host's system dirs (the box's root) hold no compiler, so the cell's error
    // says so and how to get one.
    for global in [
        "/usr/local/lib/node_modules/typescript",
        "/usr/lib/node_modules/typescript",
        "/usr/share/nodejs/typescript",
    ] {
        assert!(
            !std::path::Path::new(global).exists(),
            "this test needs a host without a global TypeScript compiler, and {global} exists"
        );
    }
    let (status, lines) = gw.execute(&sb, json!({"code": "1", "language": "typescript"}));
    assert_eq!(status, 200);
    let error = lines.iter().find(|l| l["type"] == "error").unwrap();
    assert_eq!(error["name"], "TypeScriptNotFound", "{lines:?}");
    assert!(
        error["value"]
            .as_str()
            .unwrap()
            .contains("npm install -g typescript"),
        "{lines:?}"
    );
    let (status, lines) = gw.execute(&sb, json!({"code": "1", "language": "cobol"}));
    assert_eq!(status, 400);
    assert!(
        lines[0].as_str().unwrap_or("").contains("typescript"),
        "{lines:?}"
    );
    assert_eq!(
        gw.execute(
            &sb,
            json!({"code": "1", "language": "python", "context_id": "python"})
        )
        .0,
        400
    );
    assert_eq!(
        gw.execute(&sb, json!({"code": "1", "context_id": "nosuch"}))
            .0,
        404
    );
    // Contexts: create, use, list, restart (state gone), remove.
    let req = gw
        .sandbox_req(&sb, None, 49999, "POST", "/contexts")
        .set("E2B-Traffic-Access-Token", &sb.token)
        .set("Content-Type", "application/json");
    let ctx = send(req, Some(br#"{"language":"python","cwd":"/tmp"}"#)).json();
    assert_eq!(
        (ctx["language"].clone(), ctx["cwd"].clone()),
        (json!("python"), json!("/tmp"))
    );
    let ctx_id = ctx["id"].as_str().unwrap().to_string();
    let (_, lines) = gw.execute(
        &sb,
        json!({"code": "import os; y = 7; os.getcwd()", "context_id": ctx_id}),
    );
    assert_eq!(
        lines.iter().find(|l| l["type"] == "result").unwrap()["text"],
        "/tmp"
    );
    let listed = send(
        gw.sandbox_req(&sb, None, 49999, "GET", "/contexts")
            .set("E2B-Traffic-Access-Token", &sb.token),
        None,
    )
    .json();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == ctx_id.as_str()),
        "{listed}"
    );
    let r = send(
        gw.sandbox_req(
            &sb,
            None,
            49999,
            "POST",
            &format!("/contexts/{ctx_id}/restart"),
        )
        .set("E2B-Traffic-Access-Token", &sb.token),
        Some(b""),
    );
    assert!(r.status < 300, "{}", r.status);
    let (_, lines) = gw.execute(&sb, json!({"code": "y", "context_id": ctx_id}));
    assert_eq!(
        lines.iter().find(|l| l["type"] == "error").unwrap()["name"],
        "NameError"
    );
    let r = send(
        gw.sandbox_req(&sb, None, 49999, "DELETE", &format!("/contexts/{ctx_id}"))
            .set("E2B-Traffic-Access-Token", &sb.token),
        None,
    );
    assert_eq!(r.status, 204);
    assert_eq!(
        gw.execute(&sb, json!({"code": "1", "context_id": ctx_id}))
            .0,
        404
    );
}

/// One Connect envelope.
fn envelope(flags: u8, msg: &Value) -> Vec<u8> {
    let body = msg.to_string().into_bytes();
    let mut out = vec![flags];
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Splits a streamed Connect response into its messages; the last is the end frame's.
fn envelopes(body: &[u8]) -> Vec<(u8, Value)> {
    let mut out = Vec::new();
    let mut rest = body;
    while rest.len() >= 5 {
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        out.push((rest[0], serde_json::from_slice(&rest[5..5 + len]).unwrap()));
        rest = &rest[5 + len..];
    }
    assert!(rest.is_empty(), "trailing bytes in the stream");
    out
}

impl Gw {
    /// A server-stream Connect call (`Start`, `Connect`) read to its end.
    fn stream(
        &self,
        sb: &Sb,
        method: &str,
        msg: Value,
        timeout_ms: Option<u64>,
    ) -> Vec<(u8, Value)> {
        let mut req = self
            .sandbox_req(sb, Some(&sb.token), 49983, "POST", &format!("/{method}"))
            .set("Content-Type", "application/connect+json")
            .set("Connect-Protocol-Version", "1");
        if let Some(ms) = timeout_ms {
            req = req.set("Connect-Timeout-Ms", &ms.to_string());
        }
        let r = send(req, Some(&envelope(0, &msg)));
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        envelopes(&r.body)
    }
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn envd_process_start_streams_events_and_ends_with_the_exit() {
    let gw = Gw::start();
    let sb = gw.create(json!({"templateID": "base"}));
    let frames = gw.stream(&sb, "process.Process/Start", json!({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "echo hi; echo oops >&2; exit 2"], "envs": {"X": "1"}}, "stdin": false}), None);
    assert!(
        frames[0].1["event"]["start"]["pid"].as_u64().unwrap() > 0,
        "{frames:?}"
    );
    let text = |key: &str| -> String {
        frames
            .iter()
            .filter_map(|(_, m)| m["event"]["data"][key].as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(text("stdout"), b64("hi\n"));
    assert_eq!(text("stderr"), b64("oops\n"));
    let n = frames.len();
    assert_eq!(frames[n - 2].1["event"]["end"]["exitCode"], 2);
    assert_eq!(frames[n - 2].1["event"]["end"]["status"], "exit status 2");
    assert_eq!(
        frames[n - 1],
        (2, json!({})),
        "the end frame closes the stream"
    );

    // The call's Connect-Timeout-Ms is the process's lifetime: it is killed, and the stream ends
    // with deadline_exceeded.
    let t0 = std::time::Instant::now();
    let frames = gw.stream(
        &sb,
        "process.Process/Start",
        json!({"process": {"cmd": "/bin/sleep", "args": ["30"]}, "stdin": false}),
        Some(500),
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
    let last = &frames.last().unwrap();
    assert_eq!(
        (last.0, last.1["error"]["code"].as_str()),
        (2, Some("deadline_exceeded")),
        "{frames:?}"
    );
    let listed = gw.rpc(&sb, "process.Process/List", json!({})).json();
    assert!(
        !listed.to_string().contains("\"30\""),
        "the timed-out process is gone: {listed}"
    );

    // A bad request fails the stream with a Connect error, not a hang.
    let frames = gw.stream(
        &sb,
        "process.Process/Start",
        json!({"process": {"cmd": ""}}),
        None,
    );
    assert_eq!(
        frames.last().unwrap().1["error"]["code"],
        "invalid_argument"
    );
}

#[test]
fn a_process_outlives_its_stream_and_another_sandbox_cannot_touch_it() {
    let gw = Gw::start();
    let a = gw.create(json!({}));
    let b = gw.create(json!({}));
    // Start a background reader with stdin open, then drop the stream after its first event.
    let req = gw
        .sandbox_req(&a, Some(&a.token), 49983, "POST", "/process.Process/Start")
        .set("Content-Type", "application/connect+json")
        .set("Connect-Protocol-Version", "1");
    let resp = req.send_bytes(&envelope(0, &json!({"process": {"cmd": "/bin/sh", "args": ["-c", "read line; echo got $line > /tmp/a.txt; read again; exit 5"]}, "stdin": true}))).unwrap();
    let mut reader = resp.into_reader();
    let mut head = [0u8; 5];
    reader.read_exact(&mut head).unwrap();
    let mut msg = vec![0u8; u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize];
    reader.read_exact(&mut msg).unwrap();
    let pid = serde_json::from_slice::<Value>(&msg).unwrap()["event"]["start"]["pid"]
        .as_u64()
        .unwrap();
    drop(reader);

    // Sandbox b, with its own valid token, names a's pid: not found there, and a's process lives.
    let sel = json!({"process": {"pid": pid}});
    let r = gw.rpc(
        &b,
        "process.Process/SendSignal",
        json!({"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}),
    );
    assert_eq!(
        (r.status, r.json()["code"].as_str()),
        (404, Some("not_found")),
        "{}",
        r.json()
    );
    let r = gw.rpc(
        &b,
        "process.Process/SendInput",
        json!({"process": {"pid": pid}, "input": {"stdin": b64("evil\n")}}),
    );
    assert_eq!(r.status, 404, "{}", r.json());
    // a's token on a's sandbox id works but not on b's (the token guard), and b's on a is refused.
    let r = gw.rpc_as(&a, &b.token, "process.Process/List", json!({}));
    assert_eq!(r.status, 401, "{}", r.json());
    let listed = gw.rpc(&a, "process.Process/List", json!({})).json();
    assert!(
        listed["processes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["pid"] == pid),
        "{listed}"
    );

    // The detached process still reads its stdin, sent from a new call.
    let r = gw.rpc(
        &a,
        "process.Process/SendInput",
        json!({"process": {"pid": pid}, "input": {"stdin": b64("hello\n")}}),
    );
    assert_eq!(r.status, 200, "{}", r.json());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while gw.download(&a, "/tmp/a.txt").status != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "the detached process never read its input"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(gw.download(&a, "/tmp/a.txt").body, b"got hello\n");
    assert_eq!(
        gw.download(&b, "/tmp/a.txt").status,
        404,
        "b's box never saw the file"
    );
    // A new stream picks it up (Connect) and sees it end after its last input.
    std::thread::scope(|scope| {
        let attached = scope.spawn(|| gw.stream(&a, "process.Process/Connect", sel, None));
        std::thread::sleep(Duration::from_millis(500));
        let r = gw.rpc(
            &a,
            "process.Process/SendInput",
            json!({"process": {"pid": pid}, "input": {"stdin": b64("bye\n")}}),
        );
        assert_eq!(r.status, 200, "{}", r.json());
        let frames = attached.join().unwrap();
        assert_eq!(frames[0].1["event"]["start"]["pid"], pid, "{frames:?}");
        assert!(
            frames
                .iter()
                .any(|(_, m)| m["event"]["end"]["exitCode"] == 5),
            "{frames:?}"
        );
    });
    // Now it has ended: signalling it is not found, as envd answers.
    let r = gw.rpc(
        &a,
        "process.Process/SendSignal",
        json!({"process": {"pid": pid}, "signal": "SIGNAL_SIGTERM"}),
    );
    assert_eq!(r.status, 404, "{}", r.json());
}
