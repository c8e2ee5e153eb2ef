use super::*;

fn all_ops() -> Vec<Op> {
    let mut env = BTreeMap::new();
    env.insert("PATH".to_string(), "/usr/bin:/bin".to_string());
    vec![
        Op::Exec(ExecRequest {
            argv: vec!["echo".into(), "hi".into()],
            env,
            cwd: Some("/tmp".into()),
            tty: Some(TtySize { rows: 24, cols: 80 }),
            stdin: true,
            timeout_ms: Some(1000),
            tag: Some("t".into()),
            user: ExecUser::Root,
        }),
        Op::Signal { pid: 5, signal: 15 },
        Op::Resize {
            pid: 5,
            rows: 10,
            cols: 20,
        },
        Op::ListProcesses,
        Op::Attach {
            pid: 5,
            replay: true,
        },
        Op::ReadFile { path: "/a".into() },
        Op::WriteFile {
            path: "/a".into(),
            mode: Some(0o600),
            channel: 2,
        },
        Op::ListDir {
            path: "/".into(),
            depth: 3,
        },
        Op::Stat { path: "/a".into() },
        Op::MakeDir {
            path: "/a/b".into(),
            parents: true,
        },
        Op::Rename {
            from: "/a".into(),
            to: "/b".into(),
        },
        Op::Remove {
            path: "/a".into(),
            recursive: true,
        },
        Op::Watch {
            path: "/a".into(),
            recursive: true,
        },
        Op::Unwatch { watch: 3 },
        Op::SetXattrs {
            path: "/a".into(),
            xattrs: BTreeMap::from([("user.e2b.k".to_string(), "v".to_string())]),
        },
        Op::Ping,
        Op::Tunnel { port: 8000 },
    ]
}

#[test]
fn every_op_round_trips() {
    for (i, op) in all_ops().into_iter().enumerate() {
        let req = Request {
            id: i as u64 + 1,
            op,
        };
        let body = req.encode().unwrap();
        assert_eq!(
            Request::decode(&body).unwrap(),
            req,
            "{}",
            String::from_utf8_lossy(&body)
        );
    }
}

