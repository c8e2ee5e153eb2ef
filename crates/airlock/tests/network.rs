//! End-to-end tests of the egress proxy (`--net proxy`), through the real `airlock` binary: real
//! clients inside a box (curl, Python, git, pip, npm) reach a server the test runs exactly as the
//! allowlist says; every refusal carries its reason and never reaches the server; the box cannot
//! go around the proxy; garbage does not stop it; every decision is recorded.
//!
//! Every server is the test's own, in this process, on 127.0.0.1 port 0, and every name is a
//! `*.test` name mapped with `--map-host`: nothing leaves the machine and no DNS query is made.
//! Each refusal is checked twice: the box got the right answer, and the server saw nothing (it
//! counts every connection it accepts). Each test also has a positive control, so it cannot pass
//! merely because a client was broken.

mod common;

use common::{
    airlock, airlock_bin, binary_for_test_user, ensure_test_user, is_root, Run, TempDir, TEST_USER,
};
use serde_json::Value;
use std::io::{BufRead, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

// ----- the origin server -----

/// An HTTP/1.x origin server the test owns, on 127.0.0.1 port 0, serving the files under a root
/// directory (GET and HEAD, one request per connection, `index.html` for a directory). It counts
/// every connection it accepts and keeps every request line it reads. `/slow` is answered only
/// after [`SLOW`] (a request still in flight when its client goes). Stopped on drop.
struct Origin {
    port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Origin {
    fn serve(root: &Path) -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the origin server");
        let port = listener.local_addr().expect("origin address").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, log, stopping, root) = (
            connections.clone(),
            requests.clone(),
            stop.clone(),
            root.to_path_buf(),
        );
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                let (log, root) = (log.clone(), root.clone());
                std::thread::spawn(move || answer(stream, &root, &log));
            }
        });
        Origin {
            port,
            connections,
            requests,
            stop,
            acceptor: Some(acceptor),
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("request log").clone()
    }

    /// Asserts that exactly `n` connections reached the server (the test's positive controls).
    fn assert_reached(&self, n: usize, context: &str) {
        assert_eq!(
            self.connections(),
            n,
            "{context}: the server saw {} connection(s), expected {n}: {:?}",
            self.connections(),
            self.requests()
        );
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the acceptor, which then sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
    }
}

const SLOW: Duration = Duration::from_secs(8);

fn answer(mut stream: TcpStream, root: &Path, log: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
        if head.len() > 64 * 1024 {
            return;
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let line = text.lines().next().unwrap_or("").to_string();
    log.lock().expect("request log").push(line.clone());
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split(['?', '#']).next().unwrap_or("");
    if path == "/slow" {
        std::thread::sleep(SLOW);
    }
    let (status, ctype, body) = match lookup(root, path) {
        Some((ctype, body)) => ("200 OK", ctype, body),
        None => ("404 Not Found", "text/plain", b"not found\n".to_vec()),
    };
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(&body);
    }
    let _ = stream.write_all(&out);
    let _ = stream.shutdown(Shutdown::Write);
}

fn lookup(root: &Path, path: &str) -> Option<(&'static str, Vec<u8>)> {
    let rel = path.strip_prefix('/')?;
    if rel.split('/').any(|c| c == "..") {
        return None;
    }
    let mut file = root.join(rel);
    if file.is_dir() {
        file = file.join("index.html");
    }
    let body = std::fs::read(&file).ok()?;
    let ctype = match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html",
        Some("txt") => "text/plain",
        Some("json") => "application/json",
        None if body.first() == Some(&b'{') => "application/json",
        _ => "application/octet-stream",
    };
    Some((ctype, body))
}

// ----- the wasm box: no network at all -----

/// A wasm box has no network (WASI preview 1 has no sockets), so every case of this suite is,
/// under `AIRLOCK_TEST_BACKEND=wasm`, the same refusal: `--net proxy` (with the grants `flags`
/// most cases start from) fails closed before any box starts, with exit 125, a sentence naming the flag and
/// what to use instead, in the result document too; and `origin`, when the case has one, saw no
/// connection.
fn wasm_refuses_proxy(flags: &[&str], origin: Option<&Origin>) {
    let ws = TempDir::new("net-wasm");
    let mut all = vec!["--backend", "wasm"];
    all.extend_from_slice(flags);
    if !all.contains(&"proxy") {
        all.extend_from_slice(&["--net", "proxy"]);
    }
    let (run, result) = boxed(ws.path(), &all, "true");
    assert_eq!(run.code, 125, "stdout {} stderr {}", run.stdout, run.stderr);
    for text in [
        run.stderr.as_str(),
        result["error"].as_str().unwrap_or_default(),
    ] {
        assert!(
            text.contains("--net proxy")
                && text.contains("no sockets")
                && text.contains("--backend native"),
            "{text}"
        );
    }
    if let Some(origin) = origin {
        origin.assert_reached(0, "a refused wasm box");
    }
}

fn is_wasm() -> bool {
    common::test_backend_kind() == airlock_policy::BackendKind::Wasm
}

// ----- running boxes -----

/// `svc.test` mapped to the origin's address and allowed: the grant most tests start from.
const SVC: &[&str] = &[
    "--net",
    "proxy",
    "--map-host",
    "svc.test=127.0.0.1",
    "--allow-domain",
    "svc.test",
    "--allow-ip",
    "127.0.0.1",
];

/// `airlock run --timeout 60s --result FILE <flags> -- sh -c <script>` in the workspace `ws`,
/// with the result document.
fn boxed(ws: &Path, flags: &[&str], script: &str) -> (Run, Value) {
    let dir = TempDir::new("net-result");
    let file = dir.join("result.json");
    let file_s = file.to_string_lossy().into_owned();
    let mut args = vec!["run", "--timeout", "60s", "--result", file_s.as_str()];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    let run = airlock(ws, &args);
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("no result file: {e}; stderr: {}", run.stderr));
    (run, serde_json::from_str(&text).expect("result is JSON"))
}

fn net_events(result: &Value) -> Vec<Value> {
    result["network_events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The events of one protocol for one host.
fn events_for<'a>(events: &'a [Value], protocol: &str, host: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["protocol"] == protocol && e["host"] == host)
        .collect()
}

/// Asserts that exactly one event refused `host` over `protocol`, for `reason`.
fn assert_denied_event(events: &[Value], protocol: &str, host: &str, reason: &str) {
    let found = events_for(events, protocol, host);
    assert_eq!(
        found.len(),
        1,
        "expected one {protocol} event for {host}: {events:#?}"
    );
    assert_eq!(found[0]["decision"], "deny", "{:#?}", found[0]);
    assert_eq!(found[0]["reason"], reason, "{:#?}", found[0]);
    assert!(
        found[0]["addr"].is_null(),
        "a denied request has an address: {:#?}",
        found[0]
    );
}

fn write(path: &Path, content: &[u8]) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create dir");
    }
    std::fs::write(path, content).expect("write file");
}

/// Runs a host-side helper command (never in a box) and returns its stdout; panics on failure.
fn host(cmd: &mut Command) -> String {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ----- raw requests to the proxy, from inside the box -----

/// A client inside the box that writes exact bytes to the proxy (what curl would normalise),
/// reads until the proxy closes, and prints one `PROBE {json}` line per probe.
const PROBE_PY: &str = r#"
import json, socket, sys
for p in json.load(open(sys.argv[1])):
    res = {"name": p["name"]}
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(p["timeout"])
    got, outcome = b"", "closed"
    try:
        s.connect(("127.0.0.1", 3128))
        try:
            s.sendall(bytes.fromhex(p["hex"]))
            if p["shut"]:
                s.shutdown(socket.SHUT_WR)
        except OSError as e:
            res["send_error"] = e.errno
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except socket.timeout:
        outcome = "timeout"
    except ConnectionResetError:
        outcome = "reset"
    except OSError as e:
        outcome = "error %d" % e.errno
    finally:
        s.close()
    res["outcome"] = outcome
    res["hex"] = got[:64].hex()
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    first = lines[0].split(" ")
    res["status"] = int(first[1]) if lines[0].startswith("HTTP/1.") and len(first) > 1 and first[1].isdigit() else None
    res["denied"] = next((l.split(":", 1)[1].strip() for l in lines[1:] if l.lower().startswith("x-airlock-denied:")), None)
    res["body"] = body.decode("utf-8", "replace")
    print("PROBE " + json.dumps(res), flush=True)
"#;

/// One raw exchange with the proxy: `bytes` are sent as they are; `shut` half-closes after them.
struct Probe {
    name: String,
    bytes: Vec<u8>,
    shut: bool,
    timeout_s: f64,
}

impl Probe {
    fn new(name: &str, bytes: impl Into<Vec<u8>>) -> Probe {
        Probe {
            name: name.to_string(),
            bytes: bytes.into(),
            shut: false,
            timeout_s: 10.0,
        }
    }
}

/// Writes the probe client and its probes into `ws`; returns the shell command that runs them.
fn probe_command(ws: &Path, probes: &[Probe]) -> String {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let list: Vec<Value> = probes
        .iter()
        .map(|p| serde_json::json!({"name": p.name, "hex": hex(&p.bytes), "shut": p.shut, "timeout": p.timeout_s}))
        .collect();
    write(&ws.join("probe.py"), PROBE_PY.as_bytes());
    write(
        &ws.join("probes.json"),
        serde_json::to_string(&list)
            .expect("probes to JSON")
            .as_bytes(),
    );
    "python3 probe.py probes.json".to_string()
}

/// The probe answers printed by the box, by name.
fn probe_answers(stdout: &str) -> std::collections::BTreeMap<String, Value> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("PROBE "))
        .map(|j| serde_json::from_str::<Value>(j).expect("probe line is JSON"))
        .map(|v| (v["name"].as_str().unwrap_or("").to_string(), v))
        .collect()
}

