//! `airlock sandbox ...` end to end: a real `airlock serve` on 127.0.0.1:0 with a temporary data
//! dir, driven by the real `airlock sandbox` client binary with AIRLOCK_SERVER and
//! AIRLOCK_API_KEY set. Each test starts its own server and stops it by its pid.
#![allow(clippy::unwrap_used)]

mod common;

use common::{airlock_bin, ServeProcess, TempDir};
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Server {
    serve: ServeProcess,
    base: String,
    key: String,
    _data: TempDir,
}

impl Server {
    fn start(tag: &str) -> Server {
        let data = TempDir::new(tag);
        let serve = ServeProcess::start(data.path(), &[]);
        let key = serve
            .printed_key
            .clone()
            .expect("a fresh data dir prints the API key");
        Server {
            base: serve.base.clone(),
            serve,
            key,
            _data: data,
        }
    }

    /// `airlock sandbox <args>` against this server, stdin from `input` (or /dev/null).
    fn cli(&self, args: &[&str], input: Option<&[u8]>) -> Out {
        cli_with(
            &[
                ("AIRLOCK_SERVER", &self.base),
                ("AIRLOCK_API_KEY", &self.key),
            ],
            args,
            input,
        )
    }

    /// SIGTERM, then waits (bounded) for the server to exit.
    fn stop(&mut self) {
        self.serve.stop();
    }
}

/// What one client invocation did.
struct Out {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

impl Out {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    fn ok(self, what: &str) -> Out {
        assert_eq!(self.code, 0, "{what}: stderr: {}", self.stderr);
        self
    }
}

/// `airlock sandbox <args>` with exactly `env` of the client variables set.
fn cli_with(env: &[(&str, &str)], args: &[&str], input: Option<&[u8]>) -> Out {
    let mut all = vec!["sandbox"];
    all.extend_from_slice(args);
    airlock_with(env, &all, input)
}

/// `airlock <args>` with exactly `env` of the client variables set.
fn airlock_with(env: &[(&str, &str)], args: &[&str], input: Option<&[u8]>) -> Out {
    let mut cmd = Command::new(airlock_bin());
    cmd.args(args)
        .env_remove("AIRLOCK_SERVER")
        .env_remove("AIRLOCK_API_KEY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let feeder = input.map(|bytes| {
        let mut stdin = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        })
    });
    let out = child.wait_with_output().unwrap();
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    use std::os::unix::process::ExitStatusExt;
    Out {
        code: out
            .status
            .code()
            .unwrap_or_else(|| 128 + out.status.signal().unwrap_or(0)),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `create` with `flags`; returns the id (the token is checked to be on the second line).
fn create(s: &Server, flags: &[&str]) -> String {
    let mut args = vec!["create"];
    args.extend_from_slice(flags);
    let out = s.cli(&args, None).ok("create");
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "create prints the id, then the token: {text:?}"
    );
    assert!(lines[1].len() > 32, "token: {text:?}");
    lines[0].to_string()
}

