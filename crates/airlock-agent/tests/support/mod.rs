//! Test harness: starts an agent over a socketpair and talks to it with a small blocking client
//! built on airlock-protocol. How the agent is started is the harness's parameter, so every way a
//! backend gets its agent passes the same suites: `AIRLOCK_AGENT_CONNECTION=fork` (the default:
//! `serve` in a forked child, as the native box's init runs it) or `exec` (the standalone
//! `airlock-agent --fd 3` executable, as another backend's box runs it). scripts/test.sh runs
//! the suites both ways.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use airlock_agent::{serve, AgentHooks};
use airlock_protocol::{
    Event, ExecReply, ExecRequest, Frame, FrameDecoder, FrameKind, Hello, Op, Reply, Request, Role,
};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

pub struct NoHooks;
impl AgentHooks for NoHooks {
    fn pre_exec(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Exit code of the agent process when `serve` returned an error (a forked agent exits 3,
/// the standalone executable 1).
pub const SERVE_ERR: i32 = 3;

/// The exit code a failed `serve` gives with the harness's way of starting agents.
pub fn serve_err() -> i32 {
    if exec_connection() {
        1
    } else {
        SERVE_ERR
    }
}

/// Whether agents are started as the standalone executable.
pub fn exec_connection() -> bool {
    match std::env::var("AIRLOCK_AGENT_CONNECTION").as_deref() {
        Ok("exec") => true,
        Ok("fork") | Err(_) => false,
        Ok(other) => panic!("AIRLOCK_AGENT_CONNECTION={other:?}: use fork or exec"),
    }
}

/// Starts `airlock-agent --fd 3` with the box end of a socketpair at descriptor 3.
fn spawn_exec() -> (i32, UnixStream) {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let (ours, theirs) = UnixStream::pair().unwrap();
    let fd = theirs.as_raw_fd();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_airlock-agent"));
    cmd.args(["--fd", "3"]);
    // SAFETY: in the forked child before exec: dup2 and fcntl are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(fd, 3) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            libc::fcntl(3, libc::F_SETFD, 0);
            Ok(())
        });
    }
    // The tests reap it by pid (waitpid), as they do a forked agent.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().unwrap();
    drop(theirs);
    ours.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    (child.id() as i32, ours)
}

pub struct Agent {
    pub pid: i32,
    pub client: Client,
    done: bool,
}

/// Starts an agent (as the harness's parameter says) without doing the hello.
pub fn spawn_raw() -> (i32, UnixStream) {
    if exec_connection() {
        spawn_exec()
    } else {
        spawn_raw_with(&NoHooks)
    }
}

/// Forks an agent with `hooks`, without doing the hello.
pub fn spawn_raw_with(hooks: &dyn AgentHooks) -> (i32, UnixStream) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    // SAFETY: test-only fork; the child runs serve then _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        drop(ours);
        let code = match serve(OwnedFd::from(theirs), hooks) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("agent: {e}");
                SERVE_ERR
            }
        };
        // SAFETY: ends the forked child without running the parent's atexit handlers.
        unsafe { libc::_exit(code) };
    }
    drop(theirs);
    ours.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    (pid, ours)
}

/// Starts an agent (as the harness's parameter says) and does the hello.
pub fn start() -> Agent {
    let (pid, sock) = spawn_raw();
    greet(pid, sock)
}

/// Forks an agent with `hooks` and does the hello (always forked: hooks run in this program).
pub fn start_with(hooks: &dyn AgentHooks) -> Agent {
    let (pid, sock) = spawn_raw_with(hooks);
    greet(pid, sock)
}

fn greet(pid: i32, sock: UnixStream) -> Agent {
    let mut client = Client::new(sock);
    let hello = client.recv().expect("agent hello");
    assert_eq!(hello.kind, FrameKind::Hello);
    Hello::accept(&hello.body, Role::Agent).unwrap();
    client.send(&Frame::json(FrameKind::Hello, &Hello::new(Role::Host)).unwrap());
    Agent {
        pid,
        client,
        done: false,
    }
}

impl Agent {
    /// Closes the connection and returns the agent's wait status.
    pub fn finish(mut self) -> i32 {
        self.client.sock.shutdown(std::net::Shutdown::Both).ok();
        self.done = true;
        wait(self.pid)
    }

    pub fn vm_hwm_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if !self.done {
            // SAFETY: kill and waitpid with integer arguments on our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

pub fn wait(pid: i32) -> i32 {
    let mut status = 0;
    // SAFETY: status is a valid out pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(r, pid);
    status
}

pub fn env() -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    env
}

pub fn exec_req(argv: &[&str]) -> ExecRequest {
    ExecRequest {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: env(),
        cwd: None,
        tty: None,
        stdin: false,
        timeout_ms: None,
        tag: None,
        user: Default::default(),
    }
}

pub struct Client {
    pub sock: UnixStream,
    dec: FrameDecoder,
    backlog: VecDeque<Frame>,
    next_id: u64,
    buf: Vec<u8>,
}

/// Output and end of one process.
pub struct Finished {
    pub out: HashMap<u32, Vec<u8>>,
    pub eofs: Vec<u32>,
    pub exit: Event,
}

impl Client {
    pub fn new(sock: UnixStream) -> Client {
        Client {
            sock,
            dec: FrameDecoder::new(),
            backlog: VecDeque::new(),
            next_id: 1,
            buf: vec![0; 1 << 16],
        }
    }

