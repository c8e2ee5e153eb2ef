//! Processes started by `exec`: their output (kept in a ring and forwarded to every attached
//! set of channels), their stdin queue, timeout and exit status.

use crate::conn::Connection;
use crate::ring::{OutputRing, OUTPUT_RING_CAP};
use crate::spawn::Spawned;
use crate::sys;
use airlock_protocol::{ErrorCode, Event, ProcessInfo};
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

/// Most stdin bytes queued for a process that is not reading; beyond it, stdin is closed and
/// an `error` event (code `limit`) is sent.
pub const STDIN_QUEUE_CAP: usize = 4 << 20;
/// Bytes read from an output fd per wakeup.
const OUTPUT_CHUNK: usize = 64 * 1024;
/// What the host's Eof on a tty stdin channel writes: the terminal's end-of-file character.
const TTY_EOF: u8 = 0x04;

/// Output streams of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout = 0,
    Stderr = 1,
}

/// One set of channels the output is forwarded to (the exec's own, or an attach's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Subscriber {
    pub(crate) stdout: Option<u32>,
    pub(crate) stderr: Option<u32>,
}

impl Subscriber {
    fn channel(&self, stream: Stream) -> Option<u32> {
        match stream {
            Stream::Stdout => self.stdout,
            Stream::Stderr => self.stderr,
        }
    }
}

struct StdinPipe {
    fd: OwnedFd,
    queue: VecDeque<u8>,
    close_when_drained: bool,
}

pub(crate) struct Process {
    pub(crate) pid: i32,
    pub(crate) tag: Option<String>,
    pub(crate) argv: Vec<String>,
    outputs: [Option<OwnedFd>; 2],
    rings: [OutputRing; 2],
    stdin: Option<StdinPipe>,
    pub(crate) stdin_channel: Option<u32>,
    pty: Option<OwnedFd>,
    pub(crate) subscribers: Vec<Subscriber>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) timed_out: bool,
    /// The wait status once reaped.
    pub(crate) status: Option<i32>,
}

impl Process {
    pub(crate) fn new(
        spawned: Spawned,
        argv: Vec<String>,
        tag: Option<String>,
        deadline: Option<Instant>,
    ) -> Process {
        Process {
            pid: spawned.pid,
            tag,
            argv,
            outputs: [Some(spawned.stdout), spawned.stderr],
            rings: [
                OutputRing::new(OUTPUT_RING_CAP),
                OutputRing::new(OUTPUT_RING_CAP),
            ],
            stdin: spawned.stdin.map(|fd| StdinPipe {
                fd,
                queue: VecDeque::new(),
                close_when_drained: false,
            }),
            stdin_channel: None,
            pty: spawned.pty,
            subscribers: Vec::new(),
            deadline,
            timed_out: false,
            status: None,
        }
    }

    pub(crate) fn pty(&self) -> Option<&OwnedFd> {
        self.pty.as_ref()
    }

    pub(crate) fn has_stderr(&self) -> bool {
        self.pty.is_none()
    }

    pub(crate) fn info(&self) -> ProcessInfo {
        ProcessInfo {
            pid: self.pid,
            tag: self.tag.clone(),
            argv: self.argv.clone(),
            running: self.status.is_none(),
        }
    }

