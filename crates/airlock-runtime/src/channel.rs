//! Operations inside a sandbox, over a connection to its agent: commands (collected or
//! streamed), files (whole or streamed, never held in memory when streamed), listings.

use crate::agent_client::{AgentClient, AgentError};
use crate::error::SandboxError;
use airlock_protocol::{
    Entry, Event, ExecReply, ExecRequest, FrameKind, ListDirReply, Op, ReadFileReply,
};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::Duration;

/// What one command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
}

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    pub pid: i32,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
}

/// A command to run inside the box.
#[derive(Debug, Clone, Default)]
pub struct Command {
    pub argv: Vec<String>,
    /// Added to (and overriding) the box's environment.
    pub env: BTreeMap<String, String>,
    /// Working directory; the box's default when `None`.
    pub cwd: Option<String>,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Option<Duration>,
    /// The box user (the default) or the box's root.
    pub user: airlock_protocol::ExecUser,
}

/// One channel to a box's agent (several share one connection) with the box's defaults
/// (environment, working directory).
pub struct AgentChannel {
    client: AgentClient,
    env: BTreeMap<String, String>,
    cwd: String,
}

impl AgentChannel {
    /// Wraps a connected agent client with the box's defaults.
    pub fn new(client: AgentClient, env: BTreeMap<String, String>, cwd: String) -> AgentChannel {
        AgentChannel { client, env, cwd }
    }

    /// Hands the connection over (e.g. to send it to another process).
    pub fn into_parts(self) -> (AgentClient, BTreeMap<String, String>, String) {
        (self.client, self.env, self.cwd)
    }

    /// The box's environment: what every command starts with.
    pub fn default_env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// The box's working directory: where commands start unless told otherwise.
    pub fn default_cwd(&self) -> &str {
        &self.cwd
    }

    pub(crate) fn client_mut(&mut self) -> &mut AgentClient {
        &mut self.client
    }

    pub(crate) fn defaults(&self) -> (&BTreeMap<String, String>, &str) {
        (&self.env, &self.cwd)
    }

    fn channel(&mut self) -> u32 {
        self.client.alloc_channel()
    }

