//! A TCP connection to a port on a box's own loopback, made by the box's agent from inside the
//! box and carried over the agent connection: how a server in the box is reached from outside
//! without opening the box's network. Blocking; the two halves may live on two threads.

use crate::agent_client::AgentError;
use crate::error::SandboxError;
use crate::mux::{MuxPort, MuxSender};
use airlock_protocol::{Event, Frame, FrameKind, Op, Reply, TunnelReply};
use std::time::{Duration, Instant};

/// Bytes sent per Data frame toward the box.
const SEND_CHUNK: usize = 64 * 1024;

/// What the box's end sends: read with [`TunnelReader::recv`].
pub struct TunnelReader {
    port: MuxPort,
    channel: u32,
    ended: bool,
}

/// What goes to the box's end. Dropping it closes the connection (the box's end sees its
/// peer close), whatever the reader is doing.
pub struct TunnelWriter {
    sender: MuxSender,
    channel: u32,
}

/// Opens a connection to `port` in the box over `mux_port` (a fresh port of the box's
/// agent connection, see [`crate::LiveSandbox::agent_port`]), waiting at most `wait` for the
/// agent's answer (the agent runs beside untrusted code: it may never answer). A port nothing
/// listens on is [`AgentError::Refused`] with code `notfound`.
pub fn open(
    mut mux_port: MuxPort,
    port: u16,
    wait: Duration,
) -> Result<(TunnelReader, TunnelWriter), SandboxError> {
    let id = mux_port.request(Op::Tunnel { port })?;
    let deadline = Instant::now() + wait;
    let reply = loop {
        let frame = mux_port.recv_until(deadline)?.ok_or_else(|| {
            AgentError::Protocol(format!(
                "the box's agent did not answer a connection to port {port} within {} s",
                wait.as_secs()
            ))
        })?;
        if frame.kind != FrameKind::Reply {
            continue;
        }
        let reply = Reply::decode(&frame.body).map_err(|e| AgentError::Protocol(e.to_string()))?;
        if reply.id == id {
            break reply;
        }
    };
    let TunnelReply { channel } = reply.body().map_err(|e| AgentError::Refused {
        code: format!("{:?}", e.code).to_lowercase(),
        message: e.message,
    })?;
    let sender = mux_port.sender();
    Ok((
        TunnelReader {
            port: mux_port,
            channel,
            ended: false,
        },
        TunnelWriter { sender, channel },
    ))
}

impl TunnelReader {
    /// The next bytes from the box's end; `None` once it closed its side, the agent reported
    /// the connection failed, or the box ended.
    pub fn recv(&mut self) -> Option<Vec<u8>> {
        while !self.ended {
            let Some(frame) = self.port.recv() else {
                self.ended = true;
                break;
            };
            match frame.kind {
                FrameKind::Data if frame.channel == self.channel => return Some(frame.body),
                FrameKind::Eof if frame.channel == self.channel => self.ended = true,
                FrameKind::Event => {
                    if let Ok(Event::Error {
                        channel: Some(c), ..
                    }) = Event::decode(&frame.body)
                    {
                        if c == self.channel {
                            self.ended = true;
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }
}

impl TunnelWriter {
    /// Sends `data` to the box's end. `Err(Closed)` once the box is gone.
    pub fn send(&self, data: &[u8]) -> Result<(), AgentError> {
        for chunk in data.chunks(SEND_CHUNK) {
            self.sender
                .send(&Frame::data(self.channel, chunk.to_vec())?)?;
        }
        Ok(())
    }
}

impl Drop for TunnelWriter {
    fn drop(&mut self) {
        let _ = self.sender.send(&Frame::eof(self.channel));
    }
}
