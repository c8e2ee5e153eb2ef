//! Warm pools in `airlock serve` (`--pool`), end to end: a real server, real boxes, real HTTP
//! (and E2B's own SDK). A claimed box carries nothing from before its claim; two claims never
//! share a box; pools refill and count; a create that matches no pool starts its own box; a
//! SIGKILLed server leaves no pooled box behind and comes back with fresh pools.
#![allow(clippy::unwrap_used)]

mod common;

use common::api::{cmdline, id_of, wait_until, Server};
use common::{alive, descendants, leftover_cgroups, repo_root, TempDir};
use serde_json::{json, Value};
use std::time::Duration;

/// The one pool of `s` (a test server started with one `--pool`).
fn pool(s: &Server) -> Value {
    let (status, v) = s.call("GET", "/v1/pools", None);
    assert_eq!(status, 200, "{v}");
    let pools = v["pools"].as_array().unwrap();
    assert_eq!(pools.len(), 1, "{v}");
    pools[0].clone()
}

fn wait_ready(s: &Server, n: u64) -> Value {
    let mut last = Value::Null;
    wait_until(
        &format!("the pool holds {n} ready boxes"),
        Duration::from_secs(60),
        || {
            last = pool(s);
            last["ready"] == n
        },
    );
    last
}

/// The `pool` part of sandbox `id`'s create event (`null` when no pool matched).
fn create_event_pool(s: &Server, id: &str) -> Value {
    let (status, v) = s.call("GET", &format!("/v1/sandboxes/{id}/events"), None);
    assert_eq!(status, 200, "{v}");
    let create = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "create")
        .cloned()
        .unwrap_or_else(|| panic!("no create event: {v}"));
    create["detail"]["pool"].clone()
}

/// What a box shows its user of its past: files in /tmp and the home directory, its
/// processes, its environment.
const LOOK: &str =
    "echo FILES; ls -A /tmp /home/user 2>&1; echo PROCS; ps -eo pid,args; echo ENV; env | sort";

/// Lines of `LOOK`'s output that name a process other than the box's init and the look itself.
fn foreign_processes(out: &str) -> Vec<String> {
    let procs = out
        .split("PROCS")
        .nth(1)
        .unwrap()
        .split("ENV")
        .next()
        .unwrap();
    procs
        .lines()
        .skip(2) // the blank rest of the marker line, and the header
        .filter(|l| {
            let mut words = l.split_whitespace();
            let pid = words.next().unwrap_or("");
            let args = words.collect::<Vec<_>>().join(" ");
            // The box's init (PID 1, airlock's agent), this command's shell and ps itself.
            !(pid == "1" || args.starts_with("sh -c") || args.starts_with("ps "))
        })
        .map(str::to_string)
        .collect()
}

