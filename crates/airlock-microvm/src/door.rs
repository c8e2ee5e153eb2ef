//! The host side of the egress proxy's door: each connection the guest opens on its
//! loopback listener arrives as frames on the `airlock.net` port and is connected here to the
//! box's own airlock proxy, which decides it (the same allowlist, audit and typed events as a
//! native box). Nothing else of the guest reaches any network.

use airlock_microvm_guest::mux::{Frame, FrameKind, MAX_PAYLOAD};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, PoisonError};

type Conns = Arc<Mutex<HashMap<u32, TcpStream>>>;

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
    let conns: Conns = Arc::default();
    while let Ok(Some(frame)) = Frame::read(&mut port) {
        match frame.kind {
            FrameKind::Open => match TcpStream::connect(proxy) {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    let Ok(reader) = stream.try_clone() else {
                        close(writer, frame.conn);
                        continue;
                    };
                    conns
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(frame.conn, stream);
                    let (conns, writer) = (Arc::clone(&conns), Arc::clone(writer));
                    let _ = std::thread::Builder::new()
                        .name(format!("microvm-door-{}", frame.conn))
                        .spawn(move || downstream(frame.conn, reader, &conns, &writer));
                }
                Err(_) => close(writer, frame.conn),
            },
            FrameKind::Data => {
                let mut map = conns.lock().unwrap_or_else(PoisonError::into_inner);
                let failed = map
                    .get_mut(&frame.conn)
                    .is_some_and(|s| s.write_all(&frame.payload).is_err());
                if failed {
                    if let Some(s) = map.remove(&frame.conn) {
                        let _ = s.shutdown(Shutdown::Both);
                    }
                    drop(map);
                    close(writer, frame.conn);
                }
            }
            FrameKind::Close => {
                if let Some(s) = conns
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&frame.conn)
                {
                    let _ = s.shutdown(Shutdown::Both);
                }
            }
        }
    }
    for (_, s) in conns.lock().unwrap_or_else(PoisonError::into_inner).drain() {
        let _ = s.shutdown(Shutdown::Both);
    }
}

/// Carries what the proxy answers back to the guest, then says the connection is closed.
fn downstream(conn: u32, mut from: TcpStream, conns: &Conns, writer: &Mutex<UnixStream>) {
    let mut buf = vec![0u8; MAX_PAYLOAD];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let frame = Frame {
                    conn,
                    kind: FrameKind::Data,
                    payload: buf[..n].to_vec(),
                };
                if !send(writer, &frame) {
                    break;
                }
            }
        }
    }
    if conns
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&conn)
        .is_some()
    {
        close(writer, conn);
    }
}
