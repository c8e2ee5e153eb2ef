//! Pause, resume, snapshots and fork through `airlock serve`'s REST API, on real boxes: a paused
//! microVM or gVisor box outlives a SIGKILL of the server and resumes with its processes and the
//! host's time; a fork of three continues from one state and diverges; a snapshot damaged on
//! disk is refused, never restored; a native box's pause says plainly what a server restart
//! keeps.
#![allow(clippy::unwrap_used)]

mod common;

use common::{ServeProcess, TempDir};
use serde_json::{json, Value};
use std::path::Path;

struct Api {
    base: String,
    key: String,
}

impl Api {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let req = ureq::request(method, &format!("{}{path}", self.base))
            .set("Authorization", &format!("Bearer {}", self.key))
            .timeout(std::time::Duration::from_secs(300));
        let res = match body {
            Some(b) => req
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => req.call(),
        };
        let resp = match res {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let status = resp.status();
        let text = resp.into_string().unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    fn create(&self, backend: &str, template: &str) -> String {
        let (code, v) = self.call(
            "POST",
            "/v1/sandboxes",
            Some(json!({ "template": template, "backend": backend, "timeout": 1200 })),
        );
        assert_eq!(code, 201, "{v}");
        v["id"].as_str().unwrap().to_string()
    }

    /// Runs `script` in the box; its stdout.
    fn sh(&self, id: &str, script: &str) -> String {
        let resp = ureq::post(&format!("{}/v1/sandboxes/{id}/exec", self.base))
            .set("Authorization", &format!("Bearer {}", self.key))
            .set("Content-Type", "application/json")
            .send_string(&json!({ "cmd": ["sh", "-c", script] }).to_string())
            .unwrap_or_else(|e| match e {
                ureq::Error::Status(code, r) => {
                    panic!(
                        "exec {script}: {code} {}",
                        r.into_string().unwrap_or_default()
                    )
                }
                e => panic!("exec {script}: {e}"),
            });
        let mut out = String::new();
        for line in resp.into_string().unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            match v["type"].as_str() {
                Some("stdout") => out.push_str(v["data"].as_str().unwrap_or("")),
                Some("exit") => assert_eq!(v["exit_code"], 0, "{script}: {v} ({out})"),
                Some("error") => panic!("{script}: {v}"),
                _ => {}
            }
        }
        out
    }

    fn state(&self, id: &str) -> Value {
        self.call("GET", &format!("/v1/sandboxes/{id}"), None).1
    }
}

fn serve(data: &Path, extra: &[&str]) -> (ServeProcess, Api) {
    let serve = ServeProcess::start(data, extra);
    let key = serve
        .printed_key
        .clone()
        .unwrap_or_else(|| std::fs::read_to_string(data.join("test-key")).unwrap());
    std::fs::write(data.join("test-key"), &key).unwrap();
    let api = Api {
        base: serve.base.clone(),
        key,
    };
    (serve, api)
}

/// The process that holds a box's memory, per backend: QEMU, or gVisor's Sentry.
fn box_marker(backend: &str) -> &'static str {
    match backend {
        "microvm" => "qemu-system",
        "gvisor" => "runsc-sandbox",
        other => panic!("no memory-holding process known for {other} boxes"),
    }
}

/// The `backend` box processes below `server` (its boxes, and a microVM's warm pool; other
/// tests' boxes, which run at the same time, are not below it).
fn boxes_of(server: &ServeProcess, backend: &str) -> Vec<i32> {
    let marked = common::pids_with_marker(box_marker(backend));
    common::descendants(&[server.pid()])
        .into_iter()
        .filter(|p| marked.contains(p))
        .collect()
}

