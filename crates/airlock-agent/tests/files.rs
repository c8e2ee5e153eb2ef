//! File operations through the agent: list, stat, mkdir, rename, remove, small transfers and
//! watches.
#![allow(clippy::unwrap_used)]

mod support;

use airlock_protocol::{
    Empty, Entry, EntryKind, ErrorCode, Event, Frame, FrameKind, FsEventKind, ListDirReply, Op,
    ReadFileReply, WatchReply, WriteFileReply,
};
use support::{scratch, start};

#[test]
fn list_stat_mkdir_rename_remove() {
    let dir = scratch("ops");
    let d = dir.display().to_string();
    let mut a = start();
    let c = &mut a.client;
    c.call(Op::MakeDir {
        path: format!("{d}/a/b/c"),
        parents: true,
    })
    .body::<Empty>()
    .unwrap();
    let err = c
        .call(Op::MakeDir {
            path: format!("{d}/a"),
            parents: false,
        })
        .body::<Empty>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Exists);
    std::fs::write(dir.join("a/file"), b"12345").unwrap();

    let l: ListDirReply = c
        .call(Op::ListDir {
            path: d.clone(),
            depth: 1,
        })
        .body()
        .unwrap();
    assert_eq!(l.entries.len(), 1);
    let l: ListDirReply = c
        .call(Op::ListDir {
            path: d.clone(),
            depth: 2,
        })
        .body()
        .unwrap();
    let rel: Vec<String> = l
        .entries
        .iter()
        .map(|e| e.path[d.len()..].to_string())
        .collect();
    assert_eq!(rel, vec!["/a", "/a/b", "/a/file"]);
    let l: ListDirReply = c
        .call(Op::ListDir {
            path: d.clone(),
            depth: 32,
        })
        .body()
        .unwrap();
    assert_eq!(l.entries.len(), 4);
    let err = c
        .call(Op::ListDir {
            path: d.clone(),
            depth: 33,
        })
        .body::<ListDirReply>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Invalid);

    let s: Entry = c
        .call(Op::Stat {
            path: format!("{d}/a/file"),
        })
        .body()
        .unwrap();
    assert_eq!(
        (s.kind, s.size, s.name.as_str()),
        (EntryKind::File, 5, "file")
    );
    let err = c
        .call(Op::Stat {
            path: "relative/path".into(),
        })
        .body::<Entry>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Invalid);

    c.call(Op::Rename {
        from: format!("{d}/a/file"),
        to: format!("{d}/a/moved"),
    })
    .body::<Empty>()
    .unwrap();
    assert_eq!(
        c.call(Op::Stat {
            path: format!("{d}/a/file")
        })
        .body::<Entry>()
        .unwrap_err()
        .code,
        ErrorCode::NotFound
    );
    let err = c
        .call(Op::Remove {
            path: format!("{d}/a"),
            recursive: false,
        })
        .body::<Empty>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Exists, "non-empty directory");
    c.call(Op::Remove {
        path: format!("{d}/a"),
        recursive: true,
    })
    .body::<Empty>()
    .unwrap();
    assert!(!dir.join("a").exists());
    assert_eq!(a.finish(), 0);
}

#[test]
fn small_transfers_and_errors() {
    let dir = scratch("small");
    let d = dir.display().to_string();
    let mut a = start();
    let c = &mut a.client;
    // An empty file.
    let id = c.request(Op::WriteFile {
        path: format!("{d}/empty"),
        mode: None,
        channel: 4,
    });
    c.send(&Frame::eof(4));
    assert_eq!(c.wait_reply(id).body::<WriteFileReply>().unwrap().size, 0);
    let r: ReadFileReply = c
        .call(Op::ReadFile {
            path: format!("{d}/empty"),
        })
        .body()
        .unwrap();
    assert_eq!(c.wait_for(|f| f.channel == r.channel).kind, FrameKind::Eof);
    // Upload into a missing directory: an error reply; its streamed data is swallowed.
    let id = c.request(Op::WriteFile {
        path: format!("{d}/missing/x"),
        mode: None,
        channel: 6,
    });
    c.send(&Frame::data(6, b"lost".to_vec()).unwrap());
    c.send(&Frame::eof(6));
    assert_eq!(
        c.wait_reply(id).body::<WriteFileReply>().unwrap_err().code,
        ErrorCode::NotFound
    );
    c.call(Op::Ping).body::<Empty>().unwrap();
    // Reading a directory or a missing file.
    assert_eq!(
        c.call(Op::ReadFile { path: d.clone() })
            .body::<ReadFileReply>()
            .unwrap_err()
            .code,
        ErrorCode::Invalid
    );
    let missing = format!("{d}/nope");
    assert_eq!(
        c.call(Op::ReadFile { path: missing })
            .body::<ReadFileReply>()
            .unwrap_err()
            .code,
        ErrorCode::NotFound
    );
    assert_eq!(a.finish(), 0);
}