fn answer_of<'a>(
    answers: &'a std::collections::BTreeMap<String, Value>,
    name: &str,
    run: &Run,
) -> &'a Value {
    answers.get(name).unwrap_or_else(|| {
        panic!(
            "no answer for probe {name}: stdout {} stderr {}",
            run.stdout, run.stderr
        )
    })
}

/// Asserts the proxy refused a probe with 403 and `X-Airlock-Denied: reason`.
fn assert_403(
    answers: &std::collections::BTreeMap<String, Value>,
    name: &str,
    reason: &str,
    run: &Run,
) {
    let a = answer_of(answers, name, run);
    assert_eq!(a["status"], 403, "{name}: {a:#}");
    assert_eq!(a["denied"], reason, "{name}: {a:#}");
    let body = a["body"].as_str().unwrap_or("");
    assert!(
        body.ends_with('\n') && body.trim_end().lines().count() == 1,
        "{name}: the body is not one line: {body:?}"
    );
}

fn get(host: &str, port: u16, path: &str) -> Vec<u8> {
    format!("GET http://{host}:{port}{path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n").into_bytes()
}

fn connect(authority: &str) -> Vec<u8> {
    format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").into_bytes()
}

/// A SOCKS5 greeting (no authentication) and CONNECT request for a domain name, in one write.
fn socks5_domain(name: &str, port: u16) -> Vec<u8> {
    let mut b = vec![5, 1, 0, 5, 1, 0, 3, name.len() as u8];
    b.extend_from_slice(name.as_bytes());
    b.extend_from_slice(&port.to_be_bytes());
    b
}

// ----- 1. allowed requests -----

#[test]
fn allowed_requests_reach_the_server_over_http_connect_socks5_and_urllib() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-allow-root");
    write(&root.join("hello.txt"), b"hello-from-origin\n");
    let origin = Origin::serve(root.path());
    let ws = TempDir::new("net-allow-ws");
    let url = format!("http://svc.test:{}/hello.txt", origin.port);
    let script = format!(
        "echo \"http: $(curl -sS {url})\"
         echo \"connect: $(curl -sS -p {url})\"
         echo \"socks5: $(curl -sS --socks5-hostname 127.0.0.1:3128 {url})\"
         echo \"all_proxy: $(env -u http_proxy -u HTTP_PROXY curl -sS {url})\"
         echo \"urllib: $(python3 -c 'import urllib.request, sys; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' {url})\""
    );
    let (run, result) = boxed(ws.path(), SVC, &script);
    assert_eq!(run.code, 0, "stdout {} stderr {}", run.stdout, run.stderr);
    for client in ["http", "connect", "socks5", "all_proxy", "urllib"] {
        assert!(
            run.stdout
                .contains(&format!("{client}: hello-from-origin\n")),
            "{client} did not get the body: {}\n{}",
            run.stdout,
            run.stderr
        );
    }

    let events = net_events(&result);
    let addr = format!("127.0.0.1:{}", origin.port);
    for (protocol, n) in [("http", 2), ("connect", 1), ("socks5", 2)] {
        let found = events_for(&events, protocol, "svc.test");
        assert_eq!(found.len(), n, "{protocol} events: {events:#?}");
        for e in found {
            assert_eq!(e["decision"], "allow", "{e:#}");
            assert!(e["reason"].is_null(), "{e:#}");
            assert_eq!(e["port"], origin.port, "{e:#}");
            assert_eq!(e["addr"], addr.as_str(), "{e:#}");
            assert_eq!(
                e["rule"], "--allow-domain svc.test, --allow-ip 127.0.0.1",
                "{e:#}"
            );
            assert!(
                e["bytes_up"].as_u64().unwrap_or(0) > 0
                    && e["bytes_down"].as_u64().unwrap_or(0) > 0,
                "no byte counts: {e:#}"
            );
        }
    }
    assert_eq!(events.len(), 5, "unexpected extra events: {events:#?}");
    origin.assert_reached(5, "five allowed requests");
    assert!(
        origin
            .requests()
            .iter()
            .all(|r| r == "GET /hello.txt HTTP/1.1"),
        "{:?}",
        origin.requests()
    );
}

// ----- 2. git -----

#[test]
fn git_clones_over_dumb_http_through_the_proxy() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-git-root");
    let scratch = TempDir::new("net-git-scratch");
    let git = |dir: &Path, args: &[&str]| {
        host(
            Command::new("git")
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null"),
        )
    };
    git(
        root.path(),
        &[
            "init",
            "-q",
            "--bare",
            "--initial-branch",
            "main",
            "repo.git",
        ],
    );
    git(
        scratch.path(),
        &[
            "clone",
            "-q",
            &root.join("repo.git").to_string_lossy(),
            "work",
        ],
    );
    let work = scratch.join("work");
    write(&work.join("README"), b"cloned-through-airlock\n");
    git(&work, &["add", "README"]);
    git(
        &work,
        &[
            "-c",
            "user.name=airlock test",
            "-c",
            "user.email=test@airlock.test",
            "commit",
            "-q",
            "-m",
            "first",
        ],
    );
    git(&work, &["push", "-q", "origin", "HEAD:main"]);
    git(&root.join("repo.git"), &["update-server-info"]);
    let commit = git(&work, &["rev-parse", "HEAD"]).trim().to_string();

    let origin = Origin::serve(root.path());
    let ws = TempDir::new("net-git-ws");
    let script = format!(
        "GIT_TERMINAL_PROMPT=0 git clone -q http://svc.test:{}/repo.git clone && echo \"HEAD $(git -C clone rev-parse HEAD)\" && cat clone/README",
        origin.port
    );
    let (run, result) = boxed(ws.path(), SVC, &script);
    assert_eq!(run.code, 0, "stdout {} stderr {}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(&format!("HEAD {commit}")),
        "the clone lacks commit {commit}: {}",
        run.stdout
    );
    assert!(
        run.stdout.contains("cloned-through-airlock"),
        "{}",
        run.stdout
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("clone/README")).expect("the clone is in the workspace"),
        "cloned-through-airlock\n"
    );
    assert!(
        origin
            .requests()
            .iter()
            .any(|r| r.starts_with("GET /repo.git/info/refs")),
        "{:?}",
        origin.requests()
    );
    let events = net_events(&result);
    assert!(
        !events.is_empty()
            && events
                .iter()
                .all(|e| e["decision"] == "allow" && e["host"] == "svc.test"),
        "{events:#?}"
    );
}

// ----- 3. pip -----

/// Builds a PEP 503 index with one pure-Python wheel, `airlock-demo` 1.0, under `root`.
const BUILD_WHEEL_PY: &str = r#"
import base64, hashlib, os, sys, zipfile
root = sys.argv[1]
dist = "airlock_demo-1.0.dist-info"
files = {
    "airlock_demo/__init__.py": b'X = "airlock-demo-pip-ok"\n',
    dist + "/METADATA": b"Metadata-Version: 2.1\nName: airlock-demo\nVersion: 1.0\nSummary: airlock test package\n",
    dist + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: airlock-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join("%s,%s,%d\n" % (n, digest(d), len(d)) for n, d in files.items()) + dist + "/RECORD,,\n"
files[dist + "/RECORD"] = record.encode()
os.makedirs(root + "/packages")
os.makedirs(root + "/simple/airlock-demo")
whl = root + "/packages/airlock_demo-1.0-py3-none-any.whl"
with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
    for n, d in files.items():
        z.writestr(n, d)
sha = hashlib.sha256(open(whl, "rb").read()).hexdigest()
open(root + "/simple/index.html", "w").write('<!DOCTYPE html><html><body><a href="airlock-demo/">airlock-demo</a></body></html>\n')
open(root + "/simple/airlock-demo/index.html", "w").write(
    '<!DOCTYPE html><html><body><a href="../../packages/airlock_demo-1.0-py3-none-any.whl#sha256=%s">airlock_demo-1.0-py3-none-any.whl</a></body></html>\n' % sha)
"#;

#[test]
fn pip_installs_a_wheel_from_a_local_index_through_the_proxy() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-pip-root");
    let build = TempDir::new("net-pip-build");
    write(&build.join("build.py"), BUILD_WHEEL_PY.as_bytes());
    host(
        Command::new("python3")
            .arg(build.join("build.py"))
            .arg(root.path()),
    );
    let origin = Origin::serve(root.path());
    let ws = TempDir::new("net-pip-ws");
    // pip ignores a plain-http index unless told to trust it (--trusted-host); the version
    // check would otherwise ask pypi.org (refused by the proxy, but noise in the events).
    let script = format!(
        "python3 -m pip install -q --no-cache-dir --disable-pip-version-check --trusted-host svc.test \
           --index-url http://svc.test:{}/simple/ --target /tmp/t airlock-demo \
         && python3 -c 'import sys; sys.path.insert(0, \"/tmp/t\"); import airlock_demo; print(airlock_demo.X)'",
        origin.port
    );
    let (run, result) = boxed(ws.path(), SVC, &script);
    assert_eq!(run.code, 0, "stdout {} stderr {}", run.stdout, run.stderr);
    assert!(run.stdout.contains("airlock-demo-pip-ok"), "{}", run.stdout);
    let reqs = origin.requests();
    assert!(
        reqs.iter()
            .any(|r| r.starts_with("GET /simple/airlock-demo/")),
        "{reqs:?}"
    );
    assert!(
        reqs.iter()
            .any(|r| r.starts_with("GET /packages/airlock_demo-1.0-py3-none-any.whl")),
        "{reqs:?}"
    );
    let events = net_events(&result);
    assert!(
        events
            .iter()
            .all(|e| e["decision"] == "allow" && e["host"] == "svc.test"),
        "{events:#?}"
    );
}

