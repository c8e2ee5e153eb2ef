//! `airlock serve` end to end: a real server process on 127.0.0.1:0 with a temporary data dir,
//! driven over real HTTP. Each test starts its own server and stops it by its pid.
#![allow(clippy::unwrap_used)]

mod common;

use common::api::{cmdline, id_of, wait_until, Server};
use common::{alive, children, descendants, leftover_cgroups, TempDir};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};

/// A deterministic byte stream of `len` bytes, generated as it is read (never held).
struct Pattern {
    block: Vec<u8>,
    pos: u64,
    len: u64,
}

impl Pattern {
    fn new(len: u64) -> Pattern {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let block = (0..(1 << 20))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        Pattern { block, pos: 0, len }
    }
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = (self.len - self.pos) as usize;
        let off = (self.pos % (1 << 20)) as usize;
        let n = buf.len().min(left).min(self.block.len() - off);
        let salt = (self.pos >> 20) as u8;
        for (d, s) in buf[..n].iter_mut().zip(&self.block[off..off + n]) {
            *d = s ^ salt;
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// PUTs `len` pattern bytes to `path`, GETs them back and compares, streaming both ways.
fn round_trip(s: &Server, id: &str, path: &str, len: u64) {
    let resp = ureq::put(&s.url(&format!("/v1/sandboxes/{id}/files?path={path}")))
        .set("Authorization", &format!("Bearer {}", s.key))
        .send(Pattern::new(len))
        .unwrap();
    let v: Value = serde_json::from_str(&resp.into_string().unwrap()).unwrap();
    assert_eq!(v, json!({"path": path, "size": len}));
    let resp = ureq::get(&s.url(&format!("/v1/sandboxes/{id}/files?path={path}")))
        .set("Authorization", &format!("Bearer {}", s.key))
        .call()
        .unwrap();
    let (mut got, mut want) = (resp.into_reader(), Pattern::new(len));
    let (mut a, mut b) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    let mut total = 0u64;
    loop {
        let n = got.read(&mut a).unwrap();
        if n == 0 {
            break;
        }
        want.read_exact(&mut b[..n]).unwrap();
        assert!(a[..n] == b[..n], "bytes differ near offset {total}");
        total += n as u64;
    }
    assert_eq!(total, len);
}

#[test]
fn the_api_key_is_printed_once_and_required() {
    let data = TempDir::new("srv-key");
    let mut s = Server::start(&data, &[], None);
    assert!(s.printed_key);
    assert!(
        s.key.starts_with("al_")
            && s.key.len() == 67
            && s.key[3..].chars().all(|c| c.is_ascii_hexdigit()),
        "{}",
        s.key
    );
    let (status, v) = s.call_as(None, "GET", "/v1/sandboxes", None);
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (401, Some("unauthorized")),
        "{v}"
    );
    let wrong = format!("al_{}", "0".repeat(64));
    assert_eq!(s.call_as(Some(&wrong), "GET", "/v1/sandboxes", None).0, 401);
    assert_eq!(
        s.call_as(Some(&wrong), "POST", "/v1/sandboxes", Some("{}"))
            .0,
        401
    );
    assert_eq!(s.call("GET", "/v1/sandboxes", None), (200, json!([])));
    // The OpenAPI document needs no key and lists every route.
    let (status, doc) = s.call_as(None, "GET", "/openapi.json", None);
    assert_eq!(status, 200);
    for (method, path) in airlock_server_routes() {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} missing"
        );
    }
    s.stop();
    let key = s.key.clone();
    let s2 = Server::start(&data, &[], Some(&key));
    assert!(
        !s2.printed_key,
        "the API key must be printed on the first start only"
    );
    assert_eq!(s2.call("GET", "/v1/sandboxes", None).0, 200);
}

fn airlock_server_routes() -> Vec<(&'static str, &'static str)> {
    vec![
        ("get", "/openapi.json"),
        ("post", "/v1/sandboxes"),
        ("get", "/v1/sandboxes"),
        ("get", "/v1/sandboxes/{id}"),
        ("delete", "/v1/sandboxes/{id}"),
        ("post", "/v1/sandboxes/{id}/timeout"),
        ("post", "/v1/sandboxes/{id}/exec"),
        ("get", "/v1/sandboxes/{id}/files"),
        ("put", "/v1/sandboxes/{id}/files"),
        ("get", "/v1/sandboxes/{id}/files/list"),
        ("get", "/v1/sandboxes/{id}/events"),
        ("post", "/v1/sandboxes/{id}/code"),
        ("post", "/v1/sandboxes/{id}/contexts"),
        ("get", "/v1/sandboxes/{id}/contexts"),
        ("post", "/v1/sandboxes/{id}/contexts/{ctx}/restart"),
        ("delete", "/v1/sandboxes/{id}/contexts/{ctx}"),
    ]
}

