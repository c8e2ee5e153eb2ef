//! A hostile agent: whatever comes from inside the box must end in a typed error, never a panic,
//! a hang or an unbounded allocation on the host side.
#![allow(clippy::unwrap_used)]

use super::*;
use airlock_protocol::{Frame, FrameKind, Hello, Op, Reply, Role};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// Runs `agent` on the other end of a socket pair; returns the host end.
fn hostile(agent: impl FnOnce(UnixStream) + Send + 'static) -> UnixStream {
    let (host, boxed) = UnixStream::pair().unwrap();
    std::thread::spawn(move || agent(boxed));
    host
}

fn hello(s: &mut UnixStream) {
    s.write_all(
        &Frame::json(FrameKind::Hello, &Hello::new(Role::Agent))
            .unwrap()
            .encode(),
    )
    .unwrap();
}

#[test]
fn garbage_instead_of_hello() {
    let host = hostile(|mut s| {
        let _ = s.write_all(b"GET / HTTP/1.1\r\n\r\n");
    });
    let err = AgentClient::connect(host, Duration::from_secs(5))
        .err()
        .unwrap();
    assert!(
        matches!(err, AgentError::Protocol(_) | AgentError::Closed),
        "{err}"
    );
}

#[test]
fn wrong_role_or_version_in_hello() {
    let host = hostile(|mut s| {
        s.write_all(
            &Frame::json(FrameKind::Hello, &Hello::new(Role::Host))
                .unwrap()
                .encode(),
        )
        .unwrap();
    });
    assert!(matches!(
        AgentClient::connect(host, Duration::from_secs(5)),
        Err(AgentError::Protocol(_))
    ));
    let host = hostile(|mut s| {
        s.write_all(
            &Frame::new(
                FrameKind::Hello,
                0,
                br#"{"version":99,"role":"agent"}"#.to_vec(),
            )
            .unwrap()
            .encode(),
        )
        .unwrap();
    });
    assert!(matches!(
        AgentClient::connect(host, Duration::from_secs(5)),
        Err(AgentError::Protocol(_))
    ));
}

#[test]
fn silent_agent_times_out_at_hello() {
    let host = hostile(|s| {
        std::thread::sleep(Duration::from_secs(3));
        drop(s);
    });
    let t = std::time::Instant::now();
    assert!(AgentClient::connect(host, Duration::from_millis(200)).is_err());
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn oversize_frame_is_refused_from_its_header() {
    let host = hostile(|mut s| {
        hello(&mut s);
        // A frame claiming 4 GiB: refused from the length alone, nothing allocated for it.
        let _ = s.write_all(&[0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0, 0]);
        std::thread::sleep(Duration::from_millis(500));
    });
    let mut c = AgentClient::connect(host, Duration::from_secs(5)).unwrap();
    let err = c.call(Op::Ping).err().unwrap();
    assert!(matches!(err, AgentError::Protocol(_)), "{err}");
}

#[test]
fn a_flood_of_unrequested_frames_is_bounded() {
    let host = hostile(|mut s| {
        hello(&mut s);
        for i in 0..(MAX_BACKLOG as u32 + 10) {
            if s.write_all(&Frame::data(2 * i + 1, b"x".to_vec()).unwrap().encode())
                .is_err()
            {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    });
    let mut c = AgentClient::connect(host, Duration::from_secs(5)).unwrap();
    assert!(matches!(c.call(Op::Ping), Err(AgentError::Backlog)));
}

#[test]
fn bad_replies_do_not_confuse_the_client() {
    let host = hostile(|mut s| {
        hello(&mut s);
        // A reply with garbage JSON, one for another id, then the real (error) reply.
        s.write_all(
            &Frame::new(FrameKind::Reply, 0, b"{not json".to_vec())
                .unwrap()
                .encode(),
        )
        .unwrap();
        s.write_all(
            &Frame::json(FrameKind::Reply, &serde_json::json!({"id": 999, "ok": {}}))
                .unwrap()
                .encode(),
        )
        .unwrap();
        let refused = Reply::error(1, airlock_protocol::ErrorCode::NotFound, "no such file");
        s.write_all(
            &Frame::new(FrameKind::Reply, 0, refused.encode().unwrap())
                .unwrap()
                .encode(),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
    });
    let mut c = AgentClient::connect(host, Duration::from_secs(5)).unwrap();
    let err = c.call(Op::Ping).err().unwrap();
    assert!(
        matches!(&err, AgentError::Refused { message, .. } if message == "no such file"),
        "{err}"
    );
    // Then the agent goes away: a typed error, not a hang.
    assert!(matches!(
        c.call(Op::Ping),
        Err(AgentError::Closed | AgentError::Io(_))
    ));
}
