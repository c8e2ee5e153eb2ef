//! Attacks on the plain-HTTP proxy that hide a second request behind the first one on the same
//! client connection (pipelining, request smuggling), against a real upstream server on
//! 127.0.0.1 that the test starts. The upstream is deliberately permissive: it keeps every
//! connection open, ignores `Connection: close`, answers every request it can read, and keeps
//! every byte it received. Each attack asserts that the hidden request (`Host:
//! internal-only.test`) never reached it, that no answer to it came back, and that the proxy
//! closed the client connection after the one response. Every wait is bounded.

use airlock_proxy::decision::Resolver;
use airlock_proxy::rules::EgressRules;
use airlock_proxy::server::{start_with_resolver, ProxyConfig, ProxyHandle};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the client waits for the proxy to close the connection after the response.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
const ALLOWED: &str = "allowed.test";
const HIDDEN: &str = "internal-only.test";

/// Resolves only `allowed.test` (to 127.0.0.1); never touches DNS.
struct AllowedOnly;

impl Resolver for AllowedOnly {
    fn resolve(&self, name: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
        if name == ALLOWED {
            Ok(vec![LOCALHOST])
        } else {
            Err(io::Error::new(io::ErrorKind::NotFound, "not a test name"))
        }
    }
}

fn start_proxy() -> ProxyHandle {
    let rules = EgressRules::parse(&[ALLOWED.into()], &[], &["127.0.0.1/32".into()], &[])
        .expect("test rules parse");
    let config = ProxyConfig {
        rules,
        max_connections: 64,
        byte_budget: None,
        connect_timeout: Duration::from_secs(5),
        audit: None,
        on_event: None,
        intercept: None,
        approval: None,
        peer_names: None,
    };
    let listener = TcpListener::bind((LOCALHOST, 0)).expect("bind proxy listener");
    start_with_resolver(listener, config, Arc::new(AllowedOnly)).expect("start proxy")
}

// ----- the recording upstream -----

/// One request the upstream parsed: request line, `Host`, body.
#[derive(Debug, Clone)]
struct Seen {
    line: String,
    host: String,
    body: Vec<u8>,
    content_length_lines: usize,
}

/// A keep-alive HTTP/1.1 server on 127.0.0.1:0 that answers every request it reads on a
/// connection (ignoring `Connection: close`) with `answer for <host> <target>`, until the
/// connection ends or its bytes stop parsing. It keeps every byte received and every request.
struct Recorder {
    addr: SocketAddr,
    raw: Arc<Mutex<Vec<u8>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    connections: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind((LOCALHOST, 0)).expect("bind upstream");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("upstream addr");
        let raw = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s, c, halt) = (raw.clone(), seen.clone(), connections.clone(), stop.clone());
        thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !halt.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        c.fetch_add(1, Ordering::SeqCst);
                        let (r, s) = (r.clone(), s.clone());
                        thread::spawn(move || serve_keep_alive(stream, &r, &s));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Recorder {
            addr,
            raw,
            seen,
            connections,
            stop,
        }
    }

    fn raw(&self) -> Vec<u8> {
        self.raw.lock().expect("raw log").clone()
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("request log").clone()
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Asserts the hidden request never reached this server, in any form.
    fn assert_never_saw_hidden(&self, context: &str) {
        let raw = self.raw();
        assert!(
            !contains(&raw, HIDDEN.as_bytes()) && !contains(&raw, b"/admin"),
            "{context}: the hidden request reached the upstream: {:?}",
            String::from_utf8_lossy(&raw)
        );
        assert!(
            self.seen().iter().all(|s| s.host != HIDDEN),
            "{context}: the upstream parsed the hidden request: {:?}",
            self.seen()
        );
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Reads bytes into `buf` until `pred(buf)` gives a value; `None` at end of file or error.
fn read_until<T>(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    raw: &Mutex<Vec<u8>>,
    pred: impl Fn(&[u8]) -> Option<T>,
) -> Option<T> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(v) = pred(buf) {
            return Some(v);
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => {
                raw.lock().expect("raw log").extend_from_slice(&chunk[..n]);
                buf.extend_from_slice(&chunk[..n]);
            }
        }
        if buf.len() > 1 << 20 {
            return None;
        }
    }
}

