//! One agent connection shared by many concurrent users.
//!
//! A box has one connection to its agent, but a server needs many things at once on one box: a
//! background command streaming its output, another command started meanwhile, a directory
//! watch, a file upload. [`AgentMux`] owns the connection's reading side on its own thread and
//! hands out [`MuxPort`]s; each port is one independent user with its own queue of frames.
//!
//! Routing, decided by the reader thread before it reads the next frame (so no frame can arrive
//! before its route exists):
//! - a reply goes to the port that sent the request (request ids are unique per connection);
//! - a reply that opens agent channels (`stdout`, `stderr`, `channel`), names a process (`pid`
//!   with `stdout`: exec and attach) or a watch (`watch`) makes that port their owner;
//! - Data and Eof go to the channel's owner, `exit` events to every owner of the pid, `fs`
//!   events to the watch's owner; error events without a channel are dropped.
//!
//! Client-side channel ids (uploads) come from one allocator per connection. A port that goes
//! away gives up what it owned: its processes' output channels are detached (Eof to the agent,
//! the process runs on), its watches removed. A port's queue is bounded: a user that stops
//! reading eventually holds up the box's connection (backpressure), never the host's memory.

use crate::agent_client::AgentError;
use airlock_protocol::{
    ChannelAllocator, ChannelSide, Event, Frame, FrameDecoder, FrameKind, Op, Reply, Request,
};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// Frames queued per port before the reader waits for that port's user.
const PORT_QUEUE: usize = 256;

/// A shared connection to a box's agent (hellos already exchanged).
pub struct AgentMux {
    shared: Arc<Shared>,
}

struct Shared {
    /// The connection: read by the reader thread alone, written under `write_turn`. One
    /// descriptor for both (a server holds one per box it runs).
    conn: UnixStream,
    write_turn: Mutex<()>,
    routes: Mutex<Routes>,
    next_id: AtomicU64,
    next_port: AtomicU64,
    channels: Mutex<ChannelAllocator>,
    closed: AtomicBool,
}

#[derive(Default)]
struct Routes {
    ports: HashMap<u64, SyncSender<Frame>>,
    /// Request id → port.
    requests: HashMap<u64, u64>,
    /// Agent channel → port.
    channels: HashMap<u32, u64>,
    /// Process → ports that wait for its exit.
    pids: HashMap<i32, Vec<u64>>,
    /// Watch id → port.
    watches: HashMap<u32, u64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AgentMux {
    /// Takes over `sock`: a reader thread routes everything the agent sends from now on.
    pub fn new(sock: UnixStream) -> Result<AgentMux, AgentError> {
        let shared = Arc::new(Shared {
            conn: sock,
            write_turn: Mutex::new(()),
            routes: Mutex::new(Routes::default()),
            next_id: AtomicU64::new(1),
            next_port: AtomicU64::new(1),
            channels: Mutex::new(ChannelAllocator::new(ChannelSide::Client)),
            closed: AtomicBool::new(false),
        });
        let for_reader = Arc::clone(&shared);
        // Not joined: the reader ends when the connection does (it may be waiting for a port's
        // user to take a frame; that port's end releases it).
        std::thread::Builder::new()
            .name("airlock-agent-mux".into())
            .spawn(move || read_loop(&for_reader))?;
        Ok(AgentMux { shared })
    }

    /// A new independent user of the connection.
    pub fn port(&self) -> MuxPort {
        let (tx, rx) = mpsc::sync_channel(PORT_QUEUE);
        let id = self.shared.next_port.fetch_add(1, Ordering::Relaxed);
        let mut routes = lock(&self.shared.routes);
        // Checked under the routes lock, which the reader holds while it clears the ports at
        // the end: a port made after that sees a closed connection at once.
        if !self.shared.closed.load(Ordering::Acquire) {
            routes.ports.insert(id, tx);
        }
        drop(routes);
        MuxPort {
            id,
            rx,
            shared: Arc::clone(&self.shared),
        }
    }

    /// Whether the agent's connection has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }
}

impl Drop for AgentMux {
    fn drop(&mut self) {
        let _ = self.shared.conn.shutdown(Shutdown::Both);
    }
}

impl Shared {
    fn send(&self, frame: &Frame) -> Result<(), AgentError> {
        let _turn = lock(&self.write_turn);
        (&self.conn)
            .write_all(&frame.encode())
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::NotConnected => AgentError::Closed,
                _ => AgentError::Io(e),
            })
    }
}