// ----- 4. npm -----

/// Builds a one-package npm registry under `root`: the packument at `/airlock-demo` and the
/// tarball, with the sha1 `shasum` and sha512 `integrity` npm checks.
const BUILD_NPM_PY: &str = r#"
import base64, hashlib, io, json, sys, tarfile
root, port = sys.argv[1], sys.argv[2]
pkg = {"name": "airlock-demo", "version": "1.0.0", "main": "index.js", "license": "MIT", "description": "airlock test package"}
files = {"package/package.json": json.dumps(pkg).encode(), "package/index.js": b'module.exports = "airlock-demo-npm-ok";\n'}
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as t:
    for name, data in files.items():
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), 0o644, 1700000000
        t.addfile(info, io.BytesIO(data))
tgz = buf.getvalue()
open(root + "/airlock-demo-1.0.0.tgz", "wb").write(tgz)
dist = {
    "tarball": "http://svc.test:%s/airlock-demo-1.0.0.tgz" % port,
    "shasum": hashlib.sha1(tgz).hexdigest(),
    "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode(),
}
when = "2024-01-01T00:00:00.000Z"
packument = {
    "name": "airlock-demo",
    "dist-tags": {"latest": "1.0.0"},
    "versions": {"1.0.0": dict(pkg, dist=dist)},
    "time": {"created": when, "modified": when, "1.0.0": when},
}
open(root + "/airlock-demo", "w").write(json.dumps(packument))
"#;

#[test]
fn npm_installs_a_package_from_a_local_registry_through_the_proxy() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-npm-root");
    let origin = Origin::serve(root.path());
    let build = TempDir::new("net-npm-build");
    write(&build.join("build.py"), BUILD_NPM_PY.as_bytes());
    host(
        Command::new("python3")
            .arg(build.join("build.py"))
            .arg(root.path())
            .arg(origin.port.to_string()),
    );
    let ws = TempDir::new("net-npm-ws");
    let script = format!(
        "npm install --no-audit --no-fund --no-update-notifier --registry http://svc.test:{}/ airlock-demo \
         && node -e 'console.log(require(\"airlock-demo\"))'",
        origin.port
    );
    let (run, result) = boxed(ws.path(), SVC, &script);
    assert_eq!(run.code, 0, "stdout {} stderr {}", run.stdout, run.stderr);
    assert!(run.stdout.contains("airlock-demo-npm-ok"), "{}", run.stdout);
    assert!(
        ws.join("node_modules/airlock-demo/index.js").is_file(),
        "not installed into the workspace"
    );
    let reqs = origin.requests();
    assert!(
        reqs.iter().any(|r| r.starts_with("GET /airlock-demo ")),
        "{reqs:?}"
    );
    assert!(
        reqs.iter()
            .any(|r| r.starts_with("GET /airlock-demo-1.0.0.tgz")),
        "{reqs:?}"
    );
    let events = net_events(&result);
    assert!(
        events
            .iter()
            .all(|e| e["decision"] == "allow" && e["host"] == "svc.test"),
        "{events:#?}"
    );
}

// ----- 5. refusals -----

#[test]
fn deny_rules_the_allowlist_and_address_checks_refuse_names() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-names-root");
    write(&root.join("ok.txt"), b"control-ok\n");
    let origin = Origin::serve(root.path());
    let port = origin.port;
    let ws = TempDir::new("net-names-ws");

    // A deny rule beats a wildcard allow, for forwarded and tunnelled requests alike. (A
    // wildcard over a whole top-level domain, `*.test`, is itself refused: see the flags test.)
    let probes = [
        Probe::new("denied-get", get("bad.corp.test", port, "/ok.txt")),
        Probe::new("denied-connect", connect(&format!("bad.corp.test:{port}"))),
        Probe::new(
            "denied-case-and-dot",
            get("BAD.Corp.Test.", port, "/ok.txt"),
        ),
    ];
    let script = format!(
        "{}; curl -sS http://svc.corp.test:{port}/ok.txt",
        probe_command(ws.path(), &probes)
    );
    let flags = [
        "--net",
        "proxy",
        "--allow-domain",
        "*.corp.test",
        "--deny-domain",
        "bad.corp.test",
        "--map-host",
        "bad.corp.test=127.0.0.1",
        "--map-host",
        "svc.corp.test=127.0.0.1",
        "--allow-ip",
        "127.0.0.1",
    ];
    let (run, result) = boxed(ws.path(), &flags, &script);
    let answers = probe_answers(&run.stdout);
    for name in ["denied-get", "denied-connect", "denied-case-and-dot"] {
        assert_403(&answers, name, "denied-domain", &run);
    }
    assert!(answer_of(&answers, "denied-get", &run)["body"]
        .as_str()
        .unwrap_or("")
        .contains("--deny-domain bad.corp.test"));
    let events = net_events(&result);
    assert_denied_event(&events, "connect", "bad.corp.test", "denied-domain");
    let http_denied: Vec<_> = events
        .iter()
        .filter(|e| e["protocol"] == "http" && e["decision"] == "deny")
        .collect();
    assert_eq!(http_denied.len(), 2, "{events:#?}");
    for e in &http_denied {
        assert_eq!(
            (&e["reason"], &e["rule"]),
            (
                &Value::from("denied-domain"),
                &Value::from("--deny-domain bad.corp.test")
            ),
            "{e:#}"
        );
    }
    assert!(
        run.stdout.contains("control-ok"),
        "the allowed control failed: {} {}",
        run.stdout,
        run.stderr
    );
    origin.assert_reached(1, "deny rule (only the control may arrive)");

    // A name no rule allows, and an allowed name mapped to loopback without `--allow-ip`.
    let probes = [
        Probe::new("unlisted", get("other.test", port, "/ok.txt")),
        Probe::new("loopback-get", get("loop.test", port, "/ok.txt")),
        Probe::new("loopback-connect", connect(&format!("loop.test:{port}"))),
    ];
    let grants = [
        "--net",
        "proxy",
        "--allow-domain",
        "loop.test",
        "--map-host",
        "loop.test=127.0.0.1",
        "--map-host",
        "other.test=127.0.0.1",
    ];
    let (run, result) = boxed(ws.path(), &grants, &probe_command(ws.path(), &probes));
    let answers = probe_answers(&run.stdout);
    assert_403(&answers, "unlisted", "not-allowed", &run);
    assert_403(&answers, "loopback-get", "forbidden-address", &run);
    assert_403(&answers, "loopback-connect", "forbidden-address", &run);
    assert!(
        answer_of(&answers, "loopback-get", &run)["body"]
            .as_str()
            .unwrap_or("")
            .contains("--allow-ip"),
        "the message does not name the flag"
    );
    let events = net_events(&result);
    assert_denied_event(&events, "http", "other.test", "not-allowed");
    let loop_events = events_for(&events, "http", "loop.test");
    assert_eq!(loop_events.len(), 1, "{events:#?}");
    assert_eq!(
        (&loop_events[0]["decision"], &loop_events[0]["reason"]),
        (&Value::from("deny"), &Value::from("forbidden-address"))
    );
    origin.assert_reached(1, "unlisted and loopback-mapped names");

    // Control: the same loopback request with the grant reaches the server.
    let granted = [&grants[..], &["--allow-ip", "127.0.0.1"]].concat();
    let (run, _) = boxed(
        ws.path(),
        &granted,
        &probe_command(
            ws.path(),
            &[Probe::new("granted", get("loop.test", port, "/ok.txt"))],
        ),
    );
    let answers = probe_answers(&run.stdout);
    assert_eq!(
        answer_of(&answers, "granted", &run)["status"],
        200,
        "{}",
        run.stdout
    );
    origin.assert_reached(2, "the granted control");
}