fn find(buf: &[u8], needle: &[u8]) -> Option<usize> {
    buf.windows(needle.len()).position(|w| w == needle)
}

fn serve_keep_alive(mut s: TcpStream, raw: &Mutex<Vec<u8>>, seen: &Mutex<Vec<Seen>>) {
    let _ = s.set_read_timeout(Some(IO_TIMEOUT));
    let _ = s.set_write_timeout(Some(IO_TIMEOUT));
    let mut buf = Vec::new();
    loop {
        let Some(end) = read_until(&mut s, &mut buf, raw, |b| find(b, b"\r\n\r\n")) else {
            return;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let line = lines.next().unwrap_or("").to_string();
        let (mut host, mut length, mut chunked, mut cl_lines) = (String::new(), 0, false, 0);
        for l in lines {
            let (name, value) = l.split_once(':').unwrap_or((l, ""));
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "host" => host = value.to_string(),
                "content-length" => {
                    cl_lines += 1;
                    // The first value wins, as in many servers.
                    if cl_lines == 1 {
                        length = value.parse().unwrap_or(0);
                    }
                }
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                _ => {}
            }
        }
        let body = if chunked {
            let mut body = Vec::new();
            loop {
                let Some(eol) = read_until(&mut s, &mut buf, raw, |b| find(b, b"\r\n")) else {
                    return;
                };
                let size_text = String::from_utf8_lossy(&buf[..eol]).into_owned();
                let size_text = size_text.split(';').next().unwrap_or("").trim().to_string();
                let Ok(size) = usize::from_str_radix(&size_text, 16) else {
                    return;
                };
                buf.drain(..eol + 2);
                if size == 0 {
                    // Trailers until the empty line.
                    let Some(end) = read_until(&mut s, &mut buf, raw, |b| {
                        if b.starts_with(b"\r\n") {
                            Some(0)
                        } else {
                            find(b, b"\r\n\r\n").map(|e| e + 2)
                        }
                    }) else {
                        return;
                    };
                    buf.drain(..end + 2);
                    break;
                }
                let whole = |b: &[u8]| (b.len() >= size + 2).then_some(());
                if read_until(&mut s, &mut buf, raw, whole).is_none() {
                    return;
                }
                body.extend_from_slice(&buf[..size]);
                buf.drain(..size + 2);
            }
            body
        } else {
            if read_until(&mut s, &mut buf, raw, |b| (b.len() >= length).then_some(())).is_none() {
                return;
            }
            buf.drain(..length).collect()
        };
        let target = line.split(' ').nth(1).unwrap_or("").to_string();
        let answer = format!("answer for {host} {target}\n");
        seen.lock().expect("request log").push(Seen {
            line,
            host,
            body,
            content_length_lines: cl_lines,
        });
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if s.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

// ----- the client -----

/// What the client got back: every byte until the proxy closed (or [`CLOSE_WAIT`] passed).
struct Reply {
    bytes: Vec<u8>,
    closed_by_proxy: bool,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    fn status(&self) -> Option<u16> {
        let text = self.text();
        let first = text.lines().next()?;
        first.split(' ').nth(1)?.parse().ok()
    }
}

/// Sends `bytes` to the proxy in one write (so the hidden request arrives in the same read as
/// the first one) and reads until the proxy closes.
fn exchange(proxy: &ProxyHandle, bytes: &[u8]) -> Reply {
    let mut s = TcpStream::connect(proxy.local_addr()).expect("connect to proxy");
    s.set_read_timeout(Some(CLOSE_WAIT)).expect("read timeout");
    s.set_write_timeout(Some(IO_TIMEOUT))
        .expect("write timeout");
    s.set_nodelay(true).expect("nodelay");
    s.write_all(bytes).expect("send the requests");
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let closed_by_proxy = loop {
        match s.read(&mut chunk) {
            Ok(0) => break true,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break true,
            Err(_) => break false,
        }
    };
    Reply {
        bytes: got,
        closed_by_proxy,
    }
}

/// The request the attacker hides after the allowed one.
fn hidden() -> String {
    format!("GET /admin HTTP/1.1\r\nHost: {HIDDEN}\r\n\r\n")
}

/// Asserts the one allowed answer came back, nothing for the hidden request, and the proxy
/// closed the connection with `Connection: close`.
fn assert_only_first_answered(reply: &Reply, first_target: &str, context: &str) {
    let text = reply.text();
    assert_eq!(reply.status(), Some(200), "{context}: {text:?}");
    assert!(
        text.contains(&format!("answer for {ALLOWED}")) && text.contains(first_target),
        "{context}: no answer to the allowed request: {text:?}"
    );
    assert!(
        !text.contains(HIDDEN) && text.matches("HTTP/1.1 200").count() == 1,
        "{context}: an answer to the hidden request came back: {text:?}"
    );
    let head = text.split("\r\n\r\n").next().unwrap_or("");
    assert!(
        head.lines()
            .any(|l| l.eq_ignore_ascii_case("connection: close")),
        "{context}: the response does not say Connection: close: {text:?}"
    );
    assert!(
        reply.closed_by_proxy,
        "{context}: the proxy left the connection open after the response"
    );
}

// ----- the attacks -----

#[test]
fn a_request_pipelined_after_a_content_length_body_never_reaches_the_upstream() {
    let upstream = Recorder::start();
    let proxy = start_proxy();
    let port = upstream.addr.port();
    let attack = format!(
        "POST http://{ALLOWED}:{port}/upload HTTP/1.1\r\nHost: {ALLOWED}\r\n\
         Content-Length: 5\r\n\r\nhello{}",
        hidden()
    );
    let reply = exchange(&proxy, attack.as_bytes());
    assert_only_first_answered(&reply, "/upload", "Content-Length body");
    upstream.assert_never_saw_hidden("Content-Length body");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].line, "POST /upload HTTP/1.1");
    assert_eq!(seen[0].host, format!("{ALLOWED}:{port}"));
    assert_eq!(
        seen[0].body, b"hello",
        "the declared body was not forwarded"
    );
    assert_eq!(upstream.connections(), 1);
}

