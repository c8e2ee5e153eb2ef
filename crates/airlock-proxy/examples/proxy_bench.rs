//! Loopback benchmark of the egress proxy against a direct connection, in the same run
//! (driven by `benches/proxy.sh`). Everything stays on 127.0.0.1; names resolve through a fixed
//! table, never DNS. Every loop is bounded in count, every socket operation in time.
//!
//! proxy_bench throughput BYTES ROUNDS   CONNECT tunnel vs direct, median of ROUNDS each (default 21)
//! proxy_bench placement BYTES ROUNDS    the same, pinned: relay beside the receiver, beside the
//!                                        sender, then unpinned (default 9 rounds)
//! proxy_bench latency N                  small request, new connection each, N of each kind
//! proxy_bench tunnels N                  N CONNECT tunnels held open at once, each echoing
//! proxy_bench echo-server SECONDS        prints its port, echoes for at most SECONDS
//! proxy_bench approvals N                allowed requests under approval never vs on-request;
//!                                        held requests answered at once (in-process approver)
//!                                        and by a real approver program

use airlock_proxy::approval::{
    Answer, ApprovalGate, ApprovalRequest, ApprovalScope, Approver, PendingQueue, ProgramApprover,
    Verdict,
};
use airlock_proxy::decision::Resolver;
use airlock_proxy::rules::EgressRules;
use airlock_proxy::server::{start_with_resolver, ProxyConfig, ProxyHandle};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const IO_TIMEOUT: Duration = Duration::from_secs(20);
const SVC: &str = "svc.test";

struct TableResolver;

impl Resolver for TableResolver {
    fn resolve(&self, name: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
        match name {
            SVC => Ok(vec![LOCALHOST]),
            _ => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "not in the bench table",
            )),
        }
    }
}

fn proxy() -> io::Result<ProxyHandle> {
    proxy_with(&[SVC.into()], None)
}

/// A proxy allowing `allow_domain` (127.0.0.1 granted as an address), asking `approval`.
fn proxy_with(
    allow_domain: &[String],
    approval: Option<Arc<ApprovalGate>>,
) -> io::Result<ProxyHandle> {
    let rules = EgressRules::parse(allow_domain, &[], &["127.0.0.1".into()], &[])
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let config = ProxyConfig {
        rules,
        max_connections: 4096,
        byte_budget: None,
        connect_timeout: Duration::from_secs(5),
        audit: None,
        on_event: None,
        intercept: None,
        approval,
        peer_names: None,
    };
    start_with_resolver(
        TcpListener::bind((LOCALHOST, 0))?,
        config,
        Arc::new(TableResolver),
    )
}

fn client(addr: SocketAddr) -> io::Result<TcpStream> {
    let s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    s.set_nodelay(true)?;
    Ok(s)
}

fn read_head(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 64 * 1024 || s.read(&mut byte)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "no complete head",
            ));
        }
        head.push(byte[0]);
    }
    Ok(head)
}

/// A CONNECT tunnel to `svc.test:port` through the proxy at `proxy`.
fn tunnel(proxy: SocketAddr, port: u16) -> io::Result<TcpStream> {
    let mut s = client(proxy)?;
    s.write_all(format!("CONNECT {SVC}:{port} HTTP/1.1\r\nHost: {SVC}:{port}\r\n\r\n").as_bytes())?;
    let head = read_head(&mut s)?;
    if !head.starts_with(b"HTTP/1.1 200 ") {
        return Err(io::Error::other(
            String::from_utf8_lossy(&head).into_owned(),
        ));
    }
    Ok(s)
}

/// Runs `serve` on a current-thread tokio runtime on its own thread, for at most `limit`.
fn spawn_async_server<F, Fut>(limit: Duration, serve: F) -> io::Result<SocketAddr>
where
    F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let std_listener = TcpListener::bind((LOCALHOST, 0))?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    thread::spawn(move || {
        runtime.block_on(async move {
            if let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) {
                let _ = tokio::time::timeout(limit, serve(listener)).await;
            }
        });
        runtime.shutdown_background();
    });
    Ok(addr)
}

