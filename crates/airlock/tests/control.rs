//! The control channel: a running proxied box's allowlist changes without a restart.
#![allow(clippy::unwrap_used)]

mod common;

use common::{airlock_bin, TempDir};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A python http.server on 127.0.0.1 serving `dir`, ended by PID on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dir: &std::path::Path) -> Server {
        use std::os::unix::process::CommandExt;
        // The listening socket is made here and handed to python as descriptor 3: a port
        // picked, released and bound again by python could go to a parallel test meanwhile.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let fd = listener.as_raw_fd();
        let mut cmd = Command::new("python3");
        cmd.args([
            "-c",
            "import socket, http.server as h\n\
             s = h.ThreadingHTTPServer(('127.0.0.1', 0), h.SimpleHTTPRequestHandler, bind_and_activate=False)\n\
             s.socket.close(); s.socket = socket.socket(fileno=3); s.serve_forever()",
        ]);
        // SAFETY: the closure runs in the forked child before exec and only calls dup2 or fcntl,
        // which are async-signal-safe; `fd` is open in the parent until after spawn.
        unsafe {
            cmd.pre_exec(move || {
                // dup2 onto itself keeps close-on-exec: clear it instead.
                let r = match fd {
                    3 => libc::fcntl(3, libc::F_SETFD, 0),
                    _ => libc::dup2(fd, 3),
                };
                match r {
                    -1 => Err(std::io::Error::last_os_error()),
                    _ => Ok(()),
                }
            });
        }
        let child = cmd
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start python3 http.server");
        drop(listener);
        let mut server = Server { child, port };
        // The socket listens from the start, so a connect proves nothing: python must answer.
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        conn.write_all(b"HEAD / HTTP/1.0\r\n\r\n").unwrap();
        let mut head = [0u8; 5];
        let answered = conn.read_exact(&mut head).is_ok() && &head == b"HTTP/";
        let status = server.child.try_wait().unwrap();
        assert!(
            answered,
            "the test's python http.server did not answer (exit status: {status:?})"
        );
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array for pipe2.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), 0) }, 0);
    // SAFETY: fresh descriptors we own.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

#[test]
fn allowlist_changes_while_the_box_runs() {
    let site = TempDir::new("ctl-site");
    std::fs::write(site.join("index.html"), "hello through the new policy\n").unwrap();
    let server = Server::start(site.path());
    let ws = TempDir::new("ctl-ws");
    let url = format!("http://svc.test:{}/index.html", server.port);
    let (r, w) = pipe();
    // The box asks twice, with a pause in between; the policy changes during the pause.
    let script =
        format!("curl -s -o /dev/null -w 'first=%{{http_code}}\\n' {url}; sleep 2; curl -sS {url}");
    let fd = r.as_raw_fd().to_string();
    let mut child = Command::new(airlock_bin())
        .args([
            "run",
            "--json",
            "--net",
            "proxy",
            "--control-fd",
            &fd,
            "--",
            "sh",
            "-c",
            &script,
        ])
        .current_dir(ws.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start airlock");
    drop(r);
    std::thread::sleep(Duration::from_millis(1000));
    let mut w = std::fs::File::from(w);
    // A bad message first: reported, not fatal.
    w.write_all(b"{\"network\": {\"allow_ip\": [\"not-an-address\"]}}\n")
        .unwrap();
    let msg = format!(
        "{{\"network\": {{\"allow_domain\": [\"svc.test\"], \"allow_ip\": [\"127.0.0.1:{}\"], \"map_host\": [\"svc.test=127.0.0.1\"]}}}}\n",
        server.port
    );
    w.write_all(msg.as_bytes()).unwrap();
    let mut out = String::new();
    let mut err = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{out}\n{err}");
    assert!(
        out.contains("first=403"),
        "before the change the request is denied: {out}"
    );
    assert!(
        out.contains("hello through the new policy"),
        "after the change it is allowed: {out}\n{err}"
    );
    let doc: serde_json::Value = serde_json::from_str(&err).expect("JSON result on stderr");
    let kinds: Vec<&str> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"control-error"),
        "the bad message is reported: {kinds:?}"
    );
    assert!(
        kinds.contains(&"network-policy"),
        "the change is an event: {kinds:?}"
    );
    let decisions: Vec<&str> = doc["network_events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["decision"].as_str())
        .collect();
    assert_eq!(decisions, ["deny", "allow"], "{}", doc["network_events"]);
}

#[test]
fn control_fd_must_be_open() {
    let ws = TempDir::new("ctl-bad");
    let r = common::airlock(ws.path(), &["run", "--control-fd", "97", "--", "true"]);
    assert_eq!(r.code, 125, "{}", r.stderr);
    assert!(r.stderr.contains("--control-fd 97"), "{}", r.stderr);
}