#[test]
fn ip_literals_in_every_notation_need_an_allow_ip_grant() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-ip-root");
    write(&root.join("ok.txt"), b"control-ok\n");
    let origin = Origin::serve(root.path());
    let port = origin.port;
    let ws = TempDir::new("net-ip-ws");
    // (probe, request, the address as the proxy must understand it)
    let literals = [
        ("dotted", get("127.0.0.1", port, "/ok.txt"), "127.0.0.1"),
        ("decimal", get("2130706433", port, "/ok.txt"), "127.0.0.1"),
        ("hex", get("0x7f000001", port, "/ok.txt"), "127.0.0.1"),
        ("short", get("127.1", port, "/ok.txt"), "127.0.0.1"),
        ("v6-loopback", get("[::1]", port, "/ok.txt"), "::1"),
        (
            "v4-mapped",
            get("[::ffff:127.0.0.1]", port, "/ok.txt"),
            "127.0.0.1",
        ),
        (
            "connect-decimal",
            connect(&format!("2130706433:{port}")),
            "127.0.0.1",
        ),
        (
            "connect-v4-mapped",
            connect(&format!("[::ffff:127.0.0.1]:{port}")),
            "127.0.0.1",
        ),
    ];
    let probes: Vec<Probe> = literals
        .iter()
        .map(|(name, req, _)| Probe::new(name, req.clone()))
        .collect();
    // `--noproxy ''`: curl asks the proxy even for 127.0.0.1, which NO_PROXY keeps in the box.
    let script = format!(
        "{}; curl --noproxy '' -sS -o /dev/null -w 'curl-literal %{{http_code}}\\n' --path-as-is http://127.0.0.1:{port}/ok.txt",
        probe_command(ws.path(), &probes)
    );
    let (run, result) = boxed(
        ws.path(),
        &["--net", "proxy", "--allow-domain", "svc.test"],
        &script,
    );
    let answers = probe_answers(&run.stdout);
    for (name, _, _) in &literals {
        assert_403(&answers, name, "ip-literal-not-granted", &run);
    }
    assert!(run.stdout.contains("curl-literal 403"), "{}", run.stdout);
    let events = net_events(&result);
    assert_eq!(events.len(), literals.len() + 1, "{events:#?}");
    for e in &events {
        assert_eq!(
            (&e["decision"], &e["reason"]),
            (&Value::from("deny"), &Value::from("ip-literal-not-granted")),
            "{e:#}"
        );
    }
    // The refusal names the address as the proxy understood it (the event keeps the request's
    // own spelling, which shows the attempt).
    for (name, _, canonical) in &literals {
        let dest = if canonical.contains(':') {
            format!("[{canonical}]:{port}")
        } else {
            format!("{canonical}:{port}")
        };
        let body = answer_of(&answers, name, &run)["body"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(
            body.contains(&format!("{dest} is an IP address"))
                && body.contains(&format!("--allow-ip {dest}")),
            "{name}: {body}"
        );
    }
    origin.assert_reached(0, "IP literals without a grant");

    // Control: with the grant, the same unusual notations reach the server (so the refusals
    // above were the missing grant, not a broken request).
    let tunnelled = [
        connect(&format!("[::ffff:127.0.0.1]:{port}")),
        b"GET /ok.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec(),
    ]
    .concat();
    let probes = [
        Probe::new("decimal", get("2130706433", port, "/ok.txt")),
        Probe::new("v4-mapped", tunnelled),
    ];
    let (run, result) = boxed(
        ws.path(),
        &["--net", "proxy", "--allow-ip", "127.0.0.1"],
        &probe_command(ws.path(), &probes),
    );
    let answers = probe_answers(&run.stdout);
    for name in ["decimal", "v4-mapped"] {
        let a = answer_of(&answers, name, &run);
        assert_eq!(a["status"], 200, "{a:#}");
        assert!(
            a["body"].as_str().unwrap_or("").contains("control-ok"),
            "{a:#}"
        );
    }
    let events = net_events(&result);
    assert_eq!(events.len(), 2, "{events:#?}");
    let addr = format!("127.0.0.1:{port}");
    assert!(
        events.iter().all(|e| e["decision"] == "allow"
            && e["addr"] == addr.as_str()
            && e["rule"] == "--allow-ip 127.0.0.1"),
        "{events:#?}"
    );
    origin.assert_reached(2, "the granted literals");
}

#[test]
fn userinfo_in_the_url_never_reaches_the_server() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-userinfo-root");
    write(&root.join("ok.txt"), b"control-ok\n");
    let origin = Origin::serve(root.path());
    let port = origin.port;
    let ws = TempDir::new("net-userinfo-ws");
    let probes = [
        Probe::new("raw-userinfo", get("svc.test@other.test", port, "/ok.txt")),
        Probe::new("raw-userinfo-reversed", format!("GET http://other.test:{port}@svc.test:{port}/ok.txt HTTP/1.1\r\nHost: svc.test\r\n\r\n")),
        Probe::new("connect-userinfo", connect(&format!("svc.test@other.test:{port}"))),
    ];
    let script = format!(
        "curl -sS -D - http://svc.test@other.test:{port}/ok.txt; {}; curl -sS http://svc.test:{port}/ok.txt",
        probe_command(ws.path(), &probes)
    );
    let flags = [SVC, &["--map-host", "other.test=127.0.0.1"]].concat();
    let (run, result) = boxed(ws.path(), &flags, &script);
    // curl itself takes `svc.test` as the user name and asks for other.test, which is refused.
    assert!(
        run.stdout.contains("X-Airlock-Denied: not-allowed"),
        "{}",
        run.stdout
    );
    let answers = probe_answers(&run.stdout);
    for name in ["raw-userinfo", "raw-userinfo-reversed", "connect-userinfo"] {
        let a = answer_of(&answers, name, &run);
        assert!(a["status"] == 400 || a["status"] == 403, "{name}: {a:#}");
    }
    assert!(
        run.stdout.contains("control-ok"),
        "{} {}",
        run.stdout,
        run.stderr
    );
    let events = net_events(&result);
    assert_denied_event(&events, "http", "other.test", "not-allowed");
    assert_eq!(
        events.iter().filter(|e| e["decision"] == "allow").count(),
        1,
        "only the control is allowed: {events:#?}"
    );
    origin.assert_reached(1, "userinfo tricks (only the control may arrive)");
    assert!(
        origin
            .requests()
            .iter()
            .all(|r| r == "GET /ok.txt HTTP/1.1"),
        "{:?}",
        origin.requests()
    );
}

#[test]
fn a_grant_for_another_port_does_not_open_this_one() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-port-root");
    write(&root.join("ok.txt"), b"control-ok\n");
    let origin = Origin::serve(root.path());
    let port = origin.port;
    let ws = TempDir::new("net-port-ws");
    let probes = [
        Probe::new("name-get", get("svc.test", port, "/ok.txt")),
        Probe::new("name-connect", connect(&format!("svc.test:{port}"))),
        Probe::new("literal-get", get("127.0.0.1", port, "/ok.txt")),
    ];
    let flags = [
        "--net",
        "proxy",
        "--map-host",
        "svc.test=127.0.0.1",
        "--allow-domain",
        "svc.test:1",
        "--allow-ip",
        "127.0.0.1:1",
    ];
    let (run, result) = boxed(ws.path(), &flags, &probe_command(ws.path(), &probes));
    let answers = probe_answers(&run.stdout);
    for name in ["name-get", "name-connect", "literal-get"] {
        assert_403(&answers, name, "port-not-allowed", &run);
    }
    let events = net_events(&result);
    assert_denied_event(&events, "http", "svc.test", "port-not-allowed");
    assert_denied_event(&events, "connect", "svc.test", "port-not-allowed");
    assert_denied_event(&events, "http", "127.0.0.1", "port-not-allowed");
    assert_eq!(
        events_for(&events, "http", "svc.test")[0]["rule"],
        "--allow-domain svc.test:1"
    );
    origin.assert_reached(0, "a grant for port 1");

    let flags = [
        "--net",
        "proxy",
        "--map-host",
        "svc.test=127.0.0.1",
        "--allow-domain",
        &format!("svc.test:{port}"),
        "--allow-ip",
        &format!("127.0.0.1:{port}"),
    ];
    let (run, _) = boxed(
        ws.path(),
        &flags,
        &probe_command(
            ws.path(),
            &[Probe::new("right-port", get("svc.test", port, "/ok.txt"))],
        ),
    );
    assert_eq!(
        answer_of(&probe_answers(&run.stdout), "right-port", &run)["status"],
        200,
        "{}",
        run.stdout
    );
    origin.assert_reached(1, "the control on the granted port");
}

#[test]
fn socks5_to_a_refused_name_fails_with_not_allowed_by_ruleset() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-socks-root");
    write(&root.join("ok.txt"), b"control-ok\n");
    let origin = Origin::serve(root.path());
    let port = origin.port;
    let ws = TempDir::new("net-socks-ws");
    let probes = [Probe::new("raw-socks5", socks5_domain("other.test", port))];
    let script = format!(
        "curl -sS --socks5-hostname 127.0.0.1:3128 http://other.test:{port}/ok.txt; echo \"explicit-exit $?\"
         env -u http_proxy -u HTTP_PROXY curl -sS http://other.test:{port}/ok.txt; echo \"all-proxy-exit $?\"
         {}
         curl -sS --socks5-hostname 127.0.0.1:3128 http://svc.test:{port}/ok.txt",
        probe_command(ws.path(), &probes)
    );
    let flags = [SVC, &["--map-host", "other.test=127.0.0.1"]].concat();
    let (run, result) = boxed(ws.path(), &flags, &script);
    // curl: 97 = CURLE_PROXY, the SOCKS5 reply code in parentheses (2 = not allowed by ruleset).
    assert!(
        run.stdout.contains("explicit-exit 97") && run.stdout.contains("all-proxy-exit 97"),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    assert!(run.stderr.contains("(2)"), "{}", run.stderr);
    // Raw: method reply 05 00, then the CONNECT reply 05 02 (not allowed by ruleset).
    let raw = answer_of(&probe_answers(&run.stdout), "raw-socks5", &run).clone();
    assert!(
        raw["hex"].as_str().unwrap_or("").starts_with("05000502"),
        "{raw:#}"
    );
    assert!(run.stdout.contains("control-ok"), "{}", run.stdout);
    let events = net_events(&result);
    let denied = events_for(&events, "socks5", "other.test");
    assert_eq!(denied.len(), 3, "{events:#?}");
    assert!(
        denied
            .iter()
            .all(|e| e["decision"] == "deny" && e["reason"] == "not-allowed"),
        "{denied:#?}"
    );
    origin.assert_reached(1, "SOCKS5 refusals (only the control may arrive)");
}