async fn echo_forever(listener: tokio::net::TcpListener) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let _ = s.set_nodelay(true);
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
}

/// Answers each connection's request head with a small fixed response, then closes.
async fn http_forever(listener: tokio::net::TcpListener) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let _ = s.set_nodelay(true);
            let mut head = Vec::with_capacity(512);
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .await;
        });
    }
}

// ---------------------------------------------------------------------------------------------

/// Receives one stream per connection until EOF, then acknowledges the byte count. Returns
/// its address and the thread id of the receiving thread.
fn sink_server(connections: usize) -> io::Result<(SocketAddr, libc::pid_t)> {
    let listener = TcpListener::bind((LOCALHOST, 0))?;
    let addr = listener.local_addr()?;
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let _ = tid_tx.send(gettid());
        for _ in 0..connections {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let _ = s.set_read_timeout(Some(IO_TIMEOUT));
            let mut buf = vec![0u8; 1 << 20];
            let mut total = 0u64;
            loop {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => total += n as u64,
                    Err(_) => break,
                }
            }
            let _ = s.write_all(&total.to_be_bytes());
        }
    });
    let tid = tid_rx
        .recv_timeout(IO_TIMEOUT)
        .map_err(|_| io::Error::other("the sink thread did not start"))?;
    Ok((addr, tid))
}

/// Sends `bytes` on `s`, half-closes, and waits for the sink's count; returns the seconds.
fn send_all(mut s: TcpStream, bytes: u64) -> io::Result<f64> {
    let chunk = vec![0x5au8; 1 << 20];
    let start = Instant::now();
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        s.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    s.shutdown(Shutdown::Write)?;
    let mut ack = [0u8; 8];
    s.read_exact(&mut ack)?;
    let secs = start.elapsed().as_secs_f64();
    if u64::from_be_bytes(ack) != bytes {
        return Err(io::Error::other(format!(
            "sink got {} of {bytes} bytes",
            u64::from_be_bytes(ack)
        )));
    }
    Ok(secs)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Where `throughput` puts its three busy threads: the sender (this thread), the receiver
/// and the proxy's relay.
#[derive(Clone, Copy)]
enum Placement {
    /// The scheduler decides, as it does for a user.
    Free,
    /// Sender alone on CPU 0, receiver and relay on CPU 1.
    RelayWithReceiver,
    /// Sender and relay on CPU 0, receiver on CPU 1.
    RelayWithSender,
}

impl Placement {
    fn name(self) -> &'static str {
        match self {
            Placement::Free => "unpinned",
            Placement::RelayWithReceiver => "relay pinned beside the receiver",
            Placement::RelayWithSender => "relay pinned beside the sender",
        }
    }

    /// Indexes into the allowed CPUs of (sender, receiver, relay), if pinned.
    fn cpus(self) -> Option<(usize, usize, usize)> {
        match self {
            Placement::Free => None,
            Placement::RelayWithReceiver => Some((0, 1, 1)),
            Placement::RelayWithSender => Some((0, 1, 0)),
        }
    }
}

fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Restricts thread `tid` (`0`: the calling thread) to `cpus`.
fn pin(tid: libc::pid_t, cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: `set` is a valid cpu_set_t and `cpu` came from `allowed_cpus` (< CPU_SETSIZE).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; `tid` is a thread of this process.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPUs the calling thread may run on.
fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `set` is a valid cpu_set_t and every index is below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Gives the calling thread its CPUs back when dropped (also on an early error return).
struct Unpin(Vec<usize>);

impl Drop for Unpin {
    fn drop(&mut self) {
        let _ = pin(0, &self.0);
    }
}

/// The thread id of this process's thread named `name`, waiting up to two seconds for a thread
/// just spawned to name itself.
fn thread_named(name: &str) -> io::Result<libc::pid_t> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        for task in std::fs::read_dir("/proc/self/task")? {
            let task = task?;
            // A thread may end between listing and reading: skip it.
            let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) else {
                continue;
            };
            if comm.trim_end() == name {
                if let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) {
                    return Ok(tid);
                }
            }
        }
        if Instant::now() > deadline {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no thread named {name}"),
            ));
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Median throughput (GiB/s) direct and through CONNECT, with the slowest and fastest round.
struct Throughput {
    direct: (f64, f64, f64),
    proxied: (f64, f64, f64),
}