#[test]
fn exec_streams_output_as_it_happens_and_state_persists() {
    let data = TempDir::new("srv-exec");
    let s = Server::start(&data, &[], None);
    let created = s.create(r#"{"metadata": {"team": "a"}, "env": {"GREETING": "hello there"}}"#);
    assert_eq!(created["state"], "running", "{created}");
    assert_eq!(created["template"], "base");
    assert!(created["token"].as_str().unwrap().len() > 32);
    let id = id_of(&created);

    let lines = s.exec(&id, json!({"cmd": ["echo", "hi"]}));
    let kinds: Vec<&str> = lines
        .iter()
        .map(|(_, l)| l["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["start", "stdout", "end"], "{lines:?}");
    assert!(lines[0].1["pid"].as_i64().unwrap() > 0);
    assert_eq!(lines[1].1["data"], "hi\n");
    assert_eq!(
        lines[2].1,
        json!({"type": "end", "exit_code": 0, "signal": null, "timed_out": false})
    );

    // Output arrives as it is written, not when the command ends.
    let lines = s.exec(
        &id,
        json!({"cmd": ["sh", "-c", "echo early; sleep 1.5; echo late >&2; exit 3"]}),
    );
    let early = lines
        .iter()
        .find(|(_, l)| l["data"] == "early\n")
        .unwrap()
        .0;
    let end = lines.last().unwrap();
    assert_eq!(
        (end.1["type"].as_str(), end.1["exit_code"].as_i64()),
        (Some("end"), Some(3))
    );
    assert!(
        end.0.duration_since(early) > Duration::from_millis(1000),
        "the first line came only at the end"
    );
    assert!(lines
        .iter()
        .any(|(_, l)| l["type"] == "stderr" && l["data"] == "late\n"));

    // stdin, env (the box's and the command's), cwd, binary output.
    let lines = s.exec(&id, json!({"cmd": ["sh", "-c", "tr a-z A-Z; echo $GREETING $X; pwd"], "stdin": "from stdin\n", "env": {"X": "x1"}}));
    let out: String = lines
        .iter()
        .filter(|(_, l)| l["type"] == "stdout")
        .map(|(_, l)| l["data"].as_str().unwrap())
        .collect();
    assert_eq!(out, "FROM STDIN\nhello there x1\n/tmp\n");
    assert_eq!(s.sh(&id, "mkdir -p /tmp/w"), "");
    assert_eq!(
        s.exec(&id, json!({"cmd": ["pwd"], "cwd": "/tmp/w"}))[1].1["data"],
        "/tmp/w\n"
    );
    let lines = s.exec(&id, json!({"cmd": ["printf", "\\377\\000"]}));
    assert_eq!(lines[1].1["data_b64"], "/wA=", "{lines:?}");
    let lines = s.exec(&id, json!({"cmd": ["sleep", "5"], "timeout": 0.5}));
    assert_eq!(lines.last().unwrap().1["timed_out"], true, "{lines:?}");

    // State persists across calls.
    s.sh(
        &id,
        "echo kept > /tmp/state.txt; cd /tmp && mkdir -p d/e && touch d/e/f",
    );
    assert_eq!(s.sh(&id, "cat /tmp/state.txt"), "kept\n");
    let (status, list) = s.call(
        "GET",
        &format!("/v1/sandboxes/{id}/files/list?path=/tmp/d&depth=2"),
        None,
    );
    assert_eq!(status, 200, "{list}");
    let text = list["entries"].to_string();
    assert!(
        text.contains("\"e\"") || text.contains("/tmp/d/e"),
        "{list}"
    );
    assert!(text.contains("f"), "{list}");

    // The user template works in the writable home.
    let user = s.create(r#"{"template": "user"}"#);
    assert_eq!(
        s.sh(&id_of(&user), "pwd; touch x && echo ok"),
        "/home/user\nok\n"
    );

    // Listing with filters.
    let (_, all) = s.call("GET", "/v1/sandboxes?state=running", None);
    assert_eq!(all.as_array().unwrap().len(), 2);
    let (_, team) = s.call("GET", "/v1/sandboxes?state=running&metadata.team=a", None);
    assert_eq!(
        team.as_array()
            .unwrap()
            .iter()
            .map(id_of)
            .collect::<Vec<_>>(),
        vec![id.clone()]
    );
    let (_, none) = s.call("GET", "/v1/sandboxes?metadata.team=b", None);
    assert_eq!(none, json!([]));

    // Events: state changes, and one per exec.
    let (_, ev) = s.call("GET", &format!("/v1/sandboxes/{id}/events"), None);
    let kinds: Vec<&str> = ev["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"state") && kinds.iter().filter(|k| **k == "exec").count() >= 8,
        "{kinds:?}"
    );
}

#[test]
fn files_round_trip_64_mib() {
    let data = TempDir::new("srv-files");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create("{}"));
    round_trip(&s, &id, "/tmp/big.bin", 64 << 20);
    assert_eq!(
        s.sh(&id, "stat -c %s /tmp/big.bin"),
        format!("{}\n", 64 << 20)
    );
    let (status, v) = s.call(
        "GET",
        &format!("/v1/sandboxes/{id}/files?path=/tmp/missing"),
        None,
    );
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (404, Some("not_found")),
        "{v}"
    );
    let (status, _) = s.call(
        "GET",
        &format!("/v1/sandboxes/{id}/files?path=relative"),
        None,
    );
    assert_eq!(status, 400);
    let (_, ev) = s.call("GET", &format!("/v1/sandboxes/{id}/events"), None);
    assert!(
        ev["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "file_write" && e["detail"]["size"] == 64 << 20),
        "{ev}"
    );
    assert!(
        s.vm_hwm_kib() < 256 * 1024,
        "server peak memory {} KiB",
        s.vm_hwm_kib()
    );
}

#[test]
fn a_1_gib_file_streams_through_in_bounded_memory() {
    let data = TempDir::new("srv-1g");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create(r#"{"policy": {"limits": {"disk": "2G"}}}"#));
    let t = Instant::now();
    round_trip(&s, &id, "/tmp/huge.bin", 1 << 30);
    let hwm = s.vm_hwm_kib();
    assert!(
        hwm < 256 * 1024,
        "server peak memory {hwm} KiB after a 1 GiB round trip"
    );
    eprintln!(
        "1 GiB up and down in {:?}; server VmHWM {hwm} KiB",
        t.elapsed()
    );
}

#[test]
fn a_box_expires_at_its_timeout() {
    let data = TempDir::new("srv-expire");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create(r#"{"timeout": 2}"#));
    assert_eq!(s.sh(&id, "echo up"), "up\n");
    std::thread::sleep(Duration::from_secs(3));
    let (_, v) = s.call("GET", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(v["state"], "expired", "{v}");
    assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
    let (status, v) = s
        .exec_as(&s.key, &id, json!({"cmd": ["true"]}))
        .unwrap_err();
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (409, Some("not_running")),
        "{v}"
    );
    // Extending a live box works; an ended one cannot be extended.
    let other = id_of(&s.create(r#"{"timeout": 2}"#));
    let (status, v) = s.call(
        "POST",
        &format!("/v1/sandboxes/{other}/timeout"),
        Some(r#"{"timeout": 60}"#),
    );
    assert_eq!(status, 200, "{v}");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        s.call("GET", &format!("/v1/sandboxes/{other}"), None).1["state"],
        "running"
    );
    assert_eq!(
        s.call(
            "POST",
            &format!("/v1/sandboxes/{id}/timeout"),
            Some(r#"{"timeout": 60}"#)
        )
        .0,
        409
    );
}

#[test]
fn kill_ends_the_box_and_its_processes() {
    let data = TempDir::new("srv-kill");
    let s = Server::start(&data, &[], None);
    let v = s.create("{}");
    let id = id_of(&v);
    assert!(v.get("init_pid").is_none(), "no host pid in the API: {v}");
    let hosts = s.sandbox_hosts();
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    s.sh(&id, "sleep 1000 > /dev/null 2>&1 &");
    // The box's init, the sleep, the sentinel: everything below the sandbox host.
    let inside = descendants(&hosts);
    assert!(inside.len() >= 2, "{inside:?}");
    let (status, v) = s.call("DELETE", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!((status, v["state"].as_str()), (200, Some("killed")), "{v}");
    wait_until(
        "the box's processes are gone",
        Duration::from_secs(10),
        || inside.iter().all(|p| !alive(*p)),
    );
    wait_until("the sandbox host is gone", Duration::from_secs(10), || {
        s.sandbox_hosts().is_empty()
    });
    let cg = format!("airlock-{}-", hosts[0]);
    assert!(leftover_cgroups()
        .iter()
        .all(|p| !p.to_string_lossy().contains(&cg)));
    let (status, v) = s.call("DELETE", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(status, 409, "{v}");
    let (status, v) = s.call("GET", "/v1/sandboxes/sb_nope", None);
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
}

#[test]
fn a_paused_box_whose_host_is_sigkilled_leaves_no_process_and_no_cgroup() {
    // The host holds the box's cgroups; when it dies without cleaning up, its sentinel must
    // thaw the frozen box, kill it and remove every directory (the pids one empties only once
    // the freezer's is thawed).
    let data = TempDir::new("srv-paused-host-killed");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create("{}"));
    s.sh(&id, "sleep 1000 > /dev/null 2>&1 &");
    let hosts = s.sandbox_hosts();
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    let cg = format!("airlock-{}-", hosts[0]);
    let mine = || -> Vec<std::path::PathBuf> {
        leftover_cgroups()
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(&cg))
            .collect()
    };
    assert!(
        mine()
            .iter()
            .any(|p| p.to_string_lossy().contains("freezer")),
        "a hosted box has a freezer: {:?}",
        mine()
    );
    let inside = descendants(&hosts);
    let (status, v) = s.call("POST", &format!("/v1/sandboxes/{id}/pause"), None);
    assert_eq!(status, 200, "{v}");
    // SAFETY: kill with integer arguments; the pid is this test's server's child.
    unsafe { libc::kill(hosts[0], libc::SIGKILL) };
    wait_until(
        "the box's processes and the sentinel are gone",
        Duration::from_secs(20),
        || inside.iter().all(|p| !alive(*p)),
    );
    // The sentinel removes the directories after the processes are gone (the pids one only
    // once the freezer's is thawed and empty): give it the time it takes, not none.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !mine().is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = mine();
    assert!(left.is_empty(), "cgroups left behind: {left:?}");
}

/// The server's host zygote, started on its first native box.
fn zygotes(server: i32) -> Vec<i32> {
    children(server)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.trim() == "airlock-zygote")
        })
        .collect()
}

/// Rss and Pss (KiB) of the pages of the host program that `pid` holds written: its relocated
/// read-only data and its data (the mappings of `airlock-sandbox-host` with anonymous pages).
/// Pss divides each page by the number of processes that map it, so Rss / Pss is how many
/// processes share them.
fn written_program_pages(pid: i32) -> (u64, u64) {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let (mut total_rss, mut total_pss) = (0, 0);
    let (mut ours, mut rss, mut pss) = (false, 0, 0);
    let field = |line: &str| -> u64 { line.split_whitespace().nth(1).unwrap().parse().unwrap() };
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            ours = line.ends_with("/airlock-sandbox-host");
        } else if ours && first == "Rss:" {
            rss = field(line);
        } else if ours && first == "Pss:" {
            pss = field(line);
        } else if ours && first == "Anonymous:" && field(line) > 0 {
            total_rss += rss;
            total_pss += pss;
        }
    }
    (total_rss, total_pss)
}

#[test]
fn every_native_hosts_written_pages_are_one_copy_cloned_from_the_servers_zygote() {
    // The exec of a box's host used to relocate the host program in every box (~270 KiB of
    // written pages each, shared only with the box's own init). The server now clones every
    // host from one zygote, as its own child: all of them share one copy.
    let data = TempDir::new("srv-zygote");
    let mut s = Server::start(&data, &["--backend", "native"], None);
    let ids: Vec<String> = (0..3).map(|_| id_of(&s.create("{}"))).collect();
    let hosts = s.sandbox_hosts();
    assert_eq!(
        hosts.len(),
        3,
        "each box's host is the server's child: {hosts:?}"
    );
    let zygote = zygotes(s.pid());
    assert_eq!(zygote.len(), 1, "one zygote for the server: {zygote:?}");
    let zygote = zygote[0];
    for h in &hosts {
        let (rss, pss) = written_program_pages(*h);
        eprintln!("cloned host {h}: {rss} KiB of written program pages, {pss} KiB its share");
        // The zygote, three hosts and three inits: 7 sharers; an exec'd host has 2.
        assert!(
            rss > 0 && pss * 4 <= rss,
            "host {h}: {rss} KiB written, {pss} KiB its share: not shared across boxes"
        );
    }

    // Positive control: with the zygote turned off each host is exec'd, and the same measure
    // sees its written pages shared by two processes only (it and its box's init).
    let off_data = TempDir::new("srv-zygote-off");
    let mut off = Server::start_env(
        &off_data,
        &["--backend", "native"],
        &[("AIRLOCK_HOST_ZYGOTE", "off")],
    );
    let off_ids: Vec<String> = (0..3).map(|_| id_of(&off.create("{}"))).collect();
    assert!(zygotes(off.pid()).is_empty(), "no zygote when turned off");
    for h in off.sandbox_hosts() {
        let (rss, pss) = written_program_pages(h);
        eprintln!("exec'd host {h}: {rss} KiB of written program pages, {pss} KiB its share");
        assert!(
            rss > 0 && pss * 3 > rss,
            "exec'd host {h}: {rss} KiB written, {pss} KiB its share"
        );
    }
    for id in &off_ids {
        assert_eq!(off.sh(id, "echo up"), "up\n");
    }
    off.stop();

    // The zygote SIGKILLed: no box ends (each host is the server's child, not the zygote's),
    // and the next box gets a new zygote.
    // SAFETY: kill with integer arguments; the pid is this test's server's child.
    unsafe { libc::kill(zygote, libc::SIGKILL) };
    wait_until("the zygote is gone", Duration::from_secs(10), || {
        !alive(zygote)
    });
    for id in &ids {
        assert_eq!(s.sh(id, "echo up"), "up\n", "box {id} outlived the zygote");
    }
    let fourth = id_of(&s.create("{}"));
    assert_eq!(s.sh(&fourth, "echo up"), "up\n");
    let again = zygotes(s.pid());
    assert_eq!(again.len(), 1, "{again:?}");
    assert_ne!(again[0], zygote);

    // The zygote outlives the server's last box (a pool's claim and delete would otherwise
    // stop it and the refill start another), and serves the next one.
    let zygote = again[0];
    for id in ids.iter().chain([&fourth]) {
        let (status, v) = s.call("DELETE", &format!("/v1/sandboxes/{id}"), None);
        assert_eq!(status, 200, "{v}");
    }
    wait_until("no box is left", Duration::from_secs(10), || {
        s.sandbox_hosts().is_empty()
    });
    assert!(alive(zygote), "the zygote stays between boxes");
    let last = id_of(&s.create("{}"));
    assert_eq!(s.sh(&last, "echo up"), "up\n");
    assert_eq!(
        zygotes(s.pid()),
        vec![zygote],
        "the next box is the same zygote's"
    );

    // The server SIGKILLed: its zygote dies with it (and its boxes, as before).
    let inside = descendants(&[s.pid()]);
    assert!(inside.contains(&zygote), "{inside:?}");
    // SAFETY: kill with integer arguments, on the server this test started.
    unsafe { libc::kill(s.pid(), libc::SIGKILL) };
    let _ = s.serve.child.wait();
    wait_until(
        "the zygote and every box are gone",
        Duration::from_secs(15),
        || inside.iter().all(|p| !alive(*p)),
    );
}

/// The server's one cleanup sentinel, started on its first native box.
fn shared_sentinels(server: i32) -> Vec<i32> {
    children(server)
        .into_iter()
        .filter(|p| cmdline(*p).contains("--sentinel-service"))
        .collect()
}

#[test]
fn a_servers_boxes_share_one_cleanup_sentinel_that_cleans_up_after_a_sigkilled_server() {
    // Each box's host used to fork a sentinel of its own (a process, its page tables and its
    // kernel stack per idle box); the server's boxes now join one. It must still do what each
    // did: clean up after a host that dies, also when the server dies with it, and it must be
    // replaced if it dies itself.
    let data = TempDir::new("srv-shared-sentinel");
    let mut s = Server::start(&data, &[], None);
    let first = id_of(&s.create("{}"));
    let first_host = s.sandbox_hosts();
    let second = id_of(&s.create("{}"));
    let hosts = s.sandbox_hosts();
    assert_eq!((first_host.len(), hosts.len()), (1, 2), "{hosts:?}");
    let second_host = *hosts.iter().find(|h| **h != first_host[0]).unwrap();
    for h in &hosts {
        let below = children(*h);
        assert_eq!(
            below.len(),
            1,
            "a host's only child is its box's init: {below:?}"
        );
    }
    let sentinels = shared_sentinels(s.pid());
    assert_eq!(
        sentinels.len(),
        1,
        "one sentinel for the server: {sentinels:?}"
    );
    let sentinel = sentinels[0];
    assert_eq!(
        std::fs::read_to_string(format!("/proc/{sentinel}/comm"))
            .unwrap()
            .trim(),
        "airlock-cleanup"
    );

    // A host SIGKILLed: the shared sentinel kills its box and removes its cgroups.
    for id in [&first, &second] {
        s.sh(id, "sleep 1000 > /dev/null 2>&1 &");
    }
    let victim = first_host[0];
    let inside = descendants(&[victim]);
    assert!(inside.len() >= 2, "{inside:?}");
    let cg = format!("airlock-{victim}-");
    assert!(leftover_cgroups()
        .iter()
        .any(|p| p.to_string_lossy().contains(&cg)));
    // SAFETY: kill with integer arguments; the pid is this test's server's child.
    unsafe { libc::kill(victim, libc::SIGKILL) };
    wait_until(
        "the dead host's box is gone",
        Duration::from_secs(15),
        || inside.iter().all(|p| !alive(*p)),
    );
    wait_until("its cgroups are removed", Duration::from_secs(15), || {
        leftover_cgroups()
            .iter()
            .all(|p| !p.to_string_lossy().contains(&cg))
    });
    assert!(alive(sentinel), "the sentinel serves the other boxes on");

    // The sentinel itself SIGKILLed: the next box gets a new one.
    // SAFETY: kill with integer arguments; the pid is this test's server's child.
    unsafe { libc::kill(sentinel, libc::SIGKILL) };
    wait_until("the sentinel is gone", Duration::from_secs(10), || {
        !alive(sentinel)
    });
    // A box whose sentinel died still cleans up after itself when it ends normally.
    let (status, v) = s.call("DELETE", &format!("/v1/sandboxes/{second}"), None);
    assert_eq!(status, 200, "{v}");
    let cg = format!("airlock-{second_host}-");
    wait_until(
        "the second box's cgroups are removed",
        Duration::from_secs(15),
        || {
            leftover_cgroups()
                .iter()
                .all(|p| !p.to_string_lossy().contains(&cg))
        },
    );
    let _third = id_of(&s.create("{}"));
    let sentinels = shared_sentinels(s.pid());
    assert_eq!(sentinels.len(), 1, "{sentinels:?}");
    let replacement = sentinels[0];
    assert_ne!(replacement, sentinel);
    let third_host = *s
        .sandbox_hosts()
        .iter()
        .find(|h| !hosts.contains(h))
        .expect("the third box's host");
    let third_inside = descendants(&[third_host]);

    // The server SIGKILLed: its hosts die with it, the sentinel cleans up after the box that
    // joined it, and then ends too.
    // SAFETY: kill with integer arguments, on the server this test started.
    unsafe { libc::kill(s.pid(), libc::SIGKILL) };
    let _ = s.serve.child.wait();
    wait_until("every box is gone", Duration::from_secs(15), || {
        third_inside.iter().chain(&[third_host]).all(|p| !alive(*p))
    });
    let cg = format!("airlock-{third_host}-");
    wait_until("its cgroups are removed", Duration::from_secs(15), || {
        leftover_cgroups()
            .iter()
            .all(|p| !p.to_string_lossy().contains(&cg))
    });
    wait_until(
        "the sentinel ends once no box is left",
        Duration::from_secs(15),
        || !alive(replacement),
    );
}

/// What the server's descriptor reserve assumes (airlock-server's limits.rs keeps three per
/// box that may run): a running native box holds at most two of the server's descriptors, and
/// they are given back when it ends.
#[test]
fn a_running_box_holds_at_most_two_of_the_servers_descriptors() {
    const BOXES: usize = 12;
    let data = TempDir::new("serve-fds");
    let mut s = Server::start(&data, &["--max-running", "16"], None);
    // The server's descriptors but its TCP connections: how many the test's HTTP client holds
    // open at a time (a pooled connection, one not yet closed) is not the boxes' doing.
    let open = |pid: i32| {
        let mut tcp = std::collections::HashSet::new();
        for table in ["tcp", "tcp6"] {
            let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap();
            for line in text.lines().skip(1) {
                if let Some(inode) = line.split_whitespace().nth(9) {
                    tcp.insert(format!("socket:[{inode}]"));
                }
            }
        }
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_link(e.path())
                    .map(|t| !tcp.contains(t.to_string_lossy().as_ref()))
                    .unwrap_or(false)
            })
            .count()
    };
    // One box first, so what the server opens once (its store, its starter threads) is open.
    let first = id_of(&s.create("{}"));
    assert_eq!(s.sh(&first, "echo up"), "up\n");
    let before = open(s.pid());
    let ids: Vec<String> = (0..BOXES).map(|_| id_of(&s.create("{}"))).collect();
    for id in &ids {
        assert_eq!(
            s.sh(id, "echo up"),
            "up\n",
            "positive control: box {id} runs"
        );
    }
    let held = open(s.pid()) - before;
    assert!(
        held <= 2 * BOXES,
        "{BOXES} boxes hold {held} of the server's descriptors"
    );
    for id in &ids {
        let (status, _) = s.call("DELETE", &format!("/v1/sandboxes/{id}"), None);
        assert!(status < 300, "{status}");
    }
    wait_until(
        "the ended boxes' descriptors are closed",
        Duration::from_secs(10),
        || open(s.pid()) <= before,
    );
    s.stop();
}

#[test]
fn creates_past_max_running_queue_and_start_in_order() {
    let data = TempDir::new("srv-queue");
    let s = Server::start(&data, &["--max-running", "2"], None);
    let a = id_of(&s.create("{}"));
    let _b = id_of(&s.create("{}"));
    let t = Instant::now();
    let c = s.create("{}");
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "a queued create must not wait for a slot"
    );
    assert_eq!(c["state"], "queued", "{c}");
    assert_eq!(c["queue_position"], 1);
    let c = id_of(&c);
    let (status, v) = s.exec_as(&s.key, &c, json!({"cmd": ["true"]})).unwrap_err();
    assert_eq!(status, 409, "{v}");
    s.call("DELETE", &format!("/v1/sandboxes/{a}"), None);
    wait_until("the queued box runs", Duration::from_secs(15), || {
        s.call("GET", &format!("/v1/sandboxes/{c}"), None).1["state"] == "running"
    });
    assert_eq!(s.sh(&c, "echo ran"), "ran\n");
}

