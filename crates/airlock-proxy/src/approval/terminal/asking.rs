//! The terminal approver and its asking thread: requests are queued and asked one at a time;
//! one that was withdrawn (its deadline passed) while it waited is skipped.

use super::floor::TerminalFloor;
use super::prompt::{key, outcome, question, Key};
use super::tty::{until, Tty, Waited};
use crate::approval::answer::{Answer, Verdict};
use crate::approval::approver::Approver;
use crate::approval::askable::GrantTarget;
use crate::approval::error::ApprovalError;
use crate::approval::pending::PendingQueue;
use crate::approval::request::ApprovalRequest;
use airlock_policy::{save_grant, ApprovalScope, GrantList};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Who the audit log says answered.
const BY: &str = "terminal";

/// Asks on airlock's controlling terminal. [`TerminalApprover::close`] (or drop) takes down a
/// question that is up (refusing it), refuses every request still waiting and later ones, and
/// leaves the terminal in the mode it found it.
pub struct TerminalApprover {
    floor: Arc<TerminalFloor>,
    pending: Arc<PendingQueue>,
    queue: Mutex<Option<Sender<ApprovalRequest>>>,
    stop_w: OwnedFd,
    /// The asking thread's side until the first request starts it (a native box must be
    /// started from a single-threaded process, so no thread exists before it is asked).
    idle: Mutex<Option<(Asking, Receiver<ApprovalRequest>)>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl TerminalApprover {
    /// Opens airlock's controlling terminal; the asking thread starts with the first request.
    /// `save_to`: the policy file an "allow and save" answer writes into (`None`: that answer
    /// is refused).
    pub fn open(
        pending: Arc<PendingQueue>,
        save_to: Option<PathBuf>,
    ) -> Result<Arc<TerminalApprover>, ApprovalError> {
        let tty = Tty::open().map_err(|source| ApprovalError::NoTerminal { source })?;
        let io = |source| ApprovalError::Terminal { source };
        let floor = Arc::new(TerminalFloor::new().map_err(io)?);
        let mut fds = [0; 2];
        // SAFETY: a valid array of two descriptors for pipe2.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
            return Err(io(std::io::Error::last_os_error()));
        }
        // SAFETY: pipe2 just made these two descriptors, owned by nothing else.
        let (stop_r, stop_w) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let (tx, rx) = channel();
        let asking = Asking {
            tty,
            stop: stop_r,
            floor: floor.clone(),
            pending: pending.clone(),
            save_to,
        };
        Ok(Arc::new(TerminalApprover {
            floor,
            pending,
            queue: Mutex::new(Some(tx)),
            stop_w,
            idle: Mutex::new(Some((asking, rx))),
            thread: Mutex::new(None),
        }))
    }

    /// Starts the asking thread if it is not running; `false` if it cannot be started.
    fn start(&self) -> bool {
        let Some((asking, rx)) = self.idle.lock().ok().and_then(|mut i| i.take()) else {
            return true;
        };
        let started = std::thread::Builder::new()
            .name("airlock-terminal-approver".into())
            .spawn(move || asking.run(&rx));
        match (started, self.thread.lock()) {
            (Ok(handle), Ok(mut t)) => {
                *t = Some(handle);
                true
            }
            _ => false,
        }
    }

    /// The terminal's turns, for the relay of the box's own terminal or output.
    pub fn floor(&self) -> Arc<TerminalFloor> {
        self.floor.clone()
    }