/// Inside a proxied box: a server of the box's own on 127.0.0.1:PORT (the port the host's
/// server has), fetched by ordinary curl by address and by name with the proxy variables set.
const INBOX_SH: &str = r#"
port=$1
python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1 &
srv=$!
hex=$(printf '0100007F:%04X' "$port")
for _ in $(seq 100); do awk -v a="$hex" '$2 == a && $4 == "0A" {f=1} END {exit !f}' /proc/net/tcp && break; sleep 0.05; done
echo "NO_PROXY=$NO_PROXY no_proxy=$no_proxy"
got=$(curl -sS --max-time 10 "http://127.0.0.1:$port/inbox.txt"); echo "BY-ADDRESS $got exit=$?"
got=$(curl -sS --max-time 10 "http://localhost:$port/inbox.txt"); echo "BY-NAME $got exit=$?"
kill "$srv"; wait "$srv" 2>/dev/null
true
"#;

/// The box's processes talk to each other over its loopback although the box is proxied (the
/// proxy variables exempt loopback, and no TCP-port rule refuses the connect), and that
/// loopback is the box's own: a server the test runs on the host's 127.0.0.1, on the very port
/// the box's server uses, sees no connection, and the proxy decides nothing.
#[test]
fn a_proxied_box_reaches_its_own_loopback_and_never_the_hosts() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-inbox-root");
    write(&root.join("inbox.txt"), b"HOST-SECRET\n");
    let origin = Origin::serve(root.path());
    let ws = TempDir::new("net-inbox-ws");
    write(&ws.join("inbox.txt"), b"box-own\n");
    write(&ws.join("inbox.sh"), INBOX_SH.as_bytes());
    // Nothing is allowed through the proxy: whatever answers comes from inside the box.
    let script = format!("sh inbox.sh {}", origin.port);
    let (run, result) = boxed(ws.path(), &["--net", "proxy"], &script);
    let line = |key: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} line: {}\n{}", run.stdout, run.stderr))
            .to_string()
    };
    assert_eq!(
        line("NO_PROXY="),
        "NO_PROXY=localhost,127.0.0.1,::1 no_proxy=localhost,127.0.0.1,::1"
    );
    assert_eq!(
        line("BY-ADDRESS"),
        "BY-ADDRESS box-own exit=0",
        "{}",
        run.stderr
    );
    assert_eq!(line("BY-NAME"), "BY-NAME box-own exit=0", "{}", run.stderr);
    assert!(!run.stdout.contains("HOST-SECRET"), "{}", run.stdout);
    origin.assert_reached(0, "the box's loopback requests");
    assert!(net_events(&result).is_empty(), "{:#?}", net_events(&result));
}

// ----- 6. going around the proxy -----

/// Inside the box: a direct connect to the host's server, a connect to a server the box runs
/// itself, the proxy port (positive control), UDP DNS and name lookups.
const BYPASS_PY: &str = r#"
import errno, socket, subprocess, sys, time
port = int(sys.argv[1])
def tcp(family, addr):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(addr)
        return "connected"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()
print("DIRECT", tcp(socket.AF_INET, ("127.0.0.1", port)))
print("DIRECT6", tcp(socket.AF_INET6, ("::1", port)))
srv = subprocess.Popen([sys.executable, "-m", "http.server", "8000", "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
listening = False
for _ in range(100):
    rows = open("/proc/net/tcp").read().splitlines()[1:]
    if any(r.split()[1] == "0100007F:1F40" and r.split()[3] == "0A" for r in rows):
        listening = True
        break
    time.sleep(0.05)
print("LISTENING", listening)
print("INBOX", tcp(socket.AF_INET, ("127.0.0.1", 8000)))
print("PROXY", tcp(socket.AF_INET, ("127.0.0.1", 3128)))
srv.kill()
srv.wait()
query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03svc\x04test\x00\x00\x01\x00\x01"
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(2)
try:
    u.sendto(query, ("127.0.0.1", 53))
    u.recv(512)
    print("UDP answered")
except OSError as e:
    print("UDP", type(e).__name__)
try:
    print("GAI resolved", socket.getaddrinfo("svc.test", 80))
except socket.gaierror:
    print("GAI failed")
"#;

#[test]
fn the_box_cannot_go_around_the_proxy() {
    if is_wasm() {
        // No proxy to go around: a wasm box has no sockets. Beyond the refusal of --net proxy,
        // a socket to the host's server fails inside the module with --net none, and the
        // server sees nothing.
        let root = TempDir::new("net-bypass-wasm-root");
        let origin = Origin::serve(root.path());
        wasm_refuses_proxy(SVC, Some(&origin));
        let ws = TempDir::new("net-bypass-wasm-ws");
        let code = format!(
            "import socket\ntry:\n    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n    s.connect(('127.0.0.1', {}))\n    print('CONNECTED')\nexcept Exception as e:\n    print('FAILED', type(e).__name__)",
            origin.port
        );
        let run = airlock(
            ws.path(),
            &[
                "run",
                "--backend",
                "wasm",
                "--net",
                "none",
                "--",
                "python3",
                "-c",
                &code,
            ],
        );
        assert_eq!(run.code, 0, "stdout {} stderr {}", run.stdout, run.stderr);
        assert!(run.stdout.starts_with("FAILED "), "{}", run.stdout);
        origin.assert_reached(0, "a socket from a wasm module");
        return;
    }
    let root = TempDir::new("net-bypass-root");
    write(&root.join("ok.txt"), b"control-ok\n");
    let origin = Origin::serve(root.path());
    let ws = TempDir::new("net-bypass-ws");
    write(&ws.join("bypass.py"), BYPASS_PY.as_bytes());
    let script = format!(
        "python3 bypass.py {}; getent hosts svc.test; echo \"GETENT $?\"; test -e /etc/resolv.conf; echo \"RESOLV $?\"",
        origin.port
    );
    let (run, result) = boxed(ws.path(), SVC, &script);
    let line = |key: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key} line: {}\n{}", run.stdout, run.stderr))
            .to_string()
    };
    // The box's 127.0.0.1 is its own loopback, where nothing listens on the host server's
    // port: the connect is refused, and the host's server sees nothing (asserted below).
    assert_eq!(line("DIRECT"), "DIRECT ECONNREFUSED");
    assert!(
        !line("DIRECT6").contains("connected"),
        "{}",
        line("DIRECT6")
    );
    assert_eq!(
        line("LISTENING"),
        "LISTENING True",
        "the box's own server did not start"
    );
    // Every kind: a native box's own loopback, a VM's own kernel's loopback.
    assert_eq!(
        line("INBOX"),
        "INBOX connected",
        "processes inside a proxied box talk to each other over its own loopback"
    );
    assert_eq!(
        line("PROXY"),
        "PROXY connected",
        "the proxy port must stay reachable"
    );
    assert!(!line("UDP").contains("answered"), "{}", line("UDP"));
    assert_eq!(line("GAI"), "GAI failed");
    assert!(!line("GETENT").ends_with(" 0"), "{}", line("GETENT"));
    assert!(
        !run.stdout.contains("127.0.0.1  ") && !run.stdout.contains("127.0.0.1 svc.test"),
        "getent resolved: {}",
        run.stdout
    );
    assert_eq!(
        line("RESOLV"),
        "RESOLV 1",
        "/etc/resolv.conf exists in the box"
    );
    origin.assert_reached(0, "direct connections from the box");
    // The proxy-port control connected and closed without a request: nothing else was decided.
    assert!(
        net_events(&result).iter().all(|e| e["decision"] != "allow"),
        "{:#?}",
        net_events(&result)
    );
}

// ----- 7. garbage -----