    /// Output fds still open, with their stream.
    pub(crate) fn output_fds(&self) -> impl Iterator<Item = (Stream, RawFd)> + '_ {
        [Stream::Stdout, Stream::Stderr]
            .into_iter()
            .filter_map(|s| {
                self.outputs[s as usize]
                    .as_ref()
                    .map(|fd| (s, fd.as_raw_fd()))
            })
    }

    /// The stdin fd, if it has queued bytes to write.
    pub(crate) fn stdin_wants_write(&self) -> Option<RawFd> {
        self.stdin
            .as_ref()
            .filter(|s| !s.queue.is_empty())
            .map(|s| s.fd.as_raw_fd())
    }

    /// Reads one chunk of `stream`; keeps it and forwards it. Returns whether the stream ended.
    pub(crate) fn read_output(
        &mut self,
        stream: Stream,
        conn: &mut Connection,
        buf: &mut [u8],
    ) -> bool {
        let idx = stream as usize;
        let Some(fd) = self.outputs[idx].as_ref() else {
            return true;
        };
        let chunk = buf.len().min(OUTPUT_CHUNK);
        let n = match sys::read(fd, buf.get_mut(..chunk).unwrap_or_default()) {
            Ok(0) => 0,
            Ok(n) => n,
            Err(e) if sys::would_block(&e) => return false,
            // EIO: a pty whose slave side is closed everywhere.
            Err(_) => 0,
        };
        if n == 0 {
            self.outputs[idx] = None;
            for sub in &self.subscribers {
                if let Some(ch) = sub.channel(stream) {
                    conn.eof(ch);
                }
            }
            return true;
        }
        let data = buf.get(..n).unwrap_or_default();
        self.rings[idx].push(data);
        for sub in &self.subscribers {
            if let Some(ch) = sub.channel(stream) {
                conn.data(ch, data);
            }
        }
        false
    }

    /// After the process is reaped: reads what is left in its pipes (bounded), then ends the
    /// streams even if a descendant still holds them open.
    pub(crate) fn finish_output(&mut self, conn: &mut Connection, buf: &mut [u8]) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            for _ in 0..64 {
                let Some(fd) = self.outputs[stream as usize].as_ref() else {
                    break;
                };
                let mut pfd = [libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                }];
                if sys::poll(&mut pfd, 0).unwrap_or(0) == 0 || self.read_output(stream, conn, buf) {
                    break;
                }
            }
            if self.outputs[stream as usize].take().is_some() {
                for sub in &self.subscribers {
                    if let Some(ch) = sub.channel(stream) {
                        conn.eof(ch);
                    }
                }
            }
        }
        self.stdin = None;
        self.pty = None;
    }

    /// Queues stdin bytes from the host and writes what the pipe takes now.
    pub(crate) fn push_stdin(&mut self, data: &[u8], conn: &mut Connection, channel: u32) {
        let Some(stdin) = self.stdin.as_mut() else {
            conn.error_event(
                ErrorCode::UnknownChannel,
                "the process's stdin is closed",
                Some(channel),
            );
            return;
        };
        if stdin.queue.len() + data.len() > STDIN_QUEUE_CAP {
            self.stdin = None;
            conn.error_event(
                ErrorCode::Limit,
                format!("more than {STDIN_QUEUE_CAP} bytes of stdin queued for a process that does not read; stdin closed"),
                Some(channel),
            );
            return;
        }
        stdin.queue.extend(data);
        self.write_stdin();
    }

    /// The host's Eof on the stdin channel: close once the queue is written (a tty gets ^D).
    pub(crate) fn close_stdin(&mut self) {
        if self.pty.is_some() {
            if let Some(stdin) = self.stdin.as_mut() {
                stdin.queue.push_back(TTY_EOF);
            }
            self.write_stdin();
            return;
        }
        if let Some(stdin) = self.stdin.as_mut() {
            stdin.close_when_drained = true;
        }
        self.write_stdin();
    }

    /// Writes queued stdin until the pipe is full.
    pub(crate) fn write_stdin(&mut self) {
        let Some(stdin) = self.stdin.as_mut() else {
            return;
        };
        while !stdin.queue.is_empty() {
            let (front, _) = stdin.queue.as_slices();
            match sys::write(&stdin.fd, front) {
                Ok(n) => {
                    stdin.queue.drain(..n);
                }
                Err(e) if sys::would_block(&e) => return,
                Err(_) => {
                    // EPIPE: the process closed its stdin; drop what is queued.
                    self.stdin = None;
                    return;
                }
            }
        }
        if stdin.close_when_drained {
            self.stdin = None;
        }
    }

    /// Sends the buffered recent output on a new subscriber's channels.
    pub(crate) fn replay(&self, sub: Subscriber, conn: &mut Connection) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            if let Some(ch) = sub.channel(stream) {
                let bytes = self.rings[stream as usize].contents();
                if !bytes.is_empty() {
                    conn.data(ch, &bytes);
                }
            }
        }
    }

    /// Stops forwarding on `channel` (the host sent Eof on an output channel).
    pub(crate) fn unsubscribe(&mut self, channel: u32) {
        for sub in &mut self.subscribers {
            if sub.stdout == Some(channel) {
                sub.stdout = None;
            }
            if sub.stderr == Some(channel) {
                sub.stderr = None;
            }
        }
        self.subscribers
            .retain(|s| s.stdout.is_some() || s.stderr.is_some());
    }

    /// Whether output is forwarded to anyone (then reading follows the socket's pace).
    pub(crate) fn has_readers(&self) -> bool {
        !self.subscribers.is_empty()
    }

    /// Every channel this process uses.
    pub(crate) fn channels(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .subscribers
            .iter()
            .flat_map(|s| [s.stdout, s.stderr])
            .flatten()
            .collect();
        v.extend(self.stdin_channel);
        v
    }

    /// The exit event for the reaped status.
    pub(crate) fn exit_event(&self) -> Event {
        let status = self.status.unwrap_or(0);
        let (code, signal) = if libc::WIFEXITED(status) {
            (Some(libc::WEXITSTATUS(status)), None)
        } else if libc::WIFSIGNALED(status) {
            (None, Some(libc::WTERMSIG(status)))
        } else {
            (None, None)
        };
        Event::Exit {
            pid: self.pid,
            code,
            signal,
            timed_out: self.timed_out,
        }
    }
}
