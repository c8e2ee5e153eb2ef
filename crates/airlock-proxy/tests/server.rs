//! The real proxy server over real loopback sockets: a fake resolver (no DNS), upstream servers
//! started by each test on 127.0.0.1:0, clients that speak HTTP CONNECT, absolute-URI HTTP and
//! SOCKS5 byte by byte. Every wait is bounded (socket timeouts, deadlines on polls).

use airlock_proxy::audit::NetEvent;
use airlock_proxy::decision::Resolver;
use airlock_proxy::rules::EgressRules;
use airlock_proxy::server::{start_with_resolver, ProxyConfig, ProxyHandle};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// The longest any single socket operation in these tests may block.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// The name the fake resolver maps to 127.0.0.1.
const SVC: &str = "svc.test";

// ---------------------------------------------------------------------------------------------
// Test doubles: resolver, upstream servers, proxy setup.
// ---------------------------------------------------------------------------------------------

/// Resolves a fixed table of names, counts calls, and never touches DNS. `delay` simulates a
/// slow resolver.
struct FakeResolver {
    names: HashMap<String, Vec<IpAddr>>,
    calls: AtomicUsize,
    delay: Duration,
}

impl FakeResolver {
    fn new() -> Arc<FakeResolver> {
        Self::with_delay(Duration::ZERO)
    }

    fn with_delay(delay: Duration) -> Arc<FakeResolver> {
        let mut names = HashMap::new();
        names.insert(SVC.to_string(), vec![LOCALHOST]);
        names.insert("other.test".to_string(), vec![LOCALHOST]);
        Arc::new(FakeResolver {
            names,
            calls: AtomicUsize::new(0),
            delay,
        })
    }
}

impl Resolver for FakeResolver {
    fn resolve(&self, name: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if !self.delay.is_zero() {
            thread::sleep(self.delay);
        }
        self.names
            .get(name)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not in the fake resolver"))
    }
}

