//! The relay under bulk transfers, where directions switch to `splice(2)` through pipes: exact
//! byte counts, half-close each way, the byte budget, many tunnels at once, and no descriptor
//! left open afterwards. Real loopback sockets, a fake resolver (no DNS), every wait bounded.
//!
//! The tests run one at a time (they count the process's open descriptors).

use airlock_proxy::audit::NetEvent;
use airlock_proxy::decision::Resolver;
use airlock_proxy::rules::EgressRules;
use airlock_proxy::server::{start_with_resolver, ProxyConfig, ProxyHandle};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const IO_TIMEOUT: Duration = Duration::from_secs(20);
const SVC: &str = "svc.test";
const MIB: usize = 1 << 20;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct FakeResolver;

impl Resolver for FakeResolver {
    fn resolve(&self, name: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
        match name {
            SVC => Ok(vec![LOCALHOST]),
            _ => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "not in the fake resolver",
            )),
        }
    }
}

fn start_proxy(budget: Option<u64>) -> ProxyHandle {
    let rules = EgressRules::parse(&[SVC.into()], &[], &["127.0.0.1".into()], &[]).expect("rules");
    let config = ProxyConfig {
        rules,
        max_connections: 1024,
        byte_budget: budget,
        connect_timeout: Duration::from_secs(5),
        audit: None,
        on_event: None,
        intercept: None,
        approval: None,
        peer_names: None,
    };
    let listener = TcpListener::bind((LOCALHOST, 0)).expect("bind proxy");
    start_with_resolver(listener, config, Arc::new(FakeResolver)).expect("start proxy")
}

fn timeouts(s: &TcpStream) {
    s.set_read_timeout(Some(IO_TIMEOUT)).expect("read timeout");
    s.set_write_timeout(Some(IO_TIMEOUT))
        .expect("write timeout");
}

/// An upstream on 127.0.0.1 that serves `connections` connections, each on its own thread.
fn upstream(connections: usize, handler: impl Fn(TcpStream) + Send + Sync + 'static) -> SocketAddr {
    let listener = TcpListener::bind((LOCALHOST, 0)).expect("bind upstream");
    let addr = listener.local_addr().expect("upstream addr");
    let handler = Arc::new(handler);
    thread::spawn(move || {
        for _ in 0..connections {
            let Ok((s, _)) = listener.accept() else {
                return;
            };
            timeouts(&s);
            let handler = handler.clone();
            thread::spawn(move || handler(s));
        }
    });
    addr
}

fn tunnel(proxy: &ProxyHandle, port: u16) -> TcpStream {
    let mut s = TcpStream::connect(proxy.local_addr()).expect("connect to proxy");
    timeouts(&s);
    s.write_all(format!("CONNECT {SVC}:{port} HTTP/1.1\r\nHost: {SVC}:{port}\r\n\r\n").as_bytes())
        .expect("CONNECT");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            s.read(&mut byte).expect("read head"),
            1,
            "the proxy closed during the head"
        );
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200 "),
        "{}",
        String::from_utf8_lossy(&head)
    );
    s
}

/// `len` bytes where every 1 MiB block differs from the others (so a lost, repeated or
/// reordered block shows).
fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8 ^ seed ^ (i / MIB) as u8
        })
        .collect()
}

/// Reads until end of file, comparing with `want` on the way; returns the count.
fn read_expecting(s: &mut TcpStream, want: &[u8]) -> usize {
    let mut buf = vec![0u8; MIB];
    let mut got = 0;
    loop {
        let n = s.read(&mut buf).expect("read");
        if n == 0 {
            return got;
        }
        assert!(got + n <= want.len(), "more bytes than were sent");
        assert!(
            buf[..n] == want[got..got + n],
            "bytes differ at offset {got}"
        );
        got += n;
    }
}

/// Reads and discards until end of file or an error; returns the count.
fn drain(s: &mut TcpStream) -> usize {
    let mut buf = vec![0u8; MIB];
    let mut got = 0;
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got += n;
    }
    got
}

