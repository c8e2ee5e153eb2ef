//! E2B's secrets (issue 20) through E2B's own SDKs, Python 2.63 and JavaScript 2.51 (installed
//! by `scripts/e2b-clients.sh`), against a real `airlock serve`: `Secret.create`, `update`,
//! `get_info`, `list`, `exists`, `destroy`, and a sandbox whose `network.rules` put a stored
//! secret in the Authorization header of its requests to a loopback HTTPS origin (its own test
//! CA, which the server trusts; the name is pinned with `--e2b-map-host`, no DNS). The origin
//! must receive the real value — replacing the header the box sent — while no SDK answer,
//! nothing the box printed (its environment, `/proc`, its files), no event and no file of the
//! server's data outside its private secrets directory holds it. Also as an unprivileged user.

mod common;
mod secrets_support;

use common::{airlock_bin, repo_root, ServeProcess, TempDir};
use secrets_support::{contents, Origin, TestCa};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn holds(bytes: &[u8], value: &str) -> bool {
    bytes.windows(value.len()).any(|w| w == value.as_bytes())
}

/// Which SDK drives the server.
#[derive(Clone, Copy, PartialEq)]
enum Sdk {
    Python,
    JavaScript,
}

#[test]
fn a_stored_secret_reaches_the_rules_host_only_through_the_proxy() {
    check(Sdk::Python, false);
}

/// The same with the server run by an unprivileged user: airlock must work without root.
/// gVisor boxes need root here (airlock puts runsc in namespaces and a cgroup of its own), and an
/// unprivileged server asked for them refuses to start, saying so: that is what this case checks
/// under `AIRLOCK_TEST_BACKEND=gvisor`.
#[test]
fn an_unprivileged_server_hands_a_stored_secret_to_the_proxy_too() {
    if common::test_backend_kind() == airlock_policy::BackendKind::Gvisor {
        an_unprivileged_server_refuses_gvisor_boxes_by_name();
        return;
    }
    check(Sdk::Python, true);
}