/// An upstream TCP server on 127.0.0.1:0: one thread per connection runs `handler`. Counts
/// accepted connections. The accept loop polls (non-blocking) and ends when the value is
/// dropped or after two minutes.
struct Upstream {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Upstream {
    fn start(handler: fn(TcpStream)) -> Upstream {
        let listener = TcpListener::bind((LOCALHOST, 0)).expect("bind upstream");
        listener
            .set_nonblocking(true)
            .expect("nonblocking upstream");
        let addr = listener.local_addr().expect("upstream addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, halt) = (accepted.clone(), stop.clone());
        thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !halt.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        count.fetch_add(1, Ordering::SeqCst);
                        let _ = stream.set_nonblocking(false);
                        let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
                        let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
                        thread::spawn(move || handler(stream));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        Upstream {
            addr,
            accepted,
            stop,
        }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Echoes everything until the client half-closes, then writes `after-eof` and closes.
fn echo_then_trailer(mut s: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if s.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(_) => return,
        }
    }
    let _ = s.write_all(b"after-eof");
    let _ = s.shutdown(Shutdown::Write);
}

/// Reads a request head, answers with a fixed response whose body is the head it received.
fn http_origin(mut s: TcpStream) {
    let head = read_head(&mut s);
    let body = String::from_utf8_lossy(&head).into_owned();
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = s.write_all(response.as_bytes());
    let _ = s.shutdown(Shutdown::Write);
}

/// Accepts and closes at once (for tests that only count connections).
fn close_at_once(s: TcpStream) {
    drop(s);
}

fn rules(allow_domain: &[&str], deny_domain: &[&str], allow_ip: &[&str]) -> EgressRules {
    let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    EgressRules::parse(&v(allow_domain), &v(deny_domain), &v(allow_ip), &[])
        .expect("test rules parse")
}

/// `svc.test` (any port) reachable: it resolves to 127.0.0.1, which needs an --allow-ip grant.
fn allow_svc() -> EgressRules {
    rules(&[SVC], &[], &["127.0.0.1"])
}

fn config(rules: EgressRules) -> ProxyConfig {
    ProxyConfig {
        rules,
        max_connections: 1024,
        byte_budget: None,
        connect_timeout: Duration::from_secs(5),
        audit: None,
        on_event: None,
        intercept: None,
        approval: None,
        peer_names: None,
    }
}

fn start_proxy(config: ProxyConfig) -> ProxyHandle {
    start_proxy_with(config, FakeResolver::new())
}

fn start_proxy_with(config: ProxyConfig, resolver: Arc<FakeResolver>) -> ProxyHandle {
    let listener = TcpListener::bind((LOCALHOST, 0)).expect("bind proxy listener");
    start_with_resolver(listener, config, resolver).expect("start proxy")
}

// ---------------------------------------------------------------------------------------------
// Client helpers.
// ---------------------------------------------------------------------------------------------

fn connect(proxy: &ProxyHandle) -> TcpStream {
    let s = TcpStream::connect(proxy.local_addr()).expect("connect to proxy");
    s.set_read_timeout(Some(IO_TIMEOUT)).expect("read timeout");
    s.set_write_timeout(Some(IO_TIMEOUT))
        .expect("write timeout");
    s.set_nodelay(true).expect("nodelay");
    s
}

/// Reads up to and including the blank line that ends an HTTP head (byte by byte, so nothing
/// after the head is consumed).
fn read_head(s: &mut TcpStream) -> Vec<u8> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    head
}

fn read_to_end(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// Sends `CONNECT host:port` and returns the proxy's response head.
fn connect_request(s: &mut TcpStream, host: &str, port: u16) -> String {
    let req = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n");
    s.write_all(req.as_bytes()).expect("write CONNECT");
    String::from_utf8_lossy(&read_head(s)).into_owned()
}

/// Opens a CONNECT tunnel and checks that it was established.
fn tunnel(proxy: &ProxyHandle, host: &str, port: u16) -> TcpStream {
    let mut s = connect(proxy);
    let head = connect_request(&mut s, host, port);
    assert!(
        head.starts_with("HTTP/1.1 200 "),
        "CONNECT {host}:{port} got {head:?}"
    );
    s
}

/// Writes `payload` and reads the same number of bytes back.
fn echo_round_trip(s: &mut TcpStream, payload: &[u8]) {
    s.write_all(payload).expect("write through tunnel");
    let mut back = vec![0u8; payload.len()];
    s.read_exact(&mut back).expect("read echo through tunnel");
    assert!(back == payload, "echo differs from what was sent");
}

/// A SOCKS5 no-auth greeting and CONNECT; returns the 10-byte (IPv4) reply.
fn socks5_connect(s: &mut TcpStream, dest: Socks5Dest, port: u16) -> [u8; 10] {
    s.write_all(&[5, 1, 0]).expect("socks greeting");
    let mut method = [0u8; 2];
    s.read_exact(&mut method).expect("socks method reply");
    assert_eq!(method, [5, 0], "no-auth method chosen");
    let mut req = vec![5, 1, 0];
    match dest {
        Socks5Dest::Domain(d) => {
            req.push(3);
            req.push(d.len() as u8);
            req.extend_from_slice(d.as_bytes());
        }
        Socks5Dest::V4(ip) => {
            req.push(1);
            req.extend_from_slice(&ip.octets());
        }
    }
    req.extend_from_slice(&port.to_be_bytes());
    s.write_all(&req).expect("socks request");
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).expect("socks reply");
    reply
}

enum Socks5Dest<'a> {
    Domain(&'a str),
    V4(Ipv4Addr),
}

/// A deterministic, non-repeating-looking payload.
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Polls `events()` until `pred` holds on them (at most 5 s) and returns them.
fn wait_events(proxy: &ProxyHandle, pred: impl Fn(&[NetEvent]) -> bool) -> Vec<NetEvent> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (events, _) = proxy.events();
        if pred(&events) || Instant::now() > deadline {
            return events;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

fn wait_count(proxy: &ProxyHandle, n: usize) -> Vec<NetEvent> {
    let events = wait_events(proxy, |e| e.len() >= n);
    assert_eq!(events.len(), n, "expected {n} events, got {events:#?}");
    events
}

/// True if the proxy closed the connection (EOF or reset) without sending anything.
fn closed_without_data(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
        ),
    }
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis()
}

// ---------------------------------------------------------------------------------------------
// Allowed traffic.
// ---------------------------------------------------------------------------------------------