/// Bytes that look random (a fixed xorshift stream), so a failure is reproducible.
fn noise(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn garbage_is_refused_and_the_proxy_keeps_serving() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-garbage-root");
    write(&root.join("ok.txt"), b"control-ok\n");
    let origin = Origin::serve(root.path());
    let port = origin.port;
    let ws = TempDir::new("net-garbage-ws");
    let mut random = Probe::new("random", noise(512));
    random.shut = true;
    let mut huge = get("svc.test", port, "/ok.txt");
    let end = huge.len() - 2;
    huge.splice(
        end..end,
        format!("X-Big: {}\r\n", "a".repeat(20 * 1024)).into_bytes(),
    );
    let mut socks4 = vec![4, 1];
    socks4.extend_from_slice(&port.to_be_bytes());
    socks4.extend_from_slice(&[127, 0, 0, 1, b'u', 0]);
    let mut socks4 = Probe::new("socks4", socks4);
    socks4.timeout_s = 5.0;
    let probes = [
        random,
        Probe::new("bad-request-line", b"HELLO THERE\r\n\r\n".to_vec()),
        Probe::new("origin-form", b"GET /ok.txt HTTP/1.1\r\nHost: svc.test\r\n\r\n".to_vec()),
        Probe::new("bare-cr", format!("GET http://svc.test:{port}/ok.txt HTTP/1.1\rX: y\r\n\r\n")),
        Probe::new("bad-port", connect("svc.test:99999")),
        Probe::new("smuggling", format!("POST http://svc.test:{port}/ok.txt HTTP/1.1\r\nHost: svc.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")),
        Probe::new("oversized-header", huge),
        socks4,
        Probe::new("socks5-bind", [&[5u8, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1][..], &port.to_be_bytes()].concat()),
    ];
    let script = format!(
        "{}; echo \"after: $(curl -sS http://svc.test:{port}/ok.txt)\"",
        probe_command(ws.path(), &probes)
    );
    let (run, result) = boxed(ws.path(), SVC, &script);
    let answers = probe_answers(&run.stdout);
    for a in answers.values() {
        assert_ne!(
            a["outcome"], "timeout",
            "the proxy left a garbage connection hanging: {a:#}"
        );
        assert!(
            a["status"].is_null() || a["status"].as_u64().is_some_and(|s| s >= 400),
            "garbage was answered with success: {a:#}"
        );
    }
    // "random" half-closes after its bytes: the answer (a bare CR at byte 216) still reaches it,
    // over every box's way to the proxy (the microVM's door carries the half-close).
    for name in [
        "random",
        "bad-request-line",
        "origin-form",
        "bare-cr",
        "bad-port",
        "smuggling",
    ] {
        assert_eq!(answer_of(&answers, name, &run)["status"], 400, "{name}");
    }
    // The proxy stops reading at 16 KiB and answers 431 (then the unread rest resets the
    // connection, after the answer).
    let huge = answer_of(&answers, "oversized-header", &run);
    assert_eq!(huge["status"], 431, "{huge:#}");
    // SOCKS4 is refused in its own protocol (VN 0, CD 91), not left waiting.
    assert_eq!(
        answer_of(&answers, "socks4", &run)["hex"],
        "005b000000000000",
        "{:#}",
        answer_of(&answers, "socks4", &run)
    );
    // SOCKS5 BIND: no-auth accepted, then "command not supported" (7).
    assert!(
        answer_of(&answers, "socks5-bind", &run)["hex"]
            .as_str()
            .unwrap_or("")
            .starts_with("05000507"),
        "{:#}",
        answer_of(&answers, "socks5-bind", &run)
    );

    assert!(
        run.stdout.contains("after: control-ok"),
        "the proxy stopped serving: {}\n{}",
        run.stdout,
        run.stderr
    );
    origin.assert_reached(1, "garbage (only the control may arrive)");
    let events = net_events(&result);
    let allowed: Vec<_> = events.iter().filter(|e| e["decision"] == "allow").collect();
    assert_eq!(allowed.len(), 1, "{events:#?}");
    assert!(
        events
            .iter()
            .filter(|e| e["reason"] == "bad-request")
            .count()
            >= 6,
        "refused heads are recorded: {events:#?}"
    );
}

// ----- 8. audit and limits -----

const AUDIT_FIELDS: &[&str] = &[
    "time_ms",
    "protocol",
    "host",
    "port",
    "decision",
    "reason",
    "rule",
    "bytes_up",
    "bytes_down",
    "duration_ms",
];

#[test]
fn the_audit_file_has_one_json_line_per_decision() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-audit-root");
    write(&root.join("ok.txt"), b"control-ok\n");
    let origin = Origin::serve(root.path());
    let port = origin.port;
    let ws = TempDir::new("net-audit-ws");
    let logs = TempDir::new("net-audit-log");
    let audit = logs.join("audit.jsonl");
    let audit_s = audit.to_string_lossy().into_owned();
    let flags = [
        SVC,
        &["--map-host", "other.test=127.0.0.1", "--audit", &audit_s],
    ]
    .concat();
    let script = format!(
        "curl -sS http://svc.test:{port}/ok.txt; curl -sS -p http://svc.test:{port}/ok.txt;
         curl -sS http://other.test:{port}/ok.txt; curl -sS --socks5-hostname 127.0.0.1:3128 http://other.test:{port}/ok.txt; true"
    );
    let (run, result) = boxed(ws.path(), &flags, &script);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&audit).expect("the audit file exists");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("audit line is not JSON ({e}): {l}"))
        })
        .collect();
    assert_eq!(lines.len(), 4, "{text}");
    for line in &lines {
        for field in AUDIT_FIELDS {
            assert!(
                line.get(*field).is_some(),
                "audit line lacks {field}: {line}"
            );
        }
        assert!(
            line["time_ms"].as_u64().unwrap_or(0) > 1_600_000_000_000,
            "time_ms is not epoch milliseconds: {line}"
        );
    }
    let summary = |v: &[Value]| {
        v.iter()
            .map(|e| {
                format!(
                    "{} {} {} {}",
                    e["protocol"], e["host"], e["decision"], e["reason"]
                )
            })
            .collect::<Vec<_>>()
    };
    let mut from_file = summary(&lines);
    let mut from_result = summary(&net_events(&result));
    from_file.sort();
    from_result.sort();
    assert_eq!(
        from_file, from_result,
        "the audit file and the result disagree"
    );
    let allowed = lines.iter().filter(|e| e["decision"] == "allow").count();
    let denied = lines
        .iter()
        .filter(|e| e["decision"] == "deny" && e["reason"] == "not-allowed")
        .count();
    assert_eq!((allowed, denied), (2, 2), "{text}");
    origin.assert_reached(2, "two allowed requests");
}

#[test]
fn the_byte_budget_stops_a_download_early() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-budget-root");
    write(&root.join("big.bin"), &noise(64 * 1024));
    let origin = Origin::serve(root.path());
    let ws = TempDir::new("net-budget-ws");
    let flags = [SVC, &["--byte-budget", "1K"]].concat();
    let url = format!("http://svc.test:{}/big.bin", origin.port);
    let script = format!(
        "curl -sS -o big.out {url}; echo \"first $?\"; curl -sS -o big2.out {url}; echo \"second $?\"; true"
    );
    let (run, result) = boxed(ws.path(), &flags, &script);
    assert!(
        run.stdout.contains("first ") && !run.stdout.contains("first 0"),
        "the 64 KiB download succeeded under a 1 KiB budget: {}",
        run.stdout
    );
    assert!(!run.stdout.contains("second 0"), "{}", run.stdout);
    for f in ["big.out", "big2.out"] {
        let got = std::fs::metadata(ws.join(f)).map(|m| m.len()).unwrap_or(0);
        assert!(got <= 1024, "{f}: {got} bytes arrived under a 1 KiB budget");
    }
    let events = net_events(&result);
    assert!(!events.is_empty(), "no events");
    for e in &events {
        assert_eq!(
            (&e["decision"], &e["reason"]),
            (&Value::from("allow"), &Value::from("byte-budget-exhausted")),
            "{e:#}"
        );
        assert!(
            e["bytes_down"].as_u64().unwrap_or(u64::MAX) <= 1024,
            "{e:#}"
        );
    }
    let hits: Vec<&str> = result["limits_hit"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    assert!(
        hits.contains(&"byte-budget"),
        "the result names the exhausted budget: {hits:?}"
    );
}

/// Opens four CONNECT tunnels one after another and holds them all, then reports how many were
/// established and how many the proxy refused.
const HOLD_PY: &str = r#"
import socket, sys
port = int(sys.argv[1])
held, ok, refused = [], 0, 0
for i in range(4):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    held.append(s)
    try:
        s.sendall(b"CONNECT svc.test:%d HTTP/1.1\r\nHost: svc.test\r\n\r\n" % port)
        reply = s.recv(100)
    except (ConnectionResetError, BrokenPipeError):
        reply = b""
    if reply.startswith(b"HTTP/1.1 200"):
        ok += 1
    elif reply == b"":
        refused += 1
    else:
        print("UNEXPECTED", reply)
print("TUNNELS ok=%d refused=%d" % (ok, refused), flush=True)
for s in held:
    s.close()
"#;

#[test]
fn max_connections_refuses_connections_beyond_the_limit() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-maxconn-root");
    let origin = Origin::serve(root.path());
    let ws = TempDir::new("net-maxconn-ws");
    write(&ws.join("hold.py"), HOLD_PY.as_bytes());
    let flags = [SVC, &["--max-connections", "2"]].concat();
    let (run, result) = boxed(
        ws.path(),
        &flags,
        &format!("python3 hold.py {}", origin.port),
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("TUNNELS ok=2 refused=2"),
        "{}",
        run.stdout
    );
    let events = net_events(&result);
    let refused: Vec<_> = events
        .iter()
        .filter(|e| e["reason"] == "too-many-connections")
        .collect();
    assert_eq!(refused.len(), 2, "{events:#?}");
    for e in &refused {
        assert_eq!(e["decision"], "deny", "{e:#}");
        let message = e["message"].as_str().unwrap_or("");
        assert!(
            message.contains("more than 2 concurrent connections"),
            "the message does not name the limit: {message:?}"
        );
    }
    // The two tunnels that were established are recorded too.
    assert_eq!(
        events_for(&events, "connect", "svc.test")
            .iter()
            .filter(|e| e["decision"] == "allow")
            .count(),
        2,
        "{events:#?}"
    );
}

