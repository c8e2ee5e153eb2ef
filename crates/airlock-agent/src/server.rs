//! The agent's event loop: one thread, `poll(2)` over the host socket, the SIGCHLD signalfd,
//! inotify and every process's pipes.
//!
//! Flow control: outgoing frames queue in the connection. Downloads are read only while that
//! queue is below [`LOW_WATER`]; output of processes someone reads is read only below
//! [`HIGH_WATER`] (the process then blocks on its pipe); output nobody reads is always drained
//! into the process's ring; and requests are read from the host only below [`HARD_CAP`], so a
//! host that stops reading stops being served rather than growing the agent's memory.

use crate::conn::{Connection, ReadOutcome};
use crate::process::{Process, Stream};
use crate::reaper::{self, Reaper};
use crate::transfer::{Download, Upload};
use crate::tunnel::Tunnel;
use crate::watch::Watcher;
use crate::{sys, AgentError, AgentHooks};
use airlock_protocol::{
    ChannelAllocator, ChannelSide, ErrorCode, Frame, FrameKind, Hello, ProcessInfo, Role,
};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::fd::OwnedFd;
use std::time::Instant;

/// Below this many queued outgoing bytes, downloads send their next chunk.
pub(crate) const LOW_WATER: usize = 512 * 1024;
/// Above this many, output of processes with readers waits.
pub(crate) const HIGH_WATER: usize = 2 << 20;
/// Above this many, the agent stops reading requests.
pub(crate) const HARD_CAP: usize = 8 << 20;
/// Finished processes remembered for `list_processes`.
const FINISHED_KEPT: usize = 64;

/// What an open channel is used for.
pub(crate) enum ChannelUse {
    /// Output of a process, forwarded to the host (the host's Eof detaches).
    Output(i32),
    /// The host writes a process's stdin.
    Stdin(i32),
    /// A file streamed to the host.
    Download,
    /// A file streamed from the host.
    Upload(Upload),
    /// A connection to a port in the box, both ways.
    Tunnel(Box<Tunnel>),
}

pub(crate) struct Agent<'h> {
    pub(crate) hooks: &'h dyn AgentHooks,
    pub(crate) conn: Connection,
    pub(crate) procs: BTreeMap<i32, Process>,
    pub(crate) finished: VecDeque<ProcessInfo>,
    pub(crate) channels: HashMap<u32, ChannelUse>,
    pub(crate) alloc: ChannelAllocator,
    pub(crate) downloads: VecDeque<Download>,
    pub(crate) watcher: Option<Watcher>,
    pub(crate) buf: Vec<u8>,
    hello_done: bool,
}

#[derive(Clone, Copy)]
enum Slot {
    Socket,
    Signals,
    Inotify,
    Output(i32, Stream),
    Stdin(i32),
    Tunnel(u32),
}

/// Serves the host on `conn` until the host closes it, then kills every process the agent
/// started (their whole process groups) and returns.
///
/// `Ok` when the host closed the connection; an error when the host broke the framing or the
/// hello (the connection is closed either way) or a setup step failed.
pub fn serve(conn: OwnedFd, hooks: &dyn AgentHooks) -> Result<(), AgentError> {
    ensure_stdio();
    // SAFETY: setting a signal disposition; a write to a closed pipe must be EPIPE, not death.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let reaper = Reaper::new().map_err(AgentError::setup("signalfd"))?;
    let conn = Connection::new(conn).map_err(AgentError::setup("socket"))?;
    let mut agent = Agent {
        hooks,
        conn,
        procs: BTreeMap::new(),
        finished: VecDeque::new(),
        channels: HashMap::new(),
        alloc: ChannelAllocator::new(ChannelSide::Agent),
        downloads: VecDeque::new(),
        watcher: None,
        buf: vec![0; 256 * 1024],
        hello_done: false,
    };
    match Frame::json(FrameKind::Hello, &Hello::new(Role::Agent)) {
        Ok(f) => agent.conn.queue(&f),
        Err(e) => return Err(AgentError::Framing(e)),
    }
    let result = agent.run(&reaper);
    agent.shutdown();
    result
}

