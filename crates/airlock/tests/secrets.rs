//! Secrets held by the egress proxy (issue 20), end to end through the real `airlock` binary:
//! real clients in the box (curl over HTTP/1.1 keep-alive and HTTP/2, Python urllib and
//! requests, Node) call a loopback HTTPS origin with its own test CA using the placeholder; the
//! origin receives the real value; the box's environment, files and `/proc` show only the
//! placeholder; the placeholder on its way to another host is blocked and the event names the
//! secret; a bound host whose certificate the host's trust store does not accept is refused;
//! wrong-host SNI, a wrong Host header and the bound name at another port get the right
//! treatment. The real value is then looked for in everything airlock wrote (stdout, stderr,
//! the result document, the audit file).
//!
//! The proxy verifies upstream servers against the host's trust store; the test points that
//! store at its own CA with `SSL_CERT_FILE` for the airlock process only (the variable OpenSSL
//! and rustls-native-certs read), never by turning verification off.

mod common;
mod secrets_support;

use common::{airlock_bin, test_run_args, TempDir};
use secrets_support::{Origin, TestCa};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// A value nobody could guess or find by accident.
fn real_value() -> String {
    let mut b = [0u8; 16];
    let f = std::fs::File::open("/dev/urandom").expect("urandom");
    std::io::Read::read_exact(&mut &f, &mut b).expect("random");
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("sk-real-{hex}")
}

struct Boxed {
    code: i32,
    stdout: String,
    stderr: String,
    result: Value,
    result_text: String,
    audit_text: String,
}

