//! The host side of the egress proxy's door: each connection the guest opens on its
//! loopback listener arrives as frames on the `airlock.net` port and is connected here to the
//! box's own airlock proxy, which decides it (the same allowlist, audit and typed events as a
//! native box). Nothing else of the guest reaches any network.

use airlock_microvm_guest::mux::{Frame, FrameKind, Table, MAX_PAYLOAD};
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, PoisonError};

/// Serves the door on `port` (the host end of the guest's door port), connecting each
/// connection to `proxy`. Ends when the port does.
pub fn serve(port: UnixStream, proxy: SocketAddr) -> std::io::Result<()> {
    let writer = Arc::new(Mutex::new(port.try_clone()?));
    std::thread::Builder::new()
        .name("microvm-door".into())
        .spawn(move || demux(port, proxy, &writer))?;
    Ok(())
}

fn send(writer: &Mutex<UnixStream>, frame: &Frame) -> bool {
    let mut w = writer.lock().unwrap_or_else(PoisonError::into_inner);
    frame.write(&mut *w).is_ok()
}

fn close(writer: &Mutex<UnixStream>, conn: u32) {
    send(
        writer,
        &Frame {
            conn,
            kind: FrameKind::Close,
            payload: Vec::new(),
        },
    );
}

fn demux(mut port: UnixStream, proxy: SocketAddr, writer: &Arc<Mutex<UnixStream>>) {
    let conns = Arc::new(Table::default());
    while let Ok(Some(frame)) = Frame::read(&mut port) {
        if frame.kind != FrameKind::Open {
            if let Some(reply) = conns.deliver(&frame) {
                send(writer, &reply);
            }
            continue;
        }
        let Ok(stream) = TcpStream::connect(proxy) else {
            close(writer, frame.conn);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Ok(reader) = stream.try_clone() else {
            close(writer, frame.conn);
            continue;
        };
        conns.insert(frame.conn, stream);
        let (table, out) = (Arc::clone(&conns), Arc::clone(writer));
        let spawned = std::thread::Builder::new()
            .name(format!("microvm-door-{}", frame.conn))
            .spawn(move || downstream(frame.conn, reader, &table, &out));
        if spawned.is_err() {
            // No thread to carry the answers: the connection is refused as a whole.
            if let Some(reply) = conns.reader_ended(frame.conn, false) {
                send(writer, &reply);
            }
        }
    }
    conns.close_all();
}

/// Carries what the proxy answers back to the guest, then says that direction has ended (or,
/// after an error, that the connection is closed).
fn downstream(conn: u32, mut from: TcpStream, conns: &Table, writer: &Mutex<UnixStream>) {
    let mut buf = vec![0u8; MAX_PAYLOAD];
    let clean = loop {
        match from.read(&mut buf) {
            Ok(0) => break true,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break false,
            Ok(n) => {
                let frame = Frame {
                    conn,
                    kind: FrameKind::Data,
                    payload: buf[..n].to_vec(),
                };
                if !send(writer, &frame) {
                    break false;
                }
            }
        }
    };
    if let Some(end) = conns.reader_ended(conn, clean) {
        send(writer, &end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Duration;

    fn frame(conn: u32, kind: FrameKind, payload: &[u8]) -> Frame {
        Frame {
            conn,
            kind,
            payload: payload.to_vec(),
        }
    }

    /// A proxy that reads a request to its end, then answers and closes, like the proxy does
    /// with a request it refuses.
    fn answering_proxy() -> (SocketAddr, std::thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").unwrap();
            got
        });
        (addr, handle)
    }

    #[test]
    fn a_client_that_half_closes_still_gets_the_answer_and_then_the_end() {
        let (addr, proxy) = answering_proxy();
        let (mut guest, host) = UnixStream::pair().unwrap();
        guest
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        serve(host, addr).unwrap();
        for f in [
            frame(7, FrameKind::Open, b""),
            frame(7, FrameKind::Data, b"\x0b\x02garbage\r"),
            frame(7, FrameKind::Shut, b""),
        ] {
            f.write(&mut guest).unwrap();
        }
        let mut answer = Vec::new();
        let end = loop {
            let f = Frame::read(&mut guest)
                .expect("the door answers within 10 s")
                .expect("the door's port stays open");
            assert_eq!(f.conn, 7);
            match f.kind {
                FrameKind::Data => answer.extend_from_slice(&f.payload),
                other => break other,
            }
        };
        assert_eq!(proxy.join().unwrap(), b"\x0b\x02garbage\r");
        assert_eq!(answer, b"HTTP/1.1 400 Bad Request\r\n\r\n");
        assert_eq!(
            end,
            FrameKind::Shut,
            "the proxy's end comes as the end of its direction"
        );
    }

    #[test]
    fn a_connection_the_proxy_refuses_is_closed_and_late_frames_are_dropped() {
        // Nothing listens on the port of a listener just dropped.
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let (mut guest, host) = UnixStream::pair().unwrap();
        guest
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        serve(host, addr).unwrap();
        frame(3, FrameKind::Open, b"").write(&mut guest).unwrap();
        let f = Frame::read(&mut guest).unwrap().unwrap();
        assert_eq!((f.conn, f.kind), (3, FrameKind::Close));
        // Frames for the closed connection are dropped, and the door still serves: the next
        // connection gets its own answer.
        frame(3, FrameKind::Data, b"late")
            .write(&mut guest)
            .unwrap();
        frame(3, FrameKind::Shut, b"").write(&mut guest).unwrap();
        frame(4, FrameKind::Open, b"").write(&mut guest).unwrap();
        let f = Frame::read(&mut guest).unwrap().unwrap();
        assert_eq!((f.conn, f.kind), (4, FrameKind::Close));
    }
}