    /// Stops asking: a question that is up is refused and taken down, waiting and later
    /// requests are refused. Returns once the terminal is back in the mode it was found in.
    pub fn close(&self) {
        let queue = self.queue.lock().ok().and_then(|mut q| q.take());
        if queue.is_none() {
            return;
        }
        drop(queue);
        // SAFETY: one byte from a static buffer to our own pipe.
        unsafe { libc::write(self.stop_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        if let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
        self.pending.deny_all(&format!("{BY} (airlock ended)"));
    }
}

impl Drop for TerminalApprover {
    fn drop(&mut self) {
        self.close();
    }
}

impl Approver for TerminalApprover {
    fn name(&self) -> String {
        BY.to_string()
    }

    fn ask(&self, request: &ApprovalRequest) {
        if !self.start() {
            let _ = self
                .pending
                .answer(request.id, Answer::deny(format!("{BY} (cannot ask)")));
            return;
        }
        let sent = self
            .queue
            .lock()
            .ok()
            .and_then(|q| q.as_ref().map(|tx| tx.send(request.clone()).is_ok()));
        if sent != Some(true) {
            let _ = self
                .pending
                .answer(request.id, Answer::deny(format!("{BY} (airlock ended)")));
        }
    }
}

/// The asking thread's side.
struct Asking {
    tty: Tty,
    stop: OwnedFd,
    floor: Arc<TerminalFloor>,
    pending: Arc<PendingQueue>,
    save_to: Option<PathBuf>,
}

/// How one question ended.
enum Asked {
    Answered(Answer),
    /// Nobody answered in time (the gate refuses it at the same deadline).
    NoAnswer,
    /// airlock is ending: refused now, and no more questions.
    Stopped,
}

impl Asking {
    fn run(&self, queue: &Receiver<ApprovalRequest>) {
        while let Ok(request) = queue.recv() {
            // Withdrawn at its deadline while earlier questions were up: not asked.
            if !self.pending.list().iter().any(|r| r.id == request.id) {
                continue;
            }
            let asked = {
                let _turn = self.floor.question();
                self.ask(&request)
            };
            match asked {
                Asked::Answered(answer) => {
                    let _ = self.pending.answer(request.id, answer);
                }
                Asked::NoAnswer => {}
                Asked::Stopped => return,
            }
        }
    }

    /// Shows the question and waits for a key that answers it.
    fn ask(&self, request: &ApprovalRequest) -> Asked {
        let (deadline, seconds) = until(request.deadline_ms);
        self.tty.discard_input();
        let _mode = self.tty.one_key_mode();
        self.tty
            .write(&question(request, self.save_to.as_deref(), seconds));
        loop {
            let bytes = match self.tty.wait(&self.stop, deadline) {
                Waited::Bytes(b) => b,
                Waited::Deadline => {
                    self.tty
                        .write(&outcome(&format!("no answer within {seconds} s: refused")));
                    return Asked::NoAnswer;
                }
                Waited::Stopped => {
                    self.tty.write(&outcome("airlock is ending: refused"));
                    return Asked::Stopped;
                }
                Waited::Gone => return Asked::Answered(Answer::deny(format!("{BY} (gone)"))),
            };
            for b in bytes {
                let scope = match key(b) {
                    Key::Other => continue,
                    Key::Deny => {
                        self.tty.write(&outcome("denied"));
                        return Asked::Answered(Answer::deny(BY));
                    }
                    Key::Once => ApprovalScope::Once,
                    Key::Run => ApprovalScope::Run,
                    Key::Save => match self.save(request) {
                        Ok(()) => ApprovalScope::Save,
                        Err(why) => {
                            self.tty.write("\r\n");
                            self.tty.write(&outcome(&format!(
                                "[airlock]   cannot save: {why}; press o, r or d"
                            )));
                            continue;
                        }
                    },
                };
                self.tty.write(&outcome(match scope {
                    ApprovalScope::Once => "allowed once",
                    ApprovalScope::Run => "allowed for this run",
                    ApprovalScope::Save => "allowed, and saved to the policy file",
                }));
                return Asked::Answered(Answer {
                    verdict: Verdict::Allow,
                    scope,
                    ttl: None,
                    byte_budget: None,
                    grant: None,
                    by: BY.to_string(),
                });
            }
        }
    }

    /// Writes the request's grant into the policy file.
    fn save(&self, request: &ApprovalRequest) -> Result<(), String> {
        let Some(path) = self.save_to.as_deref() else {
            return Err("there is no policy file to save into (give --policy FILE)".into());
        };
        save_into(path, &request.grant)
    }
}

/// Adds `grant` to the list of the policy file at `path` that it belongs in.
fn save_into(path: &Path, grant: &str) -> Result<(), String> {
    let list = match GrantTarget::parse(grant).map_err(|e| e.to_string())? {
        GrantTarget::Host { .. } => GrantList::AllowDomain,
        GrantTarget::Range(_) => GrantList::AllowIp,
    };
    save_grant(path, list, grant)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
