//! What the MCP tests need besides airlock: the official MCP Python SDK (a venv), the reference
//! filesystem server (npm) and fetch server (PyPI), installed by `scripts/test.sh` under
//! `target/mcp-tools` (or `$AIRLOCK_MCP_TOOLS`); a loopback HTTP origin; and a runner for
//! `client.py`, which drives a server through the SDK. A missing tool fails the test loudly.
//! For messages the SDK would never send (the relay's attacks), [`RawClient`] speaks JSON-RPC
//! lines to `airlock wrap` itself; the servers it wraps there are fixtures beside this file: a
//! Go server (built here with Debian's Go, standard library only) and a Python one.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Where scripts/test.sh installed the MCP tools.
pub fn tools_dir() -> PathBuf {
    let dir = match std::env::var_os("AIRLOCK_MCP_TOOLS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-tools"),
    };
    // Canonical, so that the path granted to a box is the path used inside it.
    dir.canonicalize().unwrap_or(dir)
}

fn need(path: PathBuf, what: &str) -> PathBuf {
    assert!(path.exists(), "{what} is missing at {}: run scripts/test.sh (it installs the MCP test tools), or set AIRLOCK_MCP_TOOLS", path.display());
    path
}

/// The Python of the venv that has the `mcp` SDK.
pub fn sdk_python() -> PathBuf {
    need(
        tools_dir().join("venv/bin/python"),
        "the MCP Python SDK venv",
    )
}

/// The npm folder holding @modelcontextprotocol/server-filesystem.
pub fn npm_dir() -> PathBuf {
    need(tools_dir().join("npm"), "the npm folder")
}

/// The filesystem server's entry point.
pub fn filesystem_server() -> PathBuf {
    need(
        npm_dir().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"),
        "@modelcontextprotocol/server-filesystem",
    )
}

/// The venv that has mcp-server-fetch, and its entry point.
pub fn fetch_venv() -> PathBuf {
    need(tools_dir().join("fetch-venv"), "the mcp-server-fetch venv")
}

pub fn fetch_server() -> PathBuf {
    need(
        fetch_venv().join("bin/mcp-server-fetch"),
        "mcp-server-fetch",
    )
}

/// client.py, beside this file.
pub fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_support/client.py")
}

/// Runs `steps` through the SDK against `target` (`["stdio", cmd, args…]` or `["http", url,
/// key]`) in `cwd`; returns one result per step. Panics with the client's stderr if it fails.
pub fn run_client(cwd: &Path, steps: &Value, target: &[String]) -> Vec<Value> {
    run_client_with_stderr(cwd, steps, target).0
}

/// [`run_client`], and what the client and a stdio server wrote on stderr.
pub fn run_client_with_stderr(
    cwd: &Path,
    steps: &Value,
    target: &[String],
) -> (Vec<Value>, String) {
    let out = Command::new(sdk_python())
        .arg(client_script())
        .arg(steps.to_string())
        .args(target)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP client failed ({:?})\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("client output is not JSON ({e}): {stdout}\nstderr: {stderr}"));
    (
        v.as_array().cloned().unwrap_or_default(),
        stderr.into_owned(),
    )
}

/// `["stdio", airlock, args…]`.
pub fn stdio(bin: &Path, args: &[&str]) -> Vec<String> {
    let mut v = vec!["stdio".to_string(), bin.display().to_string()];
    v.extend(args.iter().map(|a| a.to_string()));
    v
}

/// The tool names a `{"list": true}` step returned.
pub fn names(step: &Value) -> Vec<String> {
    step["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a listing: {step}"))
        .iter()
        .map(|t| t.as_str().unwrap_or("").to_string())
        .collect()
}

/// The text of a call step (panics on a protocol error).
pub fn text(step: &Value) -> String {
    assert!(step.get("error").is_none(), "protocol error: {step}");
    step["text"].as_str().unwrap_or("").to_string()
}