/// `airlock run` with the secrets' environment, the test CA as the host's trust store, a
/// result document and an audit file.
fn run_boxed(
    ws: &Path,
    ca_file: &Path,
    env: &[(&str, &str)],
    flags: &[&str],
    script: &str,
) -> Boxed {
    let dir = TempDir::new("secrets-out");
    let result = dir.join("result.json");
    let audit = dir.join("audit.jsonl");
    let (r, a) = (
        result.to_string_lossy().into_owned(),
        audit.to_string_lossy().into_owned(),
    );
    let mut args = vec!["run", "--timeout", "90s", "--result", &r, "--audit", &a];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    let mut cmd = Command::new(airlock_bin());
    cmd.args(test_run_args(&args))
        .current_dir(ws)
        .stdin(Stdio::null())
        .env("SSL_CERT_FILE", ca_file);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run airlock");
    let result_text = std::fs::read_to_string(&result).unwrap_or_else(|e| {
        panic!(
            "no result: {e}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Boxed {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        result: serde_json::from_str(&result_text).expect("result is JSON"),
        result_text,
        audit_text: std::fs::read_to_string(&audit).unwrap_or_default(),
    }
}

impl Boxed {
    fn events(&self) -> Vec<Value> {
        self.result["network_events"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Asserts that the real value is in nothing airlock wrote.
    fn assert_no_value(&self, value: &str) {
        for (what, text) in [
            ("stdout", &self.stdout),
            ("stderr", &self.stderr),
            ("result", &self.result_text),
            ("audit", &self.audit_text),
        ] {
            assert!(
                !text.contains(value),
                "the real value leaked into {what}: {text}"
            );
        }
    }
}

fn write_ca(dir: &TempDir, ca: &TestCa) -> std::path::PathBuf {
    let path = dir.join("test-ca.pem");
    std::fs::write(&path, &ca.pem).expect("write CA");
    path
}

/// The flags that map `names` to the loopback origin and allow it.
fn loopback(names: &[&str]) -> Vec<String> {
    let mut f = vec![
        "--net".to_string(),
        "proxy".into(),
        "--allow-ip".into(),
        "127.0.0.1".into(),
    ];
    for n in names {
        f.push("--map-host".into());
        f.push(format!("{n}=127.0.0.1"));
    }
    f
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

const NODE_CALL: &str = r#"
const http = require('http'), https = require('https'), tls = require('tls');
const [host, port, path] = process.argv.slice(2);
const proxy = new URL(process.env.HTTPS_PROXY);
const req = http.request({host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: host + ':' + port});
req.on('connect', (res, socket) => {
  if (res.statusCode !== 200) { console.log('connect ' + res.statusCode + ' ' + JSON.stringify(res.headers)); process.exit(1); }
  // The tunnel as the agent's connection (what proxy agents for Node do).
  class Tunnel extends https.Agent {
    createConnection(opts) { return tls.connect({...opts, socket, servername: host}); }
  }
  const r = https.request({host, port, path, agent: new Tunnel(),
      headers: {authorization: 'Bearer ' + process.env.API_KEY}}, (resp) => {
    let d = ''; resp.on('data', c => d += c);
    resp.on('end', () => { console.log('node: ' + d.trim()); process.exit(resp.statusCode === 200 ? 0 : 1); });
  });
  r.on('error', e => { console.log('node error: ' + e.message); process.exit(1); });
  r.end();
});
req.on('error', e => { console.log('proxy error: ' + e.message); process.exit(1); });
req.end();
"#;

#[test]
fn clients_send_the_placeholder_and_the_origin_gets_the_value() {
    let ca = TestCa::new("secrets test CA");
    let origin = Origin::https(&ca, "api.test");
    let h1 = Origin::https_h1(&ca, "h1.test");
    let dir = TempDir::new("secrets-clients");
    let ca_file = write_ca(&dir, &ca);
    let ws = TempDir::new("secrets-ws");
    std::fs::write(ws.join("node_call.js"), NODE_CALL).expect("script");
    let value = real_value();
    let (p, q) = (origin.port, h1.port);
    let mut flags = loopback(&["api.test", "h1.test"]);
    flags.extend(["--secret".into(), "API_KEY".into()]);
    flags.extend(["--secret-host".into(), format!("api.test:{p}")]);
    flags.extend(["--secret-host".into(), format!("h1.test:{q}")]);
    let script = format!(
        r#"set -e
echo "placeholder=$API_KEY"
curl -sS --fail --http1.1 -w 'curl connects=%{{num_connects}} version=%{{http_version}}\n' -H "Authorization: Bearer $API_KEY" https://h1.test:{q}/k1 https://h1.test:{q}/k2 https://h1.test:{q}/k3
curl -sS --fail --http2 -w 'curl connects=%{{num_connects}} version=%{{http_version}}\n' -H "x-api-key: $API_KEY" https://api.test:{p}/h2a https://api.test:{p}/h2b
python3 -c 'import os, urllib.request as u; print(u.urlopen(u.Request("https://api.test:{p}/urllib", headers={{"Authorization": "Bearer " + os.environ["API_KEY"]}})).read().decode().strip())'
python3 -c 'import os, requests; print(requests.get("https://api.test:{p}/requests", headers={{"x-api-key": os.environ["API_KEY"]}}).text.strip())'
node node_call.js api.test {p} /node
mkdir -p out
cat /proc/[0-9]*/environ > out/environ 2>/dev/null || true
env > out/env
cat /etc/ssl/certs/ca-certificates.crt > out/bundle.pem
for d in /.airlock /tmp "$HOME" /etc/ssl/certs; do grep -rIl "PRIVATE KEY" "$d" 2>/dev/null; done > out/keys || true
echo done
"#
    );
    let b = run_boxed(
        ws.path(),
        &ca_file,
        &[("API_KEY", &value)],
        &strs(&flags),
        &script,
    );
    assert_eq!(b.code, 0, "stdout: {}\nstderr: {}", b.stdout, b.stderr);
    let placeholder = b
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("placeholder="))
        .expect("the box printed its variable")
        .to_string();
    assert!(
        placeholder.starts_with("airlock-secret-API_KEY-"),
        "{placeholder}"
    );
    assert!(b.stdout.contains("node: ok HTTP/2.0 /node"), "{}", b.stdout);
    // The box's side: HTTP/1.1 keep-alive (one connection made, then reused twice), then
    // HTTP/2 (one connection, two streams).
    let curl: Vec<&str> = b
        .stdout
        .lines()
        .filter(|l| l.starts_with("curl "))
        .collect();
    assert_eq!(
        curl,
        [
            "curl connects=1 version=1.1",
            "curl connects=0 version=1.1",
            "curl connects=0 version=1.1",
            "curl connects=1 version=2",
            "curl connects=0 version=2",
        ],
        "{}",
        b.stdout
    );

    // What the origins received: the value, on every path, never the placeholder.
    let mut seen = origin.seen();
    seen.extend(h1.seen());
    let by_path = |p: &str| {
        seen.iter()
            .find(|s| s.path == p)
            .unwrap_or_else(|| panic!("the origin never got {p}: {seen:?}"))
    };
    for path in ["/k1", "/k2", "/k3", "/urllib", "/node"] {
        assert_eq!(
            by_path(path).header("authorization"),
            Some(format!("Bearer {value}").as_str()),
            "{path}"
        );
    }
    for path in ["/h2a", "/h2b", "/requests"] {
        assert_eq!(
            by_path(path).header("x-api-key"),
            Some(value.as_str()),
            "{path}"
        );
    }
    // HTTP/1.1 keep-alive: three requests on one connection, each rewritten.
    let k = by_path("/k1").connection;
    assert!(["/k2", "/k3"].iter().all(|p| by_path(p).connection == k));
    assert_eq!(by_path("/k1").version, "HTTP/1.1");
    assert_eq!(
        h1.connections(),
        1,
        "the proxy kept one upstream connection for the three"
    );
    // HTTP/2 end to end (the box spoke h2 to the proxy, the proxy h2 to the origin).
    assert_eq!(by_path("/h2a").version, "HTTP/2.0");
    assert_eq!(by_path("/h2a").connection, by_path("/h2b").connection);
    for s in &seen {
        assert!(
            !s.headers.iter().any(|(_, v)| v.contains(&placeholder)),
            "the origin got the placeholder: {s:?}"
        );
    }

    // The box held only the placeholder: its environment, every process's environ, its files.
    let out = ws.join("out");
    let environ = std::fs::read(out.join("environ")).expect("environ dump");
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        environ.contains(&placeholder),
        "the dump holds the box's processes' environ"
    );
    let env = std::fs::read_to_string(out.join("env")).expect("env");
    for var in [
        "SSL_CERT_FILE",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "PIP_CERT",
        "CURL_CA_BUNDLE",
        "GIT_SSL_CAINFO",
    ] {
        assert!(
            env.contains(&format!("{var}=/etc/ssl/certs/ca-certificates.crt")),
            "{var}: {env}"
        );
    }
    let bundle = std::fs::read_to_string(out.join("bundle.pem")).expect("bundle");
    assert!(
        bundle.matches("BEGIN CERTIFICATE").count() > 1,
        "the host's roots and the box CA"
    );
    assert!(
        !bundle.contains(ca.pem.trim()),
        "the test CA is the proxy's trust, not the box's"
    );
    let keys = std::fs::read_to_string(out.join("keys")).expect("keys");
    assert!(
        keys.trim().is_empty(),
        "a private key is visible in the box: {keys}"
    );
    for entry in walk(ws.path()) {
        let data = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&data).contains(&value),
            "the real value is in {}",
            entry.display()
        );
    }

    // The receipt says what the proxy holds and what it cannot see.
    let layers = b.result["receipt"]["layers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let layer = layers
        .iter()
        .find(|l| l["layer"] == "secrets")
        .unwrap_or_else(|| panic!("no secrets layer: {}", b.result["receipt"]));
    let detail = layer["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("API_KEY -> api.test:") && detail.contains("not seen"),
        "{layer}"
    );

    // Events: one per intercepted request, naming the secret; the value nowhere.
    let https: Vec<&Value> = b
        .events_ref()
        .into_iter()
        .filter(|e| e["protocol"] == "https")
        .collect();
    assert_eq!(https.len(), 8, "one event per request: {:?}", b.events());
    assert!(https
        .iter()
        .all(|e| e["secrets"] == serde_json::json!(["API_KEY"]) && e["decision"] == "allow"));
    b.assert_no_value(&value);
}

impl Boxed {
    fn events_ref(&self) -> Vec<&Value> {
        self.result["network_events"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The reason and message of the first event of `protocol` to `host` that was denied.
fn denied<'a>(b: &'a Boxed, protocol: &str, host: &str) -> Option<&'a Value> {
    b.events_ref()
        .into_iter()
        .find(|e| e["protocol"] == protocol && e["host"] == host && e["decision"] == "deny")
}

#[test]
fn a_placeholder_on_its_way_to_another_host_is_blocked_and_the_event_names_the_secret() {
    let ca = TestCa::new("secrets test CA");
    let api = Origin::https(&ca, "api.test");
    let other = Origin::https(&ca, "other.test");
    let plain = Origin::plain();
    let dir = TempDir::new("secrets-tripwire");
    let ca_file = write_ca(&dir, &ca);
    let ws = TempDir::new("secrets-ws");
    let (a, b) = (real_value(), real_value());
    let (p, q, r) = (api.port, other.port, plain.port);
    let mut flags = loopback(&["api.test", "other.test", "plain.test"]);
    for f in [
        "--secret".to_string(),
        "KEY_A".into(),
        "--secret".into(),
        "KEY_B".into(),
        "--secret-host".into(),
        format!("KEY_A=api.test:{p}"),
        "--secret-host".into(),
        format!("KEY_B=other.test:{q}"),
        "--allow-domain".into(),
        format!("plain.test:{r}"),
    ] {
        flags.push(f);
    }
    let code = "-s -o /dev/null -w %{http_code}";
    let script = format!(
        r#"echo "plain=$(curl {code} -H "Authorization: Bearer $KEY_A" http://plain.test:{r}/leak)"
echo "plain-url=$(curl {code} "http://plain.test:{r}/leak?key=$KEY_A")"
echo "tls=$(curl {code} -H "x-api-key: $KEY_A" https://other.test:{q}/leak)"
echo "control-plain=$(curl {code} http://plain.test:{r}/fine)"
echo "control-tls=$(curl {code} -H "x-api-key: $KEY_B" https://other.test:{q}/fine)"
"#
    );
    let out = run_boxed(
        ws.path(),
        &ca_file,
        &[("KEY_A", &a), ("KEY_B", &b)],
        &strs(&flags),
        &script,
    );
    for line in [
        "plain=403",
        "plain-url=403",
        "tls=403",
        "control-plain=200",
        "control-tls=200",
    ] {
        assert!(
            out.stdout.lines().any(|l| l == line),
            "{line}: {}\n{}",
            out.stdout,
            out.stderr
        );
    }
    // Nothing of the blocked requests arrived; the controls did, with B's value only at B's host.
    let paths = |o: &Origin| o.seen().iter().map(|s| s.path.clone()).collect::<Vec<_>>();
    assert_eq!(paths(&plain), ["/fine"]);
    assert_eq!(paths(&other), ["/fine"]);
    assert_eq!(other.seen()[0].header("x-api-key"), Some(b.as_str()));
    assert!(api.seen().is_empty());
    // The events name the secret, the host and the binding, never the value.
    for (protocol, host) in [("http", "plain.test"), ("https", "other.test")] {
        let e = denied(&out, protocol, host).unwrap_or_else(|| panic!("{protocol} {host}"));
        assert_eq!(e["reason"], "secret-not-bound", "{e}");
        assert_eq!(e["rule"], format!("secret KEY_A -> api.test:{p}"), "{e}");
        let m = e["message"].as_str().expect("message");
        assert!(m.contains("secret KEY_A") && m.contains(host), "{m}");
    }
    out.assert_no_value(&a);
    out.assert_no_value(&b);
}

#[test]
fn a_bound_host_whose_certificate_the_host_does_not_trust_is_refused() {
    let trusted = TestCa::new("secrets test CA");
    let rogue = TestCa::new("rogue CA");
    let origin = Origin::https(&rogue, "api.test");
    let dir = TempDir::new("secrets-untrusted");
    let ca_file = write_ca(&dir, &trusted);
    let ws = TempDir::new("secrets-ws");
    let value = real_value();
    let p = origin.port;
    let mut flags = loopback(&["api.test"]);
    flags.extend([
        "--secret".into(),
        "API_KEY".into(),
        "--secret-host".into(),
        format!("api.test:{p}"),
    ]);
    let script = format!(
        r#"curl -sS -H "Authorization: Bearer $API_KEY" https://api.test:{p}/x; echo "exit=$?""#
    );
    let out = run_boxed(
        ws.path(),
        &ca_file,
        &[("API_KEY", &value)],
        &strs(&flags),
        &script,
    );
    assert!(
        out.stdout.contains("exit=56"),
        "CONNECT refused: {}\n{}",
        out.stdout,
        out.stderr
    );
    // The proxy went as far as the TLS handshake, which it refused: no request was sent.
    assert_eq!(origin.connections(), 1);
    assert!(origin.seen().is_empty(), "{:?}", origin.seen());
    let e = out
        .events_ref()
        .into_iter()
        .find(|e| e["protocol"] == "connect" && e["host"] == "api.test")
        .expect("the connect event");
    assert_eq!(e["reason"], "upstream-tls-failed", "{e}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("certificate")),
        "{e}"
    );
    out.assert_no_value(&value);
}

const PY_RAW: &str = r#"
import os, socket, ssl, sys
host, port, sni, authority = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
s = socket.create_connection(("127.0.0.1", int(proxy[1])))
s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print("connect", head.split(b" ")[1].decode())
try:
    t = ssl.create_default_context().wrap_socket(s, server_hostname=sni)
except (ssl.SSLError, OSError) as e:
    print("handshake-refused")
    sys.exit(0)
t.sendall(f"GET /raw HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {os.environ['API_KEY']}\r\nConnection: close\r\n\r\n".encode())
print("status", t.recv(4096).split(b" ")[1].decode())
"#;

#[test]
fn wrong_sni_a_wrong_host_header_and_the_bound_name_at_another_port() {
    let ca = TestCa::new("secrets test CA");
    let bound = Origin::https(&ca, "api.test");
    let plain_port = Origin::https(&ca, "api.test");
    let closed_port = Origin::https(&ca, "api.test");
    let dir = TempDir::new("secrets-sni");
    let ca_file = write_ca(&dir, &ca);
    let ws = TempDir::new("secrets-ws");
    std::fs::write(ws.join("raw.py"), PY_RAW).expect("script");
    let value = real_value();
    let (p, t, c) = (bound.port, plain_port.port, closed_port.port);
    let mut flags = loopback(&["api.test"]);
    flags.extend([
        "--secret".into(),
        "API_KEY".into(),
        "--secret-host".into(),
        format!("api.test:{p}"),
        // The same name at another port, allowed but not bound: a plain tunnel.
        "--allow-domain".into(),
        format!("api.test:{t}"),
    ]);
    let script = format!(
        r#"python3 raw.py api.test {p} evil.test api.test:{p}
python3 raw.py api.test {p} api.test other.test
python3 raw.py api.test {p} api.test api.test:{p}
echo "tunnel=$(curl -sk -H "x-api-key: $API_KEY" https://api.test:{t}/tunnel)"
curl -sS https://api.test:{c}/closed; echo "closed=$?"
"#
    );
    let out = run_boxed(
        ws.path(),
        &ca_file,
        &[("API_KEY", &value)],
        &strs(&flags),
        &script,
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    // Wrong SNI: the handshake is refused before any certificate is shown.
    assert_eq!(
        &lines[0..2],
        ["connect 200", "handshake-refused"],
        "{}",
        out.stdout
    );
    // Right SNI, wrong Host: 421, nothing forwarded.
    assert_eq!(
        &lines[2..4],
        ["connect 200", "status 421"],
        "{}",
        out.stdout
    );
    // Right SNI and Host (positive control).
    assert_eq!(
        &lines[4..6],
        ["connect 200", "status 200"],
        "{}",
        out.stdout
    );
    // The bound name at an allowed, unbound port: not intercepted, so the origin there got the
    // placeholder (the box's to send), never the value.
    let tunneled = plain_port.seen();
    assert_eq!(tunneled.len(), 1, "{}", out.stdout);
    let got = tunneled[0]
        .header("x-api-key")
        .unwrap_or_default()
        .to_string();
    assert!(got.starts_with("airlock-secret-API_KEY-"), "{got}");
    // At a port neither bound nor allowed: refused by the allowlist.
    assert!(out.stdout.contains("closed=56"), "{}", out.stdout);
    assert_eq!(closed_port.connections(), 0);
    // The bound origin got exactly the one good request, with the value.
    let seen = bound.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {value}").as_str())
    );
    let sni = denied(&out, "https", "api.test").expect("an https denial");
    assert_eq!(sni["reason"], "sni-mismatch", "{sni}");
    assert!(out
        .events_ref()
        .iter()
        .any(|e| e["reason"] == "misdirected-request" && e["decision"] == "deny"));
    let tunnel = out
        .events_ref()
        .into_iter()
        .find(|e| e["protocol"] == "connect" && e["port"] == t)
        .expect("the tunnel's event");
    assert!(tunnel.get("intercepted").is_none(), "{tunnel}");
    out.assert_no_value(&value);
}

#[test]
fn an_unprivileged_user_gets_secrets_too() {
    use common::{binary_for_test_user, ensure_test_user, TEST_USER};
    let (uid, gid, home) = ensure_test_user();
    let (_bin_dir, bin) = binary_for_test_user("secrets-unpriv-bin");
    let ca = TestCa::new("secrets test CA");
    let origin = Origin::https(&ca, "api.test");
    let dir = TempDir::new("secrets-unpriv");
    let ca_file = write_ca(&dir, &ca);
    let ws = TempDir::new("secrets-unpriv-ws");
    for d in [dir.path(), ws.path()] {
        std::os::unix::fs::chown(d, Some(uid), Some(gid)).expect("chown");
    }
    std::os::unix::fs::chown(&ca_file, Some(uid), Some(gid)).expect("chown");
    let value = real_value();
    let p = origin.port;
    let mut flags = loopback(&["api.test"]);
    flags.extend([
        "--secret".into(),
        "API_KEY".into(),
        "--secret-host".into(),
        format!("api.test:{p}"),
    ]);
    let out = common::as_test_user(&bin)
        .args(["run", "--timeout", "60s"])
        .args(&flags)
        .args([
            "--",
            "sh",
            "-c",
            &format!(r#"curl -sS --fail -H "x-api-key: $API_KEY" https://api.test:{p}/unpriv"#),
        ])
        .current_dir(ws.path())
        .env("HOME", &home)
        .env("USER", TEST_USER)
        .env("API_KEY", &value)
        .env("SSL_CERT_FILE", &ca_file)
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
    assert!(stdout.contains("ok HTTP/2.0 /unpriv"), "{stdout}");
    let seen = origin.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("x-api-key"), Some(value.as_str()));
    assert!(!stdout.contains(&value) && !stderr.contains(&value));
}