/// One user of an [`AgentMux`]: sends requests and receives what is routed to it.
pub struct MuxPort {
    id: u64,
    rx: Receiver<Frame>,
    shared: Arc<Shared>,
}

impl MuxPort {
    /// Sends a request and returns its id (its reply will come to this port).
    pub fn request(&mut self, op: Op) -> Result<u64, AgentError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let body = Request { id, op }
            .encode()
            .map_err(|e| AgentError::Protocol(e.to_string()))?;
        let frame = Frame::new(FrameKind::Request, 0, body)?;
        lock(&self.shared.routes).requests.insert(id, self.id);
        if let Err(e) = self.shared.send(&frame) {
            lock(&self.shared.routes).requests.remove(&id);
            return Err(e);
        }
        Ok(id)
    }

    /// Sends a frame as is (Data or Eof on a client channel).
    pub fn send(&mut self, frame: &Frame) -> Result<(), AgentError> {
        self.shared.send(frame)
    }

    /// A handle that sends frames on this port's connection from another thread, while this
    /// port receives (a tunnel's two directions).
    pub fn sender(&self) -> MuxSender {
        MuxSender {
            shared: Arc::clone(&self.shared),
        }
    }

    /// A fresh client-side channel id, unique on the connection.
    pub fn alloc_channel(&mut self) -> u32 {
        lock(&self.shared.channels).allocate()
    }

    /// The next frame for this port; `None` once the connection has ended.
    pub fn recv(&mut self) -> Option<Frame> {
        self.rx.recv().ok()
    }

    /// Like [`MuxPort::recv`], but `Ok(None)` at `deadline`; `Err(Closed)` once the connection
    /// has ended.
    pub fn recv_until(&mut self, deadline: Instant) -> Result<Option<Frame>, AgentError> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(wait) {
            Ok(f) => Ok(Some(f)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(AgentError::Closed),
        }
    }
}

/// Sends frames on a shared agent connection (see [`MuxPort::sender`]); owns no route.
pub struct MuxSender {
    shared: Arc<Shared>,
}

impl MuxSender {
    /// Sends a frame as is (Data or Eof).
    pub fn send(&self, frame: &Frame) -> Result<(), AgentError> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(AgentError::Closed);
        }
        self.shared.send(frame)
    }
}

impl Drop for MuxPort {
    fn drop(&mut self) {
        let (channels, watches) = {
            let mut r = lock(&self.shared.routes);
            r.ports.remove(&self.id);
            r.requests.retain(|_, p| *p != self.id);
            let channels: Vec<u32> = r
                .channels
                .iter()
                .filter(|(_, p)| **p == self.id)
                .map(|(c, _)| *c)
                .collect();
            for c in &channels {
                r.channels.remove(c);
            }
            for owners in r.pids.values_mut() {
                owners.retain(|p| *p != self.id);
            }
            r.pids.retain(|_, owners| !owners.is_empty());
            let watches: Vec<u32> = r
                .watches
                .iter()
                .filter(|(_, p)| **p == self.id)
                .map(|(w, _)| *w)
                .collect();
            for w in &watches {
                r.watches.remove(w);
            }
            (channels, watches)
        };
        if self.shared.closed.load(Ordering::Acquire) {
            return;
        }
        // Detach from what this port was reading; the processes run on, the agent keeps their
        // recent output for a later attach.
        for c in channels {
            let _ = self.shared.send(&Frame::eof(c));
        }
        for watch in watches {
            // Nobody waits for this reply: its id has no route and the reader drops it.
            let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
            if let Ok(body) = (Request {
                id,
                op: Op::Unwatch { watch },
            })
            .encode()
            {
                if let Ok(frame) = Frame::new(FrameKind::Request, 0, body) {
                    let _ = self.shared.send(&frame);
                }
            }
        }
    }
}