#[test]
fn fifty_boxes_at_once() {
    let data = TempDir::new("srv-fifty");
    let s = std::sync::Arc::new(Server::start(&data, &["--max-running", "64"], None));
    let t = Instant::now();
    let workers: Vec<_> = (0..50)
        .map(|i| {
            let s = std::sync::Arc::clone(&s);
            std::thread::spawn(move || {
                let id = id_of(&s.create(&format!(r#"{{"metadata": {{"n": "{i}"}}}}"#)));
                let lines = s.exec(&id, json!({"cmd": ["true"]}));
                assert_eq!(lines.last().unwrap().1["exit_code"], 0, "{lines:?}");
                id
            })
        })
        .collect();
    let ids: Vec<String> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let (_, running) = s.call("GET", "/v1/sandboxes?state=running", None);
    assert_eq!(running.as_array().unwrap().len(), 50);
    for id in &ids {
        assert_eq!(
            s.call("DELETE", &format!("/v1/sandboxes/{id}"), None).0,
            200
        );
    }
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "50 boxes took {:?}",
        t.elapsed()
    );
    wait_until(
        "every sandbox host is gone",
        Duration::from_secs(20),
        || s.sandbox_hosts().is_empty(),
    );
}

#[test]
fn a_sandbox_token_opens_its_own_box_only() {
    let data = TempDir::new("srv-token");
    let s = Server::start(&data, &[], None);
    let a = s.create("{}");
    let b = s.create("{}");
    let (ida, idb, ta) = (
        id_of(&a),
        id_of(&b),
        a["token"].as_str().unwrap().to_string(),
    );
    assert!(
        s.call("GET", &format!("/v1/sandboxes/{ida}"), None)
            .1
            .get("token")
            .is_none(),
        "the token is shown at creation only"
    );
    assert_eq!(
        s.call_as(Some(&ta), "GET", &format!("/v1/sandboxes/{ida}"), None)
            .0,
        200
    );
    let lines = s
        .exec_as(&ta, &ida, json!({"cmd": ["echo", "mine"]}))
        .unwrap();
    assert_eq!(lines[1].1["data"], "mine\n");
    let (status, v) = s.call_as(Some(&ta), "GET", &format!("/v1/sandboxes/{idb}"), None);
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (403, Some("forbidden")),
        "{v}"
    );
    assert_eq!(
        s.exec_as(&ta, &idb, json!({"cmd": ["true"]}))
            .unwrap_err()
            .0,
        403
    );
    assert_eq!(
        s.call_as(Some(&ta), "DELETE", &format!("/v1/sandboxes/{idb}"), None)
            .0,
        403
    );
    assert_eq!(s.call_as(Some(&ta), "GET", "/v1/sandboxes", None).0, 403);
    assert_eq!(
        s.call_as(Some(&ta), "POST", "/v1/sandboxes", Some("{}")).0,
        403
    );
    assert_eq!(
        s.call_as(
            Some("sbt_forged"),
            "GET",
            &format!("/v1/sandboxes/{ida}"),
            None
        )
        .0,
        401
    );
    assert_eq!(
        s.call("GET", &format!("/v1/sandboxes/{idb}"), None).1["state"],
        "running"
    );
}

#[test]
fn a_restart_marks_the_old_boxes_ended_and_leaves_nothing_running() {
    let data = TempDir::new("srv-restart");
    let mut s = Server::start(&data, &[], None);
    let (a, _b) = (s.create("{}"), s.create("{}"));
    let hosts = s.sandbox_hosts();
    assert_eq!(hosts.len(), 2, "{hosts:?}");
    let inits = descendants(&hosts);
    assert!(inits.len() >= 2, "{inits:?}");
    s.stop();
    for p in inits.iter().chain(&hosts) {
        wait_until("the old boxes are gone", Duration::from_secs(10), || {
            !alive(*p)
        });
    }
    for h in &hosts {
        let cg = format!("airlock-{h}-");
        assert!(
            leftover_cgroups()
                .iter()
                .all(|p| !p.to_string_lossy().contains(&cg)),
            "cgroup {cg} left behind"
        );
    }
    let key = s.key.clone();
    let s = Server::start(&data, &[], Some(&key));
    let (_, list) = s.call("GET", "/v1/sandboxes", None);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    for v in list {
        assert!(v["state"] == "killed" || v["state"] == "dead", "{v}");
        assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
    }
    assert_eq!(
        s.call("GET", "/v1/sandboxes?state=running", None).1,
        json!([])
    );
    assert!(s.sandbox_hosts().is_empty());
    let (status, v) = s
        .exec_as(&key, &id_of(&a), json!({"cmd": ["true"]}))
        .unwrap_err();
    assert_eq!(status, 409, "{v}");
}

#[test]
fn an_unknown_backend_is_a_typed_400_and_native_is_the_default() {
    let data = TempDir::new("srv-backend");
    let s = Server::start(&data, &[], None);
    let (status, v) = s.call("POST", "/v1/sandboxes", Some(r#"{"backend": "qemu"}"#));
    assert_eq!(status, 400, "{v}");
    assert!(
        s.sandbox_hosts().is_empty(),
        "no box was started for a refused create"
    );
    let (status, v) = s.call("POST", "/v1/sandboxes", Some(r#"{"backend": "native"}"#));
    assert_eq!(status, 201, "{v}");
    // The server's default must be a backend it has.
    let other = TempDir::new("srv-backend-default");
    let out = std::process::Command::new(common::airlock_bin())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "qemu",
            "--data-dir",
        ])
        .arg(other.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--backend") && err.contains("qemu"), "{err}");
}

/// The gVisor box behind the same REST API: exec runs under the Sentry; killing the server
/// with SIGKILL leaves no runsc, gofer or sandbox process, no mount and no cgroup behind.
#[test]
fn a_gvisor_sandbox_serves_rest_and_dies_with_a_sigkilled_server() {
    let data = TempDir::new("srv-gvisor");
    let mut s = Server::start(&data, &[], None);
    let (status, v) = s.call("POST", "/v1/sandboxes", Some(r#"{"backend": "gvisor"}"#));
    assert_eq!(
        status, 201,
        "a gVisor box must start here (apt-get install runsc): {v}"
    );
    let id = id_of(&v);
    let out = s.sh(&id, "id -u; uname -r");
    let host_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "1000", "{out}");
    assert_ne!(
        lines[1],
        host_release.trim(),
        "uname must come from gVisor's kernel"
    );
    let (status, v) = s.call("GET", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(status, 200, "{v}");
    let hosts: Vec<i32> = children(s.pid())
        .into_iter()
        .filter(|p| cmdline(*p).contains("gvisor-host"))
        .collect();
    assert_eq!(hosts.len(), 1, "one gvisor-host per box");
    let all = common::descendants(&hosts);
    assert!(
        all.iter().any(|p| cmdline(*p).contains("runsc-sandbox")),
        "{:?}",
        all.iter().map(|p| cmdline(*p)).collect::<Vec<_>>()
    );
    // SAFETY: kill with integer arguments, on the server this test started.
    unsafe { libc::kill(s.pid(), libc::SIGKILL) };
    wait_until(
        "every process of the gVisor box is gone",
        Duration::from_secs(15),
        || all.iter().all(|p| !common::alive(*p)),
    );
    wait_until(
        "the box's cgroup is removed",
        Duration::from_secs(10),
        || {
            common::leftover_cgroups()
                .iter()
                .all(|p| !p.to_string_lossy().contains("airlock-gvisor-"))
        },
    );
    assert!(
        !common::host_mounts().contains("airlock-gvisor"),
        "a mount was left behind"
    );
    let left: Vec<_> = std::fs::read_dir("/run/airlock-gvisor")
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "the bundle directory was left behind: {left:?}"
    );
    s.stop();
}

/// A sandbox created over REST with a stored template runs on that template's root under every
/// backend that has one, not only the native box: the server starts a box again from its stored
/// policy, and the template must come back with it (it once came back as the host's root for
/// every kind but native).
#[test]
fn a_rest_sandbox_runs_on_its_template_root_under_every_backend() {
    let data = TempDir::new("srv-tmpl");
    let image = TempDir::new("srv-tmpl-img");
    let oci = image.join("oci");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let made = std::process::Command::new("python3")
        .arg(repo.join("benches/template_image.py"))
        .arg(&oci)
        .args(["sh", "cat"])
        .status()
        .unwrap();
    assert!(made.success(), "benches/template_image.py failed");
    let import = std::process::Command::new(common::airlock_bin())
        .args(["template", "import", "--name", "tiny", "--data-dir"])
        .arg(data.path())
        .arg(&oci)
        .output()
        .unwrap();
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );
    let mut s = Server::start(&data, &[], None);
    for backend in ["native", "gvisor", "microvm"] {
        let body = json!({"backend": backend, "template": "tiny"}).to_string();
        let (status, v) = s.call("POST", "/v1/sandboxes", Some(&body));
        assert_eq!(status, 201, "{backend}: {v}");
        let id = id_of(&v);
        // Only the template's two programs: the host's /usr has hundreds.
        let out = s.sh(&id, "echo /usr/bin/*");
        assert_eq!(out.trim(), "/usr/bin/cat /usr/bin/sh", "{backend}");
        let (status, v) = s.call("DELETE", &format!("/v1/sandboxes/{id}"), None);
        assert!(status == 204 || status == 200, "{backend}: {status} {v}");
    }
    s.stop();
}

#[test]
fn bad_input_is_refused_with_400() {
    let data = TempDir::new("srv-bad");
    let s = Server::start(&data, &[], None);
    let invalid = |status: u16, v: &Value| {
        assert_eq!(
            (status, v["error"]["code"].as_str()),
            (400, Some("invalid")),
            "{v}"
        );
        assert!(v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    };
    for body in [
        "{",
        "[1,2]",
        r#"{"templat": "base"}"#,
        r#"{"template": "gpu"}"#,
        r#"{"timeout": -5}"#,
        r#"{"timeout": 0}"#,
        r#"{"policy": {"filesystem": {"read": ["/etc"]}}}"#,
        r#"{"policy": {"limits": {"memory": "lots"}}}"#,
        r#"{"policy": {"network": {"allow_domain": ["x.example"]}}}"#,
        r#"{"metadata": {"k": 1}}"#,
    ] {
        let (status, v) = s.call("POST", "/v1/sandboxes", Some(body));
        invalid(status, &v);
    }
    let id = id_of(&s.create("{}"));
    for body in [
        r#"{"cmd": []}"#,
        r#"{"cmd": "ls"}"#,
        r#"{"cmd": ["ls"], "bogus": 1}"#,
        "not json",
    ] {
        let (status, v) = s
            .exec_as(
                &s.key,
                &id,
                serde_json::from_str(body).unwrap_or(Value::String(body.into())),
            )
            .unwrap_err();
        invalid(status, &v);
    }
    let (status, v) = s.call(
        "POST",
        &format!("/v1/sandboxes/{id}/timeout"),
        Some(r#"{"seconds": 5}"#),
    );
    invalid(status, &v);
    let (status, v) = s.call("GET", "/v1/sandboxes?state=sleepy", None);
    invalid(status, &v);
    // The server is still fine.
    assert_eq!(s.sh(&id, "echo fine"), "fine\n");
}

#[test]
fn a_client_that_goes_away_kills_its_command() {
    let data = TempDir::new("srv-gone");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create("{}"));
    let resp = ureq::post(&s.url(&format!("/v1/sandboxes/{id}/exec")))
        .set("Authorization", &format!("Bearer {}", s.key))
        .send_string(&json!({"cmd": ["sh", "-c", "while true; do echo tick; echo x >> /tmp/ticks; sleep 0.05; done"]}).to_string())
        .unwrap();
    let mut lines = BufReader::new(resp.into_reader()).lines();
    assert!(lines.next().unwrap().unwrap().contains("start"));
    assert!(lines.next().unwrap().unwrap().contains("tick"));
    drop(lines);
    std::thread::sleep(Duration::from_secs(1));
    let before = s.sh(&id, "wc -l < /tmp/ticks");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        s.sh(&id, "wc -l < /tmp/ticks"),
        before,
        "the command kept running after its client left"
    );
    let (_, ev) = s.call("GET", &format!("/v1/sandboxes/{id}/events"), None);
    assert!(
        ev["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "exec" && e["detail"]["signal"] == 9),
        "{ev}"
    );
}

#[test]
fn network_decisions_of_a_proxied_box_reach_the_store() {
    // A loopback server of the test's own, reached by name through the box's proxy.
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
    let data = TempDir::new("srv-net");
    let s = Server::start(&data, &[], None);
    let body = json!({
        "policy": {"network": {"mode": "proxy", "allow_domain": ["svc.test"], "allow_ip": [format!("127.0.0.1:{port}")], "map_host": ["svc.test=127.0.0.1"]}}
    });
    let id = id_of(&s.create(&body.to_string()));
    let out = s.sh(&id, &format!("curl -sS http://svc.test:{port}/; curl -s -o /dev/null -w '%{{http_code}}' http://other.test:{port}/"));
    assert!(out.contains("ok") && out.contains("403"), "{out}");
    site.join().unwrap();
    let mut found = Vec::new();
    wait_until(
        "the network decisions reach the store",
        Duration::from_secs(10),
        || {
            let (status, v) = s.call("GET", &format!("/v1/sandboxes/{id}/events"), None);
            assert_eq!(status, 200, "{v}");
            found = v["events"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["kind"] == "network")
                .cloned()
                .collect();
            found.len() >= 2
        },
    );
    let decisions: Vec<(String, String)> = found
        .iter()
        .map(|e| {
            (
                e["detail"]["host"].as_str().unwrap_or("").to_string(),
                e["detail"]["decision"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(
        decisions.contains(&("svc.test".into(), "allow".into())),
        "{decisions:?}"
    );
    assert!(
        decisions.contains(&("other.test".into(), "deny".into())),
        "{decisions:?}"
    );
}

/// Runs code; returns every line of the NDJSON stream.
fn code(s: &Server, id: &str, body: Value) -> Vec<Value> {
    let resp = ureq::post(&s.url(&format!("/v1/sandboxes/{id}/code")))
        .set("Authorization", &format!("Bearer {}", s.key))
        .send_string(&body.to_string())
        .unwrap_or_else(|e| panic!("code {body}: {e}"));
    assert_eq!(resp.content_type(), "application/x-ndjson");
    BufReader::new(resp.into_reader())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect()
}

/// The text/plain of the result line.
fn result_text(lines: &[Value]) -> String {
    let r = lines
        .iter()
        .find(|l| l["type"] == "result")
        .unwrap_or_else(|| panic!("no result: {lines:?}"));
    r["data"]["text/plain"].as_str().unwrap().to_string()
}

fn status_of(lines: &[Value]) -> String {
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "end", "{lines:?}");
    end["status"].as_str().unwrap().to_string()
}

fn stdout_of(lines: &[Value]) -> String {
    lines
        .iter()
        .filter(|l| l["type"] == "stdout")
        .map(|l| l["text"].as_str().unwrap())
        .collect()
}

#[test]
fn code_keeps_state_streams_output_and_reports_errors() {
    let data = TempDir::new("srv-code");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create("{}"));
    let first = code(&s, &id, json!({"code": "x = 41"}));
    assert_eq!(status_of(&first), "ok", "{first:?}");
    let second = code(&s, &id, json!({"code": "x + 1"}));
    assert_eq!(result_text(&second), "42");
    assert_eq!(second.last().unwrap()["execution_count"], 2, "{second:?}");
    // Output comes in order.
    let out = code(&s, &id, json!({"code": "for i in range(5):\n    print(i)"}));
    assert_eq!(stdout_of(&out), "0\n1\n2\n3\n4\n");
    // Each chunk carries the time the interpreter saw it, in order.
    let times: Vec<f64> = out
        .iter()
        .filter(|l| l["type"] == "stdout")
        .map(|l| l["time"].as_f64().expect("a timestamp"))
        .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]) && times.iter().all(|t| (now - t).abs() < 60.0),
        "{times:?}"
    );
    // An exception names the user's line.
    let err = code(
        &s,
        &id,
        json!({"code": "a = 1\nraise ValueError('bad thing')"}),
    );
    assert_eq!(status_of(&err), "error");
    let e = err.iter().find(|l| l["type"] == "error").unwrap();
    assert_eq!(
        (e["name"].as_str(), e["value"].as_str()),
        (Some("ValueError"), Some("bad thing")),
        "{e}"
    );
    assert!(
        e["traceback"].as_array().unwrap().iter().any(|l| l
            .as_str()
            .unwrap()
            .contains("raise ValueError('bad thing')")),
        "{e}"
    );
    // An endless loop is interrupted at its timeout; the state survives.
    let t0 = Instant::now();
    let looped = code(&s, &id, json!({"code": "while True: pass", "timeout": 1}));
    assert_eq!(status_of(&looped), "interrupted", "{looped:?}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(result_text(&code(&s, &id, json!({"code": "x"}))), "41");
    // The audit trail has the executions.
    let (_, ev) = s.call("GET", &format!("/v1/sandboxes/{id}/events"), None);
    assert!(
        ev["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "code")
            .count()
            >= 5,
        "{ev}"
    );
    // An unknown context or language is refused.
    let (status, v) = s.call(
        "POST",
        &format!("/v1/sandboxes/{id}/code"),
        Some(r#"{"code": "1", "context": "nope"}"#),
    );
    assert_eq!(status, 404, "{v}");
    let (status, v) = s.call(
        "POST",
        &format!("/v1/sandboxes/{id}/code"),
        Some(r#"{"code": "1", "language": "cobol"}"#),
    );
    assert_eq!(status, 400, "{v}");
}

#[test]
fn code_shows_a_matplotlib_figure_as_png() {
    let data = TempDir::new("srv-plot");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create("{}"));
    let lines = code(
        &s,
        &id,
        json!({"code": "import matplotlib.pyplot as plt; plt.figure(figsize=(4,3), dpi=100); plt.plot([1,2])", "timeout": 120}),
    );
    assert_eq!(status_of(&lines), "ok", "{lines:?}");
    let shown = lines
        .iter()
        .find(|l| l["type"] == "display" && l["data"]["image/png"].is_string())
        .unwrap_or_else(|| panic!("no png: {lines:?}"));
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shown["data"]["image/png"].as_str().unwrap())
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (400, 300));
}

#[test]
fn contexts_are_separate_restartable_and_per_language() {
    let data = TempDir::new("srv-ctx");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create("{}"));
    let path = format!("/v1/sandboxes/{id}/contexts");
    let (status, a) = s.call("POST", &path, Some(r#"{"language": "python"}"#));
    assert_eq!(status, 201, "{a}");
    let (_, b) = s.call(
        "POST",
        &path,
        Some(r#"{"language": "python", "cwd": "/tmp"}"#),
    );
    let (a, b) = (id_of(&a), id_of(&b));
    assert_ne!(a, b);
    code(&s, &id, json!({"code": "v = 'in a'", "context": a}));
    let other = code(&s, &id, json!({"code": "v", "context": b}));
    assert_eq!(status_of(&other), "error", "{other:?}");
    assert!(
        other
            .iter()
            .any(|l| l["type"] == "error" && l["name"] == "NameError"),
        "{other:?}"
    );
    assert_eq!(
        result_text(&code(&s, &id, json!({"code": "v", "context": a}))),
        "'in a'"
    );
    assert_eq!(
        result_text(&code(
            &s,
            &id,
            json!({"code": "import os; os.getcwd()", "context": b})
        )),
        "'/tmp'"
    );
    // Restart: same id, state gone.
    let (status, r) = s.call("POST", &format!("{path}/{a}/restart"), None);
    assert_eq!((status, r["id"].as_str()), (200, Some(a.as_str())), "{r}");
    let gone = code(&s, &id, json!({"code": "v", "context": a}));
    assert_eq!(status_of(&gone), "error", "{gone:?}");
    // JavaScript and Bash keep state too.
    code(&s, &id, json!({"code": "let y = 1", "language": "js"}));
    assert!(result_text(&code(&s, &id, json!({"code": "y + 1", "language": "js"}))).contains('2'));
    code(&s, &id, json!({"code": "cd /tmp", "language": "bash"}));
    assert_eq!(
        stdout_of(&code(&s, &id, json!({"code": "pwd", "language": "bash"}))),
        "/tmp\n"
    );
    let (_, listed) = s.call("GET", &path, None);
    let mut ids: Vec<&str> = listed["contexts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut want = vec![a.as_str(), b.as_str(), "bash", "js"];
    want.sort();
    assert_eq!(ids, want, "{listed}");
    assert_eq!(s.call("DELETE", &format!("{path}/{b}"), None).0, 204);
    assert_eq!(s.call("DELETE", &format!("{path}/{b}"), None).0, 404);
    let (status, v) = s.call(
        "POST",
        &format!("/v1/sandboxes/{id}/code"),
        Some(&json!({"code": "1", "context": b}).to_string()),
    );
    assert_eq!(status, 404, "{v}");
}

#[test]
fn code_is_interrupted_when_its_client_leaves_and_a_dead_context_is_replaced() {
    let data = TempDir::new("srv-code-gone");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create("{}"));
    code(&s, &id, json!({"code": "x = 41"}));
    let resp = ureq::post(&s.url(&format!("/v1/sandboxes/{id}/code")))
        .set("Authorization", &format!("Bearer {}", s.key))
        .send_string(&json!({"code": "import time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.05)"}).to_string())
        .unwrap();
    let mut lines = BufReader::new(resp.into_reader()).lines();
    assert!(lines.next().unwrap().unwrap().contains("tick"));
    drop(lines);
    // The box is free again (an uninterrupted loop would hold it forever), with the state kept.
    let t0 = Instant::now();
    assert_eq!(result_text(&code(&s, &id, json!({"code": "x"}))), "41");
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    // The interrupted cell's event is recorded when the server notices its client left, which
    // may come after the next cell has run: wait for it (bounded).
    let interrupted = |ev: &serde_json::Value| {
        ev["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "code" && e["detail"]["status"] == "interrupted")
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let ev = loop {
        let (_, ev) = s.call("GET", &format!("/v1/sandboxes/{id}/events"), None);
        if interrupted(&ev) || Instant::now() >= deadline {
            break ev;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(interrupted(&ev), "{ev}");
    // A context whose process dies says so and is replaced on the next call.
    let died = code(
        &s,
        &id,
        json!({"code": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"}),
    );
    assert!(
        died.iter()
            .any(|l| l["type"] == "error" && l["name"] == "ContextDied"),
        "{died:?}"
    );
    assert_eq!(status_of(&died), "error");
    let fresh = code(&s, &id, json!({"code": "x"}));
    assert!(
        fresh
            .iter()
            .any(|l| l["type"] == "error" && l["name"] == "NameError"),
        "{fresh:?}"
    );
    assert_eq!(result_text(&code(&s, &id, json!({"code": "1 + 1"}))), "2");
}

#[test]
fn one_box_serves_commands_and_files_at_the_same_time() {
    let data = TempDir::new("srv-concurrent");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create("{}"));
    std::thread::scope(|scope| {
        // A command that runs for a while and reports when it ends...
        let long = scope.spawn(|| {
            let lines = s.exec(
                &id,
                json!({"cmd": ["sh", "-c", "echo started; sleep 3; echo done"]}),
            );
            (Instant::now(), lines)
        });
        wait_until("the long command to start", Duration::from_secs(10), || {
            s.call(
                "GET",
                &format!("/v1/sandboxes/{id}/files/list?path=/tmp"),
                None,
            )
            .0 == 200
        });
        // ...while a second command, a file write and a read on the same box finish meanwhile.
        let t0 = Instant::now();
        assert_eq!(
            s.sh(&id, "echo meanwhile > /tmp/m.txt; cat /tmp/m.txt"),
            "meanwhile\n"
        );
        round_trip(&s, &id, "/tmp/concurrent.bin", 1 << 20);
        let quick_done = Instant::now();
        assert!(
            quick_done.duration_since(t0) < Duration::from_secs(2),
            "the box waited for the long command"
        );
        let (long_done, lines) = long.join().unwrap();
        assert!(
            long_done > quick_done,
            "the long command ended before the others started"
        );
        let out: String = lines
            .iter()
            .filter(|(_, l)| l["type"] == "stdout")
            .map(|(_, l)| l["data"].as_str().unwrap())
            .collect();
        assert_eq!(out, "started\ndone\n");
    });
}

#[test]
fn a_client_that_leaves_a_silent_execution_interrupts_it() {
    let data = TempDir::new("srv-code-leave");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create("{}"));
    code(&s, &id, json!({"code": "kept = 'yes'"}));
    // The client gives up after 1 s on code that prints nothing for 30 s.
    let agent = ureq::AgentBuilder::new()
        .timeout_read(Duration::from_secs(1))
        .build();
    let resp = agent
        .post(&s.url(&format!("/v1/sandboxes/{id}/code")))
        .set("Authorization", &format!("Bearer {}", s.key))
        .send_string(&json!({"code": "import time\ntime.sleep(30)"}).to_string())
        .unwrap();
    let mut body = String::new();
    assert!(
        resp.into_reader().read_to_string(&mut body).is_err(),
        "the read should time out: {body}"
    );
    // The context was interrupted, not left sleeping: the next snippet runs at once, state kept.
    let t0 = Instant::now();
    let lines = code(&s, &id, json!({"code": "kept"}));
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "the sleeping execution held the context for {:?}",
        t0.elapsed()
    );
    assert_eq!(result_text(&lines), "'yes'");
}

#[test]
fn running_code_holds_up_neither_other_calls_nor_a_kill() {
    let data = TempDir::new("srv-code-kill");
    let s = Server::start(&data, &[], None);
    let id = id_of(&s.create("{}"));
    code(&s, &id, json!({"code": "1"}));
    std::thread::scope(|scope| {
        // Code that never ends on its own...
        let spinning = scope.spawn(|| {
            let resp = ureq::post(&s.url(&format!("/v1/sandboxes/{id}/code")))
                .set("Authorization", &format!("Bearer {}", s.key))
                .send_string(
                    &json!({"code": "import time\nwhile True: time.sleep(0.05)"}).to_string(),
                );
            let mut body = String::new();
            if let Ok(r) = resp {
                let _ = r.into_reader().read_to_string(&mut body);
            }
            body
        });
        std::thread::sleep(Duration::from_millis(500));
        // ...while a command and a file listing on the same box answer at once,
        let t0 = Instant::now();
        assert_eq!(s.sh(&id, "echo alongside"), "alongside\n");
        assert_eq!(
            s.call(
                "GET",
                &format!("/v1/sandboxes/{id}/files/list?path=/tmp"),
                None
            )
            .0,
            200
        );
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "the box waited for the running code: {:?}",
            t0.elapsed()
        );
        // and a kill really ends the box (its host process and everything in it) promptly.
        let hosts = s.sandbox_hosts();
        assert_eq!(hosts.len(), 1, "{hosts:?}");
        let (status, _) = s.call("DELETE", &format!("/v1/sandboxes/{id}"), None);
        assert!(status < 300, "{status}");
        wait_until(
            "the killed box's host to exit",
            Duration::from_secs(10),
            || !alive(hosts[0]),
        );
        let body = spinning.join().unwrap();
        assert!(
            !body.contains("\"type\":\"end\"") || body.contains("error"),
            "the execution did not end normally: {body}"
        );
    });
}
