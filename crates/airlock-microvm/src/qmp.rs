//! QEMU's machine protocol (QMP) over the monitor socket: one JSON command, one JSON answer;
//! asynchronous events in between are skipped. Descriptors go along as SCM_RIGHTS (`getfd`).

use crate::MicrovmError;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// How long one command may take (a migration to a file is waited for separately).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// A connected, negotiated monitor.
pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    /// Reads the greeting and leaves negotiation mode.
    pub fn connect(stream: UnixStream) -> Result<Qmp, MicrovmError> {
        let io = |e| MicrovmError::io("cannot talk to QEMU's monitor", e);
        stream.set_read_timeout(Some(COMMAND_TIMEOUT)).map_err(io)?;
        let writer = stream.try_clone().map_err(io)?;
        let mut qmp = Qmp {
            reader: BufReader::new(stream),
            writer,
        };
        let greeting = qmp.read_line()?;
        if greeting.get("QMP").is_none() {
            return Err(MicrovmError::Boot(format!(
                "QEMU's monitor greeted with {greeting}"
            )));
        }
        qmp.execute("qmp_capabilities", json!({}))?;
        Ok(qmp)
    }

    fn read_line(&mut self) -> Result<Value, MicrovmError> {
        let mut line = String::new();
        let n = self
            .reader
            .read_line(&mut line)
            .map_err(|e| MicrovmError::io("QEMU's monitor did not answer", e))?;
        if n == 0 {
            return Err(MicrovmError::Boot("QEMU's monitor closed".into()));
        }
        serde_json::from_str(&line)
            .map_err(|e| MicrovmError::Boot(format!("QEMU's monitor sent bad JSON: {e}")))
    }

    /// Runs `command` and returns its `return` value.
    pub fn execute(&mut self, command: &str, arguments: Value) -> Result<Value, MicrovmError> {
        self.execute_with_fd(command, arguments, None)
    }

    /// Runs `command`, passing `fd` along with it.
    pub fn execute_with_fd(
        &mut self,
        command: &str,
        arguments: Value,
        fd: Option<RawFd>,
    ) -> Result<Value, MicrovmError> {
        let mut msg = serde_json::to_vec(&json!({"execute": command, "arguments": arguments}))
            .map_err(|e| MicrovmError::Invalid(e.to_string()))?;
        msg.push(b'\n');
        let io = |e| MicrovmError::io(format!("cannot send {command} to QEMU's monitor"), e);
        match fd {
            Some(fd) => send_with_fd(&self.writer, &msg, fd).map_err(io)?,
            None => self.writer.write_all(&msg).map_err(io)?,
        }
        loop {
            let answer = self.read_line()?;
            if let Some(ret) = answer.get("return") {
                return Ok(ret.clone());
            }
            if let Some(err) = answer.get("error") {
                return Err(MicrovmError::Qmp {
                    command: command.to_string(),
                    message: err
                        .get("desc")
                        .and_then(Value::as_str)
                        .unwrap_or("no reason given")
                        .to_string(),
                });
            }
            // An event: not the answer.
        }
    }

    /// Waits until `query-migrate` reports the migration done (or failed).
    pub fn wait_migration(&mut self, timeout: Duration) -> Result<(), MicrovmError> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let status = self.execute("query-migrate", json!({}))?;
            match status.get("status").and_then(Value::as_str) {
                Some("completed") => return Ok(()),
                Some("failed") | Some("cancelled") => {
                    return Err(MicrovmError::Qmp {
                        command: "migrate".into(),
                        message: status
                            .get("error-desc")
                            .and_then(Value::as_str)
                            .unwrap_or("the migration failed")
                            .to_string(),
                    })
                }
                _ => {}
            }
            if std::time::Instant::now() >= deadline {
                return Err(MicrovmError::Boot(
                    "the snapshot did not finish in time".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

fn send_with_fd(sock: &UnixStream, data: &[u8], fd: RawFd) -> std::io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut cbuf = vec![0u8; space];
    // SAFETY: an all-zero msghdr is valid; every pointer set below outlives sendmsg.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: msg has a control buffer of CMSG_SPACE(one fd) bytes, so the first header and its
    // data fit.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
    }
    // SAFETY: a valid socket and message.
    let sent = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if (sent as usize) < data.len() {
        (&*sock).write_all(&data[sent as usize..])?;
    }
    Ok(())
}
