//! The multiplexer against a scripted agent on a socket pair: routing by request, channel, pid
//! and watch; detaching what a dropped port owned; every port woken when the agent goes away.
#![allow(clippy::unwrap_used)]

use super::*;
use airlock_protocol::{Frame, FrameKind, Request};
use std::io::Write;
use std::time::Duration;

fn read_frame(s: &mut UnixStream, dec: &mut FrameDecoder) -> Frame {
    let mut buf = [0u8; 4096];
    loop {
        if let Some(f) = dec.next().unwrap() {
            return f;
        }
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "host closed");
        dec.feed(&buf[..n]);
    }
}

fn reply(s: &mut UnixStream, id: u64, body: serde_json::Value) {
    let v = serde_json::json!({"id": id, "ok": body});
    s.write_all(
        &Frame::new(FrameKind::Reply, 0, serde_json::to_vec(&v).unwrap())
            .unwrap()
            .encode(),
    )
    .unwrap();
}

fn event(s: &mut UnixStream, v: serde_json::Value) {
    s.write_all(
        &Frame::new(FrameKind::Event, 0, serde_json::to_vec(&v).unwrap())
            .unwrap()
            .encode(),
    )
    .unwrap();
}

fn request_id(f: &Frame) -> (u64, serde_json::Value) {
    let v: serde_json::Value = serde_json::from_slice(&f.body).unwrap();
    let r = Request::decode(&f.body).unwrap();
    (r.id, v)
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

#[test]
fn two_ports_get_their_own_replies_output_and_exit() {
    let (host, mut agent) = UnixStream::pair().unwrap();
    let mux = AgentMux::new(host).unwrap();
    let mut a = mux.port();
    let mut b = mux.port();
    let ida = a.request(Op::Ping).unwrap();
    let idb = b.request(Op::ListProcesses).unwrap();
    let mut dec = FrameDecoder::new();
    let (r1, _) = request_id(&read_frame(&mut agent, &mut dec));
    let (r2, _) = request_id(&read_frame(&mut agent, &mut dec));
    assert_eq!((r1, r2), (ida, idb));
    // Answer b first, with an exec-like reply that opens channels 5 and 7 for pid 42.
    reply(
        &mut agent,
        idb,
        serde_json::json!({"pid": 42, "stdout": 5, "stderr": 7}),
    );
    agent
        .write_all(&Frame::data(5, b"out".to_vec()).unwrap().encode())
        .unwrap();
    reply(&mut agent, ida, serde_json::json!({}));
    agent
        .write_all(&Frame::data(7, b"err".to_vec()).unwrap().encode())
        .unwrap();
    event(
        &mut agent,
        serde_json::json!({"event": "exit", "pid": 42, "code": 0, "signal": null, "timed_out": false}),
    );

    let fa = a.recv_until(soon()).unwrap().unwrap();
    assert_eq!(fa.kind, FrameKind::Reply);
    assert_eq!(Reply::decode(&fa.body).unwrap().id, ida);
    assert!(
        a.recv_until(Instant::now() + Duration::from_millis(100))
            .unwrap()
            .is_none(),
        "a gets nothing of b's"
    );

    let kinds: Vec<(FrameKind, u32)> = (0..4)
        .map(|_| b.recv_until(soon()).unwrap().unwrap())
        .map(|f| (f.kind, f.channel))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (FrameKind::Reply, 0),
            (FrameKind::Data, 5),
            (FrameKind::Data, 7),
            (FrameKind::Event, 0)
        ]
    );
}

