//! The host side of the agent protocol: a blocking client over the box's unix socket. The agent
//! runs next to untrusted code, so everything it sends is treated as untrusted: framing errors
//! end the session, unexpected frames are bounded, nothing panics.

use crate::mux::MuxPort;
use airlock_protocol::{
    Frame, FrameDecoder, FrameKind, Hello, Op, ProtocolError, Reply, Request, Role,
};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// Frames kept aside while waiting for a specific one (e.g. output of a background process);
/// beyond this the session fails instead of growing without bound.
const MAX_BACKLOG: usize = 4096;

/// Why talking to a box's agent failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("the box's agent closed the connection (the box ended or was killed)")]
    Closed,
    #[error("talking to the box's agent failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the box's agent broke the protocol: {0}")]
    Protocol(String),
    #[error("the box's agent refused: {code}: {message}")]
    Refused { code: String, message: String },
    #[error("the box's agent sent more unrequested frames than airlock keeps ({MAX_BACKLOG})")]
    Backlog,
}

impl From<ProtocolError> for AgentError {
    fn from(e: ProtocolError) -> AgentError {
        AgentError::Protocol(e.to_string())
    }
}

/// A connection to a box's agent: its own socket, or one port of a shared connection.
pub struct AgentClient {
    io: Io,
    backlog: VecDeque<Frame>,
    next_id: u64,
    next_channel: u32,
}

enum Io {
    Direct {
        sock: UnixStream,
        dec: FrameDecoder,
        buf: Vec<u8>,
    },
    Port(MuxPort),
}

impl AgentClient {
    /// Exchanges hellos (bounded by `timeout`) and returns the connected client.
    pub fn connect(sock: UnixStream, timeout: Duration) -> Result<AgentClient, AgentError> {
        sock.set_read_timeout(Some(timeout))?;
        let mut c = AgentClient::resume(sock);
        let hello = c.recv_wire()?.ok_or(AgentError::Closed)?;
        if hello.kind != FrameKind::Hello {
            return Err(AgentError::Protocol(format!(
                "expected a hello, got a {:?} frame",
                hello.kind
            )));
        }
        Hello::accept(&hello.body, Role::Agent).map_err(|e| AgentError::Protocol(e.to_string()))?;
        c.send(&Frame::json(FrameKind::Hello, &Hello::new(Role::Host))?)?;
        if let Io::Direct { sock, .. } = &c.io {
            sock.set_read_timeout(None)?;
        }
        Ok(c)
    }

    /// A client for a connection whose hellos were already exchanged (handed over by the box's
    /// supervisor process).
    pub fn resume(sock: UnixStream) -> AgentClient {
        let io = Io::Direct {
            sock,
            dec: FrameDecoder::new(),
            buf: vec![0; 1 << 16],
        };
        AgentClient {
            io,
            backlog: VecDeque::new(),
            next_id: 1,
            next_channel: 2,
        }
    }

    /// A client over one port of a shared connection.
    pub fn over(port: MuxPort) -> AgentClient {
        AgentClient {
            io: Io::Port(port),
            backlog: VecDeque::new(),
            next_id: 1,
            next_channel: 2,
        }
    }

    /// The connection, for handing over (`None` for a port of a shared connection). Only
    /// between requests: anything already read and not consumed is dropped.
    pub fn into_stream(self) -> Option<UnixStream> {
        match self.io {
            Io::Direct { sock, .. } => Some(sock),
            Io::Port(_) => None,
        }
    }

    /// A fresh client-side channel id (for an upload).
    pub fn alloc_channel(&mut self) -> u32 {
        match &mut self.io {
            Io::Direct { .. } => {
                let c = self.next_channel;
                self.next_channel = self.next_channel.checked_add(2).unwrap_or(2);
                c
            }
            Io::Port(port) => port.alloc_channel(),
        }
    }

    fn send(&mut self, frame: &Frame) -> Result<(), AgentError> {
        match &mut self.io {
            Io::Direct { sock, .. } => {
                sock.write_all(&frame.encode()).map_err(|e| match e.kind() {
                    std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset => {
                        AgentError::Closed
                    }
                    _ => AgentError::Io(e),
                })
            }
            Io::Port(port) => port.send(frame),
        }
    }

    /// Sends a request and returns its id.
    pub fn request(&mut self, op: Op) -> Result<u64, AgentError> {
        if let Io::Port(port) = &mut self.io {
            return port.request(op);
        }
        let id = self.next_id;
        self.next_id += 1;
        let body = Request { id, op }
            .encode()
            .map_err(|e| AgentError::Protocol(e.to_string()))?;
        self.send(&Frame::new(FrameKind::Request, 0, body)?)?;
        Ok(id)
    }