fn wait_events(proxy: &ProxyHandle, n: usize) -> Vec<NetEvent> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (events, _) = proxy.events();
        if events.len() >= n || Instant::now() > deadline {
            assert_eq!(events.len(), n, "{events:#?}");
            return events;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// The process's open descriptors: `(all, pipes)`.
fn open_fds() -> (usize, usize) {
    let mut all = 0;
    let mut pipes = 0;
    for entry in std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .flatten()
    {
        all += 1;
        if std::fs::read_link(entry.path()).is_ok_and(|t| t.to_string_lossy().starts_with("pipe:"))
        {
            pipes += 1;
        }
    }
    (all, pipes)
}

/// Polls until the descriptor count is back to `baseline` (at most 10 s); returns the last count.
fn wait_fds(baseline: usize) -> (usize, usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = open_fds();
        if now.0 <= baseline || Instant::now() > deadline {
            return now;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_64_mib_echo_is_relayed_intact_and_counted_exactly_both_ways() {
    let _serial = serial();
    let up = upstream(1, |mut s| {
        // Echo everything, then a trailer once the client has half-closed.
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = s.write_all(b"trailer");
    });
    let proxy = start_proxy(None);
    let (_, pipes_before) = open_fds();
    let mut s = tunnel(&proxy, up.port());
    let data = payload(64 * MIB, 1);
    let (pipes_seen_tx, pipes_seen) = mpsc::channel();
    let writer = {
        let mut w = s.try_clone().expect("clone");
        let data = data.clone();
        thread::spawn(move || {
            for chunk in data.chunks(4 * MIB) {
                w.write_all(chunk).expect("write");
                let _ = pipes_seen_tx.send(open_fds().1);
            }
            w.shutdown(Shutdown::Write).expect("half-close");
        })
    };
    let mut want = data.clone();
    want.extend_from_slice(b"trailer");
    assert_eq!(read_expecting(&mut s, &want), want.len());
    writer.join().expect("writer");
    let most_pipes = pipes_seen.try_iter().max().unwrap_or(0);
    assert!(
        most_pipes > pipes_before,
        "the bulk transfer never used a pipe ({most_pipes} pipe fds at most)"
    );

    let events = wait_events(&proxy, 1);
    assert_eq!(events[0].reason, None);
    assert_eq!(events[0].bytes_up, (64 * MIB) as u64);
    assert_eq!(events[0].bytes_down, (64 * MIB + b"trailer".len()) as u64);
}

#[test]
fn the_client_half_closing_a_bulk_upload_still_gets_the_bulk_answer() {
    let _serial = serial();
    let upload = payload(16 * MIB, 2);
    let answer = payload(16 * MIB, 3);
    let (got_tx, got_rx) = mpsc::channel();
    let up = {
        let (upload, answer) = (upload.clone(), answer.clone());
        upstream(1, move |mut s| {
            let got = read_expecting(&mut s, &upload);
            let _ = got_tx.send(got);
            // Only after the client's end of file: the answer must still get through.
            s.write_all(&answer).expect("answer");
        })
    };
    let proxy = start_proxy(None);
    let mut s = tunnel(&proxy, up.port());
    s.write_all(&upload).expect("upload");
    s.shutdown(Shutdown::Write).expect("half-close");
    assert_eq!(
        read_expecting(&mut s, &answer),
        answer.len(),
        "the answer after the client's EOF"
    );
    assert_eq!(
        got_rx.recv_timeout(IO_TIMEOUT).expect("upstream count"),
        upload.len(),
        "upstream saw the EOF"
    );
    let events = wait_events(&proxy, 1);
    assert_eq!(events[0].reason, None);
    assert_eq!(
        (events[0].bytes_up, events[0].bytes_down),
        (upload.len() as u64, answer.len() as u64)
    );
}

#[test]
fn upstream_half_closing_a_bulk_download_still_gets_the_bulk_upload() {
    let _serial = serial();
    let download = payload(16 * MIB, 4);
    let upload = payload(16 * MIB, 5);
    let (got_tx, got_rx) = mpsc::channel();
    let up = {
        let (download, upload) = (download.clone(), upload.clone());
        upstream(1, move |mut s| {
            s.write_all(&download).expect("download");
            s.shutdown(Shutdown::Write).expect("upstream half-close");
            let _ = got_tx.send(read_expecting(&mut s, &upload));
        })
    };
    let proxy = start_proxy(None);
    let mut s = tunnel(&proxy, up.port());
    assert_eq!(
        read_expecting(&mut s, &download),
        download.len(),
        "the download, then upstream's EOF"
    );
    // The client's direction is still open.
    s.write_all(&upload).expect("upload after upstream's EOF");
    s.shutdown(Shutdown::Write).expect("half-close");
    assert_eq!(
        got_rx.recv_timeout(IO_TIMEOUT).expect("upstream count"),
        upload.len()
    );
    let events = wait_events(&proxy, 1);
    assert_eq!(events[0].reason, None);
    assert_eq!(
        (events[0].bytes_up, events[0].bytes_down),
        (upload.len() as u64, download.len() as u64)
    );
}

#[test]
fn the_byte_budget_stops_a_bulk_transfer_exactly_at_the_budget() {
    let _serial = serial();
    const BUDGET: usize = 10 * MIB + 12_345;
    let (got_tx, got_rx) = mpsc::channel();
    let up = upstream(2, move |mut s| {
        let _ = got_tx.send(drain(&mut s));
    });
    let proxy = start_proxy(Some(BUDGET as u64));
    let mut s = tunnel(&proxy, up.port());
    let data = payload(64 * MIB, 6);
    // Fails part way (reset or broken pipe) once the proxy cuts the tunnel.
    let sent = data
        .chunks(MIB)
        .take_while(|c| s.write_all(c).is_ok())
        .count();
    assert!(
        sent < 64,
        "the whole transfer went through a {BUDGET}-byte budget"
    );
    assert_eq!(
        got_rx.recv_timeout(IO_TIMEOUT).expect("upstream count"),
        BUDGET,
        "upstream got exactly the budget"
    );
    let events = wait_events(&proxy, 1);
    assert_eq!(events[0].reason.as_deref(), Some("byte-budget-exhausted"));
    assert_eq!(
        (events[0].bytes_up, events[0].bytes_down),
        (BUDGET as u64, 0)
    );

    // The box's budget is spent: the next tunnel passes nothing on.
    let mut s = tunnel(&proxy, up.port());
    let _ = s.write_all(&data[..MIB]);
    assert_eq!(got_rx.recv_timeout(IO_TIMEOUT).expect("upstream count"), 0);
    let events = wait_events(&proxy, 2);
    assert_eq!(events[1].reason.as_deref(), Some("byte-budget-exhausted"));
    assert_eq!((events[1].bytes_up, events[1].bytes_down), (0, 0));
}

#[test]
fn many_concurrent_bulk_tunnels_are_exact_and_leave_no_descriptor_open() {
    let _serial = serial();
    // More tunnels than the relay has pipes: some directions splice, the rest copy.
    const N: usize = 48;
    const EACH: usize = 4 * MIB;
    let up = upstream(N + 1, |mut s| {
        let n = drain(&mut s) as u64;
        let _ = s.write_all(&n.to_be_bytes());
    });
    let proxy = start_proxy(None);
    // Warm up (the runtime's lazily created descriptors), then take the baseline.
    let mut warm = tunnel(&proxy, up.port());
    warm.shutdown(Shutdown::Write).expect("half-close");
    let mut ack = [0u8; 8];
    warm.read_exact(&mut ack).expect("warm-up ack");
    drop(warm);
    wait_events(&proxy, 1);
    // The upstream's side of the warm-up closes on its own thread.
    thread::sleep(Duration::from_millis(200));
    // Pipes open before (the harness's, or a previous test's still closing) are not the relay's.
    let (baseline, baseline_pipes) = open_fds();

    let tunnels: Vec<TcpStream> = (0..N).map(|_| tunnel(&proxy, up.port())).collect();
    let data = Arc::new(payload(EACH, 7));
    let (most_tx, most_rx) = mpsc::channel();
    let senders: Vec<_> = tunnels
        .into_iter()
        .map(|mut s| {
            let (data, most_tx) = (data.clone(), most_tx.clone());
            thread::spawn(move || {
                for chunk in data.chunks(MIB) {
                    s.write_all(chunk).expect("write");
                    let _ = most_tx.send(open_fds().1);
                }
                s.shutdown(Shutdown::Write).expect("half-close");
                let mut ack = [0u8; 8];
                s.read_exact(&mut ack).expect("ack");
                u64::from_be_bytes(ack)
            })
        })
        .collect();
    for sender in senders {
        assert_eq!(
            sender.join().expect("sender"),
            EACH as u64,
            "upstream got every byte"
        );
    }
    drop(most_tx);
    let most_pipes = most_rx.try_iter().max().unwrap_or(0);
    // 32 pipes at most (two descriptors each), whatever the number of tunnels.
    assert!(
        most_pipes <= baseline_pipes + 64,
        "{most_pipes} pipe descriptors open at once ({baseline_pipes} before the tunnels)"
    );

    let events = wait_events(&proxy, N + 1);
    assert!(events.iter().all(|e| e.reason.is_none()), "{events:#?}");
    assert!(
        events[1..]
            .iter()
            .all(|e| e.bytes_up == EACH as u64 && e.bytes_down == 8),
        "{events:#?}"
    );
    let (after, pipes) = wait_fds(baseline);
    assert!(
        after <= baseline,
        "{} descriptors left open after the tunnels ended ({pipes} pipes)",
        after - baseline
    );
    drop(proxy);
}

#[test]
fn an_idle_bulk_tunnel_gives_its_pipes_back_and_keeps_working() {
    let _serial = serial();
    let up = upstream(1, |mut s| {
        let mut buf = vec![0u8; 256 * 1024];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 || s.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
    let proxy = start_proxy(None);
    let (_, pipes_before) = open_fds();
    let mut s = tunnel(&proxy, up.port());
    let data = payload(8 * MIB, 8);
    let writer = {
        let mut w = s.try_clone().expect("clone");
        let data = data.clone();
        thread::spawn(move || w.write_all(&data).expect("write"))
    };
    let mut back = vec![0u8; data.len()];
    s.read_exact(&mut back).expect("echo");
    writer.join().expect("writer");
    assert!(back == data);
    // Idle for longer than the relay keeps a pipe.
    let deadline = Instant::now() + Duration::from_secs(10);
    while open_fds().1 > pipes_before && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        open_fds().1,
        pipes_before,
        "an idle tunnel still holds pipes"
    );
    let mut small = [0u8; 5];
    s.write_all(b"hello").expect("write after idle");
    s.read_exact(&mut small).expect("echo after idle");
    assert_eq!(&small, b"hello");
}
