//! Starving `airlock serve` without credentials: thousands of connections that never finish
//! their headers, from many loopback peers or from one. Each test starts a real server with a
//! lowered open-file limit (so the flood outnumbers its descriptors, as 20,000 connections
//! outnumber a default limit), floods it from this process, and checks that an authorised
//! request is still answered, that the server closes the flood, and that it still runs boxes.
//! Only loopback addresses and sockets this test made are touched; every socket is closed and
//! the server stopped by its pid.
#![allow(clippy::unwrap_used)]

mod common;

use common::{airlock_bin, ServeProcess, TempDir};
use socket2::{Domain, Socket, Type};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long one connect of the flood may take: a server that stops accepting fills its
/// backlog, and further connects hang; the flood moves on.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(200);
/// The flood gives up after this long, however far it got.
const FLOOD_LIMIT: Duration = Duration::from_secs(20);
/// An authorised request must be answered within this long during and after the flood.
const ANSWER_LIMIT: Duration = Duration::from_secs(2);

/// Starts `airlock serve` whose open-file limit (soft and hard) is `nofile`.
fn start_server(data: &TempDir, nofile: u64, extra: &[&str]) -> ServeProcess {
    let mut cmd = Command::new(airlock_bin());
    // SAFETY: the closure runs in the child between fork and exec and only calls setrlimit,
    // which is async-signal-safe; it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: nofile,
                rlim_max: nofile,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    ServeProcess::start_with(cmd, data.path(), extra)
}

/// Raises this process's open-file limit to its hard limit; panics (never skips) when that is
/// too low for `need` sockets.
fn raise_own_limit(need: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-pointer to an rlimit.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    lim.rlim_cur = lim.rlim_max;
    // SAFETY: a valid rlimit; raising the soft limit to the hard one needs no privilege.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    assert!(
        lim.rlim_max >= need + 256,
        "this test opens {need} sockets but the hard open-file limit is {}; raise it \
         (ulimit -Hn, or LimitNOFILE for the CI runner)",
        lim.rlim_max
    );
}

fn server_addr(serve: &ServeProcess) -> SocketAddr {
    serve.base.trim_start_matches("http://").parse().unwrap()
}

/// A TCP connection from `src` (a loopback address) to `dst`, or None if it did not connect in
/// time.
fn connect_from(src: Ipv4Addr, dst: SocketAddr) -> Option<TcpStream> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::new(IpAddr::V4(src), 0).into()).unwrap();
    s.connect_timeout(&dst.into(), CONNECT_TIMEOUT).ok()?;
    Some(s.into())
}

/// Opens up to `count` connections to `dst`, round-robin from `peers`, every other one sending
/// half a request line and stalling, the rest sending nothing. Stops early at [`FLOOD_LIMIT`].
fn flood(dst: SocketAddr, peers: &[Ipv4Addr], count: usize) -> Vec<TcpStream> {
    let start = Instant::now();
    let mut open = Vec::with_capacity(count);
    for i in 0..count {
        if start.elapsed() > FLOOD_LIMIT {
            break;
        }
        let Some(mut s) = connect_from(peers[i % peers.len()], dst) else {
            continue;
        };
        if i % 2 == 0 {
            // The server may already have closed it; only the attempt matters.
            let _ = s.write_all(b"GET /v1/sandboxes HT");
        }
        open.push(s);
    }
    open
}

/// What became of a flood connection by `deadline`.
#[derive(Debug, PartialEq, Eq)]
enum Fate {
    /// The server closed it (EOF or reset), after sending this much.
    Closed(Vec<u8>),
    /// Still open at the deadline.
    Open,
}

/// Reads `s` until the server closes it or `deadline` passes; past the deadline, only what has
/// already arrived is read.
fn fate(s: &mut TcpStream, deadline: Instant) -> Fate {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            s.set_nonblocking(true).unwrap();
        } else {
            s.set_read_timeout(Some(left)).unwrap();
        }
        match s.read(&mut buf) {
            Ok(0) => return Fate::Closed(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return Fate::Closed(got),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if left.is_zero() {
                    return Fate::Open;
                }
            }
            Err(e) => panic!("reading a flood connection: {e}"),
        }
    }
}

/// Sends one request from `src` over a fresh connection; the status line, or why there was
/// none within [`ANSWER_LIMIT`].
fn request_from(
    src: Ipv4Addr,
    dst: SocketAddr,
    key: &str,
    method: &str,
    path: &str,
    body: &str,
) -> Result<(String, String), String> {
    let start = Instant::now();
    let mut s = connect_from(src, dst).ok_or("the connection was not accepted")?;
    s.set_read_timeout(Some(ANSWER_LIMIT)).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: airlock.test\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)
        .map_err(|e| format!("no full answer after {:?}: {e}", start.elapsed()))?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, rest) = text
        .split_once("\r\n\r\n")
        .ok_or(format!("no answer: {text:?}"))?;
    let status = head.lines().next().unwrap_or_default().to_string();
    Ok((status, rest.to_string()))
}

