//! One side's door connections, and how far each has closed. Both sides of the door (the
//! guest's loopback listener and the host's connections to the proxy) keep one: a frame from
//! the other side is handed to its connection here, and a connection's reader asks here what
//! to tell the other side when it ends.
//!
//! A connection closes the way TCP does: each direction ends on its own (a [`FrameKind::Shut`]
//! when its reader sees end of file), and the connection is forgotten once both have. A read or
//! write error ends both at once ([`FrameKind::Close`]).

use super::{Frame, FrameKind};
use std::collections::HashMap;
use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::{Mutex, PoisonError};

struct Entry {
    stream: TcpStream,
    /// This side's reader saw end of file and said so.
    sent_shut: bool,
    /// The other side said it has no more to send.
    got_shut: bool,
}

/// The connections of one side of the door, by id.
#[derive(Default)]
pub struct Table {
    conns: Mutex<HashMap<u32, Entry>>,
}

fn frame(conn: u32, kind: FrameKind) -> Frame {
    Frame {
        conn,
        kind,
        payload: Vec::new(),
    }
}

impl Table {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Entry>> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new connection (its reader is a clone of `stream`, read elsewhere).
    pub fn insert(&self, conn: u32, stream: TcpStream) {
        self.lock().insert(
            conn,
            Entry {
                stream,
                sent_shut: false,
                got_shut: false,
            },
        );
    }

    /// Hands a `Data`, `Shut` or `Close` frame from the other side to its connection (frames
    /// of a connection no longer known are dropped). Returns the `Close` to send back when the
    /// connection could not take the bytes.
    pub fn deliver(&self, f: &Frame) -> Option<Frame> {
        let mut map = self.lock();
        let entry = map.get_mut(&f.conn)?;
        match f.kind {
            FrameKind::Data => {
                if entry.stream.write_all(&f.payload).is_ok() {
                    return None;
                }
                if let Some(e) = map.remove(&f.conn) {
                    let _ = e.stream.shutdown(Shutdown::Both);
                }
                Some(frame(f.conn, FrameKind::Close))
            }
            FrameKind::Shut => {
                let _ = entry.stream.shutdown(Shutdown::Write);
                entry.got_shut = true;
                if entry.sent_shut {
                    map.remove(&f.conn);
                }
                None
            }
            FrameKind::Close => {
                if let Some(e) = map.remove(&f.conn) {
                    let _ = e.stream.shutdown(Shutdown::Both);
                }
                None
            }
            FrameKind::Open => None,
        }
    }

    /// The reader of `conn` ended: at end of file (`clean`) or on an error. Returns what to tell
    /// the other side, if the connection is still known: `Shut` after a clean end (the other
    /// direction keeps carrying the answer), `Close` after an error.
    pub fn reader_ended(&self, conn: u32, clean: bool) -> Option<Frame> {
        let mut map = self.lock();
        let entry = map.get_mut(&conn)?;
        if !clean {
            if let Some(e) = map.remove(&conn) {
                let _ = e.stream.shutdown(Shutdown::Both);
            }
            return Some(frame(conn, FrameKind::Close));
        }
        entry.sent_shut = true;
        if entry.got_shut {
            map.remove(&conn);
        }
        Some(frame(conn, FrameKind::Shut))
    }

    /// Ends every connection (the port is gone).
    pub fn close_all(&self) {
        for (_, e) in self.lock().drain() {
            let _ = e.stream.shutdown(Shutdown::Both);
        }
    }

    /// How many connections are open (in either direction).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
