use super::*;

#[test]
fn ok_and_error_round_trip() {
    let r = Reply::ok(
        4,
        &ExecReply {
            pid: 10,
            stdout: 1,
            stderr: Some(3),
            stdin: None,
        },
    );
    let body = r.encode().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"id":4,"ok":{"pid":10,"stdout":1,"stderr":3}})
    );
    let back = Reply::decode(&body).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.body::<ExecReply>().unwrap().pid, 10);
    assert!(back.body::<WatchReply>().is_err());

    let e = Reply::error(5, ErrorCode::NotFound, "no such file");
    let body = e.encode().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&body),
        r#"{"id":5,"error":{"code":"not_found","message":"no such file"}}"#
    );
    assert_eq!(Reply::decode(&body).unwrap(), e);
    assert_eq!(e.body::<Empty>().unwrap_err().code, ErrorCode::NotFound);
}

#[test]
fn malformed_replies() {
    let bad: &[&[u8]] = &[
        b"",
        br#"{"id":1}"#,
        br#"{"id":1,"ok":{},"error":{"code":"io","message":""}}"#,
        br#"{"id":1,"ok":null}"#,
        br#"{"id":1,"ok":{},"x":1}"#,
        br#"{"id":1,"error":{"code":"io"}}"#,
        br#"{"ok":{}}"#,
    ];
    for body in bad {
        assert!(
            Reply::decode(body).is_err(),
            "{:?}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn unknown_error_code_from_newer_peer() {
    let r = Reply::decode(br#"{"id":1,"error":{"code":"quota","message":"m"}}"#).unwrap();
    assert_eq!(r.result.unwrap_err().code, ErrorCode::Other);
}

#[test]
fn events_round_trip() {
    let events = vec![
        Event::Exit {
            pid: 3,
            code: Some(0),
            signal: None,
            timed_out: false,
        },
        Event::Exit {
            pid: 3,
            code: None,
            signal: Some(9),
            timed_out: true,
        },
        Event::Fs {
            watch: 1,
            kind: FsEventKind::Rename,
            path: "/b".into(),
            from: Some("/a".into()),
        },
        Event::Fs {
            watch: 1,
            kind: FsEventKind::Create,
            path: "/b".into(),
            from: None,
        },
        Event::Error {
            code: ErrorCode::UnknownChannel,
            message: "m".into(),
            channel: Some(8),
        },
    ];
    for e in events {
        let body = serde_json::to_vec(&e).unwrap();
        assert_eq!(Event::decode(&body).unwrap(), e);
    }
    assert!(Event::decode(br#"{"event":"exit","pid":1}"#).is_err());
    assert!(Event::decode(br#"{"event":"boom"}"#).is_err());
    assert!(
        Event::decode(br#"{"event":"fs","watch":1,"kind":"write","path":"/a","x":0}"#).is_err()
    );
}

#[test]
fn entries_and_lists() {
    let e = Entry {
        path: "/a/b".into(),
        name: "b".into(),
        kind: EntryKind::Symlink,
        size: 3,
        mode: 0o777,
        mtime: 1,
        uid: 1000,
        gid: 1000,
        target: Some("c".into()),
        xattrs: Default::default(),
    };
    let r = Reply::ok(
        1,
        &ListDirReply {
            entries: vec![e.clone()],
        },
    );
    let back = Reply::decode(&r.encode().unwrap()).unwrap();
    assert_eq!(back.body::<ListDirReply>().unwrap().entries, vec![e]);
    let p = ProcessList {
        processes: vec![ProcessInfo {
            pid: 2,
            tag: None,
            argv: vec!["x".into()],
            running: true,
        }],
    };
    assert_eq!(Reply::ok(1, &p).body::<ProcessList>().unwrap(), p);
}

#[test]
fn hello_checks() {
    use crate::{Hello, HelloError, Role, PROTOCOL_VERSION};
    let ours = serde_json::to_vec(&Hello::new(Role::Host)).unwrap();
    assert!(Hello::accept(&ours, Role::Host).is_ok());
    assert_eq!(
        Hello::accept(&ours, Role::Agent),
        Err(HelloError::WrongRole {
            expected: Role::Agent,
            theirs: Role::Host
        })
    );
    assert_eq!(
        Hello::accept(br#"{"version":2,"role":"agent"}"#, Role::Agent),
        Err(HelloError::VersionMismatch {
            ours: PROTOCOL_VERSION,
            theirs: 2
        })
    );
    assert!(matches!(
        Hello::accept(b"{}", Role::Agent),
        Err(HelloError::Malformed(_))
    ));
    assert!(matches!(
        Hello::accept(br#"{"version":1,"role":"agent","x":1}"#, Role::Agent),
        Err(HelloError::Malformed(_))
    ));
}