fn loopback(c: u8, d: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, c, d)
}

/// The sandbox-host processes started by the server.
fn sandbox_hosts(server: i32) -> Vec<i32> {
    common::box_hosts(server)
}

/// Stops the server and checks that it left no box process behind.
fn stop_and_check(mut serve: ServeProcess) {
    let hosts = sandbox_hosts(serve.pid());
    serve.stop();
    for pid in hosts {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty()
                || stat
                    .rsplit_once(')')
                    .is_some_and(|(_, r)| r.contains(" Z ")),
            "sandbox host {pid} outlived the server"
        );
    }
}

#[test]
fn thousands_of_idle_connections_do_not_starve_an_authorised_client() {
    const FLOOD: usize = 4000;
    raise_own_limit(FLOOD as u64);
    let data = TempDir::new("serve-flood");
    // 2048 descriptors: the flood alone would take them all.
    let serve = start_server(&data, 2048, &["--header-timeout", "3s"]);
    let key = serve.printed_key.clone().unwrap();
    let addr = server_addr(&serve);

    // Twenty peers, 200 connections each: under the per-peer cap, over the global one.
    let peers: Vec<Ipv4Addr> = (1..=20).map(|d| loopback(1, d)).collect();
    let mut flooded = flood(addr, &peers, FLOOD);
    let flooded_at = Instant::now();
    assert!(
        flooded.len() > 2048,
        "only {} of {FLOOD} flood connections connected; the test needs more than the server's \
         descriptors",
        flooded.len()
    );

    let asked = Instant::now();
    let answer = request_from(loopback(0, 1), addr, &key, "GET", "/v1/sandboxes", "");
    let waited = asked.elapsed();
    let (status, _) = answer.unwrap_or_else(|e| {
        panic!("an authorised request during a flood of idle connections got no answer: {e}")
    });
    assert_eq!(status, "HTTP/1.1 200 OK", "after {waited:?}");
    assert!(waited < ANSWER_LIMIT, "answered only after {waited:?}");

    // Every flood connection is closed by the server: within the header timeout of its accept,
    // or sooner when a newer connection took its place.
    let deadline = flooded_at + Duration::from_secs(3) + Duration::from_secs(5);
    let still_open = flooded
        .iter_mut()
        .map(|s| fate(s, deadline))
        .filter(|f| *f == Fate::Open)
        .count();
    assert_eq!(
        still_open,
        0,
        "{still_open} of {} idle connections were still open 5 s past the header timeout",
        flooded.len()
    );
    drop(flooded);

    // The server still starts a box and runs a command in it.
    let (status, body) = request_from(loopback(0, 1), addr, &key, "POST", "/v1/sandboxes", "{}")
        .unwrap_or_else(|e| panic!("create after the flood: {e}"));
    assert!(status.starts_with("HTTP/1.1 201"), "{status} {body}");
    let id = body
        .split("\"id\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("no id in {body}"))
        .to_string();
    let exec = request_from(
        loopback(0, 1),
        addr,
        &key,
        "POST",
        &format!("/v1/sandboxes/{id}/exec"),
        r#"{"cmd": ["sh", "-c", "echo still-serving"]}"#,
    )
    .unwrap_or_else(|e| panic!("exec after the flood: {e}"));
    assert!(exec.1.contains("still-serving"), "{exec:?}");
    assert!(exec.1.contains(r#""exit_code":0"#), "{exec:?}");
    stop_and_check(serve);
}

#[test]
fn one_peer_over_its_cap_does_not_shut_out_another() {
    const FLOOD: usize = 1200;
    const PER_PEER: usize = 50;
    raise_own_limit(FLOOD as u64);
    let data = TempDir::new("serve-peer-flood");
    // 1024 descriptors: more than the per-peer cap, fewer than the flood. The header timeout
    // is long, so every close seen here is the cap's doing.
    let serve = start_server(
        &data,
        1024,
        &[
            "--max-connections-per-peer",
            &PER_PEER.to_string(),
            "--header-timeout",
            "60s",
        ],
    );
    let key = serve.printed_key.clone().unwrap();
    let addr = server_addr(&serve);

    let attacker = loopback(0, 3);
    let mut flooded = flood(addr, &[attacker], FLOOD);
    assert!(
        flooded.len() > 1024,
        "only {} of {FLOOD} flood connections connected",
        flooded.len()
    );

    let (status, _) = request_from(loopback(0, 2), addr, &key, "GET", "/v1/sandboxes", "")
        .unwrap_or_else(|e| {
            panic!("a request from 127.0.0.2 got no answer while 127.0.0.3 flooded: {e}")
        });
    assert_eq!(status, "HTTP/1.1 200 OK");
    // The flooding peer itself is over its cap: refused at once, not queued. (After a pause:
    // the server keeps only a few refused connections open long enough for their 503 to be
    // read, and the last of the flood may hold those places for a quarter of a second.)
    std::thread::sleep(Duration::from_millis(500));
    let (status, body) = request_from(attacker, addr, &key, "GET", "/v1/sandboxes", "")
        .unwrap_or_else(|e| panic!("a request from the flooding peer was not refused: {e}"));
    assert!(status.starts_with("HTTP/1.1 503"), "{status}");
    assert!(body.contains("--max-connections-per-peer"), "{body}");

    // Those over the cap were closed at once (well before the 60 s header timeout); the
    // first PER_PEER are held.
    std::thread::sleep(Duration::from_secs(1));
    let now = Instant::now();
    let fates: Vec<Fate> = flooded.iter_mut().map(|s| fate(s, now)).collect();
    let open = fates.iter().filter(|f| **f == Fate::Open).count();
    assert_eq!(
        open,
        PER_PEER,
        "{open} of {} connections from one peer are held",
        flooded.len()
    );
    drop(flooded);
    stop_and_check(serve);
}

#[test]
fn a_silent_stream_outlives_the_header_timeout() {
    let data = TempDir::new("serve-stream");
    let serve = ServeProcess::start(data.path(), &["--header-timeout", "1s"]);
    let key = serve.printed_key.clone().unwrap();
    let addr = server_addr(&serve);
    let (status, body) = request_from(loopback(0, 1), addr, &key, "POST", "/v1/sandboxes", "{}")
        .unwrap_or_else(|e| panic!("create: {e}"));
    assert!(status.starts_with("HTTP/1.1 201"), "{status} {body}");
    let id = body
        .split("\"id\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("no id in {body}"))
        .to_string();
    // The command is silent for three header timeouts; its stream must not be cut.
    let mut s = connect_from(loopback(0, 1), addr).unwrap();
    let cmd = r#"{"cmd": ["sh", "-c", "sleep 3; echo after-the-silence"]}"#;
    let req = format!(
        "POST /v1/sandboxes/{id}/exec HTTP/1.1\r\nHost: airlock.test\r\n\
         Authorization: Bearer {key}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{cmd}",
        cmd.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("after-the-silence"), "{text}");
    assert!(text.contains(r#""exit_code":0"#), "{text}");
    stop_and_check(serve);
}

/// Sends one keep-alive request on `s` and reads its response (Content-Length framed).
fn keep_alive_get(s: &mut TcpStream, key: &str) -> std::io::Result<String> {
    let req = format!(
        "GET /v1/sandboxes HTTP/1.1\r\nHost: airlock.test\r\nAuthorization: Bearer {key}\r\n\r\n"
    );
    s.write_all(req.as_bytes())?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::Error::other("closed before a whole response"));
        }
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let len: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        if body.len() >= len {
            return Ok(head.lines().next().unwrap_or("").to_string());
        }
    }
}

#[test]
fn a_kept_alive_connection_outlives_the_header_timeout_and_closes_after_the_idle_timeout() {
    let data = TempDir::new("serve-idle");
    let serve = ServeProcess::start(
        data.path(),
        &["--header-timeout", "1s", "--idle-timeout", "4s"],
    );
    let key = serve.printed_key.clone().unwrap();
    let addr = server_addr(&serve);
    let mut s = connect_from(loopback(0, 1), addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(keep_alive_get(&mut s, &key)
        .unwrap()
        .starts_with("HTTP/1.1 200"));
    // Idle between requests for twice the header timeout: a client reusing its pooled
    // connection now must be answered, not reset (the header timeout is for heads in progress).
    std::thread::sleep(Duration::from_millis(2000));
    let status = keep_alive_get(&mut s, &key)
        .unwrap_or_else(|e| panic!("the reused connection was closed: {e}"));
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    // Idle past the idle timeout: the server closes it.
    let start = Instant::now();
    let mut buf = [0u8; 16];
    let n = s.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "the server closes an idle kept-alive connection");
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(3000) && waited < Duration::from_secs(9),
        "closed after about the idle timeout, not {waited:?}"
    );
    // A kept-alive connection whose next request head stalls is closed after the header timeout.
    let mut s = connect_from(loopback(0, 1), addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(keep_alive_get(&mut s, &key)
        .unwrap()
        .starts_with("HTTP/1.1 200"));
    s.write_all(b"GET /v1/sandboxes HTTP/1.1\r\nHost: air")
        .unwrap();
    let start = Instant::now();
    let n = s.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "a stalled head is closed");
    assert!(
        start.elapsed() < Duration::from_millis(3000),
        "after about the header timeout, not {:?}",
        start.elapsed()
    );
    stop_and_check(serve);
}
