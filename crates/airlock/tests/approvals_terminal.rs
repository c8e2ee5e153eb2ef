//! The terminal approver end to end: the real `airlock run --approval on-request` (no
//! `--approver`) on a pseudo-terminal this test makes airlock's controlling terminal, so the
//! box's own pty is relayed to the very terminal the question appears on (the `run -t` case).
//! The test reads the terminal and types the answers. A real box runs curl through its real
//! proxy to an origin on 127.0.0.1 (`*.test` names mapped with `--map-host`: nothing leaves
//! the machine, no DNS query). Each case checks what the box got, what the origin saw, what
//! was asked on the terminal, and what the result document records. Under every backend: the
//! native box's proxy asks the terminal itself, gVisor's and the microVM's ask through the
//! seam, and airlock's side asks the terminal and hands the answer back.

mod approvals_support;
mod common;

use approvals_support::Origin;
use common::{airlock_bin, test_run_args, TempDir};
use serde_json::Value;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `airlock` running with a pty of this test as its controlling terminal (and its stdin,
/// stdout and stderr); everything written to the terminal is collected.
struct OnTerminal {
    master: File,
    child: Child,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl OnTerminal {
    fn spawn(cwd: &std::path::Path, args: &[String]) -> OnTerminal {
        let mut cmd = Command::new(airlock_bin());
        cmd.args(args).current_dir(cwd);
        OnTerminal::spawn_command(cmd)
    }

    /// `cmd` on a new pty that becomes its controlling terminal.
    fn spawn_command(mut cmd: Command) -> OnTerminal {
        let (m, s) = airlock_runtime::attached::tty::open_pty().expect("make a pty");
        // SAFETY: open_pty returned two descriptors that nothing else owns.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
        let ws = libc::winsize {
            ws_row: 40,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: a valid winsize for TIOCSWINSZ on our own pty.
        unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
        cmd.stdin(Stdio::from(slave.try_clone().expect("dup")))
            .stdout(Stdio::from(slave.try_clone().expect("dup")))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start airlock on the pty");
        let master = File::from(master);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, into) = (master.try_clone().expect("dup master"), seen.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends with EIO once airlock (the last holder of the slave) is gone.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                into.lock().expect("seen").extend_from_slice(&buf[..n]);
            }
        });
        OnTerminal {
            master,
            child,
            seen,
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().expect("seen")).into_owned()
    }

    fn count(&self, needle: &str) -> usize {
        self.text().matches(needle).count()
    }

    /// Waits until `needle` appeared `n` times on the terminal; panics with what was seen.
    fn wait_for(&self, needle: &str, n: usize, within: Duration) {
        let until = Instant::now() + within;
        while self.count(needle) < n {
            assert!(
                Instant::now() < until,
                "{needle:?} did not appear {n} time(s) on the terminal within {within:?}; it shows:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn press(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).expect("type");
    }

    /// Waits for airlock to exit; its status.
    fn finish(mut self) -> (i32, String) {
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(st) = self.child.try_wait().expect("wait") {
                std::thread::sleep(Duration::from_millis(100));
                return (st.code().unwrap_or(-1), self.text());
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("airlock did not end; the terminal shows:\n{}", self.text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A box run on the terminal: its workspace, its result file and the flags.
struct Case {
    ws: TempDir,
    out: TempDir,
}

impl Case {
    fn new() -> Case {
        Case {
            ws: TempDir::new("approvals-tty-ws"),
            out: TempDir::new("approvals-tty-result"),
        }
    }

    /// `airlock run --result FILE --net proxy --map-host svc.test=127.0.0.1 <flags> -- sh -c
    /// <script>` on a new terminal.
    fn start(&self, flags: &[&str], script: &str) -> OnTerminal {
        OnTerminal::spawn(self.ws.path(), &self.args(flags, script))
    }

    /// [`Case::start`] with `env` set for airlock.
    fn start_with_env(&self, flags: &[&str], script: &str, env: &[(&str, &str)]) -> OnTerminal {
        let mut cmd = Command::new(airlock_bin());
        cmd.args(self.args(flags, script))
            .current_dir(self.ws.path());
        for (k, v) in env {
            cmd.env(k, v);
        }
        OnTerminal::spawn_command(cmd)
    }

    /// The arguments of [`Case::start`] (as [`test_run_args`] makes them).
    fn args(&self, flags: &[&str], script: &str) -> Vec<String> {
        let result = self.out.join("result.json");
        let result = result.to_string_lossy().into_owned();
        let mut args = vec![
            "run",
            "--timeout",
            "120s",
            "--result",
            result.as_str(),
            "--net",
            "proxy",
            "--map-host",
            "svc.test=127.0.0.1",
            "--approval",
            "on-request",
        ];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        test_run_args(&args)
    }

    fn result(&self) -> Value {
        let text = std::fs::read_to_string(self.out.join("result.json")).expect("result file");
        serde_json::from_str(&text).expect("result is JSON")
    }
}

/// A shell line that fetches `url` and prints `TAG <status> <body>` (the body in a file of the
/// tag's own: fetches may run at the same time).
fn fetch(tag: &str, url: &str) -> String {
    format!("echo \"{tag} $(curl -sS -o /tmp/body-{tag} -w '%{{http_code}}' {url} 2>&1) $(cat /tmp/body-{tag} 2>/dev/null)\"")
}

/// The line the box printed for `tag`.
fn line(text: &str, tag: &str) -> String {
    text.split(['\r', '\n'])
        .find(|l| l.starts_with(&format!("{tag} ")))
        .unwrap_or_else(|| panic!("no line for {tag} on the terminal:\n{text}"))
        .to_string()
}

/// The approval steps of the result: (stage, by, scope).
fn steps(result: &Value) -> Vec<(String, String, String)> {
    result["network_events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["decision"] == "ask")
        .map(|e| {
            let a = &e["approval"];
            let s = |v: &Value| v.as_str().unwrap_or("").to_string();
            (s(&a["stage"]), s(&a["by"]), s(&a["scope"]))
        })
        .collect()
}

const QUESTION: &str = "[airlock] approval #";
const ASKED: Duration = Duration::from_secs(30);

/// Whether the question names the box's process that holds the connection: the native box's
/// proxy reads the box's TCP table. gVisor's and a microVM's network stacks are not the
/// host's, so their questions name none (and say nothing of a process), which the tests check.
fn names_the_process() -> bool {
    common::test_backend_kind() == airlock_policy::BackendKind::Native
}

/// The question's line that names the process, if the backend can (see
/// [`names_the_process`]): `q` has it with `who`, or has no such line at all.
fn assert_names(q: &str, who: &str) {
    const BY: &str = "by the box's process (as the box names it): ";
    if names_the_process() {
        assert!(q.contains(&format!("{BY}{who}")), "{q:?}");
    } else {
        assert!(!q.contains(BY), "{q:?}");
    }
}

#[test]
fn allow_once_lets_one_connection_through_and_save_without_a_policy_file_is_refused() {
    let origin = Origin::serve();
    let url = |p: &str| format!("http://svc.test:{}/{p}", origin.port);
    let case = Case::new();
    let script = format!(
        "{}; {}",
        fetch("FIRST", &url("a")),
        fetch("SECOND", &url("b"))
    );
    let mut t = case.start(&["--allow-ip", "127.0.0.1"], &script);
    t.wait_for(QUESTION, 1, ASKED);
    let q = t.text();
    assert!(
        q.contains(&format!("svc.test:{} (http)", origin.port)),
        "{q}"
    );
    assert!(q.contains("is not in the allowlist"), "{q}");
    assert_names(&q, "curl -sS -o /tmp/body");
    assert!(q.contains("[o] allow once"), "{q}");
    t.press("o");
    // Once is this connection only: the second one is asked about again.
    t.wait_for(QUESTION, 2, ASKED);
    t.press("s");
    t.wait_for("cannot save: there is no policy file", 1, ASKED);
    t.press("d");
    let (code, text) = t.finish();
    assert_eq!(code, 0, "{text}");
    assert_eq!(line(&text, "FIRST"), "FIRST 200 approved-origin", "{text}");
    let second = line(&text, "SECOND");
    assert!(second.starts_with("SECOND 403 "), "{second}");
    assert_eq!(
        origin.connections(),
        1,
        "the denied request never reached the origin"
    );
    let steps = steps(&case.result());
    let answered: Vec<_> = steps.iter().filter(|s| s.0 != "requested").collect();
    assert_eq!(
        answered,
        [
            &("allowed".into(), "terminal".into(), "once".into()),
            &("denied".into(), "terminal".into(), "once".into())
        ],
        "{steps:?}"
    );
}

#[test]
fn allow_for_this_run_asks_once_for_every_later_connection() {
    let origin = Origin::serve();
    let url = |p: &str| format!("http://svc.test:{}/{p}", origin.port);
    let case = Case::new();
    let script = format!(
        "{}; {}; {}",
        fetch("ONE", &url("a")),
        fetch("TWO", &url("b")),
        fetch("THREE", &url("c"))
    );
    let mut t = case.start(&["--allow-ip", "127.0.0.1"], &script);
    t.wait_for(QUESTION, 1, ASKED);
    t.press("r");
    let (code, text) = t.finish();
    assert_eq!(code, 0, "{text}");
    for tag in ["ONE", "TWO", "THREE"] {
        assert_eq!(
            line(&text, tag),
            format!("{tag} 200 approved-origin"),
            "{text}"
        );
    }
    assert_eq!(text.matches(QUESTION).count(), 1, "asked once: {text}");
    assert_eq!(origin.connections(), 3);
    let steps = steps(&case.result());
    assert!(
        steps.contains(&("allowed".into(), "terminal".into(), "run".into())),
        "{steps:?}"
    );
}

/// The key that answers a question also makes airlock's stdin readable, and the native box's
/// relay (polling stdin for the box) wakes on it too. If the question is over before the relay
/// takes its turn, the key is gone: the relay must not block reading it, or airlock stops
/// relaying and enforcing the box's timeout for good (seen as a rare hang under load). A debug
/// hook holds the relay between its poll and its turn, so the question always wins that race
/// here. gVisor and microVM runs relay through the agent, which re-checks the same way, and run
/// this case without the hook's effect.
#[test]
fn the_key_that_answers_a_question_does_not_stall_the_relay() {
    let origin = Origin::serve();
    let case = Case::new();
    let script = fetch("ONLY", &format!("http://svc.test:{}/a", origin.port));
    let mut t = case.start_with_env(
        &["--allow-ip", "127.0.0.1"],
        &script,
        &[("AIRLOCK_TEST_RELAY_DELAY_MS", "400")],
    );
    t.wait_for(QUESTION, 1, ASKED);
    t.press("o");
    let (code, text) = t.finish();
    assert_eq!(code, 0, "{text}");
    assert_eq!(line(&text, "ONLY"), "ONLY 200 approved-origin", "{text}");
    assert_eq!(origin.connections(), 1);
}

#[test]
fn allow_and_save_writes_the_policy_file_and_the_next_run_is_not_asked() {
    let origin = Origin::serve();
    let url = format!("http://svc.test:{}/saved", origin.port);
    let case = Case::new();
    let policy = case.out.join("policy.toml");
    let original = "# the team's policy\n[network]\n# loopback origins of the tests\nallow_ip = [\"127.0.0.1\"]\n";
    std::fs::write(&policy, original).expect("write the policy");
    let policy_s = policy.to_string_lossy().into_owned();
    let mut t = case.start(&["--policy", &policy_s], &fetch("SAVED", &url));
    t.wait_for(QUESTION, 1, ASKED);
    assert!(t
        .text()
        .contains(&format!("[s] allow and save to {policy_s}")));
    t.press("s");
    let (code, text) = t.finish();
    assert_eq!(code, 0, "{text}");
    assert_eq!(line(&text, "SAVED"), "SAVED 200 approved-origin", "{text}");
    let saved = std::fs::read_to_string(&policy).expect("read the policy");
    assert!(saved.starts_with("# the team's policy\n"), "{saved}");
    assert!(saved.contains("# loopback origins of the tests"), "{saved}");
    let file = airlock_policy::PolicyFile::from_toml(&saved, &policy).expect("still a policy");
    assert_eq!(
        file.network.allow_domain,
        [format!("svc.test:{}", origin.port)],
        "{saved}"
    );
    assert_eq!(file.network.allow_ip, ["127.0.0.1"], "{saved}");
    let steps = steps(&case.result());
    assert!(
        steps.contains(&("allowed".into(), "terminal".into(), "save".into())),
        "{steps:?}"
    );
    // The next run under the same policy file is allowed by it: nothing is asked.
    let again = Case::new();
    let t = again.start(&["--policy", &policy_s], &fetch("AGAIN", &url));
    let (code, text) = t.finish();
    assert_eq!(code, 0, "{text}");
    assert_eq!(line(&text, "AGAIN"), "AGAIN 200 approved-origin", "{text}");
    assert!(!text.contains(QUESTION), "{text}");
    assert!(steps_of(&again).is_empty());
    assert_eq!(origin.connections(), 2);
}

fn steps_of(case: &Case) -> Vec<(String, String, String)> {
    steps(&case.result())
}

#[test]
fn deny_refuses_with_the_usual_readable_refusal() {
    let origin = Origin::serve();
    let url = format!("http://svc.test:{}/no", origin.port);
    let case = Case::new();
    let mut t = case.start(&["--allow-ip", "127.0.0.1"], &fetch("DENIED", &url));
    t.wait_for(QUESTION, 1, ASKED);
    t.press("d");
    let (code, text) = t.finish();
    assert_eq!(code, 0, "{text}");
    let denied = line(&text, "DENIED");
    assert!(denied.starts_with("DENIED 403 "), "{denied}");
    assert!(denied.contains("--allow-domain svc.test"), "{denied}");
    assert_eq!(origin.connections(), 0);
    let steps = steps_of(&case);
    assert!(
        steps.contains(&("denied".into(), "terminal".into(), "once".into())),
        "{steps:?}"
    );
}

#[test]
fn no_answer_before_the_deadline_is_a_refusal() {
    let origin = Origin::serve();
    let url = format!("http://svc.test:{}/late", origin.port);
    let case = Case::new();
    let t = case.start(
        &["--allow-ip", "127.0.0.1", "--approval-timeout", "2s"],
        &fetch("LATE", &url),
    );
    t.wait_for(QUESTION, 1, ASKED);
    let asked = Instant::now();
    t.wait_for("no answer within 2 s: refused", 1, Duration::from_secs(10));
    assert!(asked.elapsed() < Duration::from_secs(5));
    let (code, text) = t.finish();
    assert_eq!(code, 0, "{text}");
    assert!(line(&text, "LATE").starts_with("LATE 403 "), "{text}");
    assert_eq!(origin.connections(), 0);
    let steps = steps_of(&case);
    assert!(steps.iter().any(|s| s.0 == "timed-out"), "{steps:?}");
    assert!(!steps.iter().any(|s| s.0 == "allowed"), "{steps:?}");
}

/// The attack: while its connection is held, the box writes a forged question and a forged
/// answer to its own terminal (stdout and /dev/tty) and tries to read the real answer from
/// its terminal. Its terminal is its own pty, relayed by airlock: nothing it writes appears
/// while the question is up (so it cannot dress up the question), nothing it writes is input
/// to the question (so it cannot answer), and the key that answers never reaches it. The
/// held client names itself with a clear-screen sequence, which the question names it by: the
/// sequence shows as `?`, never as itself.
#[test]
fn the_box_can_neither_forge_nor_answer_nor_read_the_question() {
    let origin = Origin::serve();
    let url = format!("http://svc.test:{}/forged", origin.port);
    let case = Case::new();
    let held = format!(
        "echo \"HELD $(bash -c 'exec -a \"$(printf \"evil\\033[2Jname\")\" curl -sS -o /tmp/body -w %{{http_code}} {url}' 2>&1) $(cat /tmp/body 2>/dev/null)\""
    );
    let script = format!(
        "(dd bs=1 count=1 of=stolen-key 2>/dev/null </dev/tty) & \
         (sleep 2; printf '\\r\\n{QUESTION}9: FORGED allowed once\\r\\no\\r\\n'; \
          printf 'FORGED-TTY o\\r\\no\\r\\n' >/dev/tty; printf 'o\\n' >/dev/tty) & \
         {held}; sleep 1"
    );
    let mut t = case.start(&["--allow-ip", "127.0.0.1"], &script);
    t.wait_for(QUESTION, 1, ASKED);
    // The forgers have run by now; while the question is up none of it shows, and none of it
    // answered (the question still waits).
    std::thread::sleep(Duration::from_secs(4));
    let during = t.text();
    assert!(
        !during.contains("FORGED"),
        "the box's writes showed during the question:\n{during}"
    );
    assert!(!during.contains("allowed once\r\n"), "{during}");
    assert!(
        !during.contains("HELD "),
        "the held request was answered by someone: {during}"
    );
    assert_names(&during, "evil?[2Jname -sS");
    assert!(!during.contains("\u{1b}[2J"), "{during:?}");
    t.press("d");
    let (code, text) = t.finish();
    assert_eq!(code, 0, "{text}");
    let (denied_at, forged_at) = (
        text.find("denied").expect("the answer's line"),
        text.find("FORGED")
            .expect("the box's writes, shown after the question"),
    );
    assert!(forged_at > denied_at, "{text}");
    assert!(line(&text, "HELD").starts_with("HELD 403 "), "{text}");
    assert_eq!(
        origin.connections(),
        0,
        "the forged answer let nothing through"
    );
    let stolen = std::fs::read(case.ws.join("stolen-key")).unwrap_or_default();
    assert!(
        !stolen.contains(&b'd'),
        "the box read the answer's key: {stolen:?}"
    );
    let steps = steps_of(&case);
    let answered: Vec<_> = steps.iter().filter(|s| s.0 != "requested").collect();
    assert_eq!(
        answered,
        [&("denied".into(), "terminal".into(), "once".into())],
        "{steps:?}"
    );
}

#[test]
fn concurrent_questions_are_asked_one_at_a_time() {
    let origin = Origin::serve();
    let url = |host: &str| format!("http://{host}:{}/c", origin.port);
    let case = Case::new();
    let script = format!(
        "({}) & ({}) & wait",
        fetch("SVC", &url("svc.test")),
        fetch("OTHER", &url("other.test"))
    );
    let flags = [
        "--allow-ip",
        "127.0.0.1",
        "--map-host",
        "other.test=127.0.0.1",
    ];
    let mut t = case.start(&flags, &script);
    t.wait_for(QUESTION, 1, ASKED);
    // Both connections are held by now; the second question waits for the first.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(t.count(QUESTION), 1, "{}", t.text());
    let first = if t.text().contains("svc.test:") {
        "SVC"
    } else {
        "OTHER"
    };
    t.press("o");
    t.wait_for(QUESTION, 2, ASKED);
    t.press("d");
    let (code, text) = t.finish();
    assert_eq!(code, 0, "{text}");
    let second = if first == "SVC" { "OTHER" } else { "SVC" };
    assert_eq!(
        line(&text, first),
        format!("{first} 200 approved-origin"),
        "{text}"
    );
    assert!(
        line(&text, second).starts_with(&format!("{second} 403 ")),
        "{text}"
    );
    assert_eq!(origin.connections(), 1);
}

/// With nobody to ask (no `--approver`, no controlling terminal) the run is refused before
/// the box starts, saying what to do.
#[test]
fn without_a_controlling_terminal_the_run_is_refused_before_the_box_starts() {
    let case = Case::new();
    let mut cmd = Command::new(airlock_bin());
    cmd.args(case.args(&["--allow-ip", "127.0.0.1"], "echo box-ran > ran"))
        .current_dir(case.ws.path())
        .stdin(Stdio::null());
    // SAFETY: only setsid between fork and exec: a new session has no controlling terminal.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run airlock");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("controlling terminal"), "{stderr}");
    assert!(stderr.contains("--approver CMD"), "{stderr}");
    assert!(!case.ws.join("ran").exists(), "the box must not have run");
}

#[test]
fn an_unprivileged_user_is_asked_on_its_terminal_too() {
    assert!(
        common::is_root(),
        "this test must run as root (it switches to {})",
        common::TEST_USER
    );
    let (uid, gid, home) = common::ensure_test_user();
    let (_bin_dir, bin) = common::binary_for_test_user("approvals-tty-unpriv-bin");
    let origin = Origin::serve();
    let url = format!("http://svc.test:{}/u", origin.port);
    let case = Case::new();
    for dir in [case.ws.path(), case.out.path()] {
        std::os::unix::fs::chown(dir, Some(uid), Some(gid)).expect("chown");
    }
    let mut cmd = common::as_test_user(&bin);
    cmd.args(case.args(&["--allow-ip", "127.0.0.1"], &fetch("USER", &url)))
        .current_dir(case.ws.path())
        .env("HOME", &home)
        .env("USER", common::TEST_USER);
    let mut t = OnTerminal::spawn_command(cmd);
    if common::test_backend_kind() == airlock_policy::BackendKind::Gvisor {
        // gVisor boxes need root (tests/gvisor.rs): the run is refused before a box starts,
        // and nothing is asked.
        let (code, text) = t.finish();
        assert_eq!(code, 125, "{text}");
        assert!(text.contains("needs root"), "{text}");
        assert!(
            !text.contains(QUESTION) && !text.contains("USER "),
            "{text}"
        );
        assert_eq!(origin.connections(), 0);
        return;
    }
    t.wait_for(QUESTION, 1, ASKED);
    t.press("r");
    let (code, text) = t.finish();
    assert_eq!(code, 0, "{text}");
    assert_eq!(line(&text, "USER"), "USER 200 approved-origin", "{text}");
    let steps = steps_of(&case);
    assert!(
        steps.contains(&("allowed".into(), "terminal".into(), "run".into())),
        "{steps:?}"
    );
}