fn measure_throughput(bytes: u64, rounds: usize, placement: Placement) -> io::Result<Throughput> {
    let (sink, sink_tid) = sink_server(2 * (rounds + 1))?;
    let p = proxy()?;
    let mut _unpin = None;
    if let Some((sender, receiver, relay)) = placement.cpus() {
        let cpus = allowed_cpus()?;
        if cpus.len() < 2 {
            return Err(io::Error::other("pinning needs at least two CPUs"));
        }
        _unpin = Some(Unpin(cpus.clone()));
        pin(0, &[cpus[sender]])?;
        pin(sink_tid, &[cpus[receiver]])?;
        pin(thread_named("airlock-proxy")?, &[cpus[relay]])?;
    }
    // One pair first, not counted: buffers faulted in, socket memory grown, the relay's pipe made.
    send_all(client(sink)?, bytes)?;
    send_all(tunnel(p.local_addr(), sink.port())?, bytes)?;
    // Alternate, so that drift on the machine affects both alike.
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        direct.push(send_all(client(sink)?, bytes)?);
        proxied.push(send_all(tunnel(p.local_addr(), sink.port())?, bytes)?);
    }
    let gib = bytes as f64 / (1u64 << 30) as f64;
    let rate = |secs: &mut Vec<f64>| {
        (
            gib / median(secs),
            gib / secs[secs.len() - 1],
            gib / secs[0],
        )
    };
    Ok(Throughput {
        direct: rate(&mut direct),
        proxied: rate(&mut proxied),
    })
}

fn print_throughput(bytes: u64, rounds: usize, placement: Placement, t: &Throughput) {
    let size = match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
    };
    let ((d, d_lo, d_hi), (x, x_lo, x_hi)) = (t.direct, t.proxied);
    println!(
        "throughput ({size}, median of {rounds}, {}): direct {d:.2} GiB/s ({d_lo:.2}-{d_hi:.2}), CONNECT {x:.2} GiB/s ({x_lo:.2}-{x_hi:.2}), ratio {:.2}x (goal >= 0.90x)",
        placement.name(),
        x / d
    );
}

fn throughput(bytes: u64, rounds: usize) -> io::Result<()> {
    let t = measure_throughput(bytes, rounds, Placement::Free)?;
    print_throughput(bytes, rounds, Placement::Free, &t);
    Ok(())
}

/// The same measurement with the three busy threads pinned both ways: on a machine with two
/// CPUs it shows how much of the ratio is where the scheduler puts the relay.
fn placement(bytes: u64, rounds: usize) -> io::Result<()> {
    for placement in [
        Placement::RelayWithReceiver,
        Placement::RelayWithSender,
        Placement::Free,
    ] {
        let t = measure_throughput(bytes, rounds, placement)?;
        print_throughput(bytes, rounds, placement, &t);
    }
    Ok(())
}

fn one_request(addr: SocketAddr, request: &[u8]) -> io::Result<f64> {
    let start = Instant::now();
    let mut s = client(addr)?;
    s.write_all(request)?;
    let mut out = Vec::with_capacity(128);
    s.read_to_end(&mut out)?;
    let us = start.elapsed().as_secs_f64() * 1e6;
    if !out.starts_with(b"HTTP/1.1 200 OK") || !out.ends_with(b"ok") {
        return Err(io::Error::other(String::from_utf8_lossy(&out).into_owned()));
    }
    Ok(us)
}

