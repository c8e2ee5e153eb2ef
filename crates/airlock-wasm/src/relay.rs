//! The relay between the host and a WASM box's agent. Every frame passes through unchanged
//! except requests: an `exec` becomes a run of the in-box runner ([`ExecMap`]) or is refused,
//! and a file operation outside the box's preopened directories is refused, so the files API
//! shows exactly what the guest sees. The agent's answers are passed on frame by frame.
//!
//! Requests come from airlock's own runtime (the host side); the agent's frames are only
//! split into frames, never interpreted, so nothing the box sends is parsed here beyond the
//! bounded frame header.

use crate::exec_map::ExecMap;
use crate::scope::Scope;
use airlock_protocol::{read_frame, ErrorCode, Frame, FrameKind, Op, Reply, Request};
use std::io::{BufReader, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A running relay: two threads, ended when either side closes.
pub struct Relay {
    threads: Vec<JoinHandle<()>>,
    host: UnixStream,
    agent: UnixStream,
}

/// What the relay decides for one request.
enum Decision {
    Forward(Request),
    Refuse(Reply),
}

fn decide(map: &ExecMap, scope: &Scope, req: Request) -> Decision {
    let id = req.id;
    let refuse = |code, message: String| Decision::Refuse(Reply::error(id, code, message));
    match req.op {
        Op::Exec(exec) => match map.map(&exec) {
            Ok(mapped) => Decision::Forward(Request {
                id,
                op: Op::Exec(mapped),
            }),
            Err(why) => refuse(ErrorCode::Unsupported, why.0),
        },
        op => match scope.check_op(&op) {
            Ok(()) => Decision::Forward(Request { id, op }),
            Err(why) => refuse(ErrorCode::NotFound, why),
        },
    }
}

fn send(to: &Mutex<UnixStream>, frame: &Frame) -> bool {
    let mut w = to.lock().unwrap_or_else(|e| e.into_inner());
    w.write_all(&frame.encode()).is_ok()
}

impl Relay {
    /// Relays between `host` (the runtime's side) and `agent` (the box's agent) until either
    /// closes.
    pub fn start(
        host: UnixStream,
        agent: UnixStream,
        map: ExecMap,
        scope: Scope,
    ) -> std::io::Result<Relay> {
        let host_writer = Arc::new(Mutex::new(host.try_clone()?));
        let agent_writer = agent.try_clone()?;
        let (host_reader, agent_reader) = (host.try_clone()?, agent.try_clone()?);
        let (h, a) = (host.try_clone()?, agent.try_clone()?);
        let to_host = host_writer.clone();
        let down = std::thread::Builder::new()
            .name("wasm-relay-down".into())
            .spawn(move || {
                let mut from_host = BufReader::new(host_reader);
                let mut to_agent = agent_writer;
                while let Ok(Some(frame)) = read_frame(&mut from_host) {
                    let frame = if frame.kind == FrameKind::Request {
                        match Request::decode(&frame.body) {
                            Ok(req) => match decide(&map, &scope, req) {
                                Decision::Forward(req) => match req.encode() {
                                    Ok(body) => Frame {
                                        kind: FrameKind::Request,
                                        channel: frame.channel,
                                        body,
                                    },
                                    Err(_) => continue,
                                },
                                Decision::Refuse(reply) => {
                                    if let Ok(body) = reply.encode() {
                                        let f = Frame {
                                            kind: FrameKind::Reply,
                                            channel: frame.channel,
                                            body,
                                        };
                                        if !send(&to_host, &f) {
                                            break;
                                        }
                                    }
                                    continue;
                                }
                            },
                            // The agent answers a bad request itself, as it always does.
                            Err(_) => frame,
                        }
                    } else {
                        frame
                    };
                    if to_agent.write_all(&frame.encode()).is_err() {
                        break;
                    }
                }
                let _ = h.shutdown(Shutdown::Both);
                let _ = to_agent.shutdown(Shutdown::Both);
            })?;
        let (h2, a2) = (host.try_clone()?, agent.try_clone()?);
        let up = std::thread::Builder::new()
            .name("wasm-relay-up".into())
            .spawn(move || {
                let mut from_agent = BufReader::new(agent_reader);
                while let Ok(Some(frame)) = read_frame(&mut from_agent) {
                    if !send(&host_writer, &frame) {
                        break;
                    }
                }
                let _ = h2.shutdown(Shutdown::Both);
                let _ = a2.shutdown(Shutdown::Both);
            })?;
        drop(a);
        Ok(Relay {
            threads: vec![down, up],
            host,
            agent,
        })
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.host.shutdown(Shutdown::Both);
        let _ = self.agent.shutdown(Shutdown::Both);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