/// Waits up to 20 s for every one of `pids` to end; returns those still running.
fn outliving(pids: &[i32]) -> Vec<i32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| common::alive(*p)).collect();
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn snapshot_dirs(data: &Path) -> Vec<String> {
    std::fs::read_dir(data.join("snapshots"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_paused_microvm_box_outlives_a_server_sigkill_and_resumes_with_its_processes() {
    paused_box_outlives_a_server_sigkill("microvm");
}

#[test]
fn a_paused_gvisor_box_outlives_a_server_sigkill_and_resumes_with_its_processes() {
    // runsc checkpoint / restore (a runsc that restores airlock boxes: scripts/test.sh sets
    // AIRLOCK_RUNSC to one); the Sentry holding the box's memory is gone while it is paused.
    paused_box_outlives_a_server_sigkill("gvisor");
}

fn paused_box_outlives_a_server_sigkill(backend: &str) {
    let data = common::data_dir_with_code_interpreter();
    let (mut server, api) = serve(data.path(), &["--backend", backend]);
    let id = api.create(backend, "code-interpreter");
    let sleeper = api.sh(
        &id,
        "echo before > /home/user/state; sleep 1000 >/dev/null 2>&1 & echo $!",
    );
    let running = boxes_of(&server, backend);
    assert!(
        !running.is_empty(),
        "the {backend} box runs below its server"
    );
    let (code, paused) = api.call("POST", &format!("/v1/sandboxes/{id}/pause"), None);
    assert_eq!(code, 200, "{paused}");
    assert_eq!(paused["sandbox"]["state"], "paused");
    assert_eq!(paused["kept"]["kept"], "memory", "{paused}");
    assert_eq!(
        paused["kept"]["resident"], false,
        "its memory was given back"
    );
    // Its VM or Sentry is gone while paused (the memory is on disk, not in a process). (Other
    // QEMUs may come and go: the microVM backend keeps a warm pool of VMs restored ahead.)
    let now = boxes_of(&server, backend);
    assert!(
        running.iter().any(|p| !now.contains(p)),
        "a paused {backend} box still runs: {running:?} then {now:?}"
    );
    let (code, again) = api.call("POST", &format!("/v1/sandboxes/{id}/pause"), None);
    assert_eq!(code, 409, "{again}");

    // SIGKILL: no shutdown, no chance to tidy up. Its boxes (a warm pool's) end with it.
    let first = boxes_of(&server, backend);
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let left = outliving(&first);
    assert!(
        left.is_empty(),
        "boxes outlived their SIGKILLed server: {left:?}"
    );
    let (mut server, api) = serve(data.path(), &["--backend", backend]);
    assert_eq!(api.state(&id)["state"], "paused", "{}", api.state(&id));
    let (code, listed) = api.call("GET", "/v1/sandboxes?state=paused", None);
    assert_eq!(code, 200);
    assert!(
        listed.as_array().unwrap().iter().any(|s| s["id"] == id),
        "{listed}"
    );
    // Long enough paused that a box that kept the time it was paused at is seen to.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let (code, resumed) = api.call("POST", &format!("/v1/sandboxes/{id}/resume"), None);
    assert_eq!(code, 200, "{resumed}");
    assert_eq!(resumed["resumed"]["kept"], "memory", "{resumed}");
    assert_eq!(resumed["sandbox"]["state"], "running");
    let skew = common::clock_skew(|| api.sh(&id, "date +%s.%N"));
    assert!(
        skew.abs() < 1.5,
        "the resumed {backend} box's clock is {skew:.3} s off the host's"
    );
    let out = api.sh(
        &id,
        &format!(
            "cat /home/user/state; kill -0 {} && echo alive",
            sleeper.trim()
        ),
    );
    assert_eq!(out, "before\nalive\n");
    // The resume consumed its pause snapshot; a kill deletes everything the sandbox had.
    let (code, _) = api.call("DELETE", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(code, 200);
    assert!(
        snapshot_dirs(data.path()).is_empty(),
        "{:?}",
        snapshot_dirs(data.path())
    );
    let (code, events) = api.call("GET", &format!("/v1/sandboxes/{id}/events"), None);
    assert_eq!(code, 200);
    let states: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["detail"]["state"].as_str())
        .collect();
    assert!(
        states.contains(&"paused") && states.contains(&"resuming"),
        "{states:?}"
    );
    let second = boxes_of(&server, backend);
    server.stop();
    let left = outliving(&second);
    assert!(left.is_empty(), "boxes outlived their server: {left:?}");
}

#[test]
fn a_fork_of_three_continues_from_one_state_and_each_diverges() {
    fork_of_three("microvm");
}

#[test]
fn a_fork_of_three_gvisor_boxes_continues_from_one_state_and_each_diverges() {
    fork_of_three("gvisor");
}

fn fork_of_three(backend: &str) {
    let data = common::data_dir_with_code_interpreter();
    let (mut server, api) = serve(data.path(), &["--backend", backend]);
    let id = api.create(backend, "code-interpreter");
    let sleeper = api.sh(
        &id,
        "echo parent > /home/user/who; sleep 1000 >/dev/null 2>&1 & echo $!",
    );
    let (code, forked) = api.call(
        "POST",
        &format!("/v1/sandboxes/{id}/fork"),
        Some(json!({ "count": 3 })),
    );
    assert_eq!(code, 201, "{forked}");
    let kids: Vec<String> = forked["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert!(s["token"].is_string(), "each fork has its own token: {s}");
            s["id"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(kids.len(), 3, "{forked}");
    // Each continues from the same moment: the file and the process are there.
    for kid in &kids {
        let out = api.sh(
            kid,
            &format!(
                "cat /home/user/who; kill -0 {} && echo alive",
                sleeper.trim()
            ),
        );
        assert_eq!(out, "parent\nalive\n", "{kid}");
    }
    // Each diverges on its own writable state; the parent runs on untouched.
    for kid in &kids {
        api.sh(kid, &format!("echo {kid} > /home/user/who"));
    }
    for kid in &kids {
        assert_eq!(api.sh(kid, "cat /home/user/who").trim(), kid.as_str());
    }
    assert_eq!(api.sh(&id, "cat /home/user/who"), "parent\n");
    let (_, snaps) = api.call("GET", &format!("/v1/sandboxes/{id}/snapshots"), None);
    assert_eq!(snaps["snapshots"].as_array().unwrap().len(), 1, "{snaps}");
    for s in kids.iter().chain([&id]) {
        api.call("DELETE", &format!("/v1/sandboxes/{s}"), None);
    }
    assert!(snapshot_dirs(data.path()).is_empty());
    server.stop();
}

/// The largest file of a snapshot's data.
fn largest_file(dir: &Path) -> std::path::PathBuf {
    let mut best = (0, dir.to_path_buf());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else if m.len() > best.0 {
                best = (m.len(), e.path());
            }
        }
    }
    best.1
}

#[test]
fn a_truncated_or_altered_snapshot_is_refused_and_never_restored() {
    let data = common::data_dir_with_code_interpreter();
    let (mut server, api) = serve(data.path(), &["--backend", "microvm"]);

    // A pause snapshot, truncated: the resume is refused and the sandbox stays paused.
    let id = api.create("microvm", "code-interpreter");
    api.sh(&id, "echo secret > /home/user/state");
    let (code, paused) = api.call("POST", &format!("/v1/sandboxes/{id}/pause"), None);
    assert_eq!(code, 200, "{paused}");
    let snap = paused["kept"]["snapshot"].as_str().unwrap().to_string();
    let victim = largest_file(&data.path().join(format!("snapshots/{snap}/data")));
    let full = std::fs::metadata(&victim).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&victim)
        .unwrap()
        .set_len(full / 2)
        .unwrap();
    let (code, refused) = api.call("POST", &format!("/v1/sandboxes/{id}/resume"), None);
    assert_eq!(code, 409, "{refused}");
    let msg = refused["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.contains("truncated") && msg.contains("never restored"),
        "{refused}"
    );
    assert_eq!(api.state(&id)["state"], "paused");

    // A named snapshot, one byte altered: a fork from it is refused.
    let other = api.create("microvm", "code-interpreter");
    let (code, named) = api.call(
        "POST",
        &format!("/v1/sandboxes/{other}/snapshots"),
        Some(json!({ "name": "turn-1" })),
    );
    assert_eq!(code, 201, "{named}");
    let snap = named["id"].as_str().unwrap();
    let victim = largest_file(&data.path().join(format!("snapshots/{snap}/data")));
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&victim, &bytes).unwrap();
    let (code, forked) = api.call(
        "POST",
        &format!("/v1/sandboxes/{other}/fork"),
        Some(json!({ "count": 1, "snapshot": snap })),
    );
    assert_eq!(code, 201, "{forked}");
    let err = forked["sandboxes"][0]["error"].as_str().unwrap_or_default();
    assert!(err.contains("content changed"), "{forked}");
    // The refused fork never became a sandbox that runs.
    let fork_id = forked["sandboxes"][0]["id"].as_str().unwrap();
    assert_ne!(api.state(fork_id)["state"], "running");
    for s in [&id, &other] {
        api.call("DELETE", &format!("/v1/sandboxes/{s}"), None);
    }
    assert!(snapshot_dirs(data.path()).is_empty());
    server.stop();
}

#[test]
fn a_native_pause_freezes_in_place_and_says_a_server_restart_does_not_keep_it() {
    let data = TempDir::new("pause-native");
    let (mut server, api) = serve(data.path(), &[]);
    let id = api.create("native", "base");
    api.sh(&id, "echo 1 > n");
    let (code, paused) = api.call(
        "POST",
        &format!("/v1/sandboxes/{id}/pause"),
        Some(json!({ "memory": true })),
    );
    assert_eq!(code, 200, "{paused}");
    assert_eq!(paused["kept"]["mechanism"], "cgroup-freezer");
    assert_eq!(paused["kept"]["resident"], true);
    let msg = paused["kept"]["message"].as_str().unwrap();
    assert!(msg.contains("does not outlive the server"), "{msg}");
    // Giving the memory back is refused, and said why.
    let (_, resumed) = api.call("POST", &format!("/v1/sandboxes/{id}/resume"), None);
    assert_eq!(resumed["sandbox"]["state"], "running", "{resumed}");
    let (code, refused) = api.call(
        "POST",
        &format!("/v1/sandboxes/{id}/pause"),
        Some(json!({ "memory": false })),
    );
    assert_eq!(code, 409, "{refused}");
    assert!(refused.to_string().contains("frozen in place"), "{refused}");
    // A request on a paused box resumes it first (auto_resume is on by default).
    api.call("POST", &format!("/v1/sandboxes/{id}/pause"), None);
    assert_eq!(api.sh(&id, "cat n"), "1\n");
    assert_eq!(api.state(&id)["state"], "running");
    // Paused at a SIGKILL of the server: after the restart it is dead, and says why.
    api.call("POST", &format!("/v1/sandboxes/{id}/pause"), None);
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let (mut server, api) = serve(data.path(), &[]);
    let rec = api.state(&id);
    assert_eq!(rec["state"], "dead", "{rec}");
    assert!(
        rec["reason"].as_str().unwrap().contains("server stopped"),
        "{rec}"
    );
    server.stop();
}

#[test]
fn a_proxied_gvisor_box_is_frozen_in_place_and_says_it_does_not_outlive_the_server() {
    // A --net proxy gVisor box's sockets are host sockets (runsc --network=host in airlock's
    // namespace), which runsc does not save: it is never checkpointed. Its pause freezes it in
    // place (memory resident), says so, and a snapshot or fork of it is refused with the reason.
    let data = TempDir::new("pause-gvisor-proxy");
    let (mut server, api) = serve(data.path(), &["--backend", "gvisor"]);
    let (code, v) = api.call(
        "POST",
        "/v1/sandboxes",
        Some(json!({ "backend": "gvisor", "policy": { "network": { "mode": "proxy" } } })),
    );
    assert_eq!(code, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    let sleeper = api.sh(
        &id,
        "echo kept > /tmp/state; sleep 1000 >/dev/null 2>&1 & echo $!",
    );
    let (code, paused) = api.call("POST", &format!("/v1/sandboxes/{id}/pause"), None);
    assert_eq!(code, 200, "{paused}");
    assert_eq!(paused["kept"]["resident"], true, "{paused}");
    let message = paused["kept"]["message"].as_str().unwrap();
    assert!(message.contains("does not outlive the server"), "{message}");
    assert!(message.contains("CPU given back"), "{message}");
    // runsc's pause stops the box's tasks but leaves its Sentry running (an idle Sentry spends
    // CPU all the time): the freezer around runsc stops the Sentry and gofer too, so the CPU
    // really is given back.
    assert_eq!(
        paused["kept"]["mechanism"], "runsc-pause+cgroup-freezer",
        "{paused}"
    );
    // Every process of the box on the host (runsc, the Sentry, the gofer) stands still.
    let frozen: Vec<i32> = common::descendants(&[server.pid()])
        .into_iter()
        .filter(|p| common::freezer_states(&[*p], "airlock-gvisor-") == ["FROZEN"])
        .collect();
    assert!(
        frozen.len() >= 3,
        "runsc, the Sentry, the gofer: {frozen:?}"
    );
    let sentries = boxes_of(&server, "gvisor");
    assert!(
        sentries.len() == 1 && frozen.contains(&sentries[0]),
        "the one Sentry {sentries:?} is among the frozen {frozen:?}"
    );
    let before = common::cpu_ticks(&frozen);
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert_eq!(
        common::cpu_ticks(&frozen),
        before,
        "the paused box's processes spent CPU: {frozen:?}"
    );
    assert!(
        snapshot_dirs(data.path()).is_empty(),
        "a proxied box was checkpointed"
    );
    let (code, _) = api.call("POST", &format!("/v1/sandboxes/{id}/resume"), None);
    assert_eq!(code, 200);
    let out = api.sh(
        &id,
        &format!("cat /tmp/state; kill -0 {} && echo alive", sleeper.trim()),
    );
    assert_eq!(out, "kept\nalive\n");
    let (code, refused) = api.call(
        "POST",
        &format!("/v1/sandboxes/{id}/snapshots"),
        Some(json!({ "name": "x" })),
    );
    assert_eq!(code, 409, "{refused}");
    assert!(refused.to_string().contains("host sockets"), "{refused}");
    assert!(snapshot_dirs(data.path()).is_empty());
    api.call("DELETE", &format!("/v1/sandboxes/{id}"), None);
    server.stop();
}
