//! A hostile host: broken framing closes the connection, everything else is answered with an
//! error and the agent keeps serving. The agent process never dies by a signal (no panic/abort).
#![allow(clippy::unwrap_used)]

mod support;

use airlock_protocol::{
    Empty, ErrorCode, Event, Frame, FrameKind, Hello, Op, Reply, Role, CONTROL_CHANNEL,
    MAX_FRAME_LEN,
};
use support::{serve_err, spawn_raw, start, wait, Client};

fn raw_frame(kind: u8, channel: u32, body: &[u8]) -> Vec<u8> {
    let mut v = u32::try_from(body.len() + 5)
        .unwrap()
        .to_be_bytes()
        .to_vec();
    v.push(kind);
    v.extend_from_slice(&channel.to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// Reads until the agent closes; returns the error events it sent.
fn drain_to_close(c: &mut Client) -> Vec<Event> {
    let mut events = Vec::new();
    while let Some(f) = c.recv() {
        if f.kind == FrameKind::Event {
            events.push(Event::decode(&f.body).unwrap());
        }
    }
    events
}

fn assert_clean_error_exit(status: i32) {
    assert!(
        libc::WIFEXITED(status),
        "agent died by a signal: {status:#x}"
    );
    assert_eq!(libc::WEXITSTATUS(status), serve_err());
}

#[test]
fn oversize_length_closes_the_connection() {
    let mut a = start();
    let len = u32::try_from(MAX_FRAME_LEN + 1).unwrap();
    let mut bytes = len.to_be_bytes().to_vec();
    bytes.extend_from_slice(&[4, 0, 0, 0, 2]);
    a.client.send_raw(&bytes).unwrap();
    let events = drain_to_close(&mut a.client);
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                code: ErrorCode::Invalid,
                ..
            })
        ),
        "{events:?}"
    );
    let pid = a.pid;
    std::mem::forget(a);
    assert_clean_error_exit(wait(pid));
}

#[test]
fn unknown_kind_and_wrong_channel_close_the_connection() {
    for bytes in [
        raw_frame(9, 0, b"{}"),
        raw_frame(4, CONTROL_CHANNEL, b"x"),
        raw_frame(2, 7, b"{}"),
        vec![0, 0, 0, 1, 2],
    ] {
        let mut a = start();
        a.client.send_raw(&bytes).unwrap();
        drain_to_close(&mut a.client);
        let pid = a.pid;
        std::mem::forget(a);
        assert_clean_error_exit(wait(pid));
    }
}

#[test]
fn recoverable_errors_keep_the_agent_serving() {
    let mut a = start();
    let c = &mut a.client;
    // Garbage JSON, an unknown op, unknown fields: error events, then service goes on.
    for body in [
        &b"\xff\xfenot json"[..],
        br#"{"id":1,"op":"format_disk"}"#,
        br#"{"id":2,"op":"ping","x":1}"#,
        b"[[[[[[[[[[",
    ] {
        c.send_raw(&raw_frame(2, 0, body)).unwrap();
        let e = c.wait_event(|e| matches!(e, Event::Error { .. }));
        assert!(
            matches!(
                e,
                Event::Error {
                    code: ErrorCode::Invalid,
                    ..
                }
            ),
            "{e:?}"
        );
        c.call(Op::Ping).body::<Empty>().unwrap();
    }
    // Well-formed but out of bounds: an error reply to that id.
    c.send_raw(&raw_frame(2, 0, br#"{"id":77,"op":"exec","argv":[]}"#))
        .unwrap();
    assert_eq!(
        c.wait_reply(77).result.unwrap_err().code,
        ErrorCode::Invalid
    );
    // Data and Eof on channels nobody opened.
    c.send(&Frame::data(12345, b"x".to_vec()).unwrap());
    let e = c.wait_event(|e| matches!(e, Event::Error { .. }));
    assert_eq!(
        e,
        Event::Error {
            code: ErrorCode::UnknownChannel,
            message: e_msg(&e),
            channel: Some(12345)
        }
    );
    c.send(&Frame::eof(99));
    let e = c.wait_event(|e| matches!(e, Event::Error { .. }));
    assert!(matches!(
        e,
        Event::Error {
            code: ErrorCode::UnknownChannel,
            channel: Some(99),
            ..
        }
    ));
    // Frames only the agent may send, and a second hello.
    c.send(&Frame::new(FrameKind::Reply, 0, br#"{"id":1,"ok":{}}"#.to_vec()).unwrap());
    c.send(&Frame::json(FrameKind::Hello, &Hello::new(Role::Host)).unwrap());
    for _ in 0..2 {
        let e = c.wait_event(|e| matches!(e, Event::Error { .. }));
        assert!(matches!(
            e,
            Event::Error {
                code: ErrorCode::Invalid,
                ..
            }
        ));
    }
    c.call(Op::Ping).body::<Empty>().unwrap();
    assert_eq!(a.finish(), 0);
}

fn e_msg(e: &Event) -> String {
    match e {
        Event::Error { message, .. } => message.clone(),
        _ => String::new(),
    }
}

#[test]
fn ten_thousand_pipelined_requests() {
    let mut a = start();
    let mut wire = Vec::new();
    for id in 1..=10_000u64 {
        let body = if id % 10 == 0 {
            format!(r#"{{"id":{id},"op":"stat","path":"/nonexistent/{id}"}}"#)
        } else {
            format!(r#"{{"id":{id},"op":"ping"}}"#)
        };
        wire.extend(raw_frame(2, 0, body.as_bytes()));
    }
    a.client.send_raw(&wire).unwrap();
    let mut seen = 0;
    while seen < 10_000 {
        let f = a.client.recv().unwrap();
        assert_eq!(f.kind, FrameKind::Reply);
        let r = Reply::decode(&f.body).unwrap();
        seen += 1;
        assert_eq!(r.id, seen, "replies in order");
        assert_eq!(r.result.is_err(), seen % 10 == 0);
    }
    a.client.call(Op::Ping).body::<Empty>().unwrap();
    assert_eq!(a.finish(), 0);
}

#[test]
fn hello_is_required_and_versioned() {
    // Wrong version: refused with an explanation, then closed.
    let (pid, sock) = spawn_raw();
    let mut c = Client::new(sock);
    assert_eq!(c.recv().unwrap().kind, FrameKind::Hello);
    c.send(
        &Frame::new(
            FrameKind::Hello,
            0,
            br#"{"version":99,"role":"host"}"#.to_vec(),
        )
        .unwrap(),
    );
    let events = drain_to_close(&mut c);
    match events.as_slice() {
        [Event::Error {
            code: ErrorCode::Unsupported,
            message,
            ..
        }] => assert!(message.contains("99"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_clean_error_exit(wait(pid));

    // A request before the hello.
    let (pid, sock) = spawn_raw();
    let mut c = Client::new(sock);
    c.request(Op::Ping);
    drain_to_close(&mut c);
    assert_clean_error_exit(wait(pid));

    // Closing before anything: a clean Ok.
    let (pid, sock) = spawn_raw();
    drop(sock);
    let status = wait(pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
}

#[test]
fn truncated_frame_then_close_is_not_a_crash() {
    let mut a = start();
    let mut bytes = raw_frame(2, 0, br#"{"id":1,"op":"ping"}"#);
    bytes.truncate(12);
    a.client.send_raw(&bytes).unwrap();
    assert_eq!(a.finish(), 0);
}