fn an_unprivileged_server_refuses_gvisor_boxes_by_name() {
    let (_bin_dir, bin) = common::binary_for_test_user("e2b-secrets-bin");
    let (uid, gid, home) = common::ensure_test_user();
    let data = TempDir::new("e2b-secrets-gvisor-unpriv");
    std::os::unix::fs::chown(data.path(), Some(uid), Some(gid)).expect("hand over the data");
    let out = common::as_test_user(&bin)
        .env("HOME", home)
        .env("USER", common::TEST_USER)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data.path())
        .args([
            "--backend",
            "gvisor",
            "--e2b-map-host",
            "api.test=127.0.0.1",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run airlock serve");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(!stdout.contains("listening on"), "{stdout}");
    assert!(
        stderr.contains("gvisor backend cannot run on this host: it needs root"),
        "{stderr}"
    );
}

/// The same steps through E2B's JavaScript SDK.
#[test]
fn the_javascript_sdk_stores_and_uses_a_secret_the_same_way() {
    check(Sdk::JavaScript, false);
}

fn check(sdk: Sdk, unprivileged: bool) {
    let clients = std::env::var_os("E2B_CLIENTS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/e2b-clients"));
    let (program, script, installed) = match sdk {
        Sdk::Python => (
            clients.join("py-current/bin/python"),
            "tests/e2b/secrets/drive.py",
            clients.join("py-current/bin/python"),
        ),
        Sdk::JavaScript => (
            std::path::PathBuf::from("node"),
            "tests/e2b/secrets/drive.js",
            clients.join("js/node_modules/e2b/package.json"),
        ),
    };
    assert!(
        installed.exists(),
        "E2B's SDK is not installed at {}: run scripts/e2b-clients.sh (scripts/test.sh does)",
        installed.display()
    );
    let ca = TestCa::new("e2b secrets test CA");
    let origin = Origin::https(&ca, "api.test");
    let dir = TempDir::new("e2b-secrets");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let ca_file = dir.join("test-ca.pem");
    std::fs::write(&ca_file, &ca.pem).expect("CA");
    let data = TempDir::new("e2b-secrets-data");
    let mut _bin_dir = None;
    let mut cmd = if unprivileged {
        let (bin_dir, bin) = common::binary_for_test_user("e2b-secrets-bin");
        _bin_dir = Some(bin_dir);
        let (uid, gid, home) = common::ensure_test_user();
        std::os::unix::fs::chown(data.path(), Some(uid), Some(gid)).expect("hand over the data");
        let mut cmd = common::as_test_user(&bin);
        cmd.env("HOME", home).env("USER", common::TEST_USER);
        cmd
    } else {
        Command::new(airlock_bin())
    };
    // The box's proxy verifies the origin against the host's trust store: this CA, here.
    cmd.env("SSL_CERT_FILE", &ca_file);
    let mut serve =
        ServeProcess::start_with(cmd, data.path(), &["--e2b-map-host", "api.test=127.0.0.1"]);
    if unprivileged {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", serve.pid())).expect("status");
        let uid = status
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .unwrap_or("")
            .to_string();
        assert!(
            !uid.split_whitespace().skip(1).any(|u| u == "0"),
            "the server runs as root: {uid}"
        );
    }
    let e2b_key = serve.printed_e2b_key.clone().expect("e2b key");
    let key = serve.printed_key.clone().expect("api key");
    let value = format!("sk-e2b-{}-{}", std::process::id(), origin.port);

    let run = Command::new(&program)
        .arg(repo_root().join(script))
        .env("NODE_PATH", clients.join("js/node_modules"))
        .env("E2B_API_KEY", &e2b_key)
        .env("E2B_API_URL", &serve.base)
        .env("E2B_SANDBOX_URL", &serve.base)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env("ORIGIN_PORT", origin.port.to_string())
        .env("SECRET_VALUE", &value)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run the SDK script");
    let stdout = String::from_utf8_lossy(&run.stdout).to_string();
    let stderr = String::from_utf8_lossy(&run.stderr).to_string();
    assert!(
        run.status.success(),
        "the SDK script failed:\n{stdout}\n{stderr}"
    );
    let out: Value = serde_json::from_str(stdout.trim()).expect("the script's JSON");

    // The origin got the real value, in place of the box's own header, on both requests.
    let seen = origin.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["/curl", "/python"], "{seen:?}");
    for s in &seen {
        let auth: Vec<&str> = s
            .headers
            .iter()
            .filter(|(k, _)| k == "authorization")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(auth, [format!("Bearer {value}").as_str()], "{s:?}");
    }
    let box_runs = out["box"].as_array().expect("box");
    assert!(
        box_runs[0]["stdout"].as_str().unwrap_or("").contains("ok "),
        "{box_runs:?}"
    );
    assert!(
        box_runs[1]["stdout"].as_str().unwrap_or("").contains("ok "),
        "{box_runs:?}"
    );
    assert!(
        box_runs[3]["stdout"].as_str() == Some("grep-done\n"),
        "the box's files hold a proxy placeholder: {box_runs:?}"
    );

    // Nothing the box printed, and no SDK answer, holds the value.
    assert!(
        !holds(stdout.as_bytes(), &value),
        "the SDK's answers or the box hold the value: {stdout}"
    );
    assert!(!holds(stderr.as_bytes(), &value), "{stderr}");
    // The use is in the sandbox's events (the native API sees every sandbox).
    let id = out["sandbox_id"].as_str().expect("id");
    let events = ureq::get(&format!("{}/v1/sandboxes/{id}/events", serve.base))
        .set("Authorization", &format!("Bearer {key}"))
        .call()
        .map(|r| r.into_string().expect("body"))
        .unwrap_or_else(|e| match e {
            ureq::Error::Status(_, r) => r.into_string().expect("body"),
            other => panic!("events: {other}"),
        });
    assert!(
        events.contains("\"secrets\":[\"api-key-"),
        "the use is in the events: {events}"
    );
    assert!(!holds(events.as_bytes(), &value), "{events}");

    serve.stop();
    let vault = data.path().join("e2b-secrets");
    let mode = std::fs::metadata(&vault)
        .expect("vault")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700, "the secrets directory is private");
    for (path, bytes) in contents(data.path()) {
        assert!(
            path.starts_with(&vault) || !holds(&bytes, &value),
            "the data file {} holds the value",
            path.display()
        );
    }
    // Deleted by the script: its file is gone too.
    assert!(
        contents(&vault).is_empty(),
        "the deleted secret's file is left"
    );
}

/// A bad `--e2b-map-host` stops `airlock serve` before it listens, naming the entry and why
/// (a name and an address a box could be sent to; not, say, 0.0.0.0).
#[test]
fn a_bad_map_host_stops_the_server_before_it_listens() {
    for (entry, says) in [
        ("no-equals-sign", "NAME=IP"),
        ("svc.test=not-an-ip", "NAME=IP"),
        ("svc.test=0.0.0.0", "cannot be a destination"),
    ] {
        let data = TempDir::new("e2b-map-host");
        let log = data.join("serve.log");
        let mut child = Command::new(airlock_bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data.path())
            .args(["--e2b-map-host", entry])
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(&log).expect("log"))
            .stderr(std::fs::File::create(data.join("serve.err")).expect("log"))
            .spawn()
            .expect("run airlock serve");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let status = loop {
            if let Some(st) = child.try_wait().expect("wait") {
                break st;
            }
            if std::time::Instant::now() > until {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{entry}: airlock serve did not stop: {:?}",
                    std::fs::read_to_string(&log)
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let stdout = std::fs::read_to_string(&log).unwrap_or_default();
        let stderr = std::fs::read_to_string(data.join("serve.err")).unwrap_or_default();
        assert!(!status.success(), "{entry}: {stdout}{stderr}");
        assert!(!stdout.contains("listening on"), "{entry}: {stdout}");
        assert!(
            stderr.contains("--e2b-map-host") && stderr.contains(entry) && stderr.contains(says),
            "{entry}: {stderr}"
        );
        assert!(
            !data.path().join("e2b-secrets").exists(),
            "nothing is made for a server that does not start"
        );
    }
}