#[test]
fn flat_wire_shape_and_defaults() {
    let r = Request::decode(br#"{"id":7,"op":"exec","argv":["ls"]}"#).unwrap();
    assert_eq!(r.id, 7);
    let Op::Exec(e) = r.op else {
        panic!("not exec")
    };
    assert!(e.env.is_empty() && e.cwd.is_none() && e.tty.is_none() && !e.stdin && e.tag.is_none());
    assert_eq!(e.user, ExecUser::User);
    // The box user is the default and is not written (an older agent takes the request); root
    // is written, and nothing else is a user.
    let plain = Request {
        id: 1,
        op: Op::Exec(e.clone()),
    };
    let body = String::from_utf8(plain.encode().unwrap()).unwrap();
    assert!(!body.contains("user"), "{body}");
    let root = Request::decode(br#"{"id":7,"op":"exec","argv":["id"],"user":"root"}"#).unwrap();
    assert!(matches!(
        root.op,
        Op::Exec(ExecRequest {
            user: ExecUser::Root,
            ..
        })
    ));
    assert!(Request::decode(br#"{"id":7,"op":"exec","argv":["id"],"user":"admin"}"#).is_err());
    let r = Request::decode(br#"{"op":"list_dir","path":"/","id":1}"#).unwrap();
    assert_eq!(
        r.op,
        Op::ListDir {
            path: "/".into(),
            depth: 1
        }
    );
    let body = String::from_utf8(
        Request {
            id: 3,
            op: Op::Ping,
        }
        .encode()
        .unwrap(),
    )
    .unwrap();
    assert!(
        body.contains(r#""op":"ping""#) && body.contains(r#""id":3"#),
        "{body}"
    );
}

#[test]
fn malformed_bodies_are_typed_errors() {
    let bad: &[&[u8]] = &[
        b"",
        b"not json",
        b"[]",
        b"null",
        b"{}",
        br#"{"op":"ping"}"#,
        br#"{"id":-1,"op":"ping"}"#,
        br#"{"id":"1","op":"ping"}"#,
        br#"{"id":1}"#,
        br#"{"id":1,"op":"launch_missiles"}"#,
        br#"{"id":1,"op":"ping","extra":true}"#,
        br#"{"id":1,"op":"exec","argv":["ls"],"unknown":1}"#,
        br#"{"id":1,"op":"exec"}"#,
        br#"{"id":1,"op":"signal","pid":1}"#,
        br#"{"id":1,"op":"exec","argv":["ls"],"tty":{"rows":1,"cols":2,"x":3}}"#,
        br#"{"id":1,"op":"resize","pid":1,"rows":70000,"cols":1}"#,
        b"\xff\xfe",
    ];
    for body in bad {
        match Request::decode(body) {
            Err(MessageError::Malformed(_)) => {}
            other => panic!("{:?} gave {other:?}", String::from_utf8_lossy(body)),
        }
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let mut body = br#"{"id":1,"op":"exec","argv":["x"],"tag":"#.to_vec();
    body.extend(std::iter::repeat_n(b'[', 100_000));
    assert!(matches!(
        Request::decode(&body),
        Err(MessageError::Malformed(_))
    ));
}

#[test]
fn bounds_are_invalid_with_id() {
    let bad: &[&[u8]] = &[
        br#"{"id":9,"op":"exec","argv":[]}"#,
        br#"{"id":9,"op":"exec","argv":[""]}"#,
        br#"{"id":9,"op":"exec","argv":["a\u0000b"]}"#,
        br#"{"id":9,"op":"exec","argv":["ls"],"env":{"A=B":"c"}}"#,
        br#"{"id":9,"op":"exec","argv":["ls"],"env":{"":"c"}}"#,
        br#"{"id":9,"op":"exec","argv":["ls"],"tty":{"rows":0,"cols":80}}"#,
        br#"{"id":9,"op":"exec","argv":["ls"],"cwd":""}"#,
        br#"{"id":9,"op":"list_dir","path":"/","depth":0}"#,
        br#"{"id":9,"op":"list_dir","path":"/","depth":33}"#,
        br#"{"id":9,"op":"write_file","path":"/a","channel":3}"#,
        br#"{"id":9,"op":"write_file","path":"/a","channel":0}"#,
        br#"{"id":9,"op":"write_file","path":"/a","channel":2,"mode":65535}"#,
        br#"{"id":9,"op":"read_file","path":""}"#,
        br#"{"id":9,"op":"rename","from":"/a","to":""}"#,
        br#"{"id":9,"op":"signal","pid":0,"signal":9}"#,
        br#"{"id":9,"op":"signal","pid":1,"signal":99}"#,
        br#"{"id":9,"op":"attach","pid":-4}"#,
        br#"{"id":9,"op":"tunnel","port":0}"#,
        // Only the `user.` namespace, with a name after it: never trusted.* or security.*.
        br#"{"id":9,"op":"set_xattrs","path":"/a","xattrs":{"security.capability":"x"}}"#,
        br#"{"id":9,"op":"set_xattrs","path":"/a","xattrs":{"trusted.k":"x"}}"#,
        br#"{"id":9,"op":"set_xattrs","path":"/a","xattrs":{"user.":"x"}}"#,
        br#"{"id":9,"op":"set_xattrs","path":"/a","xattrs":{"user.k\u0000":"x"}}"#,
        br#"{"id":9,"op":"set_xattrs","path":"","xattrs":{}}"#,
    ];
    for body in bad {
        let err = Request::decode(body).unwrap_err();
        assert_eq!(
            err.id(),
            Some(9),
            "{:?}: {err}",
            String::from_utf8_lossy(body)
        );
    }
    assert!(Request::decode(br#"{"id":9,"op":"list_dir","path":"/","depth":32}"#).is_ok());
    let too_many: BTreeMap<String, String> = (0..=MAX_XATTRS)
        .map(|i| (format!("user.k{i}"), String::new()))
        .collect();
    assert!(check_xattrs(&too_many).is_err());
    let long = BTreeMap::from([("user.k".to_string(), "v".repeat(MAX_XATTR_VALUE + 1))]);
    assert!(check_xattrs(&long).is_err());
}