/// A claimed box is the claim's alone: the previous claimant's files, processes and
/// environment are nowhere in it, it sees exactly what a box started for it would (beyond the
/// template, nothing), and it gets the claim's env, allowlist and timeout clock.
#[test]
fn a_claimed_box_has_no_trace_of_anything_before_its_claim() {
    let data = TempDir::new("pool-fresh");
    let s = Server::start(&data, &["--pool", "native:size=2,network=proxy"], None);
    wait_ready(&s, 2);
    let hosts_before = s.sandbox_hosts();
    assert_eq!(hosts_before.len(), 2, "two ready boxes, each its own host");

    // The first claimant leaves traces everywhere it can, then goes away.
    let first = id_of(
        &s.create(r#"{"env":{"SECRET_OF_FIRST":"s3cr3t"},"metadata":{"owner":"first"},"policy":{"network":{"mode":"proxy"}}}"#),
    );
    assert_eq!(
        create_event_pool(&s, &first),
        json!({"pool": "native/base/proxy", "hit": true})
    );
    s.sh(
        &first,
        "echo mine > /tmp/left-by-first; echo mine > ~/left-by-first; \
         (setsid sleep 1000 >/dev/null 2>&1 &); test \"$SECRET_OF_FIRST\" = s3cr3t",
    );
    let (status, v) = s.call("DELETE", &format!("/v1/sandboxes/{first}"), None);
    assert_eq!(status, 200, "{v}");
    std::thread::sleep(Duration::from_secs(3)); // the pool boxes age before the claim

    // The next claim, with its own env, a short timeout and an allowlist naming a loopback
    // site of the test's own.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let site = std::thread::spawn(move || {
        if let Ok((mut conn, _)) = listener.accept() {
            use std::io::{Read, Write};
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
            );
        }
    });
    let body = json!({
        "env": {"MINE": "yes"},
        "timeout": 20,
        "policy": {"network": {"mode": "proxy", "allow_domain": ["svc.test"],
            "allow_ip": [format!("127.0.0.1:{port}")], "map_host": ["svc.test=127.0.0.1"]}}
    });
    let created = s.create(&body.to_string());
    assert_eq!(
        created["metadata"],
        json!({}),
        "the first claim's labels are not carried over"
    );
    let second = id_of(&created);
    assert_eq!(create_event_pool(&s, &second)["hit"], true);
    let claimed = s.sh(&second, LOOK);
    assert!(!claimed.contains("left-by-first"), "{claimed}");
    assert!(
        !claimed.contains("SECRET_OF_FIRST") && !claimed.contains("s3cr3t"),
        "{claimed}"
    );
    assert!(claimed.contains("MINE=yes"), "the claim's env: {claimed}");
    assert_eq!(
        foreign_processes(&claimed),
        Vec::<String>::new(),
        "{claimed}"
    );
    // The timeout counts from the claim, not from when the box was started.
    let life = created["deadline_ms"].as_i64().unwrap() - created["created_ms"].as_i64().unwrap();
    assert!(
        (19_000..=21_000).contains(&life),
        "life {life} ms: {created}"
    );
    // The claim's allowlist is live in its proxy (the pool's boxes start allowing nothing),
    // and the proxy's decisions are recorded as the claim's.
    let out = s.sh(
        &second,
        &format!("curl -sS http://svc.test:{port}/; curl -s -o /dev/null -w '%{{http_code}}' http://other.test:{port}/"),
    );
    assert_eq!(out, "ok\n403", "{out}");
    site.join().unwrap();
    wait_until(
        "the claim's network decisions are its own",
        Duration::from_secs(10),
        || {
            let (_, v) = s.call("GET", &format!("/v1/sandboxes/{second}/events"), None);
            let hosts: Vec<(Value, Value)> = v["events"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["kind"] == "network")
                .map(|e| (e["detail"]["host"].clone(), e["detail"]["decision"].clone()))
                .collect();
            hosts.contains(&(json!("svc.test"), json!("allow")))
                && hosts.contains(&(json!("other.test"), json!("deny")))
        },
    );

    // What an ordinary box started for the same request shows (the pool does not match
    // limits it was not made with): the same files and processes, the same env names.
    let ordinary = id_of(&s.create(
        r#"{"env":{"MINE":"yes"},"policy":{"network":{"mode":"proxy"},"limits":{"pids":4000}}}"#,
    ));
    assert_eq!(create_event_pool(&s, &ordinary), Value::Null);
    let fresh = s.sh(&ordinary, LOOK);
    let files = |o: &str| o.split("PROCS").next().unwrap().to_string();
    assert_eq!(files(&claimed), files(&fresh));
    let names = |o: &str| -> Vec<String> {
        let env = o.split("ENV").nth(1).unwrap();
        env.lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, _)| k.to_string())
            .collect()
    };
    assert_eq!(names(&claimed), names(&fresh));
    // The first claimant's box (its host and its sleep) is gone, not back in the pool.
    let first_hosts: Vec<i32> = hosts_before.into_iter().filter(|h| !alive(*h)).collect();
    assert_eq!(first_hosts.len(), 1, "exactly the killed box's host ended");
    assert!(
        common::pids_with_marker("sleep 1000").is_empty(),
        "the first claim's sleep lives"
    );
}