#[test]
fn a_request_in_flight_when_the_box_ends_is_recorded() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let root = TempDir::new("net-open-root");
    let origin = Origin::serve(root.path());
    let ws = TempDir::new("net-open-ws");
    let logs = TempDir::new("net-open-log");
    let audit = logs.join("audit.jsonl");
    let audit_s = audit.to_string_lossy().into_owned();
    let flags = [SVC, &["--audit", audit_s.as_str()][..]].concat();
    // curl gives up after a second; the server is still working on the answer when the box ends.
    let script = format!(
        "curl -sS -m 1 http://svc.test:{}/slow; echo \"curl $?\"",
        origin.port
    );
    let (run, result) = boxed(ws.path(), &flags, &script);
    assert!(
        run.stdout.contains("curl 28"),
        "curl did not time out waiting: {}\n{}",
        run.stdout,
        run.stderr
    );
    origin.assert_reached(1, "the request in flight");
    let events = net_events(&result);
    let seen = events_for(&events, "http", "svc.test");
    assert_eq!(
        seen.len(),
        1,
        "the server got a request that network_events does not show: {events:#?}"
    );
    assert_eq!(seen[0]["decision"], "allow", "{:#}", seen[0]);
    assert_eq!(
        seen[0]["addr"],
        format!("127.0.0.1:{}", origin.port).as_str(),
        "{:#}",
        seen[0]
    );
    assert!(
        seen[0]["bytes_up"].as_u64().unwrap_or(0) > 0,
        "the request bytes are not counted: {:#}",
        seen[0]
    );
    let text = std::fs::read_to_string(&audit).unwrap_or_default();
    assert_eq!(
        text.lines().count(),
        1,
        "the server got a request that the audit file does not show: {text:?}"
    );
}

// ----- 9. receipt and flag errors -----

#[test]
fn the_receipt_shows_the_proxy_and_bad_flags_are_refused() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let ws = TempDir::new("net-flags-ws");
    let r = airlock(
        ws.path(),
        &["receipt", "--net", "proxy", "--allow-domain", "x.test"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line = |layer: &str| {
        let mut lines = r.stdout.lines().skip_while(|l| !l.starts_with(layer));
        format!(
            "{} {}",
            lines
                .next()
                .unwrap_or_else(|| panic!("no {layer} layer: {}", r.stdout)),
            lines.next().unwrap_or("")
        )
    };
    let network = line("network");
    assert!(
        network.contains("enforced")
            && network.contains("egress proxy")
            && network.contains("127.0.0.1:3128"),
        "{network}"
    );
    assert!(network.contains("allow x.test"), "{network}");
    assert!(
        network.contains("the box's own loopback is direct (localhost,127.0.0.1,::1)"),
        "{network}"
    );

    for flag in [
        ["--allow-domain", "x.test"],
        ["--deny-domain", "x.test"],
        ["--allow-ip", "127.0.0.1"],
        ["--map-host", "x.test=127.0.0.1"],
        ["--byte-budget", "1K"],
        ["--max-connections", "2"],
    ] {
        for net in [None, Some("host")] {
            let mut args = vec!["run"];
            if let Some(mode) = net {
                args.extend_from_slice(&["--net", mode]);
            }
            args.extend_from_slice(&flag);
            args.extend_from_slice(&["--", "true"]);
            let r = airlock(ws.path(), &args);
            assert_eq!(
                r.code, 125,
                "{args:?} was accepted without --net proxy: {}",
                r.stderr
            );
            assert!(
                r.stderr.contains(flag[0]) && r.stderr.contains("add --net proxy"),
                "{args:?}: {}",
                r.stderr
            );
        }
    }
    // --audit records proxy decisions: without the proxy it would stay silently empty.
    let audit = ws.join("audit.jsonl");
    let r = airlock(
        ws.path(),
        &["run", "--audit", audit.to_str().unwrap(), "--", "true"],
    );
    assert_eq!(
        r.code, 125,
        "--audit without --net proxy was accepted: {}",
        r.stderr
    );
    assert!(
        r.stderr.contains("--audit") && r.stderr.contains("--net proxy"),
        "{}",
        r.stderr
    );
    assert!(
        !audit.exists(),
        "no audit file is created for a refused run"
    );
    for (flag, value) in [
        ("--allow-domain", "*"),
        ("--allow-domain", "*.test"),
        ("--deny-domain", "*"),
        ("--allow-ip", "bogus"),
        ("--map-host", "x.test=notanip"),
        ("--allow-domain", "x.test:0"),
    ] {
        let r = airlock(
            ws.path(),
            &["run", "--net", "proxy", flag, value, "--", "true"],
        );
        assert_eq!(r.code, 125, "{flag} {value} was accepted: {}", r.stderr);
        assert!(
            r.stderr.contains(flag),
            "{flag} {value}: the error does not name the flag: {}",
            r.stderr
        );
    }
}

// ----- 10. without root -----

#[test]
fn an_unprivileged_user_gets_the_same_proxy() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    assert!(
        is_root(),
        "this test must run as root (it switches to {TEST_USER})"
    );
    let (uid, gid, home) = ensure_test_user();
    let (_bin_dir, bin) = binary_for_test_user("net-unpriv-bin");
    let ws = TempDir::new("net-unpriv-ws");
    std::os::unix::fs::chown(ws.path(), Some(uid), Some(gid)).expect("chown the workspace");

    let root = TempDir::new("net-unpriv-root");
    write(&root.join("ok.txt"), b"unprivileged-ok\n");
    let origin = Origin::serve(root.path());
    let port = origin.port;
    let result_file = ws.join("result.json");
    let script = format!("curl -sS http://svc.test:{port}/ok.txt; curl -sS -D - -o /dev/null http://other.test:{port}/ok.txt");
    let out = common::as_test_user(&bin)
        .args(["run", "--timeout", "60s", "--result"])
        .arg(&result_file)
        .args(SVC)
        .args([
            "--map-host",
            "other.test=127.0.0.1",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .current_dir(ws.path())
        .env("HOME", &home)
        .env("USER", TEST_USER)
        .stdin(Stdio::null())
        .output()
        .expect("run setpriv");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout {stdout} stderr {stderr}"
    );
    assert!(stdout.contains("unprivileged-ok"), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("403 Forbidden") && stdout.contains("X-Airlock-Denied: not-allowed"),
        "{stdout}"
    );
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(&result_file).expect("result file"))
            .expect("result is JSON");
    let events = net_events(&result);
    assert_denied_event(&events, "http", "other.test", "not-allowed");
    let allowed = events_for(&events, "http", "svc.test");
    assert_eq!(allowed.len(), 1, "{events:#?}");
    assert_eq!(allowed[0]["decision"], "allow");
    origin.assert_reached(1, "unprivileged run (only the allowed request may arrive)");
}

const FLOOD_PY: &str = r#"
import socket, sys, time, urllib.request
port = int(sys.argv[1])
held = []
for i in range(300):
    try:
        held.append(socket.create_connection(("127.0.0.1", 3128), timeout=5))
    except OSError as e:
        print("box-side limit at", i, e, flush=True)
        break
print("HOLDING %d" % len(held), flush=True)
time.sleep(2.0)
for s in held:
    s.close()
time.sleep(0.3)
body = urllib.request.urlopen("http://svc.test:%d/hello.txt" % port, timeout=10).read()
print("AFTER", body.decode().strip(), flush=True)
"#;

/// CPU seconds (user + system) the process `pid` has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15; `rest` starts at field 3.
    let ticks: u64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf with a constant argument.
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