#[test]
fn connect_tunnel_relays_both_ways_and_honours_half_close() {
    let upstream = Upstream::start(echo_then_trailer);
    let proxy = start_proxy(config(allow_svc()));
    let t0 = now_ms();
    let mut s = tunnel(&proxy, SVC, upstream.port());

    // Both directions, larger than any relay buffer.
    let data = payload(1 << 20, 1);
    let writer = {
        let mut w = s.try_clone().expect("clone");
        let data = data.clone();
        thread::spawn(move || {
            w.write_all(&data).expect("write 1 MiB");
            // Half-close: no more from the client, but the response must still arrive.
            w.shutdown(Shutdown::Write).expect("shutdown write");
        })
    };
    let got = read_to_end(&mut s);
    writer.join().expect("writer");
    assert_eq!(
        got.len(),
        data.len() + b"after-eof".len(),
        "echo plus the post-EOF trailer"
    );
    assert!(got[..data.len()] == data[..], "echoed bytes differ");
    assert_eq!(
        &got[data.len()..],
        b"after-eof",
        "upstream's bytes after the client's EOF arrive"
    );

    let events = wait_count(&proxy, 1);
    let ev = &events[0];
    assert_eq!(ev.protocol, "connect");
    assert_eq!(ev.host, SVC);
    assert_eq!(ev.port, upstream.port());
    assert_eq!(ev.decision, "allow");
    assert_eq!(ev.reason, None, "a clean tunnel has no reason");
    assert_eq!(ev.addr, Some(upstream.addr));
    assert_eq!(
        ev.rule.as_deref(),
        Some("--allow-domain svc.test, --allow-ip 127.0.0.1")
    );
    assert_eq!(ev.message, None);
    assert_eq!(ev.bytes_up, data.len() as u64);
    assert_eq!(ev.bytes_down, (data.len() + b"after-eof".len()) as u64);
    assert!(
        ev.time_ms >= t0 && ev.time_ms <= now_ms(),
        "time_ms is when the request arrived"
    );
    assert!(ev.duration_ms >= 0.0 && ev.duration_ms < 10_000.0);
    assert_eq!(upstream.accepted(), 1);
}

#[test]
fn absolute_uri_request_is_forwarded_in_origin_form() {
    let upstream = Upstream::start(http_origin);
    let proxy = start_proxy(config(allow_svc()));
    let port = upstream.port();
    let mut s = connect(&proxy);
    let req = format!(
        "GET http://{SVC}:{port}/some/path?q=1 HTTP/1.1\r\nHost: wrong.example\r\nUser-Agent: airlock-test\r\n\
         Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\n\r\n"
    );
    s.write_all(req.as_bytes()).expect("write request");
    let response = String::from_utf8(read_to_end(&mut s)).expect("utf-8 response");
    // Half-close aware: the exchange ends (and its event is written) when the client closes too.
    drop(s);
    let (head, seen) = response.split_once("\r\n\r\n").expect("a response head");
    assert!(
        head.starts_with("HTTP/1.1 200 OK\r\n"),
        "upstream response relayed: {head:?}"
    );

    // What the upstream saw (it echoes the head it received as the body).
    let lines: Vec<&str> = seen.split("\r\n").collect();
    assert_eq!(
        lines[0], "GET /some/path?q=1 HTTP/1.1",
        "origin-form request line"
    );
    assert!(
        lines.contains(&format!("Host: {SVC}:{port}").as_str()),
        "Host from the URI: {seen:?}"
    );
    assert!(
        lines.contains(&"Connection: close"),
        "Connection: close: {seen:?}"
    );
    assert!(
        lines.contains(&"User-Agent: airlock-test"),
        "end-to-end headers kept: {seen:?}"
    );
    assert!(
        !seen.to_ascii_lowercase().contains("proxy-"),
        "no Proxy-* header forwarded: {seen:?}"
    );
    assert!(
        !seen.contains("wrong.example"),
        "the client's Host is replaced: {seen:?}"
    );
    assert!(
        !seen.contains("keep-alive"),
        "hop-by-hop Connection dropped: {seen:?}"
    );

    let events = wait_count(&proxy, 1);
    assert_eq!(events[0].protocol, "http");
    assert_eq!(events[0].host, SVC);
    assert_eq!(events[0].decision, "allow");
    assert_eq!(events[0].addr, Some(upstream.addr));
    assert_eq!(events[0].bytes_down, response.len() as u64);
    assert!(events[0].bytes_up > 0);
}