    /// Runs a command, passing its output to `on_output` as it comes. `on_start` gets the pid.
    /// If `on_output` returns `false` (its reader went away), the command's process group is
    /// killed and the rest of its output is discarded.
    pub fn exec_stream(
        &mut self,
        cmd: &Command,
        on_start: impl FnOnce(i32),
        mut on_output: impl FnMut(Stream, &[u8]) -> bool,
    ) -> Result<ExitInfo, SandboxError> {
        if cmd.argv.is_empty() {
            return Err(AgentError::Refused {
                code: "invalid".into(),
                message: "the command is empty: give at least the program name".into(),
            }
            .into());
        }
        let mut env = self.env.clone();
        env.extend(cmd.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let req = ExecRequest {
            argv: cmd.argv.clone(),
            env,
            cwd: Some(cmd.cwd.clone().unwrap_or_else(|| self.cwd.clone())),
            tty: None,
            stdin: cmd.stdin.is_some(),
            timeout_ms: cmd
                .timeout
                .map(|t| t.as_millis().min(u64::MAX as u128) as u64),
            tag: None,
            user: cmd.user,
        };
        let client = &mut self.client;
        let reply = client.call(Op::Exec(req))?;
        let started: ExecReply = reply.body().map_err(|e| AgentError::Protocol(e.message))?;
        let pid = started.pid;
        on_start(pid);
        if let (Some(ch), Some(data)) = (started.stdin, cmd.stdin.as_deref()) {
            client.send_data(ch, data)?;
        }
        let (out_ch, err_ch) = (started.stdout, started.stderr);
        let mut reading = true;
        loop {
            let f = client.wait_for(|f| {
                f.channel == out_ch
                    || Some(f.channel) == err_ch
                    || (f.kind == FrameKind::Event && matches!(Event::decode(&f.body), Ok(Event::Exit { pid: p, .. }) if p == pid))
            })?;
            match f.kind {
                FrameKind::Data if reading => {
                    let which = if f.channel == out_ch {
                        Stream::Stdout
                    } else {
                        Stream::Stderr
                    };
                    if !on_output(which, &f.body) {
                        reading = false;
                        client.call(Op::Signal {
                            pid,
                            signal: libc::SIGKILL,
                        })?;
                    }
                }
                FrameKind::Event => {
                    if let Ok(Event::Exit {
                        code,
                        signal,
                        timed_out,
                        ..
                    }) = Event::decode(&f.body)
                    {
                        return Ok(ExitInfo {
                            pid,
                            exit_code: code,
                            signal,
                            timed_out,
                        });
                    }
                }
                _ => {}
            }
        }
    }

    /// Runs a command to its end and returns its output (each stream capped at `output_cap`
    /// bytes; the rest is read and dropped). The environment is the box's, plus `env`.
    pub fn exec(
        &mut self,
        argv: &[&str],
        env: &[(&str, &str)],
        stdin: Option<&[u8]>,
        timeout: Option<Duration>,
        output_cap: usize,
    ) -> Result<ExecOutput, SandboxError> {
        let cmd = Command {
            argv: argv.iter().map(|a| (*a).to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
            cwd: None,
            stdin: stdin.map(<[u8]>::to_vec),
            timeout,
            user: Default::default(),
        };
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let exit = self.exec_stream(
            &cmd,
            |_| {},
            |which, data| {
                let buf = if which == Stream::Stdout {
                    &mut stdout
                } else {
                    &mut stderr
                };
                let room = output_cap.saturating_sub(buf.len());
                buf.extend_from_slice(&data[..room.min(data.len())]);
                true
            },
        )?;
        Ok(ExecOutput {
            stdout,
            stderr,
            exit_code: exit.exit_code,
            signal: exit.signal,
            timed_out: exit.timed_out,
        })
    }

    /// Streams a file from inside the box into `out`; returns its size.
    pub fn read_file_to(&mut self, path: &str, out: &mut dyn Write) -> Result<u64, SandboxError> {
        let client = &mut self.client;
        let reply = client.call(Op::ReadFile {
            path: path.to_string(),
        })?;
        let started: ReadFileReply = reply.body().map_err(|e| AgentError::Protocol(e.message))?;
        let mut total = 0u64;
        loop {
            let f = client.wait_for(|f| f.channel == started.channel)?;
            match f.kind {
                FrameKind::Data => {
                    out.write_all(&f.body)?;
                    total += f.body.len() as u64;
                }
                _ => return Ok(total),
            }
        }
    }

    /// Streams `input` into a file inside the box (created or replaced); returns its size.
    pub fn write_file_from(
        &mut self,
        path: &str,
        input: &mut dyn Read,
    ) -> Result<u64, SandboxError> {
        let channel = self.channel();
        let client = &mut self.client;
        let id = client.request(Op::WriteFile {
            path: path.to_string(),
            mode: None,
            channel,
        })?;
        let mut buf = vec![0u8; 256 * 1024];
        let mut total = 0u64;
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            client.send_chunk(channel, &buf[..n])?;
            total += n as u64;
        }
        client.send_eof(channel)?;
        client.reply(id)?;
        Ok(total)
    }

    /// Reads a whole file from inside the box.
    pub fn read_file(&mut self, path: &str) -> Result<Vec<u8>, SandboxError> {
        let mut data = Vec::new();
        self.read_file_to(path, &mut data)?;
        Ok(data)
    }

    /// Writes a whole file inside the box.
    pub fn write_file(&mut self, path: &str, data: &[u8]) -> Result<(), SandboxError> {
        self.write_file_from(path, &mut &data[..]).map(|_| ())
    }

    /// Describes one path inside the box (a symlink is described, not followed).
    pub fn stat(&mut self, path: &str) -> Result<Entry, SandboxError> {
        let reply = self.client.call(Op::Stat {
            path: path.to_string(),
        })?;
        Ok(reply.body().map_err(|e| AgentError::Protocol(e.message))?)
    }

    /// Sets `user.` extended attributes on a path inside the box (a symlink itself).
    pub fn set_xattrs(
        &mut self,
        path: &str,
        xattrs: &std::collections::BTreeMap<String, String>,
    ) -> Result<(), SandboxError> {
        self.client.call(Op::SetXattrs {
            path: path.to_string(),
            xattrs: xattrs.clone(),
        })?;
        Ok(())
    }

    /// A round trip to the agent: when it returns, every event the agent had for this
    /// session before the request (file-system changes already made) has been received.
    pub fn sync(&mut self) -> Result<(), SandboxError> {
        self.client.call(Op::Ping)?;
        Ok(())
    }

    /// Creates a directory inside the box (with its missing parents when `parents`).
    pub fn make_dir(&mut self, path: &str, parents: bool) -> Result<(), SandboxError> {
        self.client.call(Op::MakeDir {
            path: path.to_string(),
            parents,
        })?;
        Ok(())
    }

    /// Renames (moves) a path inside the box.
    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), SandboxError> {
        self.client.call(Op::Rename {
            from: from.to_string(),
            to: to.to_string(),
        })?;
        Ok(())
    }

    /// Removes a path inside the box (a directory with everything under it when `recursive`).
    pub fn remove(&mut self, path: &str, recursive: bool) -> Result<(), SandboxError> {
        self.client.call(Op::Remove {
            path: path.to_string(),
            recursive,
        })?;
        Ok(())
    }

    /// Lists a directory inside the box, `depth` levels deep.
    pub fn list_dir(&mut self, path: &str, depth: u32) -> Result<Vec<Entry>, SandboxError> {
        let reply = self.client.call(Op::ListDir {
            path: path.to_string(),
            depth,
        })?;
        let list: ListDirReply = reply.body().map_err(|e| AgentError::Protocol(e.message))?;
        Ok(list.entries)
    }
}