fn wait_fs(c: &mut support::Client, watch: u32, kind: FsEventKind, path: &str) -> Event {
    c.wait_event(|e| matches!(e, Event::Fs { watch: w, kind: k, path: p, .. } if *w == watch && *k == kind && p == path))
}

#[test]
fn recursive_watch_sees_changes_in_new_subdirectories() {
    let dir = scratch("watch");
    let d = dir.display().to_string();
    let mut a = start();
    let c = &mut a.client;
    let w: WatchReply = c
        .call(Op::Watch {
            path: d.clone(),
            recursive: true,
        })
        .body()
        .unwrap();
    let sub = format!("{d}/sub");
    c.call(Op::MakeDir {
        path: sub.clone(),
        parents: false,
    })
    .body::<Empty>()
    .unwrap();
    wait_fs(c, w.watch, FsEventKind::Create, &sub);
    // The new subdirectory is watched too.
    let file = format!("{sub}/f.txt");
    let id = c.request(Op::WriteFile {
        path: file.clone(),
        mode: None,
        channel: 2,
    });
    c.send(&Frame::data(2, b"data".to_vec()).unwrap());
    c.send(&Frame::eof(2));
    c.wait_reply(id).body::<WriteFileReply>().unwrap();
    wait_fs(c, w.watch, FsEventKind::Create, &file);
    wait_fs(c, w.watch, FsEventKind::Write, &file);
    let moved = format!("{sub}/g.txt");
    c.call(Op::Rename {
        from: file.clone(),
        to: moved.clone(),
    })
    .body::<Empty>()
    .unwrap();
    let e = wait_fs(c, w.watch, FsEventKind::Rename, &moved);
    assert!(matches!(e, Event::Fs { from: Some(f), .. } if f == file));
    c.call(Op::Remove {
        path: moved.clone(),
        recursive: false,
    })
    .body::<Empty>()
    .unwrap();
    wait_fs(c, w.watch, FsEventKind::Remove, &moved);

    c.call(Op::Unwatch { watch: w.watch })
        .body::<Empty>()
        .unwrap();
    assert_eq!(
        c.call(Op::Unwatch { watch: w.watch })
            .body::<Empty>()
            .unwrap_err()
            .code,
        ErrorCode::NotFound
    );
    let missing = format!("{d}/missing");
    let err = c
        .call(Op::Watch {
            path: missing,
            recursive: false,
        })
        .body::<WatchReply>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert_eq!(a.finish(), 0);
}

/// A listing whose answer would not fit in one reply frame gets an error reply naming the limit
/// (it used to be dropped, and the caller waited until its own timeout).
#[test]
fn a_listing_too_large_for_one_reply_is_refused_not_dropped() {
    let dir = scratch("biglist");
    let long = "n".repeat(150);
    for i in 0..5000 {
        std::fs::write(dir.join(format!("{long}-{i:05}")), b"").unwrap();
    }
    let mut a = start();
    let c = &mut a.client;
    let err = c
        .call(Op::ListDir {
            path: dir.display().to_string(),
            depth: 1,
        })
        .body::<ListDirReply>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Limit, "{err:?}");
    assert!(err.message.contains("smaller depth"), "{}", err.message);
    // The connection is still good for the next request.
    let s: Entry = c
        .call(Op::Stat {
            path: dir.join(format!("{long}-00001")).display().to_string(),
        })
        .body()
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(s.kind, EntryKind::File);
}
