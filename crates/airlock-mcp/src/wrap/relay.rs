//! The relay process: the wrapped server runs as a child (`airlock run … -- server`, so inside a
//! box), and three threads move lines (what the gate returns, never the raw bytes): client →
//! gate → server, server → gate → client, and (with
//! an audit log and a proxied box) the proxy's decisions → audit log. When the client closes its
//! end, the server's stdin is closed, then it is asked to stop (SIGTERM, forwarded into the box)
//! and finally killed; when the server ends first, every request in flight and every later one
//! is answered with an error saying how it ended. The child dies with the relay
//! (`PR_SET_PDEATHSIG`), and the box with the child.

use super::audit::AuditSink;
use super::gate::{FromClient, Gate};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long the server may take to exit after its stdin closed.
const STDIN_GRACE: Duration = Duration::from_secs(5);
/// How long it may take after SIGTERM before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(2);
/// Longest line accepted from either side (a bigger one ends the relay of that side).
const MAX_LINE: usize = 64 << 20;

/// Why the relay could not run.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("cannot start the wrapped server's box ({program}): {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot set up the relay: {0}")]
    Io(#[from] std::io::Error),
}

/// The server to wrap: the program that runs it in a box, with its arguments.
#[derive(Debug, Clone)]
pub struct WrappedServer {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Hand the child descriptor 3, a pipe whose lines (the proxy's decisions) go to the audit
    /// log; the args must tell the child to write there (`--audit /dev/fd/3`).
    pub net_audit_fd3: bool,
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: two fresh descriptors, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn spawn(server: &WrappedServer) -> Result<(Child, Option<OwnedFd>), RelayError> {
    let mut cmd = Command::new(&server.program);
    cmd.args(&server.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let audit = if server.net_audit_fd3 {
        Some(pipe()?)
    } else {
        None
    };
    let fd3 = audit.as_ref().map_or(-1, |(_, w)| w.as_raw_fd());
    // SAFETY: runs in the forked child before exec and only makes async-signal-safe calls
    // (prctl, dup2, fcntl). The parent thread that forks lives until the relay returns, so the
    // death signal fires exactly when the relay ends.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            if fd3 >= 0 {
                if libc::dup2(fd3, 3) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                if fd3 == 3 {
                    libc::fcntl(3, libc::F_SETFD, 0);
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|source| RelayError::Spawn {
        program: server.program.display().to_string(),
        source,
    })?;
    Ok((child, audit.map(|(r, _)| r)))
}

/// Reads one line (without its newline); `None` at end of input.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> Option<()> {
    buf.clear();
    match r.take(MAX_LINE as u64).read_until(b'\n', buf) {
        Ok(0) | Err(_) => None,
        Ok(_) => {
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            Some(())
        }
    }
}

fn to_client(data: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(data);
    let _ = out.flush();
}

fn describe(status: ExitStatus) -> String {
    let how = match (status.code(), status.signal()) {
        (Some(124), _) => "it hit airlock's --timeout".to_string(),
        (Some(125), _) => "airlock could not run it (see airlock's stderr)".to_string(),
        (Some(c), _) if c > 128 => format!("it was killed by signal {}", c - 128),
        (Some(c), _) => format!("it exited with status {c}"),
        (None, Some(s)) => format!("its box was killed by signal {s}"),
        (None, None) => "it ended".to_string(),
    };
    format!("the wrapped MCP server is gone: {how}. airlock wrap cannot reach it any more; reconnect to start it again")
}

/// Runs the relay until the client closes stdin and the server has ended. Returns the server's
/// exit status as airlock reports it (0 when it exited cleanly after the client left).
pub fn relay(server: &WrappedServer, gate: Gate, audit: Arc<AuditSink>) -> Result<i32, RelayError> {
    let (mut child, net_audit) = spawn(server)?;
    let child_in = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("the server has no stdin pipe"))?;
    let child_out = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("the server has no stdout pipe"))?;
    let gate = Arc::new(Mutex::new(gate));
    let (client_gone_tx, client_gone) = channel::<()>();

