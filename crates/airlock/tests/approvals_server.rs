//! Approvals over the server's API (issue 21, step 3), through a real `airlock serve`: a real
//! box runs curl through its real proxy (in the box's host process) to an origin this test
//! runs on 127.0.0.1 (`*.test` names mapped with `map_host`: no DNS query, nothing leaves the
//! machine). The test answers through `GET/POST /v1/sandboxes/{id}/approvals` while the
//! exec's curl is held, and checks what the box got, what the origin saw, what the API
//! listed and refused, and the events.

mod approvals_support;
mod common;

use approvals_support::Origin;
use common::{binary_for_test_user, descendants, ServeProcess, TempDir};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A server and one API key.
struct Api {
    serve: ServeProcess,
    key: String,
    _data: TempDir,
}

impl Api {
    fn start() -> Api {
        let data = TempDir::new("approvals-server-data");
        let serve = ServeProcess::start(data.path(), &[]);
        Api::of(serve, data)
    }

    /// The server run by the unprivileged test user.
    fn start_as_test_user(bin: &std::path::Path) -> Api {
        let data = TempDir::new("approvals-server-user-data");
        let serve = ServeProcess::start_as_test_user(bin, data.path(), &[]);
        Api::of(serve, data)
    }

    fn of(serve: ServeProcess, data: TempDir) -> Api {
        let key = serve.printed_key.clone().expect("api key");
        Api {
            serve,
            key,
            _data: data,
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let (status, text) = call(&self.serve.base, &self.key, method, path, body);
        (status, json_of(&text))
    }

    /// A proxied sandbox that asks (`on-request`, answers due within `timeout`), with the
    /// `*.test` names mapped to loopback; its id and token.
    fn sandbox(&self, timeout: &str) -> (String, String) {
        self.try_sandbox(timeout)
            .unwrap_or_else(|(status, body)| panic!("create: {status} {body}"))
    }

    fn try_sandbox(&self, timeout: &str) -> Result<(String, String), (u16, Value)> {
        let names = ["svc.test", "other.test", "late.test", "run.test"];
        let network = json!({
            "mode": "proxy",
            "allow_ip": ["127.0.0.1"],
            "map_host": names.iter().map(|n| format!("{n}=127.0.0.1")).collect::<Vec<_>>(),
            "approval": "on-request",
            "approval_timeout": timeout,
        });
        let (status, created) = self.call(
            "POST",
            "/v1/sandboxes",
            Some(&json!({"policy": {"network": network}})),
        );
        if status != 201 {
            return Err((status, created));
        }
        Ok((
            created["id"].as_str().expect("id").to_string(),
            created["token"].as_str().expect("token").to_string(),
        ))
    }

    /// Runs curl on `url` in sandbox `id` on a thread: `<status> <body>` as the box saw it.
    fn curl(&self, id: &str, url: &str) -> JoinHandle<String> {
        let (base, key, id) = (self.serve.base.clone(), self.key.clone(), id.to_string());
        let script =
            format!("echo \"$(curl -sS -o /tmp/body -w '%{{http_code}}' {url}) $(cat /tmp/body)\"");
        std::thread::spawn(move || {
            let exec = json!({"cmd": ["sh", "-c", script]});
            let path = format!("/v1/sandboxes/{id}/exec");
            let (status, stream) = call(&base, &key, "POST", &path, Some(&exec));
            assert_eq!(status, 200, "{stream}");
            BufReader::new(stream.as_bytes())
                .lines()
                .map(|l| json_of(&l.expect("line")))
                .filter(|l| l["type"] == "stdout")
                .filter_map(|l| l["data"].as_str().map(str::to_string))
                .collect::<String>()
                .trim()
                .to_string()
        })
    }

    fn pending(&self, id: &str) -> Vec<Value> {
        let (status, list) = self.call("GET", &format!("/v1/sandboxes/{id}/approvals"), None);
        assert_eq!(status, 200, "{list}");
        list["approvals"].as_array().cloned().expect("approvals")
    }

    /// Waits (up to 20 s) until sandbox `id` has a pending request for `host`.
    fn wait_pending(&self, id: &str, host: &str) -> Value {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(r) = self.pending(id).into_iter().find(|r| r["host"] == host) {
                return r;
            }
            assert!(Instant::now() < until, "no request for {host} appeared");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn answer(&self, id: &str, n: &Value, body: Value) -> (u16, Value) {
        self.call(
            "POST",
            &format!("/v1/sandboxes/{id}/approvals/{n}"),
            Some(&body),
        )
    }
}

/// Whether the server's default backend can ask over the API; where it cannot, checks that
/// the create is refused with a sentence naming the field (and returns `false`).
fn server_can_ask(api: &Api) -> bool {
    use airlock_policy::BackendKind;
    match common::test_backend_kind() {
        BackendKind::Native | BackendKind::Gvisor | BackendKind::Microvm => true,
        // A wasm box has no network.
        BackendKind::Wasm => {
            let (status, err) = api.try_sandbox("3s").expect_err("refused at create");
            assert_eq!(status, 400, "{err}");
            let text = err["error"]["message"].as_str().unwrap_or_default();
            assert!(text.contains("policy.network"), "{text}");
            false
        }
    }
}

#[test]
fn held_connections_are_listed_answered_refused_and_expire_over_the_api() {
    let origin = Origin::serve();
    let p = origin.port;
    let api = Api::start();
    if !server_can_ask(&api) {
        return;
    }
    let (id, token) = api.sandbox("3s");

    // Allowed once: the held curl goes through after the answer.
    let held = api.curl(&id, &format!("http://svc.test:{p}/a"));
    let req = api.wait_pending(&id, "svc.test");
    assert_eq!(req["port"], p);
    assert_eq!(req["protocol"], "http");
    assert_eq!(req["reason"], "not-allowed");
    assert_eq!(req["grant"], format!("svc.test:{p}"));
    // Who asked, as the box names it. A native box's sockets are the host kernel's, so the
    // proxy finds the process; gVisor's network stack is the Sentry's, and nobody can tell.
    match common::test_backend_kind() {
        airlock_policy::BackendKind::Native => {
            let who = req["process"].as_str().unwrap_or_default();
            assert!(
                who.starts_with("curl -sS -o /tmp/body") && who.contains(" in the box)"),
                "{req}"
            );
        }
        _ => assert!(req["process"].is_null(), "{req}"),
    }
    let msg = req["message"].as_str().expect("message");
    assert!(msg.contains("--allow-domain svc.test"), "{msg}");
    let (t, deadline) = (req["time_ms"].as_u64(), req["deadline_ms"].as_u64());
    assert!(deadline > t, "{req}");
    assert_eq!(
        origin.connections(),
        0,
        "nothing reached the origin while held"
    );
    let n = req["id"].clone();
    // Bad answers are refused with a 400 naming what is wrong; the request still waits.
    for (bad, says) in [
        (json!({"answer": "maybe"}), "maybe"),
        (json!({"answer": "allow", "ttl_secs": 0}), "ttl_secs"),
        (json!({"answer": "allow", "scope": "save"}), "scope"),
        (json!({"answer": "allow", "colour": "red"}), "colour"),
        (
            json!({"answer": "allow", "grant": format!("other.test:{p}")}),
            "does not cover",
        ),
        (json!({"answer": "allow", "grant": "no port"}), "grant"),
    ] {
        let (status, err) = api.answer(&id, &n, bad.clone());
        assert_eq!(status, 400, "{bad}: {err}");
        let text = err["error"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(says), "{bad}: {text}");
    }
    let (status, err) = api.call(
        "POST",
        &format!("/v1/sandboxes/{id}/approvals/abc"),
        Some(&json!({"answer": "allow"})),
    );
    assert_eq!(status, 400, "{err}");
    let (status, err) = api.answer(&id, &json!(999), json!({"answer": "allow"}));
    assert_eq!(status, 404, "{err}");
    // The sandbox's own token may look but not answer.
    let (status, _) = call(
        &api.serve.base,
        &token,
        "GET",
        &format!("/v1/sandboxes/{id}/approvals"),
        None,
    );
    assert_eq!(status, 200);
    let (status, err) = call(
        &api.serve.base,
        &token,
        "POST",
        &format!("/v1/sandboxes/{id}/approvals/{n}"),
        Some(&json!({"answer": "allow"})),
    );
    assert_eq!(status, 403, "{err}");
    assert_eq!(api.pending(&id).len(), 1, "still held after the refusals");
    let (status, ok) = api.answer(&id, &n, json!({"answer": "allow", "scope": "once"}));
    assert_eq!(status, 200, "{ok}");
    assert_eq!(held.join().expect("curl"), "200 approved-origin");
    assert_eq!(origin.connections(), 1);
    let (status, err) = api.answer(&id, &n, json!({"answer": "allow"}));
    assert_eq!(status, 409, "answered twice: {err}");
    assert!(api.pending(&id).is_empty());

    // Denied: the usual readable refusal, nothing reaches the origin.
    let held = api.curl(&id, &format!("http://other.test:{p}/b"));
    let n = api.wait_pending(&id, "other.test")["id"].clone();
    let (status, _) = api.answer(&id, &n, json!({"answer": "deny"}));
    assert_eq!(status, 200);
    let got = held.join().expect("curl");
    assert!(got.starts_with("403 "), "{got}");
    assert!(got.contains("--allow-domain other.test"), "{got}");
    assert_eq!(origin.connections(), 1);
    // The refusal is a structured value in the sandbox's view and on its network event.
    let denial = json!({
        "kind": "network",
        "what": format!("other.test:{p}"),
        "reason": "not-allowed",
        "rule": null,
        "grant": format!("other.test:{p}"),
        "flag": format!("--allow-domain other.test:{p}"),
    });
    let (status, shown) = api.call("GET", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(status, 200);
    assert!(
        shown["denials"]
            .as_array()
            .expect("denials")
            .contains(&denial),
        "{shown}"
    );
    let (_, events) = api.call("GET", &format!("/v1/sandboxes/{id}/events"), None);
    assert!(
        events["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| {
                e["kind"] == "network"
                    && e["detail"]["decision"] == "deny"
                    && e["detail"]["denial"] == denial
            }),
        "{events}"
    );

    // Nobody answers: refused at the deadline (3 s), and then it cannot be answered.
    let t = Instant::now();
    let held = api.curl(&id, &format!("http://late.test:{p}/c"));
    let n = api.wait_pending(&id, "late.test")["id"].clone();
    let got = held.join().expect("curl");
    assert!(got.starts_with("403 "), "{got}");
    assert!(t.elapsed() >= Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(api.pending(&id).is_empty(), "withdrawn at its deadline");
    let (status, err) = api.answer(&id, &n, json!({"answer": "allow"}));
    assert_eq!(status, 409, "timed out: {err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("timed out"),
        "{err}"
    );
    assert_eq!(origin.connections(), 1);

    // A `run` grant for 1 s: new connections go through without asking until it ends, then
    // they are held again.
    let held = api.curl(&id, &format!("http://run.test:{p}/d"));
    let n = api.wait_pending(&id, "run.test")["id"].clone();
    let (status, _) = api.answer(
        &id,
        &n,
        json!({"answer": "allow", "scope": "run", "ttl_secs": 1}),
    );
    assert_eq!(status, 200);
    assert_eq!(held.join().expect("curl"), "200 approved-origin");
    let again = api.curl(&id, &format!("http://run.test:{p}/e"));
    assert_eq!(
        again.join().expect("curl"),
        "200 approved-origin",
        "within the grant: not asked"
    );
    assert_eq!(origin.connections(), 3);
    std::thread::sleep(Duration::from_millis(1300));
    let held = api.curl(&id, &format!("http://run.test:{p}/f"));
    let n = api.wait_pending(&id, "run.test")["id"].clone();
    let (status, _) = api.answer(&id, &n, json!({"answer": "deny"}));
    assert_eq!(status, 200);
    assert!(held.join().expect("curl").starts_with("403 "));
    assert_eq!(
        origin.connections(),
        3,
        "the expired grant let nothing through"
    );

    // Every step is an event, the answers credited to the API.
    let (status, events) = api.call("GET", &format!("/v1/sandboxes/{id}/events"), None);
    assert_eq!(status, 200);
    let steps: Vec<(String, String, String)> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| {
            let a = &e["detail"]["approval"];
            a.is_object().then(|| {
                let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
                (s(&e["detail"]["host"]), s(&a["stage"]), s(&a["by"]))
            })
        })
        .collect();
    let has = |host: &str, stage: &str, by: &str| {
        steps
            .iter()
            .any(|(h, s, b)| h == host && s == stage && b == by)
    };
    assert!(has("svc.test", "requested", ""), "{steps:?}");
    assert!(has("svc.test", "allowed", "api"), "{steps:?}");
    assert!(has("other.test", "denied", "api"), "{steps:?}");
    assert!(has("late.test", "timed-out", ""), "{steps:?}");
    assert!(has("run.test", "expired", "api"), "{steps:?}");
    let answered = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"] == "approval")
        .count();
    assert_eq!(answered, 4, "each API answer is audited: {events}");
}

#[test]
fn another_sandboxs_approvals_are_out_of_reach_and_an_ended_sandbox_drops_its_own() {
    let origin = Origin::serve();
    let p = origin.port;
    let api = Api::start();
    if !server_can_ask(&api) {
        return;
    }
    let (a, a_token) = api.sandbox("30s");
    let (b, _) = api.sandbox("30s");
    let held = api.curl(&b, &format!("http://svc.test:{p}/b"));
    let n = api.wait_pending(&b, "svc.test")["id"].clone();
    assert!(api.pending(&a).is_empty(), "b's request is not a's");
    let (status, err) = api.answer(&a, &n, json!({"answer": "allow"}));
    assert_eq!(status, 404, "through a's id: {err}");
    let (status, _) = call(
        &api.serve.base,
        &a_token,
        "GET",
        &format!("/v1/sandboxes/{b}/approvals"),
        None,
    );
    assert_eq!(status, 403, "a's token on b");
    assert_eq!(api.pending(&b).len(), 1, "still waiting");

    // Ending b while its connection is held: the request goes with it, and so does every
    // process b's box had.
    let before = descendants(&[api.serve.pid()]);
    assert!(!before.is_empty(), "the boxes' host processes run");
    let (status, _) = api.call("DELETE", &format!("/v1/sandboxes/{b}"), None);
    assert_eq!(status, 200);
    let got = held.join().expect("the exec ends with the box");
    assert!(!got.contains("approved-origin"), "{got}");
    assert_eq!(
        origin.connections(),
        0,
        "the held connection never reached it"
    );
    assert!(api.pending(&b).is_empty());
    let (status, err) = api.answer(&b, &n, json!({"answer": "allow"}));
    assert!(
        status == 404 || status == 409,
        "an ended sandbox's request: {status} {err}"
    );
    // a's box is the only one left under the server.
    let (status, _) = api.call("DELETE", &format!("/v1/sandboxes/{a}"), None);
    assert_eq!(status, 200);
    let until = Instant::now() + Duration::from_secs(10);
    // The microVM backend keeps a warm pool of VMs restored ahead of time, waiting for a
    // config (no box, no policy yet): those QEMUs stay under the server, as does the native
    // hosts' zygote (no box's either: it holds nothing but the host program); nothing else may.
    let warm_pool = |p: &i32| {
        (common::test_backend_kind() == airlock_policy::BackendKind::Microvm
            && common::api::cmdline(*p).starts_with("qemu-system"))
            || std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.trim() == "airlock-zygote")
    };
    while !descendants(&[api.serve.pid()]).iter().all(&warm_pool) {
        assert!(
            Instant::now() < until,
            "processes left: {:?}",
            descendants(&[api.serve.pid()])
                .iter()
                .filter(|p| !warm_pool(p))
                .map(|p| (p, common::api::cmdline(*p)))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_server_run_by_an_unprivileged_user_asks_and_lets_the_answer_through() {
    let origin = Origin::serve();
    let p = origin.port;
    let (_bin_dir, bin) = binary_for_test_user("approvals-server-bin");
    if common::test_backend_kind() == airlock_policy::BackendKind::Gvisor {
        // gVisor boxes need root (a private mount namespace, a host cgroup and a network
        // namespace around runsc): a server of gVisor boxes does not start for an unprivileged
        // user, and says why (tests/gvisor.rs checks a single request to a native server).
        let err = common::serve_refused_as_test_user(&bin, &["--backend", "gvisor"]);
        assert!(err.contains("needs root"), "{err}");
        return;
    }
    let api = Api::start_as_test_user(&bin);
    if !server_can_ask(&api) {
        return;
    }
    let (id, _) = api.sandbox("20s");
    let held = api.curl(&id, &format!("http://svc.test:{p}/user"));
    let n = api.wait_pending(&id, "svc.test")["id"].clone();
    assert_eq!(origin.connections(), 0);
    let (status, ok) = api.answer(&id, &n, json!({"answer": "allow"}));
    assert_eq!(status, 200, "{ok}");
    assert_eq!(held.join().expect("curl"), "200 approved-origin");
    let held = api.curl(&id, &format!("http://other.test:{p}/user"));
    let n = api.wait_pending(&id, "other.test")["id"].clone();
    let (status, _) = api.answer(&id, &n, json!({"answer": "deny"}));
    assert_eq!(status, 200);
    assert!(held.join().expect("curl").starts_with("403 "));
    assert_eq!(origin.connections(), 1);
}