/// Eight creates at once against four ready boxes: each gets a box of its own (a file made
/// with O_EXCL in each box would collide otherwise), hits and misses add up to eight.
#[test]
fn concurrent_claims_never_get_the_same_box() {
    let data = TempDir::new("pool-race");
    let s = Server::start(&data, &["--pool", "native:size=4"], None);
    wait_ready(&s, 4);
    let ids: Vec<String> = std::thread::scope(|scope| {
        let made: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| id_of(&s.create("{}"))))
            .collect();
        made.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut hits = 0;
    for id in &ids {
        if create_event_pool(&s, id)["hit"] == true {
            hits += 1;
        }
    }
    let owners: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = ids
            .iter()
            .map(|id| {
                let s = &s;
                scope.spawn(move || {
                    s.sh(
                        id,
                        &format!("set -C; echo {id} > /tmp/owner && cat /tmp/owner"),
                    )
                })
            })
            .collect();
        runs.into_iter()
            .map(|h| h.join().unwrap().trim().to_string())
            .collect()
    });
    assert_eq!(owners, ids, "every box was written by its own claim only");
    // Once the pool is full again (a start under way has a host but is not ready yet): eight
    // claimed boxes and four ready ones, each its own host.
    let p = wait_ready(&s, 4);
    assert_eq!(s.sandbox_hosts().len(), 8 + 4, "{p}");
    assert!(
        hits >= 4,
        "the four ready boxes were claimed: {hits} hits, {p}"
    );
    assert_eq!(
        p["hits"].as_u64().unwrap() + p["misses"].as_u64().unwrap(),
        8,
        "{p}"
    );
    assert_eq!(p["hits"].as_u64().unwrap(), hits, "{p}");
}