fn latency(n: usize) -> io::Result<()> {
    let origin = spawn_async_server(Duration::from_secs(600), http_forever)?;
    let echo = spawn_async_server(Duration::from_secs(600), echo_forever)?;
    let p = proxy()?;
    let port = origin.port();
    let direct_req = format!("GET /small HTTP/1.1\r\nHost: {SVC}:{port}\r\n\r\n").into_bytes();
    let proxy_req = format!("GET http://{SVC}:{port}/small HTTP/1.1\r\nHost: {SVC}:{port}\r\n\r\n")
        .into_bytes();
    // Alternate, so that drift on the machine affects both alike.
    let (mut direct, mut proxied) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        direct.push(one_request(origin, &direct_req)?);
        proxied.push(one_request(p.local_addr(), &proxy_req)?);
    }
    let (d, x) = (median(&mut direct), median(&mut proxied));
    println!(
        "latency, small HTTP request on a new connection (median of {n}): direct {d:.0} us, via proxy {x:.0} us, added {:.3} ms (goal <= 0.3 ms)",
        (x - d) / 1000.0
    );

    // Round trips of 64 bytes on an open connection: what a tunnel adds once established.
    let mut ds = client(echo)?;
    let mut ts = tunnel(p.local_addr(), echo.port())?;
    let msg = [7u8; 64];
    let mut back = [0u8; 64];
    let (mut direct, mut proxied) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        for (s, out) in [(&mut ds, &mut direct), (&mut ts, &mut proxied)] {
            let start = Instant::now();
            s.write_all(&msg)?;
            s.read_exact(&mut back)?;
            out.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    let (d, x) = (median(&mut direct), median(&mut proxied));
    println!(
        "latency, 64-byte round trip in an open tunnel (median of {n}): direct {d:.0} us, via tunnel {x:.0} us, added {:.3} ms (goal <= 0.3 ms)",
        (x - d) / 1000.0
    );
    Ok(())
}

fn tunnels(n: usize) -> io::Result<()> {
    let echo = spawn_async_server(Duration::from_secs(600), echo_forever)?;
    let p = proxy()?;
    let start = Instant::now();
    let mut open = Vec::with_capacity(n);
    let mut failed = 0usize;
    for _ in 0..n {
        match tunnel(p.local_addr(), echo.port()) {
            Ok(s) => open.push(s),
            Err(_) => failed += 1,
        }
    }
    let opened = start.elapsed().as_secs_f64();
    // Every tunnel is open at this point; each echoes its own payload.
    let payload = |i: usize| format!("tunnel {i} says hello {}", "x".repeat(i % 97)).into_bytes();
    let mut ok = 0usize;
    let mut writable = vec![false; open.len()];
    for (i, s) in open.iter_mut().enumerate() {
        writable[i] = s.write_all(&payload(i)).is_ok();
    }
    for (i, s) in open.iter_mut().enumerate() {
        let want = payload(i);
        let mut got = vec![0u8; want.len()];
        if writable[i] && s.read_exact(&mut got).is_ok() && got == want {
            ok += 1;
        } else {
            failed += 1;
        }
    }
    println!(
        "concurrent tunnels (library proxy): {ok} ok, {failed} failed of {n}, all open at once (opened in {:.0} ms) (goal: {n} ok)",
        opened * 1000.0
    );
    drop(open);
    Ok(())
}

fn echo_server(seconds: u64) -> io::Result<()> {
    let addr = spawn_async_server(Duration::from_secs(seconds), echo_forever)?;
    println!("{}", addr.port());
    io::stdout().flush()?;
    thread::sleep(Duration::from_secs(seconds));
    Ok(())
}

/// Says yes at once, from inside `ask` (what a held connection costs beyond its answer).
struct InstantYes(Arc<PendingQueue>);