/// Makes sure fds 0-2 are open, so no pipe the agent creates lands on them.
fn ensure_stdio() {
    for fd in 0..3 {
        // SAFETY: F_GETFD has no memory effects.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            // SAFETY: opening /dev/null with a static NUL-terminated path.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}

impl Agent<'_> {
    fn run(&mut self, reaper: &Reaper) -> Result<(), AgentError> {
        let mut slots: Vec<Slot> = Vec::new();
        let mut pfds: Vec<libc::pollfd> = Vec::new();
        loop {
            self.pump_downloads();
            if self.conn.flush().is_err() {
                return Ok(());
            }
            let pending = self.conn.out_pending();
            slots.clear();
            pfds.clear();
            let mut sock_events = 0;
            let tunnel_full = self
                .channels
                .values()
                .any(|c| matches!(c, ChannelUse::Tunnel(t) if t.is_full()));
            if pending < HARD_CAP && !tunnel_full {
                sock_events |= libc::POLLIN;
            }
            if pending > 0 {
                sock_events |= libc::POLLOUT;
            }
            let mut push = |slot, fd, events| {
                slots.push(slot);
                pfds.push(libc::pollfd {
                    fd,
                    events,
                    revents: 0,
                });
            };
            push(Slot::Socket, self.conn.raw_fd(), sock_events);
            push(Slot::Signals, reaper.raw_fd(), libc::POLLIN);
            if let Some(w) = &self.watcher {
                push(Slot::Inotify, w.raw_fd(), libc::POLLIN);
            }
            for p in self.procs.values() {
                if p.status.is_some() {
                    continue;
                }
                if !p.has_readers() || pending < HIGH_WATER {
                    for (stream, fd) in p.output_fds() {
                        push(Slot::Output(p.pid, stream), fd, libc::POLLIN);
                    }
                }
                if let Some(fd) = p.stdin_wants_write() {
                    push(Slot::Stdin(p.pid), fd, libc::POLLOUT);
                }
            }
            for (&channel, c) in &self.channels {
                if let ChannelUse::Tunnel(t) = c {
                    let mut events = 0;
                    if t.wants_read() && pending < HIGH_WATER {
                        events |= libc::POLLIN;
                    }
                    if t.wants_write() {
                        events |= libc::POLLOUT;
                    }
                    if events != 0 {
                        push(Slot::Tunnel(channel), t.raw_fd(), events);
                    }
                }
            }
            let timeout = self.poll_timeout();
            sys::poll(&mut pfds, timeout).map_err(AgentError::Poll)?;

            for (slot, pfd) in slots.iter().zip(pfds.iter()) {
                if pfd.revents == 0 {
                    continue;
                }
                match *slot {
                    Slot::Socket => {
                        if pfd.revents & libc::POLLOUT != 0 && self.conn.flush().is_err() {
                            return Ok(());
                        }
                        if pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                            match self.conn.read_in() {
                                Ok(ReadOutcome::Open) => {}
                                Ok(ReadOutcome::Closed) | Err(_) => return Ok(()),
                            }
                            // Every change made before these requests is reported before
                            // their replies: a host that gets a reply has seen those events.
                            self.forward_fs_events();
                            self.handle_frames()?;
                        }
                    }
                    Slot::Signals => {
                        for (pid, status) in reaper.reap() {
                            if let Some(p) = self.procs.get_mut(&pid) {
                                p.status = Some(status);
                            }
                        }
                    }
                    Slot::Inotify => self.forward_fs_events(),
                    Slot::Output(pid, stream) => {
                        if let Some(p) = self.procs.get_mut(&pid) {
                            p.read_output(stream, &mut self.conn, &mut self.buf);
                        }
                    }
                    Slot::Stdin(pid) => {
                        if let Some(p) = self.procs.get_mut(&pid) {
                            p.write_stdin();
                        }
                    }
                    Slot::Tunnel(channel) => {
                        if let Some(ChannelUse::Tunnel(t)) = self.channels.get_mut(&channel) {
                            if pfd.revents & libc::POLLOUT != 0 {
                                t.write_box();
                            }
                            if pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                                t.read_box(channel, &mut self.conn, &mut self.buf);
                            }
                        }
                    }
                }
            }
            self.check_deadlines();
            self.retire_exited();
        }
    }

    /// Sends the events of every file-system change the kernel has queued so far.
    fn forward_fs_events(&mut self) {
        let events = self
            .watcher
            .as_mut()
            .map(Watcher::read_events)
            .unwrap_or_default();
        for e in events {
            self.conn.event(&e);
        }
    }

    /// Milliseconds until the next timeout (or 0 when a download can send now; -1: none).
    fn poll_timeout(&self) -> i32 {
        if !self.downloads.is_empty() && self.conn.out_pending() < LOW_WATER {
            return 0;
        }
        let now = Instant::now();
        self.procs
            .values()
            .filter(|p| p.status.is_none())
            .filter_map(|p| p.deadline)
            .map(|d| {
                i32::try_from(d.saturating_duration_since(now).as_millis() + 1).unwrap_or(i32::MAX)
            })
            .min()
            .unwrap_or(-1)
    }

    fn pump_downloads(&mut self) {
        while self.conn.out_pending() < LOW_WATER {
            let Some(mut d) = self.downloads.pop_front() else {
                return;
            };
            if d.pump(&mut self.conn, &mut self.buf) {
                self.channels.remove(&d.channel);
            } else {
                self.downloads.push_back(d);
            }
        }
    }

    fn check_deadlines(&mut self) {
        let now = Instant::now();
        for p in self.procs.values_mut() {
            if p.status.is_none() && p.deadline.is_some_and(|d| d <= now) {
                p.deadline = None;
                p.timed_out = true;
                let _ = sys::kill_group(p.pid, libc::SIGKILL);
            }
        }
    }

    /// Ends the streams of reaped processes and reports their exit.
    fn retire_exited(&mut self) {
        let done: Vec<i32> = self
            .procs
            .values()
            .filter(|p| p.status.is_some())
            .map(|p| p.pid)
            .collect();
        for pid in done {
            let Some(mut p) = self.procs.remove(&pid) else {
                continue;
            };
            p.finish_output(&mut self.conn, &mut self.buf);
            self.conn.event(&p.exit_event());
            for ch in p.channels() {
                self.channels.remove(&ch);
            }
            self.finished.push_back(p.info());
            if self.finished.len() > FINISHED_KEPT {
                self.finished.pop_front();
            }
        }
    }

    fn handle_frames(&mut self) -> Result<(), AgentError> {
        loop {
            let frame = match self.conn.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => return Ok(()),
                Err(e) => {
                    eprintln!("airlock-agent: closing the connection: {e}");
                    self.conn.error_event(
                        ErrorCode::Invalid,
                        format!("closing the connection: {e}"),
                        None,
                    );
                    self.conn.drain_for(200);
                    return Err(AgentError::Framing(e));
                }
            };
            if !self.hello_done {
                if frame.kind != FrameKind::Hello {
                    let msg = "the first frame must be a hello";
                    self.conn.error_event(ErrorCode::Invalid, msg, None);
                    self.conn.drain_for(200);
                    return Err(AgentError::Hello(airlock_protocol::HelloError::Malformed(
                        msg.into(),
                    )));
                }
                if let Err(e) = Hello::accept(&frame.body, Role::Host) {
                    eprintln!("airlock-agent: refusing the host: {e}");
                    self.conn
                        .error_event(ErrorCode::Unsupported, e.to_string(), None);
                    self.conn.drain_for(200);
                    return Err(AgentError::Hello(e));
                }
                self.hello_done = true;
                continue;
            }
            self.handle_frame(frame);
        }
    }

    fn handle_frame(&mut self, frame: Frame) {
        match frame.kind {
            FrameKind::Request => match airlock_protocol::Request::decode(&frame.body) {
                Ok(req) => self.dispatch(req),
                Err(e) => match e.id() {
                    Some(id) => self.conn.reply(&airlock_protocol::Reply::error(
                        id,
                        ErrorCode::Invalid,
                        e.to_string(),
                    )),
                    None => self
                        .conn
                        .error_event(ErrorCode::Invalid, e.to_string(), None),
                },
            },
            FrameKind::Data => self.on_data(frame.channel, &frame.body),
            FrameKind::Eof => self.on_eof(frame.channel),
            kind => self.conn.error_event(
                ErrorCode::Invalid,
                format!("the host may not send {kind:?} frames"),
                None,
            ),
        }
    }

    /// Kills every started process group, reaps them and any orphan.
    fn shutdown(&mut self) {
        for p in self.procs.values() {
            if p.status.is_none() {
                let _ = sys::kill_group(p.pid, libc::SIGKILL);
            }
        }
        for p in self.procs.values() {
            if p.status.is_none() {
                reaper::wait_for(p.pid);
            }
        }
        self.procs.clear();
        reaper::reap_all();
    }
}