/// Claims empty the pool; it refills in the background to its size; `GET /v1/pools` counts
/// hits, misses and starts; a create that matches no pool starts its own box and leaves the
/// pool alone.
#[test]
fn the_pool_refills_and_a_create_that_matches_no_pool_takes_the_ordinary_path() {
    let data = TempDir::new("pool-refill");
    let s = Server::start(&data, &["--pool", "native:size=2,name=small"], None);
    let p = wait_ready(&s, 2);
    assert_eq!(
        (p["name"].clone(), p["size"].clone(), p["backend"].clone()),
        (json!("small"), json!(2), json!("native"))
    );
    assert_eq!(
        (p["hits"].clone(), p["misses"].clone()),
        (json!(0), json!(0))
    );
    let claimed: Vec<String> = (0..3).map(|_| id_of(&s.create("{}"))).collect();
    for id in &claimed {
        assert_eq!(s.sh(id, "echo up"), "up\n");
    }
    let p = wait_ready(&s, 2);
    let (hits, misses) = (p["hits"].as_u64().unwrap(), p["misses"].as_u64().unwrap());
    assert_eq!(hits + misses, 3, "{p}");
    assert!(hits >= 2, "{p}");
    // Every claimed box was replaced by a new start: two at first, one per hit since.
    assert_eq!(p["started"].as_u64().unwrap(), 2 + hits, "{p}");
    assert_eq!(p["failed"], 0, "{p}");

    let hosts = s.sandbox_hosts().len();
    let other = id_of(&s.create(r#"{"policy":{"network":{"mode":"proxy"}}}"#));
    assert_eq!(s.sh(&other, "echo ordinary"), "ordinary\n");
    assert_eq!(create_event_pool(&s, &other), Value::Null);
    let after = pool(&s);
    assert_eq!(
        (
            after["hits"].clone(),
            after["misses"].clone(),
            after["ready"].clone()
        ),
        (p["hits"].clone(), p["misses"].clone(), json!(2)),
        "{after}"
    );
    assert_eq!(
        s.sandbox_hosts().len(),
        hosts + 1,
        "its own box, not a pooled one"
    ); // A graceful stop ends the ready boxes with the others.
    let all = s.sandbox_hosts();
    let mut s = s;
    s.stop();
    assert!(all.iter().all(|h| !alive(*h)), "a box outlived the server");
}

/// SIGKILL the server with a full pool: every pooled box (host, init) and its cgroup go with
/// it; the next start has fresh counters and fills its pools with new boxes.
#[test]
fn a_sigkilled_server_leaves_no_pooled_box_behind_and_restarts_with_fresh_pools() {
    let data = TempDir::new("pool-kill");
    let mut s = Server::start(&data, &["--pool", "native:size=3"], None);
    wait_ready(&s, 3);
    let hosts = s.sandbox_hosts();
    assert_eq!(hosts.len(), 3, "{hosts:?}");
    let all = descendants(&hosts);
    assert!(all.len() >= 3, "each host has its box: {all:?}");
    // SAFETY: kill with integer arguments, on the server this test started.
    unsafe { libc::kill(s.pid(), libc::SIGKILL) };
    let _ = s.serve.child.wait();
    for p in all.iter().chain(&hosts) {
        wait_until("every pooled box is gone", Duration::from_secs(15), || {
            !alive(*p)
        });
    }
    wait_until("their cgroups are removed", Duration::from_secs(10), || {
        let left = leftover_cgroups();
        hosts.iter().all(|h| {
            let cg = format!("airlock-{h}-");
            left.iter().all(|p| !p.to_string_lossy().contains(&cg))
        })
    });
    let key = s.key.clone();
    let s = Server::start(&data, &["--pool", "native:size=3"], Some(&key));
    let p = pool(&s);
    assert_eq!(
        (p["hits"].clone(), p["misses"].clone()),
        (json!(0), json!(0)),
        "{p}"
    );
    let p = wait_ready(&s, 3);
    assert_eq!(p["started"], 3, "{p}");
    let new_hosts = s.sandbox_hosts();
    assert!(
        new_hosts.iter().all(|h| !hosts.contains(h)),
        "new boxes: {new_hosts:?}"
    );
    assert!(new_hosts
        .iter()
        .all(|h| cmdline(*h).contains("sandbox-host")));
    // Each native box is held by the small host program beside airlock (it is built with
    // it), not by a copy of the whole airlock binary.
    for h in &new_hosts {
        let exe = std::fs::read_link(format!("/proc/{h}/exe")).unwrap();
        assert_eq!(
            exe.file_name().and_then(|n| n.to_str()),
            Some(airlock_native::box_host::PROGRAM),
            "host {h} runs {exe:?}"
        );
    }
}

/// Pool specs the server cannot serve are refused at start, naming the bad part.
#[test]
fn bad_pool_specs_and_pools_over_the_memory_budget_are_refused_at_start() {
    let data = TempDir::new("pool-bad");
    for (args, want) in [
        (vec!["--pool", "native:size=0"], "size=\"0\""),
        (
            vec!["--pool", "native:size=2,colour=red"],
            "\"colour\" is not a pool setting",
        ),
        (
            vec!["--pool", "size=1,template=nosuch"],
            "no template \"nosuch\"",
        ),
        (
            vec!["--pool", "native:size=4", "--pool-memory", "16M"],
            "more than --pool-memory 16 MiB",
        ),
        (
            vec!["--pool", "native:size=1", "--pool", "native:size=2,name=b"],
            "make the same boxes",
        ),
    ] {
        let out = std::process::Command::new(common::airlock_bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data.path())
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("listening"),
            "{args:?}"
        );
    }
}

/// E2B's own Python SDK: `Sandbox.create` (internet on, so a proxied box) claims a ready box
/// of a proxied pool, runs a command with its envs, and the pool refills.
#[test]
fn an_e2b_sdk_create_claims_from_a_pool() {
    let python = repo_root().join("target/e2b-clients/py-current/bin/python");
    assert!(
        python.exists(),
        "E2B's SDK is not installed at {}: run scripts/e2b-clients.sh (scripts/test.sh does)",
        python.display()
    );
    let data = TempDir::new("pool-e2b");
    let s = Server::start(&data, &["--pool", "native:size=2,network=proxy"], None);
    let e2b_key = s
        .serve
        .printed_e2b_key
        .clone()
        .expect("the E2B key is printed on first start");
    wait_ready(&s, 2);
    let script = r#"
from e2b import Sandbox
sb = Sandbox.create(envs={"FROM_SDK": "hello"})
r = sb.commands.run("echo $FROM_SDK; ls -A /tmp")
print("ID", sb.sandbox_id)
print("OUT", r.stdout.strip().replace("\n", "|"))
sb.kill()
"#;
    let out = std::process::Command::new(&python)
        .args(["-c", script])
        .env("E2B_API_KEY", &e2b_key)
        .env("E2B_API_URL", &s.base)
        .env("E2B_SANDBOX_URL", &s.base)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("E2B_DOMAIN")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("OUT hello\n") || text.contains("OUT hello|"),
        "{text}"
    );
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("ID "))
        .unwrap()
        .to_string();
    assert_eq!(
        create_event_pool(&s, &id),
        json!({"pool": "native/base/proxy", "hit": true})
    );
    let p = wait_ready(&s, 2);
    assert_eq!(p["hits"], 1, "{p}");
}