    pub fn send(&mut self, frame: &Frame) {
        self.sock.write_all(&frame.encode()).unwrap();
    }

    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.sock.write_all(bytes)
    }

    pub fn request(&mut self, op: Op) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let body = Request { id, op }.encode().unwrap();
        self.send(&Frame::new(FrameKind::Request, 0, body).unwrap());
        id
    }

    /// The next frame from the wire (not the backlog); `None` at EOF.
    pub fn recv_wire(&mut self) -> Option<Frame> {
        loop {
            if let Some(f) = self.dec.next().expect("agent broke the framing") {
                return Some(f);
            }
            let n = match self.sock.read(&mut self.buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
                // A read with a timeout is not restarted after a stop and continue or a freeze
                // (signal(7)); the frame is still on its way.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => panic!("reading from the agent: {e}"),
            };
            if n == 0 {
                return None;
            }
            self.dec.feed(&self.buf[..n]);
        }
    }

    pub fn recv(&mut self) -> Option<Frame> {
        self.backlog.pop_front().or_else(|| self.recv_wire())
    }

    /// Waits for the first frame matching `want`, keeping the others for later.
    pub fn wait_for(&mut self, mut want: impl FnMut(&Frame) -> bool) -> Frame {
        if let Some(i) = self.backlog.iter().position(&mut want) {
            return self.backlog.remove(i).unwrap();
        }
        loop {
            let f = self.recv_wire().expect("agent closed the connection");
            if want(&f) {
                return f;
            }
            self.backlog.push_back(f);
        }
    }

    pub fn wait_reply(&mut self, id: u64) -> Reply {
        let f = self.wait_for(|f| {
            f.kind == FrameKind::Reply && Reply::decode(&f.body).is_ok_and(|r| r.id == id)
        });
        Reply::decode(&f.body).unwrap()
    }

    pub fn call(&mut self, op: Op) -> Reply {
        let id = self.request(op);
        self.wait_reply(id)
    }

    pub fn wait_event(&mut self, mut want: impl FnMut(&Event) -> bool) -> Event {
        let f = self.wait_for(|f| {
            f.kind == FrameKind::Event && Event::decode(&f.body).is_ok_and(|e| want(&e))
        });
        Event::decode(&f.body).unwrap()
    }

    pub fn exec(&mut self, req: ExecRequest) -> ExecReply {
        self.call(Op::Exec(req)).body().unwrap()
    }

    /// Collects Data on `channels` until the exit event of `pid`; checks Eof precedes it.
    pub fn finish(&mut self, pid: i32, channels: &[u32]) -> Finished {
        let mut out: HashMap<u32, Vec<u8>> = channels.iter().map(|c| (*c, Vec::new())).collect();
        let mut eofs = Vec::new();
        loop {
            let f = self.wait_for(|f| {
                channels.contains(&f.channel)
                    || (f.kind == FrameKind::Event
                        && matches!(Event::decode(&f.body), Ok(Event::Exit { pid: p, .. }) if p == pid))
            });
            match f.kind {
                FrameKind::Data => {
                    assert!(!eofs.contains(&f.channel), "data after eof");
                    out.get_mut(&f.channel).unwrap().extend_from_slice(&f.body);
                }
                FrameKind::Eof => eofs.push(f.channel),
                _ => {
                    return Finished {
                        out,
                        eofs,
                        exit: Event::decode(&f.body).unwrap(),
                    }
                }
            }
        }
    }

    /// Reads Data on `channel` until `needle` appears in it.
    pub fn read_until(&mut self, channel: u32, needle: &str) -> String {
        let mut acc = Vec::new();
        while !String::from_utf8_lossy(&acc).contains(needle) {
            let f = self.wait_for(|f| f.channel == channel);
            assert_eq!(
                f.kind,
                FrameKind::Data,
                "channel ended before {needle:?}: {}",
                String::from_utf8_lossy(&acc)
            );
            acc.extend_from_slice(&f.body);
        }
        String::from_utf8_lossy(&acc).into_owned()
    }
}

pub fn exit_of(e: &Event) -> (Option<i32>, Option<i32>, bool) {
    match e {
        Event::Exit {
            code,
            signal,
            timed_out,
            ..
        } => (*code, *signal, *timed_out),
        other => panic!("not an exit event: {other:?}"),
    }
}

/// A fresh directory under the target's temp dir.
pub fn scratch(name: &str) -> Scratch {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("agent-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A test's scratch directory under target/, removed with everything in it when dropped (a
/// run leaves nothing behind, passed or failed).
pub struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
