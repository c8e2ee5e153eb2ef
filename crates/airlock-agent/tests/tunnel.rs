//! Connections into the box through the agent (`tunnel`): bytes both ways, ends each way, a
//! port with no listener, and large transfers under flow control.
#![allow(clippy::unwrap_used)]

mod support;

use airlock_protocol::{ErrorCode, Frame, FrameKind, Op, TunnelReply};
use std::io::{Read, Write};
use std::net::TcpListener;
use support::start;

/// Collects Data on `channel` until its Eof.
fn read_to_eof(c: &mut support::Client, channel: u32) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let f = c.wait_for(|f| f.channel == channel);
        match f.kind {
            FrameKind::Data => out.extend_from_slice(&f.body),
            FrameKind::Eof => return out,
            k => panic!("unexpected {k:?} on the tunnel's channel"),
        }
    }
}

#[test]
fn tunnel_carries_bytes_both_ways_and_ends_each_way() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = [0u8; 5];
        s.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello");
        // Big enough to cross the agent's flow control several times.
        s.write_all(&vec![b'x'; 3 << 20]).unwrap();
        drop(s);
    });
    let mut a = start();
    let t: TunnelReply = a.client.call(Op::Tunnel { port }).body().unwrap();
    assert_eq!(t.channel % 2, 1, "the agent assigns the tunnel's channel");
    a.client
        .send(&Frame::data(t.channel, b"hello".to_vec()).unwrap());
    let got = read_to_eof(&mut a.client, t.channel);
    assert_eq!(got.len(), 3 << 20);
    assert!(got.iter().all(|b| *b == b'x'));
    server.join().unwrap();
    // The host's Eof closes the tunnel; the agent still serves.
    a.client.send(&Frame::eof(t.channel));
    a.client
        .call(Op::Ping)
        .body::<airlock_protocol::Empty>()
        .unwrap();
    assert_eq!(a.finish(), 0);
}

#[test]
fn host_eof_closes_the_box_end() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut a = start();
    let t: TunnelReply = a.client.call(Op::Tunnel { port }).body().unwrap();
    let (mut s, _) = listener.accept().unwrap();
    a.client.send(&Frame::eof(t.channel));
    let mut rest = Vec::new();
    // The box end sees the connection end (not a hang): read returns 0.
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    assert_eq!(s.read_to_end(&mut rest).unwrap(), 0);
    assert_eq!(a.finish(), 0);
}

#[test]
fn a_port_without_listener_is_refused_by_name() {
    // Held, never listened on: connects are refused, and no other test's listener can take
    // the port meanwhile (a port bound then dropped once went to a parallel test's listener,
    // and the tunnel opened).
    let (_held, port) = unlistened_port();
    let mut a = start();
    let err = a
        .client
        .call(Op::Tunnel { port })
        .body::<TunnelReply>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(
        err.message.contains(&format!("port {port}")),
        "{}",
        err.message
    );
    let err = a
        .client
        .call(Op::Tunnel { port: 0 })
        .body::<TunnelReply>()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Invalid);
    assert_eq!(a.finish(), 0);
}

/// A loopback TCP port bound by a socket that never listens: connecting to it is refused, and
/// it stays taken (no `bind` to port 0 elsewhere gets it) while the descriptor is held.
fn unlistened_port() -> (std::os::fd::OwnedFd, u16) {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: socket() returns a new descriptor or -1; checked before it is owned.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(raw >= 0, "socket: {}", std::io::Error::last_os_error());
    // SAFETY: `raw` is a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: an all-zero sockaddr_in is valid; the fields are set below.
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
    // SAFETY: `addr` is a sockaddr_in of `len` bytes, alive for the call.
    let bound = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast::<libc::sockaddr>(),
            len,
        )
    };
    assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
    let mut got = len;
    // SAFETY: `addr` has room for a sockaddr_in; `got` holds its size.
    let named = unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            (&mut addr as *mut libc::sockaddr_in).cast::<libc::sockaddr>(),
            &mut got,
        )
    };
    assert_eq!(named, 0, "getsockname: {}", std::io::Error::last_os_error());
    (fd, u16::from_be(addr.sin_port))
}
