//! The agent's connection of a box that can be checkpointed, relayed through this (host)
//! process. The Sentry shuts down the host socket it was given as stdio when its sandbox ends,
//! and a checkpoint ends it, so the owner cannot hold that socket itself: it holds one end of a
//! socket pair that this process relays to the socket of the sandbox of the moment. A restore in
//! place swaps that socket ([`Relay::replace`]); bytes the owner sends meanwhile wait for it.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

/// Bytes copied per read.
const CHUNK: usize = 64 << 10;

struct State {
    /// The current sandbox's socket, and how many there were before it.
    box_side: Option<Arc<UnixStream>>,
    generation: u64,
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    /// The box side after `after` (any when `None`), waiting for one; `None` once closed.
    fn box_side(&self, after: Option<u64>) -> Option<(Arc<UnixStream>, u64)> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if st.closed {
                return None;
            }
            if let Some(b) = &st.box_side {
                if after.is_none_or(|g| st.generation > g) {
                    return Some((Arc::clone(b), st.generation));
                }
            }
            st = self
                .changed
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// A running relay between the owner's connection and the box's agent.
pub struct Relay {
    shared: Arc<Shared>,
    owner: Arc<UnixStream>,
    threads: Vec<JoinHandle<()>>,
}

impl Relay {
    /// Relays between `owner` (this process's end of the owner's connection) and `box_side`
    /// (this process's end of the sandbox's stdio), one thread each way.
    pub fn start(owner: UnixStream, box_side: UnixStream) -> std::io::Result<Relay> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                box_side: Some(Arc::new(box_side)),
                generation: 0,
                closed: false,
            }),
            changed: Condvar::new(),
        });
        let owner = Arc::new(owner);
        let up = {
            let (shared, owner) = (Arc::clone(&shared), Arc::clone(&owner));
            std::thread::Builder::new()
                .name("agent-relay-up".into())
                .spawn(move || up(&shared, &owner))?
        };
        let down = {
            let (shared, owner) = (Arc::clone(&shared), Arc::clone(&owner));
            std::thread::Builder::new()
                .name("agent-relay-down".into())
                .spawn(move || down(&shared, &owner))
        };
        let mut relay = Relay {
            shared,
            owner,
            threads: vec![up],
        };
        relay.threads.push(down?);
        Ok(relay)
    }

    /// Relays to `box_side`, a new sandbox's socket, from now on.
    pub fn replace(&self, box_side: UnixStream) {
        let mut st = self
            .shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        st.box_side = Some(Arc::new(box_side));
        st.generation += 1;
        self.shared.changed.notify_all();
    }

    /// Ends the relay: the owner sees its connection end, the agent its input.
    pub fn stop(mut self) {
        self.close();
    }

    fn close(&mut self) {
        {
            let mut st = self
                .shared
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            st.closed = true;
            if let Some(b) = st.box_side.take() {
                let _ = b.shutdown(Shutdown::Both);
            }
            self.shared.changed.notify_all();
        }
        let _ = self.owner.shutdown(Shutdown::Both);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.close();
    }
}

/// Owner to box. The owner closing its end is the agent's signal to end: passed on as EOF.
fn up(shared: &Shared, owner: &UnixStream) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match (&*owner).read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Ok(0) | Err(_) => {
                if let Some((b, _)) = shared.box_side(None) {
                    let _ = b.shutdown(Shutdown::Write);
                }
                return;
            }
            Ok(n) => n,
        };
        let mut sent = 0;
        let mut after = None;
        while sent < n {
            let Some((b, generation)) = shared.box_side(after) else {
                return;
            };
            match (&*b).write(&buf[sent..n]) {
                Ok(k) if k > 0 => sent += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // That sandbox is gone (checkpointed): the rest goes to the next one.
                _ => after = Some(generation),
            }
        }
    }
}

/// Box to owner. The box's socket ending is a sandbox gone (checkpointed, or ended, which the
/// host process sees and stops the relay for): wait for the next one.
fn down(shared: &Shared, owner: &UnixStream) {
    let mut buf = vec![0u8; CHUNK];
    let mut after = None;
    loop {
        let Some((b, generation)) = shared.box_side(after) else {
            return;
        };
        match (&*b).read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Ok(0) | Err(_) => after = Some(generation),
            Ok(n) => {
                if (&*owner).write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_cross_both_ways_and_survive_a_swapped_box_side() {
        let (owner_client, owner_host) = UnixStream::pair().unwrap();
        let (box_host, mut box_agent) = UnixStream::pair().unwrap();
        let relay = Relay::start(owner_host, box_host).unwrap();
        let mut client = owner_client;
        client.write_all(b"ping").unwrap();
        let mut got = [0u8; 4];
        box_agent.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        box_agent.write_all(b"pong").unwrap();
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"pong");
        // The sandbox goes (its socket shut down, as the Sentry does at a checkpoint); what the
        // owner sends meanwhile reaches the next one.
        box_agent.shutdown(Shutdown::Both).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        client.write_all(b"late").unwrap();
        let (box_host2, mut box_agent2) = UnixStream::pair().unwrap();
        relay.replace(box_host2);
        box_agent2.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"late");
        box_agent2.write_all(b"back").unwrap();
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"back");
        // Stopping ends the owner's connection.
        relay.stop();
        assert_eq!(client.read(&mut got).unwrap(), 0);
    }
}
