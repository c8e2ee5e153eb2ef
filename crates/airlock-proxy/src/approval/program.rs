//! The approver program (`--approver CMD`): runs on the host with `sh -c CMD`, reads one JSON
//! line per request on its stdin ([`ApprovalRequest`]) and writes one JSON line per answer on
//! its stdout ([`AnswerLine`]), in any order. Its stderr is airlock's. A line that cannot be
//! read refuses the request it names; when the program exits, every waiting request is
//! refused and later ones are refused at once. It ends with the box (its stdin is closed, then
//! it is killed if still running).

use super::answer::{Answer, AnswerLine};
use super::approver::Approver;
use super::error::ApprovalError;
use super::pending::PendingQueue;
use super::request::ApprovalRequest;
use airlock_policy::ApprovalScope;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest answer line read; a longer one is refused (and the rest of it skipped).
const MAX_LINE: usize = 64 * 1024;
/// How long the program has to exit after its stdin is closed before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// A request line for the writer thread, with the request's id (refused if it cannot be
/// written).
type RequestLine = (u64, Vec<u8>);

/// A running approver program.
pub struct ProgramApprover {
    name: String,
    /// Lines for the writer thread (writing never blocks the proxy's event loop); dropped to
    /// close the program's stdin.
    lines: Mutex<Option<std::sync::mpsc::Sender<RequestLine>>>,
    child: Mutex<Child>,
    pending: Arc<PendingQueue>,
    /// Cleared when the program closes its stdout (it exited): later requests are refused at
    /// once instead of waiting for their deadline.
    answering: Arc<AtomicBool>,
}

impl ProgramApprover {
    /// Starts `command` (with `sh -c`); its answers go to `pending`.
    pub fn spawn(
        command: &str,
        pending: Arc<PendingQueue>,
    ) -> Result<Arc<ProgramApprover>, ApprovalError> {
        let spawn_err = |source| ApprovalError::Spawn {
            command: command.to_string(),
            source,
        };
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(spawn_err)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(spawn_err(std::io::Error::other("its pipes were not made")));
        };
        let name = format!("program: {command}");
        let (tx, rx) = std::sync::mpsc::channel::<RequestLine>();
        let writer_pending = pending.clone();
        let writer_name = name.clone();
        std::thread::Builder::new()
            .name("airlock-approver-in".into())
            .spawn(move || write_requests(stdin, &rx, &writer_pending, &writer_name))
            .map_err(spawn_err)?;
        let reader_pending = pending.clone();
        let reader_name = name.clone();
        let answering = Arc::new(AtomicBool::new(true));
        let reader_answering = answering.clone();
        std::thread::Builder::new()
            .name("airlock-approver".into())
            .spawn(move || {
                read_answers(stdout, &reader_pending, &reader_name);
                // Cleared before the waiting requests are refused: a request asked after this
                // sees it (see `ask`), one asked before is refused here.
                reader_answering.store(false, Ordering::SeqCst);
                reader_pending.deny_all(&format!("{reader_name} (exited)"));
            })
            .map_err(spawn_err)?;
        Ok(Arc::new(ProgramApprover {
            name,
            lines: Mutex::new(Some(tx)),
            child: Mutex::new(child),
            pending,
            answering,
        }))
    }
}

/// Writes request lines until the approver is dropped; a request that cannot be written is
/// refused.
fn write_requests(
    mut stdin: ChildStdin,
    lines: &std::sync::mpsc::Receiver<RequestLine>,
    pending: &PendingQueue,
    by: &str,
) {
    while let Ok((id, line)) = lines.recv() {
        if stdin.write_all(&line).and_then(|_| stdin.flush()).is_err() {
            let _ = pending.answer(id, Answer::deny(format!("{by} (not reading)")));
        }
    }
}

/// Reads answer lines until the program closes its stdout.
fn read_answers(stdout: std::process::ChildStdout, pending: &PendingQueue, by: &str) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match std::io::Read::by_ref(&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE {
            eprintln!(
                "airlock: the approver wrote a line longer than {MAX_LINE} bytes; it was ignored"
            );
            // Skip to the end of that line.
            let mut rest = Vec::new();
            if reader.read_until(b'\n', &mut rest).is_err() {
                break;
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        if let Err(e) = apply_line(&text, pending, by) {
            eprintln!("airlock: approver: {e}");
        }
    }
}

/// Applies one answer line; a line naming a request but unusable refuses that request.
fn apply_line(text: &str, pending: &PendingQueue, by: &str) -> Result<(), ApprovalError> {
    let parsed = AnswerLine::parse(text).and_then(|line| {
        if line.scope == ApprovalScope::Save {
            return Err(ApprovalError::SaveUnsupported);
        }
        let id = line.id;
        line.into_answer(by).map(|a| (id, a))
    });
    match parsed {
        Ok((id, answer)) => pending.answer(id, answer),
        Err(e) => {
            let id = serde_json::from_str::<serde_json::Value>(text.trim())
                .ok()
                .and_then(|v| v.get("id").and_then(|i| i.as_u64()));
            if let Some(id) = id {
                let _ = pending.answer(id, Answer::deny(by));
            }
            Err(e)
        }
    }
}

impl Approver for ProgramApprover {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn ask(&self, request: &ApprovalRequest) {
        if !self.answering.load(Ordering::SeqCst) {
            let _ = self
                .pending
                .answer(request.id, Answer::deny(format!("{} (exited)", self.name)));
            return;
        }
        let Ok(mut line) = serde_json::to_vec(request) else {
            let _ = self.pending.answer(request.id, Answer::deny(&self.name));
            return;
        };
        line.push(b'\n');
        let sent = self
            .lines
            .lock()
            .ok()
            .and_then(|l| l.as_ref().map(|tx| tx.send((request.id, line)).is_ok()));
        if sent != Some(true) {
            let _ = self.pending.answer(
                request.id,
                Answer::deny(format!("{} (not running)", self.name)),
            );
        }
    }
}

impl Drop for ProgramApprover {
    fn drop(&mut self) {
        // The writer thread ends, closing the program's stdin.
        if let Ok(mut l) = self.lines.lock() {
            l.take();
        }
        let Ok(mut child) = self.child.lock() else {
            return;
        };
        let until = Instant::now() + EXIT_GRACE;
        while Instant::now() < until {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // It is our own child: killed by its handle (its pid), then reaped.
        let _ = child.kill();
        let _ = child.wait();
    }
}
