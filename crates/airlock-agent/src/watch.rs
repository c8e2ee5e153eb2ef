//! File-system watches on inotify. A recursive watch covers every directory below its root,
//! including directories created (or moved in) later; entries found in a new directory are
//! reported as created, since they may predate its watch.

use crate::files::{absolute, FileError};
use crate::sys::{self, cvt};
use airlock_protocol::{Event, FsEventKind};
use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Most directories one recursive watch covers.
pub const MAX_WATCH_DIRS: usize = 8192;

const MASK: u32 = libc::IN_CREATE
    | libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DONT_FOLLOW
    | libc::IN_EXCL_UNLINK;

struct WatchSpec {
    recursive: bool,
    wds: Vec<i32>,
}

pub(crate) struct Watcher {
    fd: OwnedFd,
    /// Kernel watch descriptor → (protocol watch id, directory).
    wds: HashMap<i32, Vec<(u32, PathBuf)>>,
    watches: HashMap<u32, WatchSpec>,
    next_id: u32,
    buf: Vec<u8>,
}

impl Watcher {
    pub(crate) fn new() -> io::Result<Watcher> {
        // SAFETY: inotify_init1 takes flags and returns a new fd or -1.
        let fd = cvt(unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) })?;
        // SAFETY: fd was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Watcher {
            fd,
            wds: HashMap::new(),
            watches: HashMap::new(),
            next_id: 1,
            buf: vec![0; 64 * 1024],
        })
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Starts a watch; returns its id.
    pub(crate) fn add(&mut self, path: &str, recursive: bool) -> Result<u32, FileError> {
        let root = absolute(path)?.to_path_buf();
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.watches.insert(
            id,
            WatchSpec {
                recursive,
                wds: Vec::new(),
            },
        );
        let mut ignored = Vec::new();
        if let Err(e) = self.add_tree(id, &root, recursive, true, &mut ignored) {
            self.remove(id);
            return Err(e);
        }
        Ok(id)
    }

    /// Ends a watch; `false` if there is none with this id.
    pub(crate) fn remove(&mut self, id: u32) -> bool {
        let Some(spec) = self.watches.remove(&id) else {
            return false;
        };
        for wd in spec.wds {
            if let Some(users) = self.wds.get_mut(&wd) {
                users.retain(|(w, _)| *w != id);
                if users.is_empty() {
                    self.wds.remove(&wd);
                    // SAFETY: inotify_rm_watch with integer arguments.
                    unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd) };
                }
            }
        }
        true
    }

    fn add_one(&mut self, id: u32, dir: &Path) -> Result<(), FileError> {
        let wrap = |source| FileError::Io {
            op: "watch",
            path: dir.display().to_string(),
            source,
        };
        let c = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| wrap(io::ErrorKind::InvalidInput.into()))?;
        // SAFETY: c is a NUL-terminated path.
        let wd = cvt(unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), MASK) })
            .map_err(wrap)?;
        let users = self.wds.entry(wd).or_default();
        users.retain(|(w, _)| *w != id);
        users.push((id, dir.to_path_buf()));
        if let Some(spec) = self.watches.get_mut(&id) {
            if !spec.wds.contains(&wd) {
                spec.wds.push(wd);
            }
        }
        Ok(())
    }

    /// Watches `dir` and (if recursive) the directories below it. Entries found below are
    /// pushed to `found` (as created) unless this is the initial watch.
    fn add_tree(
        &mut self,
        id: u32,
        dir: &Path,
        recursive: bool,
        initial: bool,
        found: &mut Vec<PathBuf>,
    ) -> Result<(), FileError> {
        self.add_one(id, dir)?;
        if !recursive {
            return Ok(());
        }
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&d) else {
                continue;
            };
            for item in read.flatten() {
                let p = item.path();
                if !initial {
                    found.push(p.clone());
                }
                if item.file_type().is_ok_and(|t| t.is_dir()) {
                    let count = self.watches.get(&id).map_or(0, |s| s.wds.len());
                    if count >= MAX_WATCH_DIRS {
                        return Err(FileError::Io {
                            op: "watch",
                            path: p.display().to_string(),
                            source: io::Error::from_raw_os_error(libc::ENOSPC),
                        });
                    }
                    // A directory that vanished in between is not an error.
                    let _ = self.add_one(id, &p);
                    stack.push(p);
                }
            }
        }
        Ok(())
    }

    /// Reads every pending kernel event and turns it into protocol events.
    pub(crate) fn read_events(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        let mut moved_from: HashMap<u32, (u32, PathBuf)> = HashMap::new();
        loop {
            let n = match sys::read(&self.fd, &mut self.buf) {
                Ok(n) if n > 0 => n,
                _ => break,
            };
            let raw: Vec<RawEvent> = parse(self.buf.get(..n).unwrap_or_default());
            for ev in raw {
                self.handle(ev, &mut out, &mut moved_from);
            }
        }
        for (_, (watch, path)) in moved_from {
            out.push(fs_event(watch, FsEventKind::Remove, &path, None));
        }
        out
    }

    fn handle(
        &mut self,
        ev: RawEvent,
        out: &mut Vec<Event>,
        moved_from: &mut HashMap<u32, (u32, PathBuf)>,
    ) {
        if ev.mask & libc::IN_Q_OVERFLOW != 0 {
            for id in self.watches.keys() {
                out.push(fs_event(*id, FsEventKind::Overflow, Path::new(""), None));
            }
            return;
        }
        if ev.mask & libc::IN_IGNORED != 0 {
            self.wds.remove(&ev.wd);
            return;
        }
        let users = self.wds.get(&ev.wd).cloned().unwrap_or_default();
        let is_dir = ev.mask & libc::IN_ISDIR != 0;
        for (id, dir) in users {
            let path = if ev.name.is_empty() {
                dir.clone()
            } else {
                dir.join(&ev.name)
            };
            let recursive = self.watches.get(&id).is_some_and(|s| s.recursive);
            if ev.mask & libc::IN_MOVED_FROM != 0 {
                moved_from.insert(ev.cookie, (id, path));
                continue;
            }
            let (kind, from) = if ev.mask & libc::IN_CREATE != 0 {
                (FsEventKind::Create, None)
            } else if ev.mask & libc::IN_MODIFY != 0 {
                (FsEventKind::Write, None)
            } else if ev.mask & libc::IN_ATTRIB != 0 {
                (FsEventKind::Chmod, None)
            } else if ev.mask & libc::IN_DELETE != 0 {
                (FsEventKind::Remove, None)
            } else if ev.mask & libc::IN_MOVED_TO != 0 {
                match moved_from.remove(&ev.cookie) {
                    Some((w, old)) if w == id => {
                        if is_dir {
                            self.rebase(id, &old, &path);
                        }
                        (FsEventKind::Rename, Some(old))
                    }
                    _ => (FsEventKind::Create, None),
                }
            } else {
                continue;
            };
            out.push(fs_event(id, kind, &path, from.as_deref()));
            let new_dir = is_dir && recursive && matches!(kind, FsEventKind::Create);
            if new_dir {
                let mut found = Vec::new();
                let _ = self.add_tree(id, &path, true, false, &mut found);
                for p in found {
                    out.push(fs_event(id, FsEventKind::Create, &p, None));
                }
            }
        }
    }

    /// A watched directory moved within the watch: its watches (and those below) follow.
    fn rebase(&mut self, id: u32, old: &Path, new: &Path) {
        for users in self.wds.values_mut() {
            for (w, dir) in users.iter_mut() {
                if *w == id {
                    if let Ok(rest) = dir.strip_prefix(old) {
                        *dir = new.join(rest);
                    }
                }
            }
        }
    }
}