fn read_loop(shared: &Shared) {
    let mut sock = &shared.conn;
    let mut dec = FrameDecoder::new();
    let mut buf = vec![0u8; 1 << 16];
    'outer: loop {
        loop {
            match dec.next() {
                Ok(Some(frame)) => dispatch(shared, frame),
                Ok(None) => break,
                Err(e) => {
                    eprintln!(
                        "airlock: the box's agent broke the framing ({e}); closing its connection"
                    );
                    break 'outer;
                }
            }
        }
        let n = match sock.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => 0,
        };
        if n == 0 {
            break;
        }
        dec.feed(&buf[..n]);
    }
    let _ = sock.shutdown(Shutdown::Both);
    let mut routes = lock(&shared.routes);
    shared.closed.store(true, Ordering::Release);
    // Dropping the senders wakes every port with "closed".
    *routes = Routes::default();
}

/// Records what a successful reply gives `port`: agent channels, a process, a watch.
fn learn(routes: &mut Routes, port: u64, body: &serde_json::Value) {
    let number = |key: &str| {
        body.get(key)
            .and_then(serde_json::Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    let opens_output = number("stdout").is_some();
    for key in ["stdout", "stderr", "channel"] {
        if let Some(c) = number(key).filter(|c| airlock_protocol::is_agent_channel(*c)) {
            routes.channels.insert(c, port);
        }
    }
    if opens_output {
        if let Some(pid) = body
            .get("pid")
            .and_then(serde_json::Value::as_i64)
            .and_then(|p| i32::try_from(p).ok())
        {
            let owners = routes.pids.entry(pid).or_default();
            if !owners.contains(&port) {
                owners.push(port);
            }
        }
    }
    if let Some(w) = number("watch") {
        routes.watches.insert(w, port);
    }
}

fn dispatch(shared: &Shared, frame: Frame) {
    let targets: Vec<(u64, SyncSender<Frame>)> = {
        let mut r = lock(&shared.routes);
        let ports: Vec<u64> = match frame.kind {
            FrameKind::Reply => {
                let Ok(reply) = Reply::decode(&frame.body) else {
                    return;
                };
                let Some(port) = r.requests.remove(&reply.id) else {
                    return;
                };
                if let Ok(body) = &reply.result {
                    learn(&mut r, port, body);
                }
                vec![port]
            }
            FrameKind::Data | FrameKind::Eof => {
                let owner = if frame.kind == FrameKind::Eof {
                    r.channels.remove(&frame.channel)
                } else {
                    r.channels.get(&frame.channel).copied()
                };
                match owner {
                    Some(p) => vec![p],
                    None => return,
                }
            }
            FrameKind::Event => match Event::decode(&frame.body) {
                Ok(Event::Exit { pid, .. }) => r.pids.remove(&pid).unwrap_or_default(),
                Ok(Event::Fs { watch, .. }) => r.watches.get(&watch).copied().into_iter().collect(),
                Ok(Event::Error {
                    channel: Some(c), ..
                }) => r.channels.get(&c).copied().into_iter().collect(),
                _ => return,
            },
            _ => return,
        };
        ports
            .into_iter()
            .filter_map(|p| r.ports.get(&p).map(|s| (p, s.clone())))
            .collect()
    };
    for (port, sender) in targets {
        // Blocks while the port's queue is full: backpressure onto the agent.
        if sender.send(frame.clone()).is_err() {
            // The port went away meanwhile; its Drop detached what it owned.
            lock(&shared.routes).ports.remove(&port);
        }
    }
}

#[cfg(test)]
#[path = "mux_tests.rs"]
mod tests;