fn listed_ids(s: &Server, flags: &[&str]) -> Vec<String> {
    let mut args = vec!["ls", "--json"];
    args.extend_from_slice(flags);
    let out = s.cli(&args, None).ok("ls --json");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// A deterministic, incompressible-looking byte pattern.
fn pattern(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn create_list_and_kill() {
    let mut s = Server::start("cli-life");
    let id = create(
        &s,
        &[
            "--metadata",
            "team=cli",
            "--env",
            "GREETING=hello",
            "--timeout",
            "120",
            "--memory",
            "256M",
            "--pids",
            "64",
        ],
    );
    let other = create(&s, &["--template", "user", "--metadata", "team=other"]);

    let table = s.cli(&["ls"], None).ok("ls").text();
    let header = table.lines().next().unwrap();
    for col in ["ID", "STATE", "TEMPLATE", "CREATED", "DEADLINE", "METADATA"] {
        assert!(header.contains(col), "{table}");
    }
    let row = table
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{id} not in {table}"));
    assert!(
        row.contains("running") && row.contains("base") && row.ends_with("team=cli"),
        "{row}"
    );

    let full: Value =
        serde_json::from_slice(&s.cli(&["ls", "--json"], None).ok("ls --json").stdout).unwrap();
    let rec = full
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id.as_str())
        .unwrap();
    assert_eq!(
        (rec["state"].as_str(), rec["metadata"]["team"].as_str()),
        (Some("running"), Some("cli"))
    );
    assert_eq!(
        listed_ids(&s, &["--metadata", "team=cli"]),
        vec![id.clone()]
    );
    assert_eq!(
        listed_ids(&s, &["--metadata", "team=other"]),
        vec![other.clone()]
    );
    assert!(listed_ids(&s, &["--metadata", "team=nobody"]).is_empty());

    // The env given at creation is in the box.
    let out = s
        .cli(&["exec", &id, "--", "sh", "-c", "echo $GREETING"], None)
        .ok("exec env");
    assert_eq!(out.text(), "hello\n");

    let created: Value = serde_json::from_slice(
        &s.cli(&["create", "--json"], None)
            .ok("create --json")
            .stdout,
    )
    .unwrap();
    assert_eq!(created["state"], "running");
    assert!(created["token"].as_str().is_some(), "{created}");
    let third = created["id"].as_str().unwrap().to_string();

    let out = s.cli(&["kill", &id, &third], None).ok("kill");
    assert_eq!(out.text(), format!("{id} killed\n{third} killed\n"));
    let running = listed_ids(&s, &["--state", "running"]);
    assert!(
        !running.contains(&id) && !running.contains(&third) && running.contains(&other),
        "{running:?}"
    );
    assert!(listed_ids(&s, &["--state", "killed"]).contains(&id));

    // An unknown id: the server's refusal, as `<message> (not_found)`, exit 125.
    let out = s.cli(&["kill", "sbx_does_not_exist"], None);
    assert_eq!(out.code, 125, "{}", out.stderr);
    assert!(out.stderr.contains("(not_found)"), "{}", out.stderr);
    let out = s.cli(&["ls", "--state", "sleepy"], None);
    assert_eq!(out.code, 125);
    assert!(
        out.stderr.starts_with("airlock: ") && out.stderr.contains("(invalid)"),
        "{}",
        out.stderr
    );
    s.stop();
}

#[test]
fn exec_streams_output_and_propagates_the_exit_status() {
    let mut s = Server::start("cli-exec");
    let id = create(&s, &[]);

    let out = s
        .cli(&["exec", &id, "--", "echo", "hi"], None)
        .ok("echo hi");
    assert_eq!(out.text(), "hi\n");
    let out = s.cli(
        &[
            "exec",
            &id,
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 7",
        ],
        None,
    );
    assert_eq!(out.code, 7, "{}", out.stderr);
    assert_eq!(
        (out.text().as_str(), out.stderr.as_str()),
        ("out\n", "err\n")
    );

    // stdin (not a terminal) becomes the command's stdin.
    let out = s.cli(&["exec", &id, "--", "cat"], Some(b"data")).ok("cat");
    assert_eq!(out.text(), "data");
    let out = s.cli(&["exec", &id, "--", "cat"], Some(&[0xff, 0xfe, 0]));
    assert_eq!(out.code, 125);
    assert!(out.stderr.contains("not UTF-8"), "{}", out.stderr);

    // Binary output arrives as data_b64 and is written as bytes.
    let out = s
        .cli(&["exec", &id, "--", "printf", "\\377\\000x"], None)
        .ok("binary");
    assert_eq!(out.stdout, [0xff, 0x00, b'x']);

    // --env, --cwd; a signal is 128+N, a timeout 124.
    let out = s
        .cli(
            &[
                "exec",
                &id,
                "--env",
                "X=x1",
                "--cwd",
                "/",
                "--",
                "sh",
                "-c",
                "echo $X; pwd",
            ],
            None,
        )
        .ok("env cwd");
    assert_eq!(out.text(), "x1\n/\n");
    let out = s.cli(&["exec", &id, "--", "sh", "-c", "kill -9 $$"], None);
    assert_eq!(out.code, 137, "{}", out.stderr);
    let started = Instant::now();
    let out = s.cli(&["exec", &id, "--timeout", "1", "--", "sleep", "30"], None);
    assert_eq!(out.code, 124, "{}", out.stderr);
    assert!(started.elapsed() < Duration::from_secs(20));

    let out = s.cli(&["exec", "sbx_does_not_exist", "--", "true"], None);
    assert_eq!(out.code, 125);
    assert!(out.stderr.contains("(not_found)"), "{}", out.stderr);
    s.stop();
}

#[test]
fn cp_streams_files_both_ways() {
    let mut s = Server::start("cli-cp");
    let id = create(&s, &[]);
    let dir = TempDir::new("cli-cp-files");
    let (up, down) = (dir.join("up.bin"), dir.join("down.bin"));
    let data = pattern(32 << 20);
    std::fs::write(&up, &data).unwrap();

    let remote = format!("{id}:/tmp/big.bin");
    s.cli(&["cp", up.to_str().unwrap(), &remote], None)
        .ok("cp up");
    let out = s
        .cli(
            &["exec", &id, "--", "stat", "-c", "%s", "/tmp/big.bin"],
            None,
        )
        .ok("stat");
    assert_eq!(out.text().trim(), (32u64 << 20).to_string());
    s.cli(&["cp", &remote, down.to_str().unwrap()], None)
        .ok("cp down");
    assert!(
        std::fs::read(&down).unwrap() == data,
        "the file came back different"
    );

    // A local directory as destination keeps the name.
    s.cli(&["cp", &remote, dir.path().to_str().unwrap()], None)
        .ok("cp into dir");
    assert_eq!(
        std::fs::metadata(dir.join("big.bin")).unwrap().len(),
        32 << 20
    );

    // `-` is stdin as the source and stdout as the destination.
    let small = format!("{id}:/tmp/small.txt");
    s.cli(&["cp", "-", &small], Some(b"from stdin\n"))
        .ok("cp from -");
    let out = s.cli(&["cp", &small, "-"], None).ok("cp to -");
    assert_eq!(out.text(), "from stdin\n");

    // Refusals: a missing remote file, two local sides, a relative sandbox path.
    let out = s.cli(
        &["cp", &format!("{id}:/tmp/nope"), down.to_str().unwrap()],
        None,
    );
    assert_eq!(out.code, 125);
    assert!(out.stderr.contains("(not_found)"), "{}", out.stderr);
    assert!(
        std::fs::read(&down).unwrap() == data,
        "a failed download must not touch the destination"
    );
    let out = s.cli(
        &["cp", up.to_str().unwrap(), "sbx_does_not_exist:/tmp/x"],
        None,
    );
    assert_eq!(out.code, 125);
    assert!(out.stderr.contains("(not_found)"), "{}", out.stderr);
    let tiny = dir.join("tiny.txt");
    std::fs::write(&tiny, "tiny").unwrap();
    let out = s.cli(
        &[
            "cp",
            tiny.to_str().unwrap(),
            &format!("{id}:/nonexistent/dir/x"),
        ],
        None,
    );
    assert_eq!(out.code, 125);
    assert!(
        out.stderr.starts_with("airlock: ") && out.stderr.contains("(not_found)"),
        "{}",
        out.stderr
    );
    let out = s.cli(&["cp", up.to_str().unwrap(), down.to_str().unwrap()], None);
    assert_eq!(out.code, 125);
    assert!(out.stderr.contains("ID:/absolute/path"), "{}", out.stderr);
    let out = s.cli(&["cp", up.to_str().unwrap(), &format!("{id}:tmp/x")], None);
    assert_eq!(out.code, 125);
    assert!(out.stderr.contains("absolute"), "{}", out.stderr);
    s.stop();
}

#[test]
fn missing_key_and_unreachable_server_say_what_to_do() {
    let out = cli_with(
        &[("AIRLOCK_SERVER", "http://127.0.0.1:7777")],
        &["ls"],
        None,
    );
    assert_eq!(out.code, 125);
    assert!(
        out.stderr.contains("AIRLOCK_API_KEY") && out.stderr.contains("--api-key"),
        "{}",
        out.stderr
    );

    // A port that was free a moment ago: nothing listens there.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{addr}");
    let out = cli_with(
        &[("AIRLOCK_SERVER", &url), ("AIRLOCK_API_KEY", "al_x")],
        &["ls"],
        None,
    );
    assert_eq!(out.code, 125);
    assert!(
        out.stderr.contains(&url) && out.stderr.contains("airlock serve"),
        "{}",
        out.stderr
    );
    // The flags win over the environment.
    let out = cli_with(
        &[("AIRLOCK_SERVER", "http://127.0.0.1:7777")],
        &["ls", "--server", &url, "--api-key", "al_x"],
        None,
    );
    assert_eq!(out.code, 125);
    assert!(out.stderr.contains(&url), "{}", out.stderr);
}

#[test]
fn a_wrong_key_is_the_servers_refusal() {
    let mut s = Server::start("cli-wrongkey");
    let out = cli_with(
        &[("AIRLOCK_SERVER", &s.base), ("AIRLOCK_API_KEY", "al_wrong")],
        &["ls"],
        None,
    );
    assert_eq!(out.code, 125);
    assert!(out.stderr.contains("(unauthorized)"), "{}", out.stderr);
    s.stop();
}

#[test]
fn code_keeps_state_reads_stdin_and_reports_errors() {
    let s = Server::start("cli-code");
    let env = [
        ("AIRLOCK_SERVER", s.base.as_str()),
        ("AIRLOCK_API_KEY", s.key.as_str()),
    ];
    let id = create(&s, &[]);
    let set = airlock_with(&env, &["code", "--sandbox", &id, "x = 2"], None).ok("code x = 2");
    assert_eq!(set.text(), "");
    let got = airlock_with(&env, &["code", "--sandbox", &id, "x * 21"], None).ok("code x * 21");
    assert_eq!(got.text(), "42\n");
    let piped = airlock_with(
        &env,
        &["code", "--sandbox", &id],
        Some(b"print('from stdin', x)\n"),
    )
    .ok("code from stdin");
    assert_eq!(piped.text(), "from stdin 2\n");
    let failed = airlock_with(&env, &["code", "--sandbox", &id, "1 / 0"], None);
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    assert!(
        failed.stderr.contains("ZeroDivisionError"),
        "{}",
        failed.stderr
    );
    let looped = airlock_with(
        &env,
        &[
            "code",
            "--sandbox",
            &id,
            "--timeout",
            "1",
            "while True: pass",
        ],
        None,
    );
    assert_eq!(looped.code, 130, "{}", looped.stderr);
    let bash = airlock_with(
        &env,
        &["code", "--sandbox", &id, "--lang", "bash", "echo hi"],
        None,
    )
    .ok("code --lang bash");
    assert_eq!(bash.text(), "hi\n");
    // Without --sandbox: a sandbox of its own, gone afterwards.
    let before = listed_ids(&s, &["--state", "running"]).len();
    let once = airlock_with(&env, &["code", "6 * 7"], None).ok("code in a new sandbox");
    assert_eq!(once.text(), "42\n");
    assert_eq!(listed_ids(&s, &["--state", "running"]).len(), before);
    // A server that is not there is a client failure.
    let gone = airlock_with(
        &[
            ("AIRLOCK_SERVER", "http://127.0.0.1:1"),
            ("AIRLOCK_API_KEY", "k"),
        ],
        &["code", "1"],
        None,
    );
    assert_eq!(gone.code, 125, "{}", gone.stderr);
}

/// The interactive mode: `airlock code` with a terminal on stdin reads snippets one after the
/// other (driven here through a pseudo-terminal made by python3's pty module).
#[test]
fn code_is_interactive_on_a_terminal() {
    let mut s = Server::start("cli-repl");
    let id = create(&s, &[]);
    let driver = r#"
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
def pump(seconds):
    global out
    end = time.time() + seconds
    while time.time() < end:
        try:
            import select
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                out += os.read(fd, 65536)
        except OSError:
            return
pump(1.0)
for line in [b"x = 5\n", b"def f(y):\n", b"    return y * 2\n", b"\n", b"f(x) + 32\n"]:
    os.write(fd, line)
    pump(0.6)
os.write(fd, b"\x04")
pump(3.0)
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.stdout.write(f"\nEXIT {os.waitstatus_to_exitcode(status)}\n")
"#;
    let out = Command::new("python3")
        .args([
            "-c",
            driver,
            airlock_bin().to_str().unwrap(),
            "code",
            "--sandbox",
            &id,
        ])
        .env("AIRLOCK_SERVER", &s.base)
        .env("AIRLOCK_API_KEY", &s.key)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.trim() == "42"),
        "the REPL kept x and f and printed 42:\n{text}"
    );
    assert!(
        text.contains(">>> ") && text.contains("... "),
        "prompts shown:\n{text}"
    );
    assert!(text.contains("EXIT 0"), "Ctrl-D leaves cleanly:\n{text}");
    s.stop();
}