fn fs_event(watch: u32, kind: FsEventKind, path: &Path, from: Option<&Path>) -> Event {
    Event::Fs {
        watch,
        kind,
        path: path.display().to_string(),
        from: from.map(|f| f.display().to_string()),
    }
}

struct RawEvent {
    wd: i32,
    mask: u32,
    cookie: u32,
    name: std::ffi::OsString,
}

/// Parses a buffer of `struct inotify_event` records.
fn parse(mut buf: &[u8]) -> Vec<RawEvent> {
    let word = |b: &[u8], at: usize| -> Option<[u8; 4]> { b.get(at..at + 4)?.try_into().ok() };
    let mut out = Vec::new();
    while buf.len() >= 16 {
        let (Some(wd), Some(mask), Some(cookie), Some(len)) =
            (word(buf, 0), word(buf, 4), word(buf, 8), word(buf, 12))
        else {
            break;
        };
        let len = u32::from_ne_bytes(len) as usize;
        let Some(name) = buf.get(16..16 + len) else {
            break;
        };
        let name = name.split(|b| *b == 0).next().unwrap_or_default();
        out.push(RawEvent {
            wd: i32::from_ne_bytes(wd),
            mask: u32::from_ne_bytes(mask),
            cookie: u32::from_ne_bytes(cookie),
            name: std::ffi::OsStr::from_bytes(name).to_os_string(),
        });
        buf = buf.get(16 + len..).unwrap_or_default();
    }
    out
}