    /// Streams `data` on a client channel, then closes it.
    pub fn send_data(&mut self, channel: u32, data: &[u8]) -> Result<(), AgentError> {
        self.send_chunk(channel, data)?;
        self.send_eof(channel)
    }

    /// Sends bytes on a client channel (split into frames as needed).
    pub fn send_chunk(&mut self, channel: u32, data: &[u8]) -> Result<(), AgentError> {
        for chunk in data.chunks(airlock_protocol::MAX_BODY) {
            self.send(&Frame::data(channel, chunk.to_vec())?)?;
        }
        Ok(())
    }

    /// Closes a client channel.
    pub fn send_eof(&mut self, channel: u32) -> Result<(), AgentError> {
        self.send(&Frame::eof(channel))
    }

    fn recv_wire(&mut self) -> Result<Option<Frame>, AgentError> {
        let (sock, dec, buf) = match &mut self.io {
            Io::Direct { sock, dec, buf } => (sock, dec, buf),
            Io::Port(port) => return Ok(port.recv()),
        };
        loop {
            if let Some(f) = dec.next()? {
                return Ok(Some(f));
            }
            let n = match sock.read(buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if n == 0 {
                return Ok(None);
            }
            dec.feed(&buf[..n]);
        }
    }

    /// The first frame matching `want`; others are kept (bounded) for later.
    pub fn wait_for(&mut self, mut want: impl FnMut(&Frame) -> bool) -> Result<Frame, AgentError> {
        if let Some(i) = self.backlog.iter().position(&mut want) {
            if let Some(f) = self.backlog.remove(i) {
                return Ok(f);
            }
        }
        loop {
            let f = self.recv_wire()?.ok_or(AgentError::Closed)?;
            if want(&f) {
                return Ok(f);
            }
            if self.backlog.len() >= MAX_BACKLOG {
                return Err(AgentError::Backlog);
            }
            self.backlog.push_back(f);
        }
    }

    /// Like [`AgentClient::wait_for`], but gives up at `deadline` (`Ok(None)`).
    pub fn wait_for_until(
        &mut self,
        deadline: std::time::Instant,
        mut want: impl FnMut(&Frame) -> bool,
    ) -> Result<Option<Frame>, AgentError> {
        if let Some(i) = self.backlog.iter().position(&mut want) {
            return Ok(self.backlog.remove(i));
        }
        if let Io::Port(port) = &mut self.io {
            loop {
                let Some(f) = port.recv_until(deadline)? else {
                    return Ok(None);
                };
                if want(&f) {
                    return Ok(Some(f));
                }
                if self.backlog.len() >= MAX_BACKLOG {
                    return Err(AgentError::Backlog);
                }
                self.backlog.push_back(f);
            }
        }
        let Io::Direct { sock, dec, buf } = &mut self.io else {
            return Ok(None);
        };
        loop {
            if let Some(f) = dec.next()? {
                if want(&f) {
                    return Ok(Some(f));
                }
                if self.backlog.len() >= MAX_BACKLOG {
                    return Err(AgentError::Backlog);
                }
                self.backlog.push_back(f);
                continue;
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            sock.set_read_timeout(Some(deadline - now))?;
            let read = sock.read(buf);
            sock.set_read_timeout(None)?;
            let n = match read {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None)
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
                Err(e) => return Err(e.into()),
            };
            if n == 0 {
                return Err(AgentError::Closed);
            }
            dec.feed(&buf[..n]);
        }
    }

    /// Sends `op` and waits for its reply; an error reply becomes [`AgentError::Refused`].
    pub fn call(&mut self, op: Op) -> Result<Reply, AgentError> {
        let id = self.request(op)?;
        self.reply(id)
    }

    /// Waits for the reply to request `id`.
    pub fn reply(&mut self, id: u64) -> Result<Reply, AgentError> {
        let f = self.wait_for(|f| {
            f.kind == FrameKind::Reply && Reply::decode(&f.body).is_ok_and(|r| r.id == id)
        })?;
        let reply = Reply::decode(&f.body).map_err(|e| AgentError::Protocol(e.to_string()))?;
        if let Err(e) = &reply.result {
            return Err(AgentError::Refused {
                code: format!("{:?}", e.code).to_lowercase(),
                message: e.message.clone(),
            });
        }
        Ok(reply)
    }
}

#[cfg(test)]
#[path = "agent_client_tests.rs"]
mod tests;