fn host_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap()
        .trim()
        .to_string()
}

/// Milliseconds from a create to the end of its first command (`uname -r`), and its output.
fn create_and_run(s: &Server, body: &str) -> (String, u128, String) {
    let t = std::time::Instant::now();
    let id = id_of(&s.create(body));
    let out = s.sh(&id, "uname -r; ls -A /tmp");
    (id, t.elapsed().as_millis(), out)
}

/// A gVisor pool: the claim is a hit, runs under gVisor's kernel on a fresh /tmp, starts far
/// sooner than a gVisor box of its own; the ready boxes wait parked (frozen: an idle Sentry
/// otherwise spends CPU all the time); and a SIGKILLed server leaves no runsc process, mount or
/// cgroup of a ready box behind, frozen as they are.
#[test]
fn a_gvisor_pool_serves_claims_and_dies_with_a_sigkilled_server() {
    let data = TempDir::new("pool-gvisor");
    let mut s = Server::start(&data, &["--pool", "gvisor:size=2"], None);
    wait_ready(&s, 2);
    let (id, pooled_ms, out) = create_and_run(&s, r#"{"backend":"gvisor"}"#);
    assert_eq!(create_event_pool(&s, &id)["hit"], true);
    let lines: Vec<&str> = out.lines().collect();
    assert_ne!(
        lines[0],
        host_release(),
        "uname must come from gVisor: {out}"
    );
    assert_eq!(lines.len(), 1, "/tmp is empty: {out}");
    let (other, own_ms, _) = create_and_run(
        &s,
        r#"{"backend":"gvisor","policy":{"limits":{"pids":4000}}}"#,
    );
    assert_eq!(create_event_pool(&s, &other), Value::Null);
    eprintln!("gVisor create to first output: {pooled_ms} ms from the pool, {own_ms} ms without");
    assert!(
        pooled_ms < own_ms,
        "a claim must be quicker than a start: {pooled_ms} vs {own_ms} ms"
    );
    wait_ready(&s, 2);
    let hosts: Vec<i32> = common::children(s.pid())
        .into_iter()
        .filter(|p| cmdline(*p).contains("gvisor-host"))
        .collect();
    assert_eq!(
        hosts.len(),
        4,
        "two claimed boxes and two ready ones: {hosts:?}"
    );
    // Each box's processes are in one freezer cgroup: the ready boxes' are frozen, the two
    // boxes in use (the claimed one and the one started for `other`) run.
    let states: Vec<Vec<String>> = hosts
        .iter()
        .map(|h| common::freezer_states(&descendants(&[*h]), "airlock-gvisor-"))
        .collect();
    let parked: Vec<i32> = hosts
        .iter()
        .zip(&states)
        .filter(|(_, s)| s.as_slice() == ["FROZEN"])
        .map(|(h, _)| *h)
        .collect();
    let running = states.iter().filter(|s| s.as_slice() == ["THAWED"]).count();
    assert_eq!(
        (parked.len(), running),
        (2, 2),
        "two ready boxes parked and two running, one freezer cgroup each: {states:?}"
    );
    let parked_pids = descendants(&parked);
    let before = common::cpu_ticks(&parked_pids);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        common::cpu_ticks(&parked_pids),
        before,
        "a parked box's processes spent CPU: {parked_pids:?}"
    );
    // The claimed box runs on beside them.
    assert!(s.sh(&id, "echo still").contains("still"));
    let all = descendants(&hosts);
    // SAFETY: kill with integer arguments, on the server this test started.
    unsafe { libc::kill(s.pid(), libc::SIGKILL) };
    let _ = s.serve.child.wait();
    wait_until(
        "every process of every gVisor box is gone",
        Duration::from_secs(20),
        || all.iter().chain(&hosts).all(|p| !alive(*p)),
    );
    wait_until(
        "the boxes' cgroups are removed",
        Duration::from_secs(10),
        || {
            leftover_cgroups()
                .iter()
                .all(|p| !p.to_string_lossy().contains("airlock-gvisor-"))
        },
    );
    assert!(
        !common::host_mounts().contains("airlock-gvisor"),
        "a mount was left behind"
    );
}