#[test]
fn a_request_pipelined_after_a_request_without_body_never_reaches_the_upstream() {
    let upstream = Recorder::start();
    let proxy = start_proxy();
    let port = upstream.addr.port();
    let attack = format!(
        "GET http://{ALLOWED}:{port}/page HTTP/1.1\r\nHost: {ALLOWED}\r\n\r\n{}",
        hidden()
    );
    let reply = exchange(&proxy, attack.as_bytes());
    assert_only_first_answered(&reply, "/page", "no body");
    upstream.assert_never_saw_hidden("no body");
    assert_eq!(upstream.seen().len(), 1, "{:?}", upstream.seen());
}

#[test]
fn a_request_pipelined_after_a_chunked_body_never_reaches_the_upstream() {
    let upstream = Recorder::start();
    let proxy = start_proxy();
    let port = upstream.addr.port();
    let attack = format!(
        "POST http://{ALLOWED}:{port}/chunks HTTP/1.1\r\nHost: {ALLOWED}\r\n\
         Transfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n6\r\n world\r\n\
         0\r\nX-Trailer: t\r\n\r\n{}",
        hidden()
    );
    let reply = exchange(&proxy, attack.as_bytes());
    assert_only_first_answered(&reply, "/chunks", "chunked body");
    upstream.assert_never_saw_hidden("chunked body");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].body, b"hello world",
        "the chunked body was not forwarded"
    );
}

#[test]
fn a_request_pipelined_after_an_http_1_0_request_is_not_taken_as_its_body() {
    let upstream = Recorder::start();
    let proxy = start_proxy();
    let port = upstream.addr.port();
    // HTTP/1.0 without Content-Length has no body: the bytes after the head are a second
    // request, never the first one's body.
    let attack = format!(
        "GET http://{ALLOWED}:{port}/old HTTP/1.0\r\n\r\n{}",
        hidden()
    );
    let reply = exchange(&proxy, attack.as_bytes());
    assert_eq!(reply.status(), Some(200), "{:?}", reply.text());
    assert!(
        reply
            .text()
            .contains(&format!("answer for {ALLOWED}:{port} /old")),
        "{:?}",
        reply.text()
    );
    assert!(!reply.text().contains(HIDDEN), "{:?}", reply.text());
    assert!(reply.closed_by_proxy, "the proxy left the connection open");
    upstream.assert_never_saw_hidden("HTTP/1.0");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].line, "GET /old HTTP/1.0");
}