#[test]
fn a_dropped_port_detaches_its_channels_and_removes_its_watches() {
    let (host, mut agent) = UnixStream::pair().unwrap();
    let mux = AgentMux::new(host).unwrap();
    let mut a = mux.port();
    let mut dec = FrameDecoder::new();
    let id = a
        .request(Op::Watch {
            path: "/tmp".into(),
            recursive: false,
        })
        .unwrap();
    read_frame(&mut agent, &mut dec);
    reply(&mut agent, id, serde_json::json!({"watch": 3}));
    let id2 = a
        .request(Op::Attach {
            pid: 9,
            replay: false,
        })
        .unwrap();
    read_frame(&mut agent, &mut dec);
    reply(&mut agent, id2, serde_json::json!({"pid": 9, "stdout": 11}));
    assert_eq!(
        a.recv_until(soon()).unwrap().unwrap().kind,
        FrameKind::Reply
    );
    assert_eq!(
        a.recv_until(soon()).unwrap().unwrap().kind,
        FrameKind::Reply
    );
    drop(a);
    let eof = read_frame(&mut agent, &mut dec);
    assert_eq!((eof.kind, eof.channel), (FrameKind::Eof, 11));
    let (_, unwatch) = request_id(&read_frame(&mut agent, &mut dec));
    assert_eq!(unwatch["op"], "unwatch");
    assert_eq!(unwatch["watch"], 3);
    // Output still arriving on the detached channel goes nowhere, and the mux keeps working.
    agent
        .write_all(&Frame::data(11, b"late".to_vec()).unwrap().encode())
        .unwrap();
    let mut c = mux.port();
    let id3 = c.request(Op::Ping).unwrap();
    read_frame(&mut agent, &mut dec);
    reply(&mut agent, id3, serde_json::json!({}));
    assert_eq!(
        Reply::decode(&c.recv_until(soon()).unwrap().unwrap().body)
            .unwrap()
            .id,
        id3
    );
}

#[test]
fn client_channels_are_unique_across_ports() {
    let (host, _agent) = UnixStream::pair().unwrap();
    let mux = AgentMux::new(host).unwrap();
    let (mut a, mut b) = (mux.port(), mux.port());
    let mut seen = std::collections::HashSet::new();
    for _ in 0..100 {
        assert!(seen.insert(a.alloc_channel()));
        assert!(seen.insert(b.alloc_channel()));
    }
    assert!(seen.iter().all(|c| airlock_protocol::is_client_channel(*c)));
}

#[test]
fn the_agent_going_away_wakes_every_port() {
    let (host, agent) = UnixStream::pair().unwrap();
    let mux = AgentMux::new(host).unwrap();
    let mut a = mux.port();
    let waiter = std::thread::spawn(move || a.recv());
    std::thread::sleep(Duration::from_millis(50));
    drop(agent);
    assert!(waiter.join().unwrap().is_none());
    let mut late = mux.port();
    assert!(matches!(late.recv_until(soon()), Err(AgentError::Closed)));
    assert!(mux.is_closed());
}

#[test]
fn garbage_from_the_agent_closes_the_connection_without_panic() {
    let (host, mut agent) = UnixStream::pair().unwrap();
    let mux = AgentMux::new(host).unwrap();
    let mut a = mux.port();
    agent.write_all(&[0xff; 64]).unwrap();
    assert!(matches!(a.recv_until(soon()), Err(AgentError::Closed)));
}

#[test]
fn a_tunnel_the_agent_never_answers_fails_in_time_and_one_it_answers_carries_bytes() {
    let (host, mut agent) = UnixStream::pair().unwrap();
    let mux = AgentMux::new(host).unwrap();
    // A hostile or stale agent: reads the request and says nothing.
    let started = Instant::now();
    let err = crate::tunnel::open(mux.port(), 8000, Duration::from_millis(300))
        .err()
        .unwrap();
    assert!(err.to_string().contains("did not answer"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut dec = FrameDecoder::new();
    let (_, v) = request_id(&read_frame(&mut agent, &mut dec));
    assert_eq!(v["op"], "tunnel");
    // An agent that answers: the channel carries bytes both ways, and the writer's drop is Eof.
    let opener = std::thread::spawn({
        let port = mux.port();
        move || crate::tunnel::open(port, 8000, Duration::from_secs(5)).map_err(|e| e.to_string())
    });
    let (id, _) = request_id(&read_frame(&mut agent, &mut dec));
    reply(&mut agent, id, serde_json::json!({"channel": 7}));
    let (mut reader, writer) = opener.join().unwrap().unwrap();
    agent
        .write_all(&Frame::data(7, b"from box".to_vec()).unwrap().encode())
        .unwrap();
    assert_eq!(reader.recv().unwrap(), b"from box");
    writer.send(b"to box").unwrap();
    let f = read_frame(&mut agent, &mut dec);
    assert_eq!(
        (f.kind, f.channel, &f.body[..]),
        (FrameKind::Data, 7, &b"to box"[..])
    );
    drop(writer);
    let f = read_frame(&mut agent, &mut dec);
    assert_eq!((f.kind, f.channel), (FrameKind::Eof, 7));
    agent.write_all(&Frame::eof(7).encode()).unwrap();
    assert_eq!(reader.recv(), None, "the box's Eof ends the reader");
}