/// A microVM pool (each box restored from the VM snapshot where the backend has one): the claim
/// is a hit, runs the guest's kernel, answers far sooner than a VM of its own, and its QEMU
/// dies with a SIGKILLed server.
#[test]
fn a_microvm_pool_serves_claims_and_dies_with_a_sigkilled_server() {
    let data = TempDir::new("pool-microvm");
    let mut s = Server::start(&data, &["--pool", "microvm:size=1,memory=256M"], None);
    wait_ready(&s, 1);
    let body = r#"{"backend":"microvm","policy":{"limits":{"memory":"256M"}}}"#;
    let (id, pooled_ms, out) = create_and_run(&s, body);
    assert_eq!(create_event_pool(&s, &id)["hit"], true);
    let lines: Vec<&str> = out.lines().collect();
    assert_ne!(
        lines[0],
        host_release(),
        "uname must come from the guest: {out}"
    );
    assert_eq!(lines.len(), 1, "/tmp is empty: {out}");
    let own = r#"{"backend":"microvm","policy":{"limits":{"memory":"256M","pids":4000}}}"#;
    let (other, own_ms, _) = create_and_run(&s, own);
    assert_eq!(create_event_pool(&s, &other), Value::Null);
    eprintln!("microVM create to first output: {pooled_ms} ms from the pool, {own_ms} ms without");
    assert!(
        pooled_ms < own_ms,
        "a claim must be quicker than a start: {pooled_ms} vs {own_ms} ms"
    );
    wait_ready(&s, 1);
    let qemus: Vec<i32> = descendants(&[s.pid()])
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.starts_with("qemu-system"))
        })
        .collect();
    // Two claimed VMs and the pool's ready one, and maybe one the microVM backend restored
    // ahead on its own (its warm pool of generic VMs, below the seam).
    assert!((3..=4).contains(&qemus.len()), "{qemus:?}");
    // SAFETY: kill with integer arguments, on the server this test started.
    unsafe { libc::kill(s.pid(), libc::SIGKILL) };
    let _ = s.serve.child.wait();
    wait_until("every QEMU is gone", Duration::from_secs(15), || {
        qemus.iter().all(|p| !alive(*p))
    });
}

/// An unprivileged server keeps pools too: its ready boxes are its own user's, a claim is a
/// hit and runs as that user, and stopping the server ends them.
#[test]
fn an_unprivileged_server_keeps_pools() {
    let (_bin_dir, bin) = common::binary_for_test_user("pool-unpriv-bin");
    let data = TempDir::new("pool-unpriv");
    let serve =
        common::ServeProcess::start_as_test_user(&bin, data.path(), &["--pool", "native:size=2"]);
    let status = std::fs::read_to_string(format!("/proc/{}/status", serve.pid())).unwrap();
    let uid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .unwrap()
        .to_string();
    assert!(
        !uid.split_whitespace().skip(1).any(|u| u == "0"),
        "not root: {uid}"
    );
    let mut s = Server {
        key: serve.printed_key.clone().unwrap(),
        base: serve.base.clone(),
        printed_key: true,
        serve,
    };
    wait_ready(&s, 2);
    let hosts = s.sandbox_hosts();
    assert_eq!(hosts.len(), 2, "{hosts:?}");
    let id = id_of(&s.create("{}"));
    assert_eq!(create_event_pool(&s, &id)["hit"], true);
    let out = s.sh(&id, "ls -A /tmp; echo ok");
    assert_eq!(out, "ok\n");
    s.stop();
    assert!(
        hosts.iter().all(|h| !alive(*h)),
        "a ready box outlived the server"
    );
}