#[test]
fn a_proxy_out_of_descriptors_waits_instead_of_spinning_and_recovers() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    // airlock runs with only 128 descriptors (soft and hard, so it cannot raise them); the box
    // opens more connections than the proxy can accept. Accepting then fails with EMFILE while the
    // connections wait in the backlog: the proxy must back off (not burn a CPU retrying), say why,
    // and serve again once the box lets go.
    use std::os::unix::process::CommandExt;
    let root = TempDir::new("net-emfile-root");
    std::fs::write(root.join("hello.txt"), "hello\n").unwrap();
    let origin = Origin::serve(root.path());
    let ws = TempDir::new("net-emfile-ws");
    write(&ws.join("flood.py"), FLOOD_PY.as_bytes());
    let logs = TempDir::new("net-emfile-log");
    let audit = logs.join("audit.jsonl");
    let port = origin.port.to_string();
    let mut args = vec![
        "run",
        "--no-stdin",
        "--timeout",
        "60s",
        "--audit",
        audit.to_str().unwrap(),
    ];
    args.extend_from_slice(SVC);
    args.extend_from_slice(&["--", "python3", "flood.py", &port]);
    let mut cmd = Command::new(airlock_bin());
    cmd.args(common::with_test_template(&args, &common::test_template()))
        .current_dir(ws.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; the closure touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 128,
                rlim_max: 128,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("start airlock");
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let holding = lines.next().and_then(Result::ok).unwrap_or_default();
    let holding = if holding.starts_with("box-side") {
        lines.next().and_then(Result::ok).unwrap_or_default()
    } else {
        holding
    };
    assert!(
        holding.starts_with("HOLDING"),
        "the box did not get to hold its connections: {holding:?}"
    );
    // While the box holds them (2 s), measure airlock's CPU over 1.5 s.
    let before = cpu_seconds(pid);
    std::thread::sleep(Duration::from_millis(1500));
    let used = cpu_seconds(pid) - before;
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let out = child.wait_with_output().expect("wait for airlock");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        used < 0.5,
        "airlock used {used:.2} CPU-s in 1.5 s while out of descriptors (spinning)"
    );
    assert!(
        rest.iter().any(|l| l == "AFTER hello"),
        "the proxy did not serve again: {rest:?}\n{stderr}"
    );
    assert_eq!(out.status.code(), Some(0), "{rest:?}\n{stderr}");
    let text = std::fs::read_to_string(&audit).unwrap();
    let noted = text
        .lines()
        .filter(|l| l.contains("proxy-out-of-resources"))
        .count();
    assert!(
        (1..=10).contains(&noted),
        "expected a few rate-limited out-of-resources events, got {noted}:\n{text}"
    );
    assert!(
        text.contains("ulimit -n"),
        "the event does not say what to do:\n{text}"
    );
}

// ----- 11. one request per connection -----

/// A keep-alive HTTP/1.1 server the test owns on 127.0.0.1 port 0, more permissive than any
/// real one: it ignores `Connection: close`, answers every request it can read on a
/// connection with `answer for <host> <target>`, and keeps every byte it received and every
/// request (`<request line> | <host> | <body>`). Stopped on drop.
struct KeepAliveRecorder {
    port: u16,
    raw: Arc<Mutex<Vec<u8>>>,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl KeepAliveRecorder {
    fn serve() -> KeepAliveRecorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the recorder");
        let port = listener.local_addr().expect("recorder address").port();
        let raw = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, q, stopping) = (raw.clone(), requests.clone(), stop.clone());
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (r, q) = (r.clone(), q.clone());
                std::thread::spawn(move || serve_every_request(stream, &r, &q));
            }
        });
        KeepAliveRecorder {
            port,
            raw,
            requests,
            stop,
            acceptor: Some(acceptor),
        }
    }

    fn raw(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().expect("raw log")).into_owned()
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("request log").clone()
    }
}

impl Drop for KeepAliveRecorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
    }
}

/// Reads more bytes into `buf` (and the raw log); false at end of file, on error or past 1 MiB.
fn recorder_read(s: &mut TcpStream, buf: &mut Vec<u8>, raw: &Mutex<Vec<u8>>) -> bool {
    let mut chunk = [0u8; 4096];
    match s.read(&mut chunk) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            raw.lock().expect("raw log").extend_from_slice(&chunk[..n]);
            buf.extend_from_slice(&chunk[..n]);
            buf.len() < 1 << 20
        }
    }
}

fn position(buf: &[u8], needle: &[u8]) -> Option<usize> {
    buf.windows(needle.len()).position(|w| w == needle)
}

fn serve_every_request(mut s: TcpStream, raw: &Mutex<Vec<u8>>, log: &Mutex<Vec<String>>) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
    let mut buf = Vec::new();
    loop {
        let end = loop {
            if let Some(end) = position(&buf, b"\r\n\r\n") {
                break end;
            }
            if !recorder_read(&mut s, &mut buf, raw) {
                return;
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end + 4);
        let line = head.lines().next().unwrap_or("").to_string();
        let field = |name: &str| {
            head.lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim().to_string())
        };
        let host = field("host").unwrap_or_default();
        let mut body = Vec::new();
        if field("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            loop {
                let Some(eol) = position(&buf, b"\r\n") else {
                    if !recorder_read(&mut s, &mut buf, raw) {
                        return;
                    }
                    continue;
                };
                let size_text = String::from_utf8_lossy(&buf[..eol]).into_owned();
                let Ok(size) = usize::from_str_radix(size_text.split(';').next().unwrap_or(""), 16)
                else {
                    return;
                };
                while buf.len() < eol + 2 + size + 2 {
                    if !recorder_read(&mut s, &mut buf, raw) {
                        return;
                    }
                }
                body.extend_from_slice(&buf[eol + 2..eol + 2 + size]);
                buf.drain(..eol + 2 + size + 2);
                if size == 0 {
                    break;
                }
            }
        } else {
            let length: usize = field("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            while buf.len() < length {
                if !recorder_read(&mut s, &mut buf, raw) {
                    return;
                }
            }
            body = buf.drain(..length).collect();
        }
        let target = line.split(' ').nth(1).unwrap_or("").to_string();
        log.lock().expect("request log").push(format!(
            "{line} | {host} | {}",
            String::from_utf8_lossy(&body)
        ));
        let answer = format!("answer for {host} {target}\n");
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if s.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

const REQUESTS_SESSION_PY: &str = r#"
import requests, sys
with requests.Session() as s:
    for path in ("/py1", "/py2", "/py3"):
        print("PY " + s.get(sys.argv[1] + path, timeout=10).text.strip(), flush=True)
"#;

#[test]
fn a_request_pipelined_behind_an_allowed_one_never_reaches_the_server() {
    if is_wasm() {
        // A wasm box has no network: the case is the refusal of --net proxy.
        return wasm_refuses_proxy(SVC, None);
    }
    let recorder = KeepAliveRecorder::serve();
    let port = recorder.port;
    let ws = TempDir::new("net-pipeline-ws");
    let hidden = "GET /admin HTTP/1.1\r\nHost: internal-only.test\r\n\r\n";
    let post = format!("POST http://allowed.test:{port}");
    let probes = [
        Probe::new(
            "content-length",
            format!("{post}/cl HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 5\r\n\r\nhello{hidden}"),
        ),
        Probe::new(
            "chunked",
            format!("{post}/chunked HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n{hidden}"),
        ),
        Probe::new(
            "http-1.0",
            format!("GET http://allowed.test:{port}/old HTTP/1.0\r\n\r\n{hidden}"),
        ),
    ];
    // The probes, then keep-alive clients as positive controls: curl with several URLs on one
    // command line, and a Python requests session.
    let base = format!("http://allowed.test:{port}");
    write(&ws.join("session.py"), REQUESTS_SESSION_PY.as_bytes());
    let script = format!(
        "{} && curl -sS {base}/c1 {base}/c2 {base}/c3 && python3 session.py {base}",
        probe_command(ws.path(), &probes)
    );
    let flags = [
        "--net",
        "proxy",
        "--allow-domain",
        "allowed.test",
        "--map-host",
        "allowed.test=127.0.0.1",
        "--allow-ip",
        "127.0.0.1/32",
    ];
    let (run, result) = boxed(ws.path(), &flags, &script);
    assert_eq!(run.code, 0, "stdout {} stderr {}", run.stdout, run.stderr);

    // The box got exactly the allowed answers, and the proxy closed each connection.
    let answers = probe_answers(&run.stdout);
    for (name, target) in [
        ("content-length", "/cl"),
        ("chunked", "/chunked"),
        ("http-1.0", "/old"),
    ] {
        let a = answer_of(&answers, name, &run);
        let body = a["body"].as_str().unwrap_or("");
        assert_eq!(a["status"], 200, "{name}: {a:#}");
        assert_eq!(
            a["outcome"], "closed",
            "{name}: the connection stayed open: {a:#}"
        );
        assert_eq!(
            body,
            format!("answer for allowed.test:{port} {target}\n"),
            "{name}: {a:#}"
        );
    }
    for path in ["/c1", "/c2", "/c3"] {
        assert!(
            run.stdout
                .contains(&format!("answer for allowed.test:{port} {path}\n")),
            "curl {path}: {}",
            run.stdout
        );
    }
    for path in ["/py1", "/py2", "/py3"] {
        assert!(
            run.stdout
                .contains(&format!("PY answer for allowed.test:{port} {path}\n")),
            "requests {path}: {}",
            run.stdout
        );
    }

    // The server's record: the hidden request never arrived, in any form.
    let raw = recorder.raw();
    assert!(
        !raw.contains("internal-only.test") && !raw.contains("/admin"),
        "the hidden request reached the server: {raw:?}"
    );
    let mut requests = recorder.requests();
    requests.sort();
    let host = format!("allowed.test:{port}");
    let mut expected = vec![
        format!("GET /old HTTP/1.0 | {host} | "),
        format!("POST /chunked HTTP/1.1 | {host} | hello"),
        format!("POST /cl HTTP/1.1 | {host} | hello"),
    ];
    for path in ["/c1", "/c2", "/c3", "/py1", "/py2", "/py3"] {
        expected.push(format!("GET {path} HTTP/1.1 | {host} | "));
    }
    expected.sort();
    assert_eq!(requests, expected);

    // Each probe's event says what was dropped.
    let events = net_events(&result);
    let allowed = events_for(&events, "http", "allowed.test");
    assert_eq!(allowed.len(), 9, "{events:#?}");
    let noted = allowed
        .iter()
        .filter(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.contains("one request per connection"))
        })
        .count();
    assert_eq!(noted, 3, "{events:#?}");
}
