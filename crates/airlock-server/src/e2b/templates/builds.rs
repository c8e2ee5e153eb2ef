//! The server's template builds: each one requested (`waiting`), then run (`building`) by
//! airlock's own builder — `airlock template build` as a child process, one build at a time,
//! off the async threads — its output kept line by line as the build's logs, until it is
//! `ready` (its names and tags in the template store) or `error` (the failed step and its
//! output in the reason).

use super::names;
use crate::e2b::views::rfc3339;
use airlock_template::TemplateStore;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

/// The most log lines a build keeps (later ones are counted, not kept).
const MAX_LOG_LINES: usize = 20_000;
/// The longest log line kept, in bytes.
const MAX_LINE: usize = 8 * 1024;
/// The builds remembered; the oldest finished ones are forgotten past it.
const MAX_BUILDS: usize = 64;
/// The lines of output a failed build's reason repeats.
const REASON_LINES: usize = 40;

/// A build's state, in E2B's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Waiting,
    Building,
    Ready,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Waiting => "waiting",
            Status::Building => "building",
            Status::Ready => "ready",
            Status::Error => "error",
        }
    }
}

/// One line of a build's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub at_ms: i64,
    /// `info` or `error`.
    pub level: &'static str,
    pub message: String,
}

impl LogLine {
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({"timestamp": rfc3339(self.at_ms), "level": self.level, "message": self.message})
    }
}

/// Why a build failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub message: String,
    /// E2B's step name: `"1"`… for the request's steps, `base` for the base.
    pub step: Option<String>,
    pub lines: Vec<LogLine>,
}

#[derive(Debug)]
struct BuildState {
    status: Status,
    logs: Vec<LogLine>,
    dropped: u64,
    reason: Option<Reason>,
    triggered: bool,
}

/// One build.
#[derive(Debug)]
pub struct Build {
    pub id: String,
    /// E2B's template id: the template's name without a tag.
    pub template_id: String,
    /// The tags it assigns once built.
    pub tags: Vec<String>,
    state: Mutex<BuildState>,
}

/// A snapshot of a build for the status route.
#[derive(Debug, Clone)]
pub struct BuildView {
    pub status: Status,
    pub logs: Vec<LogLine>,
    pub reason: Option<Reason>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl Build {
    fn lock(&self) -> std::sync::MutexGuard<'_, BuildState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a log line.
    pub fn log(&self, level: &'static str, message: &str) {
        let mut s = self.lock();
        if s.logs.len() >= MAX_LOG_LINES {
            s.dropped += 1;
            return;
        }
        let mut m = message.trim_end_matches(['\n', '\r']).to_string();
        if m.len() > MAX_LINE {
            let mut cut = MAX_LINE;
            while !m.is_char_boundary(cut) {
                cut -= 1;
            }
            m.truncate(cut);
        }
        s.logs.push(LogLine {
            at_ms: now_ms(),
            level,
            message: m,
        });
    }

    /// Marks the build triggered; false when it already was.
    pub fn trigger(&self) -> bool {
        let mut s = self.lock();
        !std::mem::replace(&mut s.triggered, true)
    }

    fn set(&self, status: Status, reason: Option<Reason>) {
        let mut s = self.lock();
        s.status = status;
        s.reason = reason;
    }

    /// Fails the build with `message` (a log line too), naming `step`.
    pub fn fail(&self, message: String, step: Option<String>) {
        self.log("error", &message);
        let lines = {
            let s = self.lock();
            let from = s.logs.len().saturating_sub(REASON_LINES);
            s.logs[from..].to_vec()
        };
        self.set(
            Status::Error,
            Some(Reason {
                message,
                step,
                lines,
            }),
        );
    }

    /// The status, and the log lines from `offset` (at most `limit`).
    pub fn view(&self, offset: usize, limit: usize) -> BuildView {
        let s = self.lock();
        let from = offset.min(s.logs.len());
        let to = (from + limit).min(s.logs.len());
        BuildView {
            status: s.status,
            logs: s.logs[from..to].to_vec(),
            reason: s.reason.clone(),
        }
    }
}

/// The server's builds.
#[derive(Debug, Default)]
pub struct Builds {
    builds: Mutex<BTreeMap<String, Arc<Build>>>,
    order: Mutex<Vec<String>>,
    /// Held by the build that runs: one at a time.
    running: Arc<Mutex<()>>,
}

impl Builds {
    /// A new build of `template_id` assigning `tags`, waiting for its steps.
    pub fn add(&self, id: String, template_id: String, tags: Vec<String>) -> Arc<Build> {
        let build = Arc::new(Build {
            id: id.clone(),
            template_id,
            tags,
            state: Mutex::new(BuildState {
                status: Status::Waiting,
                logs: Vec::new(),
                dropped: 0,
                reason: None,
                triggered: false,
            }),
        });
        let mut builds = self.builds.lock().unwrap_or_else(PoisonError::into_inner);
        let mut order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        builds.insert(id.clone(), Arc::clone(&build));
        order.push(id);
        while order.len() > MAX_BUILDS {
            let finished = order.iter().position(|id| {
                builds
                    .get(id)
                    .is_none_or(|b| matches!(b.lock().status, Status::Ready | Status::Error))
            });
            let Some(i) = finished else { break };
            let old = order.remove(i);
            builds.remove(&old);
        }
        build
    }