#[test]
fn socks5_connect_by_domain() {
    let upstream = Upstream::start(echo_then_trailer);
    let proxy = start_proxy(config(allow_svc()));
    let mut s = connect(&proxy);
    let reply = socks5_connect(&mut s, Socks5Dest::Domain(SVC), upstream.port());
    assert_eq!(&reply[..4], &[5, 0, 0, 1], "succeeded, IPv4 bound address");
    echo_round_trip(&mut s, &payload(200_000, 2));
    s.shutdown(Shutdown::Write).expect("half-close");
    assert_eq!(read_to_end(&mut s), b"after-eof");

    let events = wait_count(&proxy, 1);
    assert_eq!(events[0].protocol, "socks5");
    assert_eq!(events[0].host, SVC);
    assert_eq!(events[0].port, upstream.port());
    assert_eq!(events[0].decision, "allow");
    assert_eq!(events[0].addr, Some(upstream.addr));
    assert_eq!(events[0].bytes_up, 200_000);
    assert_eq!(events[0].bytes_down, 200_000 + 9);
}

#[test]
fn socks5_connect_to_granted_ipv4_literal() {
    let upstream = Upstream::start(echo_then_trailer);
    let proxy = start_proxy(config(rules(&[], &[], &["127.0.0.1"])));
    let mut s = connect(&proxy);
    let reply = socks5_connect(&mut s, Socks5Dest::V4(Ipv4Addr::LOCALHOST), upstream.port());
    assert_eq!(&reply[..4], &[5, 0, 0, 1]);
    echo_round_trip(&mut s, b"literal");
    drop(s);
    let events = wait_count(&proxy, 1);
    assert_eq!(events[0].host, "127.0.0.1");
    assert_eq!(events[0].decision, "allow");
    assert_eq!(events[0].rule.as_deref(), Some("--allow-ip 127.0.0.1"));
    assert_eq!(upstream.accepted(), 1);
}

// ---------------------------------------------------------------------------------------------
// Denials.
// ---------------------------------------------------------------------------------------------

/// Reads a whole denial response and returns (status line, X-Airlock-Denied value, body).
fn read_denial(s: &mut TcpStream) -> (String, Option<String>, String) {
    let text = String::from_utf8(read_to_end(s)).expect("utf-8 denial");
    let (head, body) = text.split_once("\r\n\r\n").expect("denial head");
    let status = head.lines().next().unwrap_or_default().to_string();
    let denied = head
        .lines()
        .find_map(|l| l.strip_prefix("X-Airlock-Denied: "))
        .map(str::to_string);
    (status, denied, body.to_string())
}

