//! Answers to requests and to the host's Data and Eof frames.

use crate::files::{self, FileError};
use crate::process::{Process, Subscriber};
use crate::server::{Agent, ChannelUse};
use crate::transfer::{self, Upload};
use crate::watch::Watcher;
use crate::{spawn, sys, tunnel};
use airlock_protocol::{
    Empty, ErrorCode, ExecReply, ExecRequest, ListDirReply, Op, ProcessList, ReadFileReply, Reply,
    Request, TtySize, TunnelReply, WatchReply, WriteFileReply,
};
use std::collections::hash_map::Entry;
use std::time::{Duration, Instant};

fn file_reply<T: serde::Serialize>(id: u64, result: Result<T, FileError>) -> Reply {
    match result {
        Ok(body) => Reply::ok(id, &body),
        Err(e) => Reply::error(id, e.code(), e.to_string()),
    }
}

impl Agent<'_> {
    pub(crate) fn dispatch(&mut self, req: Request) {
        let id = req.id;
        let reply = match req.op {
            Op::Exec(exec) => self.exec(id, exec),
            Op::Signal { pid, signal } => match self.procs.get(&pid) {
                Some(p) if p.status.is_none() => match sys::kill_group(pid, signal) {
                    Ok(()) => Reply::ok(id, &Empty {}),
                    Err(e) => Reply::error(
                        id,
                        crate::code_of(&e),
                        format!("signalling {pid} failed: {e}"),
                    ),
                },
                _ => not_running(id, pid),
            },
            Op::Resize { pid, rows, cols } => match self.procs.get(&pid) {
                Some(p) if p.status.is_none() => match p.pty() {
                    Some(pty) => match crate::pty::resize(pty, TtySize { rows, cols }) {
                        Ok(()) => Reply::ok(id, &Empty {}),
                        Err(e) => {
                            Reply::error(id, crate::code_of(&e), format!("resizing failed: {e}"))
                        }
                    },
                    None => Reply::error(
                        id,
                        ErrorCode::Unsupported,
                        format!("process {pid} has no terminal"),
                    ),
                },
                _ => not_running(id, pid),
            },
            Op::ListProcesses => {
                let mut processes: Vec<_> = self.finished.iter().cloned().collect();
                processes.extend(self.procs.values().map(Process::info));
                Reply::ok(id, &ProcessList { processes })
            }
            Op::Attach { pid, replay } => match self.attach(id, pid, replay) {
                Some(reply) => reply,
                None => return,
            },
            Op::ReadFile { path } => {
                let channel = self.new_channel();
                match transfer::open_download(&path, channel) {
                    Ok((download, size)) => {
                        self.channels.insert(channel, ChannelUse::Download);
                        self.downloads.push_back(download);
                        Reply::ok(id, &ReadFileReply { size, channel })
                    }
                    Err(e) => Reply::error(id, e.code(), e.to_string()),
                }
            }
            Op::WriteFile {
                path,
                mode,
                channel,
            } => match self.channels.entry(channel) {
                Entry::Occupied(_) => Reply::error(
                    id,
                    ErrorCode::Busy,
                    format!("channel {channel} is already open"),
                ),
                Entry::Vacant(slot) => match transfer::open_upload(id, &path, mode) {
                    Ok(upload) => {
                        slot.insert(ChannelUse::Upload(upload));
                        return;
                    }
                    Err(e) => {
                        // The client may already be streaming: swallow its data until Eof.
                        slot.insert(ChannelUse::Upload(Upload::failed(id)));
                        Reply::error(id, e.code(), e.to_string())
                    }
                },
            },
            Op::ListDir { path, depth } => file_reply(
                id,
                files::list_dir(&path, depth).map(|entries| ListDirReply { entries }),
            ),
            Op::Stat { path } => file_reply(id, files::stat(&path)),
            Op::MakeDir { path, parents } => {
                file_reply(id, files::make_dir(&path, parents).map(|()| Empty {}))
            }
            Op::SetXattrs { path, xattrs } => {
                file_reply(id, files::set_xattrs(&path, &xattrs).map(|()| Empty {}))
            }
            Op::Rename { from, to } => file_reply(id, files::rename(&from, &to).map(|()| Empty {})),
            Op::Remove { path, recursive } => {
                file_reply(id, files::remove(&path, recursive).map(|()| Empty {}))
            }
            Op::Watch { path, recursive } => self.watch(id, &path, recursive),
            Op::Unwatch { watch } => match self.watcher.as_mut().map(|w| w.remove(watch)) {
                Some(true) => Reply::ok(id, &Empty {}),
                _ => Reply::error(id, ErrorCode::NotFound, format!("no watch {watch}")),
            },
            Op::Ping => Reply::ok(id, &Empty {}),
            Op::Tunnel { port } => self.tunnel(id, port),
        };
        self.conn.reply(&reply);
    }

    fn tunnel(&mut self, id: u64, port: u16) -> Reply {
        let open = self
            .channels
            .values()
            .filter(|c| matches!(c, ChannelUse::Tunnel(_)))
            .count();
        if open >= tunnel::MAX_TUNNELS {
            return Reply::error(
                id,
                ErrorCode::Limit,
                format!(
                    "{open} connections into the box are open, the most it takes; close one first"
                ),
            );
        }
        match tunnel::connect(port) {
            Ok(t) => {
                let channel = self.new_channel();
                self.channels
                    .insert(channel, ChannelUse::Tunnel(Box::new(t)));
                Reply::ok(id, &TunnelReply { channel })
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Reply::error(
                id,
                ErrorCode::NotFound,
                format!("nothing in the box listens on port {port} (connection refused)"),
            ),
            Err(e) => Reply::error(
                id,
                crate::code_of(&e),
                format!("connecting to port {port} in the box failed: {e}"),
            ),
        }
    }

    fn new_channel(&mut self) -> u32 {
        let channels = &self.channels;
        self.alloc.allocate_unused(|c| channels.contains_key(&c))
    }

    fn exec(&mut self, id: u64, req: ExecRequest) -> Reply {
        let spawned = match spawn::spawn(&req, self.hooks) {
            Ok(s) => s,
            Err(e) => {
                let program = req.argv.first().map(String::as_str).unwrap_or_default();
                return Reply::error(
                    id,
                    crate::code_of(&e),
                    format!("starting {program} failed: {e}"),
                );
            }
        };
        let deadline = req
            .timeout_ms
            .and_then(|ms| Instant::now().checked_add(Duration::from_millis(ms)));
        let mut p = Process::new(spawned, req.argv, req.tag, deadline);
        let stdout = self.new_channel();
        self.channels.insert(stdout, ChannelUse::Output(p.pid));
        let stderr = if p.has_stderr() {
            let ch = self.new_channel();
            self.channels.insert(ch, ChannelUse::Output(p.pid));
            Some(ch)
        } else {
            None
        };
        let stdin = if req.stdin {
            let ch = self.new_channel();
            self.channels.insert(ch, ChannelUse::Stdin(p.pid));
            p.stdin_channel = Some(ch);
            Some(ch)
        } else {
            None
        };
        p.subscribers.push(Subscriber {
            stdout: Some(stdout),
            stderr,
        });
        let pid = p.pid;
        self.procs.insert(pid, p);
        Reply::ok(
            id,
            &ExecReply {
                pid,
                stdout,
                stderr,
                stdin,
            },
        )
    }

    /// `None` once the reply is sent (it must precede the replayed output).
    fn attach(&mut self, id: u64, pid: i32, replay: bool) -> Option<Reply> {
        if !self.procs.get(&pid).is_some_and(|p| p.status.is_none()) {
            return Some(not_running(id, pid));
        }
        let stdout = self.new_channel();
        self.channels.insert(stdout, ChannelUse::Output(pid));
        let has_stderr = self.procs.get(&pid).is_some_and(Process::has_stderr);
        let stderr = if has_stderr {
            let ch = self.new_channel();
            self.channels.insert(ch, ChannelUse::Output(pid));
            Some(ch)
        } else {
            None
        };
        let sub = Subscriber {
            stdout: Some(stdout),
            stderr,
        };
        // The reply goes first so the host knows the channels before their data.
        self.conn.reply(&Reply::ok(
            id,
            &ExecReply {
                pid,
                stdout,
                stderr,
                stdin: None,
            },
        ));
        if let Some(p) = self.procs.get_mut(&pid) {
            if replay {
                p.replay(sub, &mut self.conn);
            }
            p.subscribers.push(sub);
        }
        None
    }

    fn watch(&mut self, id: u64, path: &str, recursive: bool) -> Reply {
        if self.watcher.is_none() {
            match Watcher::new() {
                Ok(w) => self.watcher = Some(w),
                Err(e) => {
                    return Reply::error(
                        id,
                        crate::code_of(&e),
                        format!("inotify is unavailable: {e}"),
                    )
                }
            }
        }
        let Some(w) = self.watcher.as_mut() else {
            return Reply::error(id, ErrorCode::Io, "no watcher");
        };
        file_reply(id, w.add(path, recursive).map(|watch| WatchReply { watch }))
    }

    pub(crate) fn on_data(&mut self, channel: u32, data: &[u8]) {
        match self.channels.get_mut(&channel) {
            Some(ChannelUse::Stdin(pid)) => {
                let pid = *pid;
                if let Some(p) = self.procs.get_mut(&pid) {
                    p.push_stdin(data, &mut self.conn, channel);
                }
            }
            Some(ChannelUse::Tunnel(t)) => t.push(data),
            Some(ChannelUse::Upload(upload)) => {
                let was_failed = upload.is_failed();
                if let Err(e) = upload.write(data) {
                    let rid = upload.request_id;
                    if !was_failed {
                        self.conn.reply(&Reply::error(
                            rid,
                            crate::code_of(&e),
                            format!("writing the file failed: {e}"),
                        ));
                    }
                }
            }
            _ => self.conn.error_event(
                ErrorCode::UnknownChannel,
                format!("data on channel {channel}, which is not open for writing"),
                Some(channel),
            ),
        }
    }

    pub(crate) fn on_eof(&mut self, channel: u32) {
        match self.channels.remove(&channel) {
            Some(ChannelUse::Stdin(pid)) => {
                if let Some(p) = self.procs.get_mut(&pid) {
                    p.close_stdin();
                    p.stdin_channel = None;
                }
            }
            Some(ChannelUse::Upload(upload)) => {
                if !upload.is_failed() {
                    let size = upload.written();
                    self.conn
                        .reply(&Reply::ok(upload.request_id, &WriteFileReply { size }));
                }
            }
            Some(ChannelUse::Output(pid)) => {
                if let Some(p) = self.procs.get_mut(&pid) {
                    p.unsubscribe(channel);
                }
            }
            // The host closed the connection: dropping the tunnel closes its box end, and the
            // host hears the end of the box's side too (it may be waiting for it).
            Some(ChannelUse::Tunnel(t)) => {
                if t.wants_read() {
                    self.conn.eof(channel);
                }
            }
            Some(ChannelUse::Download) => {
                // The host no longer wants the file.
                self.downloads.retain(|d| d.channel != channel);
            }
            None => self.conn.error_event(
                ErrorCode::UnknownChannel,
                format!("eof on channel {channel}, which is not open"),
                Some(channel),
            ),
        }
    }
}

fn not_running(id: u64, pid: i32) -> Reply {
    Reply::error(
        id,
        ErrorCode::NotFound,
        format!("no running process {pid} started by this agent"),
    )
}