impl Approver for InstantYes {
    fn name(&self) -> String {
        "bench".into()
    }
    fn ask(&self, request: &ApprovalRequest) {
        let _ = self.0.answer(
            request.id,
            Answer {
                verdict: Verdict::Allow,
                scope: ApprovalScope::Once,
                ttl: None,
                byte_budget: None,
                grant: None,
                by: "bench".into(),
            },
        );
    }
}

/// Allows every request, once, as fast as Python reads and writes a line.
const PROGRAM_YES: &str = r#"/usr/bin/python3 -c 'import sys, json
for l in sys.stdin:
    print(json.dumps({"id": json.loads(l)["id"], "answer": "allow"}), flush=True)'"#;

fn approvals(n: usize) -> io::Result<()> {
    let origin = spawn_async_server(Duration::from_secs(600), http_forever)?;
    let port = origin.port();
    let req = format!("GET http://{SVC}:{port}/small HTTP/1.1\r\nHost: {SVC}:{port}\r\n\r\n")
        .into_bytes();
    let gate = |approver: Arc<dyn Approver>, pending| {
        Arc::new(ApprovalGate::new(
            approver,
            pending,
            Duration::from_secs(10),
        ))
    };
    let never = proxy_with(&[SVC.into()], None)?;
    // On-request, but the rules allow it: the gate is never consulted.
    let q = Arc::new(PendingQueue::new());
    let on_request = proxy_with(
        &[SVC.into()],
        Some(gate(Arc::new(InstantYes(q.clone())), q)),
    )?;
    // Not in the rules: every request is held and answered at once.
    let q = Arc::new(PendingQueue::new());
    let held = proxy_with(&[], Some(gate(Arc::new(InstantYes(q.clone())), q)))?;
    let q = Arc::new(PendingQueue::new());
    let program = ProgramApprover::spawn(PROGRAM_YES, q.clone())
        .map_err(|e| io::Error::other(e.to_string()))?;
    let by_program = proxy_with(&[], Some(gate(program, q)))?;
    // A second `never` proxy: how far two identical proxies differ in this run (the noise).
    let never_b = proxy_with(&[SVC.into()], None)?;
    let kinds = [&never, &on_request, &held, &by_program, &never_b];
    let mut times: Vec<Vec<f64>> = kinds.iter().map(|_| Vec::with_capacity(n)).collect();
    // Alternate, starting each round at the next kind, so that drift on the machine and the
    // position in a round affect every kind alike.
    for round in 0..n {
        for k in 0..kinds.len() {
            let i = (round + k) % kinds.len();
            times[i].push(one_request(kinds[i].local_addr(), &req)?);
        }
    }
    let m: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
    println!(
        "approvals, small HTTP request on a new connection (median of {n}): allowed under never {:.0} us, allowed under on-request {:.0} us (ratio {:.3}, goal 1.00); a second never proxy {:.0} us (ratio {:.3}: the noise between identical proxies)",
        m[0], m[1], m[1] / m[0], m[4], m[4] / m[0]
    );
    println!(
        "approvals, held and answered at once in-process: {:.0} us, added {:.3} ms over an allowed request (goal <= 1 ms)",
        m[2],
        (m[2] - m[0]) / 1000.0
    );
    println!(
        "approvals, held and answered by an approver program (python, one JSON line each way): {:.0} us, added {:.3} ms (the answer's own latency included)",
        m[3],
        (m[3] - m[0]) / 1000.0
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let result = match args.first().map(String::as_str) {
        Some("throughput") => throughput(num(1, 1 << 30), num(2, 21).max(1) as usize),
        Some("placement") => placement(num(1, 1 << 30), num(2, 9).max(1) as usize),
        Some("latency") => latency(num(1, 2000).max(1) as usize),
        Some("tunnels") => tunnels(num(1, 500) as usize),
        Some("echo-server") => echo_server(num(1, 120)),
        Some("approvals") => approvals(num(1, 2000).max(1) as usize),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "usage: proxy_bench throughput|placement|latency|tunnels|echo-server|approvals",
        )),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("proxy_bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