    /// Build `id` of template `template_id`.
    pub fn get(&self, template_id: &str, id: &str) -> Option<Arc<Build>> {
        let builds = self.builds.lock().unwrap_or_else(PoisonError::into_inner);
        builds
            .get(id)
            .filter(|b| b.template_id == template_id)
            .cloned()
    }

    /// The lock a running build holds.
    pub fn runner_lock(&self) -> Arc<Mutex<()>> {
        Arc::clone(&self.running)
    }
}

/// What a build runs.
#[derive(Debug, Clone)]
pub struct BuildJob {
    pub airlock_exe: PathBuf,
    pub data_dir: PathBuf,
    /// The build's directory: `spec.toml` and `files/` (removed when it ends).
    pub dir: PathBuf,
    /// The store name the builder writes; the other tags' names follow it.
    pub first_name: String,
    pub force: bool,
    /// `startCmd` and `readyCmd`, recorded beside the template.
    pub start_cmd: Option<String>,
    pub ready_cmd: Option<String>,
    /// A stored template the names point at instead of building (no steps).
    pub stored_base: Option<String>,
}

/// Runs `job` for `build` on a thread of its own, one build at a time.
pub fn spawn(
    build: Arc<Build>,
    job: BuildJob,
    store: TemplateStore,
    lock: Arc<Mutex<()>>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("template-build".into())
        .spawn(move || {
            let _one = lock.lock().unwrap_or_else(PoisonError::into_inner);
            build.set(Status::Building, None);
            let outcome = run(&build, &job, &store);
            let _ = std::fs::remove_dir_all(&job.dir);
            match outcome {
                Ok(()) => {
                    build.log("info", "Build finished: the template is stored");
                    build.set(Status::Ready, None);
                }
                Err((message, step)) => build.fail(message, step),
            }
        })
        .map(|_| ())
}

fn run(
    build: &Build,
    job: &BuildJob,
    store: &TemplateStore,
) -> Result<(), (String, Option<String>)> {
    let names: Vec<String> = build
        .tags
        .iter()
        .map(|t| names::store_name(&build.template_id, t))
        .collect();
    let first = match &job.stored_base {
        Some(base) => {
            build.log(
                "info",
                &format!("[airlock] {} is the stored template {base}", job.first_name),
            );
            store
                .name_as(base, &job.first_name)
                .map_err(|e| (format!("the names cannot be stored: {e}"), None))?;
            job.first_name.clone()
        }
        None => {
            child_build(build, job)?;
            job.first_name.clone()
        }
    };
    for n in names.iter().filter(|n| **n != first) {
        store
            .name_as(&first, n)
            .map_err(|e| (format!("the tag {n:?} cannot be stored: {e}"), None))?;
    }
    let meta = serde_json::json!({"startCmd": job.start_cmd, "readyCmd": job.ready_cmd});
    let dir = job.data_dir.join("e2b-templates");
    let _ = std::fs::create_dir_all(&dir);
    for n in &names {
        let _ = std::fs::write(dir.join(format!("{n}.json")), meta.to_string());
    }
    Ok(())
}

/// Runs `airlock template build`, its output into the build's log; on failure, the step the
/// output last announced.
fn child_build(build: &Build, job: &BuildJob) -> Result<(), (String, Option<String>)> {
    let mut cmd = Command::new(&job.airlock_exe);
    cmd.arg("template")
        .arg("build")
        .arg("--data-dir")
        .arg(&job.data_dir)
        .arg("--name")
        .arg(&job.first_name);
    if job.force {
        cmd.arg("--force");
    }
    cmd.arg(job.dir.join("spec.toml"))
        .current_dir(&job.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The builder goes with the server: it dies when the thread that started it (this build's,
    // which waits for it) does.
    // SAFETY: the closure runs between fork and exec and only calls prctl, which is
    // async-signal-safe and allocates nothing.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| (format!("the builder could not start ({e})"), None))?;
    // Both streams' lines go into the log as they come.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let streams = [
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn Read + Send>),
    ];
    let readers: Vec<_> = streams
        .into_iter()
        .flatten()
        .map(|r| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(r).split(b'\n').map_while(Result::ok) {
                    if tx
                        .send(String::from_utf8_lossy(&line).into_owned())
                        .is_err()
                    {
                        break;
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let mut step = None;
    for line in rx {
        if let Some(n) = announced_step(&line) {
            step = Some(n);
        }
        build.log("info", &line);
    }
    for r in readers {
        let _ = r.join();
    }
    let status = child
        .wait()
        .map_err(|e| (format!("the builder could not be waited for ({e})"), None))?;
    if status.success() {
        return Ok(());
    }
    let message = match &step {
        Some(n) => format!("the build failed at step {n} ({status}); its output is in the build's logs"),
        None => format!("the build failed before its steps ran ({status}): the base could not be made; see the build's logs"),
    };
    Err((message, Some(step.unwrap_or_else(|| "base".into()))))
}

/// The step number a `[airlock] step N/M: …` line announces.
fn announced_step(line: &str) -> Option<String> {
    let rest = line.strip_prefix("[airlock] step ")?;
    let (n, _) = rest.split_once('/')?;
    n.parse::<usize>().ok().map(|n| n.to_string())
}