#[test]
fn denials_answer_403_or_socks_2_and_never_connect() {
    let upstream = Upstream::start(close_at_once);
    let port = upstream.port();
    // other.test is allowed, svc.test is not; deny.test is denied outright; 127.0.0.1 is not
    // granted, so a name resolving to it is refused too.
    let proxy = start_proxy(config(rules(
        &["other.test", "*.deny.test"],
        &["*.deny.test"],
        &[],
    )));

    let mut s = connect(&proxy);
    assert!(connect_request(&mut s, SVC, port).starts_with("HTTP/1.1 403 "));
    drop(s);
    let mut s = connect(&proxy);
    s.write_all(format!("CONNECT {SVC}:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .expect("write");
    let (status, denied, body) = read_denial(&mut s);
    assert_eq!(status, "HTTP/1.1 403 Forbidden");
    assert_eq!(denied.as_deref(), Some("not-allowed"));
    assert!(
        body.contains(&format!("--allow-domain {SVC}:{port}")),
        "body names the flag: {body:?}"
    );
    assert!(
        body.ends_with('\n') && body.lines().count() == 1,
        "one-line body: {body:?}"
    );

    let mut s = connect(&proxy);
    s.write_all(format!("GET http://{SVC}:{port}/ HTTP/1.1\r\n\r\n").as_bytes())
        .expect("write");
    let (status, denied, _) = read_denial(&mut s);
    assert_eq!(status, "HTTP/1.1 403 Forbidden");
    assert_eq!(denied.as_deref(), Some("not-allowed"));

    let mut s = connect(&proxy);
    s.write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .expect("write");
    assert_eq!(
        read_denial(&mut s).1.as_deref(),
        Some("ip-literal-not-granted")
    );

    let mut s = connect(&proxy);
    s.write_all(format!("CONNECT other.test:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .expect("write");
    let (_, denied, body) = read_denial(&mut s);
    assert_eq!(
        denied.as_deref(),
        Some("forbidden-address"),
        "loopback needs a grant: {body}"
    );

    let mut s = connect(&proxy);
    s.write_all(format!("CONNECT a.deny.test:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .expect("write");
    assert_eq!(read_denial(&mut s).1.as_deref(), Some("denied-domain"));

    let mut s = connect(&proxy);
    let reply = socks5_connect(&mut s, Socks5Dest::Domain(SVC), port);
    assert_eq!(reply[1], 2, "SOCKS5 reply 2: not allowed by ruleset");
    assert!(closed_without_data(&mut s));
    let mut s = connect(&proxy);
    let reply = socks5_connect(&mut s, Socks5Dest::V4(Ipv4Addr::LOCALHOST), port);
    assert_eq!(reply[1], 2);

    let events = wait_count(&proxy, 8);
    assert!(events
        .iter()
        .all(|e| e.decision == "deny" && e.addr.is_none() && e.bytes_up == 0));
    assert!(events
        .iter()
        .all(|e| e.message.as_deref().is_some_and(|m| !m.is_empty())));
    let reasons: Vec<_> = events
        .iter()
        .map(|e| e.reason.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        reasons,
        [
            "not-allowed",
            "not-allowed",
            "not-allowed",
            "ip-literal-not-granted",
            "forbidden-address",
            "denied-domain",
            "not-allowed",
            "ip-literal-not-granted"
        ]
    );
    assert_eq!(events[5].rule.as_deref(), Some("--deny-domain *.deny.test"));
    thread::sleep(Duration::from_millis(100));
    assert_eq!(
        upstream.accepted(),
        0,
        "no denied request reached the upstream"
    );
}

#[test]
fn set_rules_applies_to_the_next_connection() {
    let upstream = Upstream::start(echo_then_trailer);
    let proxy = start_proxy(config(EgressRules::default()));
    let port = upstream.port();

    let mut s = connect(&proxy);
    assert!(
        connect_request(&mut s, SVC, port).starts_with("HTTP/1.1 403 "),
        "default denies"
    );

    proxy.set_rules(allow_svc());
    let mut open = tunnel(&proxy, SVC, port);
    echo_round_trip(&mut open, b"allowed now");

    proxy.set_rules(EgressRules::default());
    let mut s = connect(&proxy);
    assert!(
        connect_request(&mut s, SVC, port).starts_with("HTTP/1.1 403 "),
        "denied again"
    );
    // The rule change decides new connections; the tunnel opened before it stays as it was.
    echo_round_trip(&mut open, b"still open");
    drop(open);

    let events = wait_count(&proxy, 3);
    let decisions: Vec<_> = events.iter().map(|e| e.decision).collect();
    // The allowed tunnel's event is written when it ends, after the second denial.
    assert_eq!(decisions, ["deny", "deny", "allow"]);
    assert_eq!(upstream.accepted(), 1);
}

// ---------------------------------------------------------------------------------------------
// Limits.
// ---------------------------------------------------------------------------------------------

#[test]
fn max_connections_refuses_the_next_one_and_says_so() {
    let upstream = Upstream::start(echo_then_trailer);
    let mut cfg = config(allow_svc());
    cfg.max_connections = 3;
    let proxy = start_proxy(cfg);
    let mut open: Vec<TcpStream> = (0..3)
        .map(|_| tunnel(&proxy, SVC, upstream.port()))
        .collect();
    for (i, s) in open.iter_mut().enumerate() {
        echo_round_trip(s, format!("tunnel {i}").as_bytes());
    }

    let mut extra = connect(&proxy);
    let _ =
        extra.write_all(format!("CONNECT {SVC}:{} HTTP/1.1\r\n\r\n", upstream.port()).as_bytes());
    assert!(
        closed_without_data(&mut extra),
        "the 4th concurrent connection is closed"
    );
    let events = wait_count(&proxy, 1);
    assert_eq!(events[0].decision, "deny");
    assert_eq!(events[0].reason.as_deref(), Some("too-many-connections"));
    let message = events[0].message.clone().unwrap_or_default();
    assert!(
        message.contains('3'),
        "the message names the limit: {message:?}"
    );
    assert_eq!(upstream.accepted(), 3);

    // The open tunnels are unaffected, and a slot frees up when one closes.
    echo_round_trip(&mut open[0], b"still fine");
    drop(open.pop());
    wait_count(&proxy, 2);
    let mut again = tunnel(&proxy, SVC, upstream.port());
    echo_round_trip(&mut again, b"slot reused");
}

#[test]
fn byte_budget_cuts_the_transfer() {
    let upstream = Upstream::start(echo_then_trailer);
    let mut cfg = config(allow_svc());
    cfg.byte_budget = Some(1 << 20);
    let proxy = start_proxy(cfg);
    let mut s = tunnel(&proxy, SVC, upstream.port());
    let writer = {
        let mut w = s.try_clone().expect("clone");
        thread::spawn(move || {
            // Fails part way (reset) once the proxy cuts the tunnel.
            let data = payload(8 << 20, 3);
            let _ = w.write_all(&data);
        })
    };
    let mut got = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    let _ = s.shutdown(Shutdown::Both);
    writer.join().expect("writer");
    assert!(
        got < 1 << 20,
        "the echo stopped before the budget: {got} bytes came back"
    );

    let events = wait_count(&proxy, 1);
    assert_eq!(events[0].decision, "allow");
    assert_eq!(events[0].reason.as_deref(), Some("byte-budget-exhausted"));
    assert!(
        events[0].bytes_up + events[0].bytes_down <= 1 << 20,
        "{:?}",
        events[0]
    );

    // The budget is for the whole box: the next tunnel is cut at its first bytes.
    let mut s = tunnel(&proxy, SVC, upstream.port());
    let _ = s.write_all(b"more");
    assert!(closed_without_data(&mut s));
    let events = wait_count(&proxy, 2);
    assert_eq!(events[1].reason.as_deref(), Some("byte-budget-exhausted"));
}

// ---------------------------------------------------------------------------------------------
// Hostile clients.
// ---------------------------------------------------------------------------------------------

#[test]
fn garbage_and_oversized_heads_are_refused_and_the_server_keeps_serving() {
    let upstream = Upstream::start(echo_then_trailer);
    let proxy = start_proxy(config(allow_svc()));

    let mut s = connect(&proxy);
    s.write_all(b"hello there, not http\r\n\r\n")
        .expect("write garbage");
    let (status, denied, _) = read_denial(&mut s);
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert_eq!(denied, None);

    let mut s = connect(&proxy);
    s.write_all(b"\x00\x01\x02\xff\xfe\r\x7f\n\n")
        .expect("write binary");
    assert!(read_denial(&mut s).0.starts_with("HTTP/1.1 400 "));

    // Exactly MAX_HEAD bytes without the end of the head: the proxy reads all of it, then
    // answers 431.
    let mut s = connect(&proxy);
    let mut big = format!("CONNECT {SVC}:{} HTTP/1.1\r\n", upstream.port()).into_bytes();
    while big.len() < airlock_proxy::http::MAX_HEAD {
        big.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    big.truncate(airlock_proxy::http::MAX_HEAD);
    s.write_all(&big).expect("write big head");
    assert_eq!(
        read_denial(&mut s).0,
        "HTTP/1.1 431 Request Header Fields Too Large"
    );

    let mut s = tunnel(&proxy, SVC, upstream.port());
    echo_round_trip(&mut s, b"still serving");
    drop(s);

    let events = wait_count(&proxy, 4);
    assert!(events[..3]
        .iter()
        .all(|e| e.decision == "deny" && e.reason.as_deref() == Some("bad-request")));
    assert_eq!(events[3].decision, "allow");
    assert_eq!(upstream.accepted(), 1);
}

#[test]
fn socks4_is_refused_in_its_own_protocol() {
    let upstream = Upstream::start(close_at_once);
    let proxy = start_proxy(config(rules(&[], &[], &["127.0.0.1"])));
    let mut s = connect(&proxy);
    let mut req = vec![4, 1];
    req.extend_from_slice(&upstream.port().to_be_bytes());
    req.extend_from_slice(&[127, 0, 0, 1]);
    req.extend_from_slice(b"user\0");
    s.write_all(&req).expect("socks4 request");
    let t = Instant::now();
    let mut reply = [0u8; 8];
    s.read_exact(&mut reply)
        .expect("a SOCKS4 reply, not a hang");
    assert_eq!(reply, airlock_proxy::socks5::SOCKS4_REJECTED);
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(closed_without_data(&mut s));
    let events = wait_count(&proxy, 1);
    assert_eq!(events[0].decision, "deny");
    assert_eq!(events[0].reason.as_deref(), Some("bad-request"));
    assert!(events[0]
        .message
        .as_deref()
        .unwrap_or("")
        .contains("SOCKS4"));
    assert_eq!(upstream.accepted(), 0);
}

#[test]
fn a_stalled_client_does_not_block_others() {
    let upstream = Upstream::start(echo_then_trailer);
    let proxy = start_proxy(config(allow_svc()));
    // Half a CONNECT head, then silence; and a SOCKS5 greeting cut in the middle.
    let mut loris = connect(&proxy);
    loris
        .write_all(format!("CONNECT {SVC}:{} HTTP/1.1\r\nHost: sv", upstream.port()).as_bytes())
        .expect("write");
    let mut loris_socks = connect(&proxy);
    loris_socks.write_all(&[5, 3, 0]).expect("write");
    thread::sleep(Duration::from_millis(50));

    let t = Instant::now();
    for i in 0..20 {
        let mut s = tunnel(&proxy, SVC, upstream.port());
        echo_round_trip(&mut s, format!("served {i}").as_bytes());
    }
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "others served while the stalled ones wait"
    );
    // The stalled clients are still waiting (the head timeout is 30 s), not answered.
    loris
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let mut buf = [0u8; 1];
    let pending = loris.read(&mut buf);
    assert!(
        matches!(&pending, Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)),
        "{pending:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Scale, events, audit, stop.
// ---------------------------------------------------------------------------------------------

#[test]
fn two_hundred_concurrent_tunnels_all_echo() {
    const N: usize = 200;
    let upstream = Upstream::start(echo_then_trailer);
    let proxy = start_proxy(config(allow_svc()));
    let mut tunnels: Vec<TcpStream> = (0..N)
        .map(|_| tunnel(&proxy, SVC, upstream.port()))
        .collect();
    // All open at once: write to every one, then read every one back.
    let payloads: Vec<Vec<u8>> = (0..N).map(|i| payload(4096 + i, i as u64)).collect();
    for (s, p) in tunnels.iter_mut().zip(&payloads) {
        s.write_all(p).expect("write");
    }
    for (s, p) in tunnels.iter_mut().zip(&payloads) {
        let mut back = vec![0u8; p.len()];
        s.read_exact(&mut back).expect("read echo");
        assert!(
            &back == p,
            "tunnel got another tunnel's bytes or corrupted ones"
        );
    }
    assert_eq!(upstream.accepted(), N);
    drop(tunnels);
    let events = wait_count(&proxy, N);
    assert!(events
        .iter()
        .all(|e| e.decision == "allow" && e.reason.is_none()));
    let mut sizes: Vec<u64> = events.iter().map(|e| e.bytes_up).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, (0..N).map(|i| (4096 + i) as u64).collect::<Vec<_>>());
}

#[test]
fn audit_file_gets_one_json_line_per_event() {
    let upstream = Upstream::start(echo_then_trailer);
    let path =
        std::env::temp_dir().join(format!("airlock-proxy-audit-{}.jsonl", std::process::id()));
    let mut cfg = config(allow_svc());
    cfg.audit = Some(std::fs::File::create(&path).expect("create audit file"));
    let proxy = start_proxy(cfg);

    let mut s = tunnel(&proxy, SVC, upstream.port());
    echo_round_trip(&mut s, b"audited");
    drop(s);
    wait_count(&proxy, 1);
    let mut s = connect(&proxy);
    assert!(connect_request(&mut s, "nope.test", 443).starts_with("HTTP/1.1 403 "));
    wait_count(&proxy, 2);
    let mut s = connect(&proxy);
    socks5_connect(&mut s, Socks5Dest::Domain(SVC), upstream.port());
    drop(s);
    let events = wait_count(&proxy, 3);
    let (_, dropped) = proxy.stop();
    assert_eq!(dropped, 0);

    let text = std::fs::read_to_string(&path).expect("read audit file");
    let _ = std::fs::remove_file(&path);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), events.len(), "one line per event: {text}");
    for (line, ev) in lines.iter().zip(&events) {
        let mut parsed: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        let mut expected = serde_json::to_value(ev).expect("event to JSON");
        // Floats may differ in the last digit after a text round trip.
        let d = parsed["duration_ms"].take().as_f64().expect("duration_ms");
        assert!((d - expected["duration_ms"].take().as_f64().expect("f64")).abs() < 1e-6);
        assert_eq!(parsed, expected, "line matches event");
    }
    let second: serde_json::Value = serde_json::from_str(lines[1]).expect("json");
    assert_eq!(second["decision"], "deny");
    assert_eq!(second["host"], "nope.test");
    assert_eq!(second["reason"], "not-allowed");
    assert!(second["addr"].is_null());
}

#[test]
fn events_have_one_entry_per_request_with_its_fields() {
    let upstream = Upstream::start(echo_then_trailer);
    let resolver = FakeResolver::new();
    let proxy = start_proxy_with(config(rules(&[SVC], &[], &["127.0.0.1"])), resolver.clone());
    let port = upstream.port();
    let t0 = now_ms();
    for i in 0..5u16 {
        let mut s = tunnel(&proxy, SVC, port);
        echo_round_trip(&mut s, &payload(100 * usize::from(i + 1), 9));
        drop(s);
        wait_count(&proxy, usize::from(i) + 1);
    }
    let mut s = connect(&proxy);
    connect_request(&mut s, "other.test", port);
    let events = wait_count(&proxy, 6);
    assert_eq!(
        resolver.calls.load(Ordering::SeqCst),
        5,
        "denied before resolution: other.test"
    );
    for (i, ev) in events[..5].iter().enumerate() {
        assert_eq!(
            (ev.protocol, ev.host.as_str(), ev.port, ev.decision),
            ("connect", SVC, port, "allow")
        );
        assert_eq!(ev.bytes_up, 100 * (i as u64 + 1));
        assert_eq!(ev.bytes_down, 100 * (i as u64 + 1) + 9, "echo plus trailer");
        assert_eq!(ev.addr, Some(upstream.addr));
        assert!(ev.time_ms >= t0 && ev.time_ms <= now_ms());
    }
    let deny = &events[5];
    assert_eq!(
        (deny.protocol, deny.host.as_str(), deny.decision),
        ("connect", "other.test", "deny")
    );
    assert_eq!(deny.reason.as_deref(), Some("not-allowed"));
    assert_eq!(deny.rule, None);
    assert_eq!((deny.bytes_up, deny.bytes_down, deny.addr), (0, 0, None));
}

#[test]
fn stop_returns_promptly_with_open_tunnels() {
    let upstream = Upstream::start(echo_then_trailer);
    let proxy = start_proxy(config(allow_svc()));
    let mut open: Vec<TcpStream> = (0..10)
        .map(|_| tunnel(&proxy, SVC, upstream.port()))
        .collect();
    for s in open.iter_mut() {
        echo_round_trip(s, b"open");
    }
    let mut half = connect(&proxy);
    half.write_all(b"CONNECT svc").expect("write");
    let t = Instant::now();
    let _ = proxy.stop();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "stop took {:?}",
        t.elapsed()
    );
    for s in open.iter_mut() {
        assert!(closed_without_data(s), "stop drops every connection");
    }
    assert!(closed_without_data(&mut half));
}

#[test]
fn stop_returns_promptly_during_a_slow_resolution() {
    let upstream = Upstream::start(echo_then_trailer);
    let proxy = start_proxy_with(
        config(allow_svc()),
        FakeResolver::with_delay(Duration::from_secs(5)),
    );
    let mut s = connect(&proxy);
    s.write_all(format!("CONNECT {SVC}:{} HTTP/1.1\r\n\r\n", upstream.port()).as_bytes())
        .expect("write");
    thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    let _ = proxy.stop();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "stop took {:?}",
        t.elapsed()
    );
    assert!(closed_without_data(&mut s));
}