#[test]
fn smuggling_with_ambiguous_or_malformed_framing_never_reaches_the_upstream() {
    let upstream = Recorder::start();
    let proxy = start_proxy();
    let port = upstream.addr.port();
    let post = format!("POST http://{ALLOWED}:{port}/s HTTP/1.1\r\nHost: {ALLOWED}\r\n");
    let hidden = hidden();

    // Refused outright: nothing may reach the upstream (the first two were refused before
    // this change too; they are here so that no later change loses them).
    let refused = [
        (
            "CL+TE",
            format!(
                "{post}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{hidden}"
            ),
        ),
        (
            "conflicting CLs",
            format!("{post}Content-Length: 0\r\nContent-Length: 44\r\n\r\n{hidden}"),
        ),
        (
            "chunk size overflowing 64 bits",
            format!(
                "{post}Transfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n{hidden}"
            ),
        ),
        (
            "chunk size line ended by a bare LF",
            format!("{post}Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n{hidden}"),
        ),
        (
            "chunk data longer than its size",
            format!("{post}Transfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n{hidden}"),
        ),
        (
            "chunk size with a 0x prefix",
            format!("{post}Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n{hidden}"),
        ),
    ];
    for (name, attack) in &refused {
        let reply = exchange(&proxy, attack.as_bytes());
        assert_eq!(reply.status(), Some(400), "{name}: {:?}", reply.text());
        assert!(!reply.text().contains(HIDDEN), "{name}: {:?}", reply.text());
        assert!(reply.closed_by_proxy, "{name}: the connection stayed open");
        upstream.assert_never_saw_hidden(name);
    }
    assert!(
        upstream.seen().is_empty(),
        "a refused request was answered: {:?}",
        upstream.seen()
    );

    // Duplicate identical Content-Length: one body of that length, one header upstream.
    let attack = format!("{post}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello{hidden}");
    let reply = exchange(&proxy, attack.as_bytes());
    assert_only_first_answered(&reply, "/s", "duplicate CL");
    upstream.assert_never_saw_hidden("duplicate CL");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].body, b"hello");
    assert_eq!(seen[0].content_length_lines, 1, "{seen:?}");
}

#[test]
fn keep_alive_clients_get_every_answer_over_fresh_connections() {
    // Positive control: a client that reuses its connection for the next request gets the
    // first answer with `Connection: close`, and its next request on a new connection.
    let upstream = Recorder::start();
    let proxy = start_proxy();
    let port = upstream.addr.port();
    for i in 0..3 {
        let request = format!(
            "GET http://{ALLOWED}:{port}/n{i} HTTP/1.1\r\nHost: {ALLOWED}\r\n\
             Connection: keep-alive\r\nProxy-Connection: keep-alive\r\n\r\n"
        );
        let reply = exchange(&proxy, request.as_bytes());
        assert_only_first_answered(&reply, &format!("/n{i}"), "keep-alive client");
    }
    assert_eq!(upstream.seen().len(), 3);
}

// ----- the response direction, and clients that must keep working -----

/// An upstream on 127.0.0.1:0 that runs `handler` on each connection with a log of the bytes
/// it read (the handler appends to it).
struct Scripted {
    addr: SocketAddr,
    raw: Arc<Mutex<Vec<u8>>>,
    stop: Arc<AtomicBool>,
}

impl Scripted {
    fn start(handler: fn(TcpStream, &Mutex<Vec<u8>>)) -> Scripted {
        let listener = TcpListener::bind((LOCALHOST, 0)).expect("bind upstream");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("upstream addr");
        let raw = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, halt) = (raw.clone(), stop.clone());
        thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !halt.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
                        let r = r.clone();
                        thread::spawn(move || handler(stream, &r));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Scripted { addr, raw, stop }
    }

    fn raw(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().expect("raw log")).into_owned()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Reads one request head (and returns it); the connection then stays open for `linger`.
