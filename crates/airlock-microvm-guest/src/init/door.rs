//! The guest side of the egress proxy's door: a listener on the box's loopback whose every
//! connection is carried over the `airlock.net` port to the host's proxy. The box has no
//! network device; this is the only way out, and the host decides every request.

use crate::mux::{Frame, FrameKind, Table, MAX_PAYLOAD};
use std::fs::File;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};

/// Brings the loopback interface up (the box's own; there is no other).
pub fn loopback_up() -> super::sys::Result<()> {
    // SAFETY: a plain socket call.
    let fd = super::sys::cvt(
        unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) },
        || "cannot make a socket to bring lo up".into(),
    )?;
    // SAFETY: an all-zero ifreq is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in b"lo".iter().enumerate() {
        req.ifr_name[i] = *b as libc::c_char;
    }
    req.ifr_ifru.ifru_flags =
        (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: a valid ifreq for SIOCSIFFLAGS on our socket.
    let ret = unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS, &req) };
    // SAFETY: closing the socket made above.
    unsafe { libc::close(fd) };
    super::sys::cvt(ret, || "cannot bring the loopback interface up".into()).map(|_| ())
}

/// Serves the door on `listener` over `port` until the port ends.
pub fn start(listener: TcpListener, port: File) -> std::io::Result<()> {
    let conns = Arc::new(Table::default());
    let writer = Arc::new(Mutex::new(port.try_clone()?));
    {
        let (conns, writer) = (Arc::clone(&conns), Arc::clone(&writer));
        std::thread::Builder::new()
            .name("door-accept".into())
            .spawn(move || accept(&listener, &conns, &writer))?;
    }
    std::thread::Builder::new()
        .name("door-demux".into())
        .spawn(move || demux(port, &conns, &writer))?;
    Ok(())
}

fn send(writer: &Mutex<File>, frame: &Frame) -> bool {
    let mut w = writer.lock().unwrap_or_else(PoisonError::into_inner);
    frame.write(&mut *w).is_ok()
}

fn accept(listener: &TcpListener, conns: &Arc<Table>, writer: &Arc<Mutex<File>>) {
    let mut next: u32 = 1;
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let id = next;
        next = next.wrapping_add(1).max(1);
        let Ok(reader) = stream.try_clone() else {
            continue;
        };
        conns.insert(id, stream);
        if !send(
            writer,
            &Frame {
                conn: id,
                kind: FrameKind::Open,
                payload: Vec::new(),
            },
        ) {
            return;
        }
        let (conns, writer) = (Arc::clone(conns), Arc::clone(writer));
        let _ = std::thread::Builder::new()
            .name(format!("door-{id}"))
            .spawn(move || upstream(id, reader, &conns, &writer));
    }
}

/// Carries what the box's client sends to the host, then says that direction has ended (or,
/// after an error, that the connection is closed).
fn upstream(id: u32, mut from: TcpStream, conns: &Table, writer: &Mutex<File>) {
    let mut buf = vec![0u8; MAX_PAYLOAD];
    let clean = loop {
        match from.read(&mut buf) {
            Ok(0) => break true,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break false,
            Ok(n) => {
                let frame = Frame {
                    conn: id,
                    kind: FrameKind::Data,
                    payload: buf[..n].to_vec(),
                };
                if !send(writer, &frame) {
                    break false;
                }
            }
        }
    };
    if let Some(end) = conns.reader_ended(id, clean) {
        send(writer, &end);
    }
}

/// Hands what the host sends to each connection.
fn demux(mut port: File, conns: &Table, writer: &Mutex<File>) {
    loop {
        let frame = match Frame::read(&mut port) {
            Ok(Some(f)) => f,
            // The port reads as ended while the host is not connected: wait for it.
            Ok(None) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                continue;
            }
            Err(_) => return conns.close_all(),
        };
        if let Some(reply) = conns.deliver(&frame) {
            send(writer, &reply);
        }
    }
}