pub fn is_error(step: &Value) -> bool {
    step["is_error"]
        .as_bool()
        .unwrap_or_else(|| panic!("not a call result: {step}"))
}

/// A loopback HTTP origin answering every request with `body`, counting requests.
pub struct Origin {
    pub port: u16,
    hits: Arc<AtomicUsize>,
}

impl Origin {
    pub fn serve(body: &'static str) -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the origin");
        let port = listener.local_addr().expect("origin address").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&hits);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                counter.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 8192];
                let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let _ = conn.read(&mut buf);
                let resp = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = conn.write_all(resp.as_bytes());
            }
        });
        Origin { port, hits }
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Processes (other than this one) whose working directory is `dir`, as their own mount
/// namespace names it: box processes started in a workspace mapped at the same path count.
pub fn pids_in_dir(dir: &Path) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if p != me && std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c == dir) {
            found.push(p);
        }
    }
    found
}

/// Waits (bounded) until no process works in `dir`; panics naming what is left.
pub fn assert_nothing_left_in(dir: &Path, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let left = pids_in_dir(dir);
        if left.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: processes left behind: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The Go MCP server fixture (`go-server/`, standard library only), built once per test run
/// into `target/go-fixtures` with Go's cache there and no module downloads. Panics if Go is
/// missing (scripts/test.sh installs golang-go).
pub fn go_mcp_server() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_go_server).clone()
}

fn build_go_server() -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_support/go-server");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/go-fixtures");
    std::fs::create_dir_all(root.join("bin")).expect("create target/go-fixtures");
    // Canonical, so that the path granted to a box is the path used inside it.
    let root = root.canonicalize().expect("target/go-fixtures");
    let out = root.join("bin/mcp-go-server");
    // Built under a name of its own, then renamed: a concurrent test run never sees half a file.
    let tmp = root.join(format!("bin/.mcp-go-server-{}", std::process::id()));
    let built = Command::new("go")
        .args(["build", "-trimpath", "-o"])
        .arg(&tmp)
        .arg(".")
        .current_dir(&src)
        .env("GOCACHE", root.join("cache"))
        .env("GOPATH", root.join("gopath"))
        .env("GOFLAGS", "-mod=readonly")
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env("CGO_ENABLED", "0")
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `go` ({e}): install golang-go (scripts/test.sh does)")
        });
    assert!(
        built.status.success(),
        "go build of {} failed: {}",
        src.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::rename(&tmp, &out).expect("move the Go server into place");
    out
}

/// The first-key-wins Python MCP server fixture.
pub fn first_key_server() -> PathBuf {
    need(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_support/first_key_server.py"),
        "first_key_server.py",
    )
}

/// How long one answer may take.
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// `airlock wrap` driven by hand, one JSON-RPC line at a time. Killed (by PID) when dropped.
pub struct RawClient {
    child: std::process::Child,
    lines: Receiver<String>,
}

impl RawClient {
    /// Starts `airlock <args>` in `cwd`.
    pub fn start(bin: &Path, cwd: &Path, args: &[&str]) -> RawClient {
        let mut child = Command::new(bin)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start airlock");
        let stdout = child.stdout.take().expect("airlock's stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        RawClient { child, lines }
    }

    /// Sends one line (a newline is added).
    pub fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("airlock's stdin is open");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .expect("write to airlock");
    }

    /// The next line airlock answers, as JSON; panics after [`ANSWER_WAIT`].
    pub fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(ANSWER_WAIT)
            .unwrap_or_else(|e| panic!("no answer from airlock wrap within {ANSWER_WAIT:?}: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("answer is not JSON ({e}): {line}"))
    }

    /// Sends `line` and returns the answer.
    pub fn ask(&mut self, line: &str) -> Value {
        self.send(line);
        self.recv()
    }

    /// Closes airlock's stdin and waits (bounded) for it to exit; returns its exit code.
    pub fn finish(mut self) -> i32 {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for airlock") {
                return status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "airlock wrap did not exit after its client left"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        // Our own child, by PID; a no-op once it has been waited for.
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