    let upstream = {
        let (gate, audit) = (Arc::clone(&gate), Arc::clone(&audit));
        std::thread::Builder::new()
            .name("wrap-client".into())
            .spawn(move || {
                let mut child_in = Some(child_in);
                let mut input = BufReader::new(std::io::stdin().lock());
                let mut buf = Vec::new();
                while read_line(&mut input, &mut buf).is_some() {
                    if buf.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let decision = gate
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .from_client(&buf);
                    match decision {
                        FromClient::Forward(line) => {
                            if let Some(w) = child_in.as_mut() {
                                if w.write_all(&line).and_then(|()| w.flush()).is_err() {
                                    child_in = None;
                                }
                            }
                        }
                        FromClient::Answer(line, record) => {
                            to_client(&line);
                            if let Some(r) = record {
                                audit.record(&r);
                            }
                        }
                        FromClient::Approved(line, record) => {
                            audit.record(&record);
                            if let Some(w) = child_in.as_mut() {
                                if w.write_all(&line).and_then(|()| w.flush()).is_err() {
                                    child_in = None;
                                }
                            }
                        }
                        FromClient::Drop => {}
                    }
                }
                drop(child_in);
                let _ = client_gone_tx.send(());
            })?
    };
    let downstream = {
        let (gate, audit) = (Arc::clone(&gate), Arc::clone(&audit));
        std::thread::Builder::new()
            .name("wrap-server".into())
            .spawn(move || {
                let mut output = BufReader::new(child_out);
                let mut buf = Vec::new();
                while read_line(&mut output, &mut buf).is_some() {
                    if buf.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let (lines, records) = gate
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .from_server(&buf);
                    if !lines.is_empty() {
                        to_client(&lines);
                    }
                    for r in &records {
                        audit.record(r);
                    }
                }
            })?
    };
    let net = match net_audit {
        Some(r) => {
            let audit = Arc::clone(&audit);
            Some(
                std::thread::Builder::new()
                    .name("wrap-net-audit".into())
                    .spawn(move || {
                        let mut input = BufReader::new(std::fs::File::from(r));
                        let mut buf = Vec::new();
                        while read_line(&mut input, &mut buf).is_some() {
                            audit.line(&buf);
                        }
                    })?,
            )
        }
        None => None,
    };

    // Wait for the server to end; once the client has gone, hurry it along.
    let mut client_left: Option<Instant> = None;
    let mut termed = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        // Questions nobody answered in time (`--approval untrusted`): their calls are refused.
        let expired = gate
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .expire_questions(Instant::now());
        for (line, record) in expired {
            to_client(&line);
            audit.record(&record);
        }
        let Some(t) = client_left else {
            match client_gone.recv_timeout(Duration::from_millis(20)) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => client_left = Some(Instant::now()),
                Err(RecvTimeoutError::Timeout) => {}
            }
            continue;
        };
        std::thread::sleep(Duration::from_millis(20));
        {
            let pid = child.id() as libc::pid_t;
            if !termed && t.elapsed() >= STDIN_GRACE {
                // SAFETY: signalling our own child, which has not been reaped yet.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                termed = true;
            } else if termed && t.elapsed() >= STDIN_GRACE + TERM_GRACE {
                let _ = child.kill();
            }
        }
    };
    let _ = downstream.join();
    let answers = gate
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .server_ended(describe(status));
    for (line, record) in answers {
        to_client(&line);
        if let Some(r) = record {
            audit.call(&r);
        }
    }
    // The proxy's decisions thread ends when the box's last copy of the pipe closes; it is not
    // waited for (a straggler must not hold the relay open).
    drop(net);
    // Later requests are answered with the same error until the client leaves.
    let _ = upstream.join();
    Ok(if client_left.is_some() && status.success() {
        0
    } else {
        status.code().unwrap_or(1)
    })
}