fn read_request_head(s: &mut TcpStream, raw: &Mutex<Vec<u8>>) -> Option<String> {
    let mut buf = Vec::new();
    read_until(s, &mut buf, raw, |b| find(b, b"\r\n\r\n"))?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// Answers with a complete response and a second one behind it, then keeps the connection
/// open: the second must never reach the client.
fn answers_twice(mut s: TcpStream, raw: &Mutex<Vec<u8>>) {
    let Some(head) = read_request_head(&mut s, raw) else {
        return;
    };
    let first = if head.contains("/chunked") {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n0\r\n\r\n"
    } else if head.starts_with("HEAD ") {
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
    } else {
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst"
    };
    let second = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nsmuggled!";
    let _ = s.write_all(format!("{first}{second}").as_bytes());
    thread::sleep(Duration::from_secs(8));
}

#[test]
fn nothing_the_upstream_sends_after_its_response_reaches_the_client() {
    let upstream = Scripted::start(answers_twice);
    let proxy = start_proxy();
    let port = upstream.addr.port();
    for (method, path, body) in [
        ("GET", "/length", "first"),
        ("GET", "/chunked", "5\r\nfirst\r\n0\r\n\r\n"),
        ("HEAD", "/head", ""),
    ] {
        let request = format!("{method} http://{ALLOWED}:{port}{path} HTTP/1.1\r\n\r\n");
        let started = Instant::now();
        let reply = exchange(&proxy, request.as_bytes());
        let text = reply.text();
        assert_eq!(reply.status(), Some(200), "{path}: {text:?}");
        assert!(!text.contains("smuggled"), "{path}: {text:?}");
        assert!(
            text.ends_with(&format!("\r\n\r\n{body}")),
            "{path}: {text:?}"
        );
        assert!(
            text.contains("\r\nConnection: close\r\n"),
            "{path}: {text:?}"
        );
        assert!(reply.closed_by_proxy, "{path}: the connection stayed open");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{path}: the proxy waited for the upstream to close"
        );
    }
}

/// `Expect: 100-continue`: answers `100 Continue`, reads the declared body, answers with it.
fn continues_then_echoes(mut s: TcpStream, raw: &Mutex<Vec<u8>>) {
    let mut buf = Vec::new();
    let Some(end) = read_until(&mut s, &mut buf, raw, |b| find(b, b"\r\n\r\n")) else {
        return;
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    buf.drain(..end + 4);
    if !head.contains("\r\nexpect: 100-continue")
        || s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").is_err()
    {
        return;
    }
    if read_until(&mut s, &mut buf, raw, |b| (b.len() >= 5).then_some(())).is_none() {
        return;
    }
    let body = String::from_utf8_lossy(&buf[..5]).into_owned();
    let _ = s.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{body}").as_bytes());
    // Keep reading, as a keep-alive server would: whatever else arrives is logged.
    let _ = read_until(&mut s, &mut buf, raw, |_| None::<()>);
}

#[test]
fn expect_100_continue_gets_the_interim_answer_and_only_the_declared_body_goes_on() {
    let upstream = Scripted::start(continues_then_echoes);
    let proxy = start_proxy();
    let port = upstream.addr.port();
    let mut s = TcpStream::connect(proxy.local_addr()).expect("connect to proxy");
    s.set_read_timeout(Some(CLOSE_WAIT)).expect("read timeout");
    let head = format!(
        "PUT http://{ALLOWED}:{port}/up HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
    );
    s.write_all(head.as_bytes()).expect("send head");
    let mut interim = Vec::new();
    let mut byte = [0u8; 1];
    while !interim.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).expect("read 100 Continue"), 1);
        interim.push(byte[0]);
    }
    assert_eq!(interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(format!("hello{}", hidden()).as_bytes())
        .expect("send body");
    let mut rest = Vec::new();
    let closed = loop {
        let mut chunk = [0u8; 4096];
        match s.read(&mut chunk) {
            Ok(0) => break true,
            Ok(n) => rest.extend_from_slice(&chunk[..n]),
            Err(_) => break false,
        }
    };
    let text = String::from_utf8_lossy(&rest);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text:?}");
    assert!(text.ends_with("\r\n\r\nhello"), "{text:?}");
    assert!(closed, "the proxy left the connection open");
    // Give a late relay a moment, then check the upstream's record.
    thread::sleep(Duration::from_millis(200));
    let raw = upstream.raw();
    assert!(!raw.contains(HIDDEN) && !raw.contains("/admin"), "{raw:?}");
}
