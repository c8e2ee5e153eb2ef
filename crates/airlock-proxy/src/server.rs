//! The proxy server: accepts on a listening socket that lives in the box's network namespace
//! (handed over by the runtime), decides each request on the host, and relays allowed
//! connections. Runs on its own thread with a single-threaded tokio runtime.

use crate::approval::{ApprovalGate, Grant};
use crate::audit::{AuditLog, NetEvent};
use crate::decision::{decide_off_loop, EgressDecision, Resolver, SystemResolver};
use crate::intercept::Interceptor;
use crate::relay::Meter;
use crate::rules::EgressRules;
use crate::{exchange, http, socks5};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::Semaphore;

/// How a proxy is configured.
pub struct ProxyConfig {
    pub rules: EgressRules,
    /// Concurrent connections from the box; more are refused (and logged).
    pub max_connections: usize,
    /// Bytes (both directions, all connections) the box may move; `None` = unlimited.
    pub byte_budget: Option<u64>,
    pub connect_timeout: Duration,
    /// A JSON-lines audit file that receives every event as it happens.
    pub audit: Option<std::fs::File>,
    /// Told about every event as it happens (typed, for the box's owner).
    pub on_event: Option<crate::audit::EventSink>,
    /// The box's secrets: connections to their hosts are intercepted, and their placeholders
    /// are blocked everywhere else. `None`: nothing is intercepted.
    pub intercept: Option<Arc<Interceptor>>,
    /// Refused connections that may be asked about are held while this gate asks (approval
    /// `on-request`); `None` (approval `never`): every refusal is final.
    pub approval: Option<Arc<ApprovalGate>>,
    /// Names the box's process behind a connection held for approval (`None`: the backend
    /// cannot tell, and the question says nothing about who asked).
    pub peer_names: Option<crate::approval::PeerNamer>,
}

struct Shared {
    rules: RwLock<Arc<EgressRules>>,
    audit: Arc<AuditLog>,
    bytes: Arc<AtomicU64>,
    intercept: Option<Arc<Interceptor>>,
    approval: Option<Arc<ApprovalGate>>,
    peer_names: Option<crate::approval::PeerNamer>,
    budget: Option<u64>,
    host_own: Vec<IpAddr>,
    resolver: Arc<dyn Resolver>,
    slots: Arc<Semaphore>,
    max_connections: usize,
    connect_timeout: Duration,
    /// Allowed connections currently relaying.
    active: std::sync::atomic::AtomicUsize,
}

/// A running proxy.
pub struct ProxyHandle {
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    local: SocketAddr,
}

/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `stop` lets open relays finish before dropping them (they are then recorded with
/// reason `closed-at-shutdown`).
const STOP_GRACE: Duration = Duration::from_millis(200);

/// Starts a proxy on `listener` with the host's resolver.
pub fn start(listener: std::net::TcpListener, config: ProxyConfig) -> io::Result<ProxyHandle> {
    start_with_resolver(listener, config, Arc::new(SystemResolver))
}

/// Starts a proxy on `listener` with the given resolver (tests pass a fake one).
pub fn start_with_resolver(
    listener: std::net::TcpListener,
    config: ProxyConfig,
    resolver: Arc<dyn Resolver>,
) -> io::Result<ProxyHandle> {
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    // The box's side of every tunnel is a loopback connection (inside its namespace).
    crate::relay::unpace_if_loopback(&listener, local);
    let shared = Arc::new(Shared {
        rules: RwLock::new(Arc::new(config.rules)),
        audit: Arc::new(AuditLog::new(config.audit, config.on_event)),
        bytes: Arc::new(AtomicU64::new(0)),
        intercept: config.intercept,
        approval: config.approval,
        peer_names: config.peer_names,
        budget: config.byte_budget,
        host_own: host_addresses(),
        resolver,
        slots: Arc::new(Semaphore::new(config.max_connections.max(1))),
        max_connections: config.max_connections.max(1),
        connect_timeout: config.connect_timeout,
        active: std::sync::atomic::AtomicUsize::new(0),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let worker = shared.clone();
    let thread = std::thread::Builder::new()
        .name("airlock-proxy".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(_) => return,
                };
                serve(listener, worker, stop_rx).await;
            });
            // Drop every connection now; do not wait for a resolution still running on the
            // blocking pool (its result is discarded).
            runtime.shutdown_background();
        })?;
    Ok(ProxyHandle {
        shared,
        stop: Some(stop_tx),
        thread: Some(thread),
        local,
    })
}

impl ProxyHandle {
    /// Replaces the allowlist; new connections are decided by the new rules.
    pub fn set_rules(&self, rules: EgressRules) {
        if let Ok(mut r) = self.shared.rules.write() {
            *r = Arc::new(rules);
        }
    }

    /// The events so far, and how many were not kept in memory.
    pub fn events(&self) -> (Vec<NetEvent>, u64) {
        self.shared.audit.snapshot()
    }

    /// The listening address (inside the box's network namespace).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Stops accepting, drops every connection, and returns the events.
    pub fn stop(mut self) -> (Vec<NetEvent>, u64) {
        self.shutdown();
        self.shared.audit.snapshot()
    }

    fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// How long accepting pauses when the process is out of descriptors or memory.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// At most one audit event per this long about failing accepts.
const ACCEPT_NOTE_EVERY: Duration = Duration::from_secs(1);

/// Whether an accept error is the process or the kernel running out of something, which
/// retrying at once cannot fix.
fn accept_must_wait(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

fn note_accept_failure(shared: &Shared, e: &io::Error, last: &mut Option<Instant>) {
    if last.is_some_and(|t| t.elapsed() < ACCEPT_NOTE_EVERY) {
        return;
    }
    *last = Some(Instant::now());
    let message = format!("the proxy cannot accept more connections now ({e}); it retries every {} ms. Raise the open-file limit of the process running airlock (ulimit -n), or lower --max-connections", ACCEPT_BACKOFF.as_millis());
    shared.audit.record(event(
        "tcp",
        "",
        0,
        "deny",
        Some("proxy-out-of-resources"),
        None,
        Some(message),
        Instant::now(),
    ));
}

async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let mut last_failure_note: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = &mut stop => {
                // The box is usually gone by now, so its ends of the tunnels are closed: give
                // the relays a moment to see that and record their events with a real ending.
                let grace = Instant::now() + STOP_GRACE;
                while shared.active.load(Ordering::Relaxed) > 0 && Instant::now() < grace {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                return;
            }
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of descriptors (or kernel memory) the pending connection stays
                        // queued and the listener stays readable: retrying at once would spin.
                        if accept_must_wait(&e) {
                            note_accept_failure(&shared, &e, &mut last_failure_note);
                            tokio::time::sleep(ACCEPT_BACKOFF).await;
                        }
                        continue;
                    }
                };
                let shared = shared.clone();
                match shared.slots.clone().try_acquire_owned() {
                    Ok(permit) => {
                        tokio::spawn(async move {
                            handle(stream, &shared).await;
                            drop(permit);
                        });
                    }
                    Err(_) => {
                        let mut ev = event("tcp", "", 0, "deny", Some("too-many-connections"), None,
                            Some(format!("more than {} concurrent connections; raise the limit with --max-connections (max_connections in a policy file)", shared.max_connections)), Instant::now());
                        ev.denial = Some(crate::denial::too_many_connections(shared.max_connections));
                        shared.audit.record(ev);
                        drop(stream);
                    }
                }
            }
        }
    }
}

/// A new event, timed from `start`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn event(
    protocol: &'static str,
    host: &str,
    port: u16,
    decision: &'static str,
    reason: Option<&str>,
    rule: Option<String>,
    message: Option<String>,
    start: Instant,
) -> NetEvent {
    NetEvent {
        time_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0),
        protocol,
        host: host.to_string(),
        port,
        addr: None,
        decision,
        reason: reason.map(str::to_string),
        rule,
        message,
        bytes_up: 0,
        bytes_down: 0,
        duration_ms: start.elapsed().as_secs_f64() * 1000.0,
        intercepted: false,
        secrets: Vec::new(),
        approval: None,
        denial: None,
    }
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<usize> {
    let mut chunk = [0u8; 4096];
    let n = tokio::time::timeout(HEAD_TIMEOUT, stream.read(&mut chunk))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "request head timed out"))??;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

async fn handle(mut client: TcpStream, shared: &Arc<Shared>) {
    let start = Instant::now();
    let mut buf = Vec::with_capacity(4096);
    match read_more(&mut client, &mut buf).await {
        Ok(n) if n > 0 => {}
        _ => return,
    }
    if matches!(
        socks5::parse_greeting(&buf),
        Err(socks5::SocksError::Socks4Unsupported)
    ) {
        // Refused in its own protocol, so the client fails at once instead of waiting for
        // an HTTP head that never ends.
        let _ = client.write_all(&socks5::SOCKS4_REJECTED).await;
        let msg = socks5::SocksError::Socks4Unsupported.to_string();
        shared.audit.record(event(
            "socks5",
            "",
            0,
            "deny",
            Some("bad-request"),
            None,
            Some(msg),
            start,
        ));
    } else if socks5::looks_like_socks5(buf[0]) {
        handle_socks(client, buf, shared, start).await;
    } else {
        handle_http(client, buf, shared, start).await;
    }
}

async fn handle_http(
    mut client: TcpStream,
    mut buf: Vec<u8>,
    shared: &Arc<Shared>,
    start: Instant,
) {
    let (req, head_len) = loop {
        match http::parse_request(&buf) {
            Ok(Some(parsed)) => break parsed,
            Ok(None) => match read_more(&mut client, &mut buf).await {
                Ok(n) if n > 0 => continue,
                _ => return,
            },
            Err(e) => {
                let _ = client
                    .write_all(&http::error_response(e.status(), &e.to_string()))
                    .await;
                shared.audit.record(event(
                    "http",
                    "",
                    0,
                    "deny",
                    Some("bad-request"),
                    None,
                    Some(e.to_string()),
                    start,
                ));
                return;
            }
        }
    };
    let (protocol, host, port) = match &req {
        http::ProxyRequest::Connect { host, port } => ("connect", host.clone(), *port),
        http::ProxyRequest::Forward { host, port, .. } => ("http", host.clone(), *port),
    };
    // The tripwire: a secret's placeholder (or value) in a request head to a host it is not
    // bound to. What follows a CONNECT head is encrypted and not seen here.
    if let Some(leak) = find_leak_in(shared, &buf[..head_len], &host, port) {
        let message = leak.message(&host, port);
        shared.audit.record(event(
            protocol,
            &host,
            port,
            "deny",
            Some("secret-not-bound"),
            Some(leak.rule),
            Some(message.clone()),
            start,
        ));
        let _ = client
            .write_all(&http::denied_response("secret-not-bound", &message))
            .await;
        return;
    }
    let decision = decide_async(shared, &host, port).await;
    let (decision, grant) = approve(shared, protocol, decision, start, &client).await;
    let denial = crate::denial::denial_of(&decision, &shared.host_own);
    let (addrs, rule) = match decision {
        EgressDecision::Deny {
            reason,
            rule,
            message,
            ..
        } => {
            let token = kebab(&reason);
            let response = http::denied_response(&token, &message);
            // Recorded before the box is told: whoever learns of a refusal from the box (an
            // MCP tool result, an approval prompt) finds its event already there.
            let mut ev = event(
                protocol,
                &host,
                port,
                "deny",
                Some(&token),
                rule,
                Some(message),
                start,
            );
            ev.denial = denial;
            shared.audit.record(ev);
            let _ = client.write_all(&response).await;
            return;
        }
        EgressDecision::Allow { addrs, rule, .. } => (addrs, rule),
    };
    let upstream = match connect_any(&addrs, shared.connect_timeout).await {
        Ok(s) => s,
        Err(e) => {
            let msg = format!("{host}:{port} is allowed but the connection failed: {e}");
            let _ = client.write_all(&http::error_response(502, &msg)).await;
            shared.audit.record(event(
                protocol,
                &host,
                port,
                "allow",
                Some("connect-failed"),
                Some(rule),
                Some(msg),
                start,
            ));
            return;
        }
    };
    let mut ev = event(
        protocol,
        &host,
        port,
        "allow",
        None,
        Some(rule),
        None,
        start,
    );
    ev.addr = upstream.peer_addr().ok();
    let mut tunnel = Tunnel::new(shared, ev, start, grant);
    let mut upstream = upstream;
    let rest = &buf[head_len..];
    if let (http::ProxyRequest::Connect { .. }, Some((interceptor, name))) =
        (&req, intercepts(shared, &host, port))
    {
        let acks = Acks {
            ok: http::CONNECT_ESTABLISHED.to_vec(),
            failed: |m: &str| http::error_response(502, m),
        };
        let rest = buf[head_len..].to_vec();
        tunnel.mark_intercepted();
        let (reason, message) = intercept(
            shared,
            interceptor,
            client,
            upstream,
            &name,
            port,
            rest,
            &tunnel,
            acks,
        )
        .await;
        if let Some(m) = message {
            tunnel.note(m);
        }
        return tunnel.finish(reason);
    }
    let prelude = match &req {
        http::ProxyRequest::Connect { .. } => {
            if client.write_all(http::CONNECT_ESTABLISHED).await.is_err() {
                return tunnel.finish(Some("client-gone".into()));
            }
            rest.to_vec()
        }
        // Only the head: the body and anything after it go through the exchange below.
        http::ProxyRequest::Forward { .. } => http::forward_head(&req),
    };
    if !prelude.is_empty() {
        if upstream.write_all(&prelude).await.is_err() {
            return tunnel.finish(Some("upstream-gone".into()));
        }
        tunnel.up.fetch_add(prelude.len() as u64, Ordering::Relaxed);
        shared
            .bytes
            .fetch_add(prelude.len() as u64, Ordering::Relaxed);
    }
    if let http::ProxyRequest::Forward {
        method,
        version,
        body,
        ..
    } = &req
    {
        let request = exchange::Request {
            framing: *body,
            head_request: method == "HEAD",
            version: *version,
        };
        let up = Meter::new(&shared.bytes, shared.budget, &tunnel.up)
            .with_grant(tunnel.grant.as_deref());
        let down = Meter::new(&shared.bytes, shared.budget, &tunnel.down)
            .with_grant(tunnel.grant.as_deref());
        let outcome = exchange::forward_one(&client, &upstream, request, rest, up, down).await;
        if outcome.dropped > 0 {
            tunnel.note(format!(
                "{} bytes the client sent after its request (or after the response) were dropped: the proxy forwards one request per connection",
                outcome.dropped
            ));
        }
        return tunnel.finish(outcome.reason);
    }
    let err = relay(client, upstream, shared, &tunnel).await;
    tunnel.finish(err);
}

async fn handle_socks(
    mut client: TcpStream,
    mut buf: Vec<u8>,
    shared: &Arc<Shared>,
    start: Instant,
) {
    let consumed = loop {
        match socks5::parse_greeting(&buf) {
            Ok(Some((true, n))) => break n,
            Ok(Some((false, _))) => {
                let _ = client.write_all(&socks5::METHOD_NONE_ACCEPTABLE).await;
                return;
            }
            Ok(None) => match read_more(&mut client, &mut buf).await {
                Ok(n) if n > 0 => continue,
                _ => return,
            },
            Err(_) => return,
        }
    };
    buf.drain(..consumed);
    if client
        .write_all(&socks5::METHOD_NO_AUTH_REPLY)
        .await
        .is_err()
    {
        return;
    }
    let ((target, port), consumed) = loop {
        match socks5::parse_request(&buf) {
            Ok(Some(parsed)) => break parsed,
            Ok(None) => match read_more(&mut client, &mut buf).await {
                Ok(n) if n > 0 => continue,
                _ => return,
            },
            Err(e) => {
                if let Some(r) = e.reply() {
                    let _ = client.write_all(&socks5::reply(r, None)).await;
                }
                shared.audit.record(event(
                    "socks5",
                    "",
                    0,
                    "deny",
                    Some("bad-request"),
                    None,
                    Some(e.to_string()),
                    start,
                ));
                return;
            }
        }
    };
    let host = match &target {
        socks5::SocksHost::Domain(d) => d.clone(),
        socks5::SocksHost::Ip(ip) => ip.to_string(),
    };
    let decision = decide_async(shared, &host, port).await;
    let (decision, grant) = approve(shared, "socks5", decision, start, &client).await;
    let denial = crate::denial::denial_of(&decision, &shared.host_own);
    let (addrs, rule) = match decision {
        EgressDecision::Deny {
            reason,
            rule,
            message,
            ..
        } => {
            // Recorded before the box is told (see the HTTP refusal).
            let mut ev = event(
                "socks5",
                &host,
                port,
                "deny",
                Some(&kebab(&reason)),
                rule,
                Some(message),
                start,
            );
            ev.denial = denial;
            shared.audit.record(ev);
            let _ = client
                .write_all(&socks5::reply(socks5::Reply::NotAllowedByRuleset, None))
                .await;
            return;
        }
        EgressDecision::Allow { addrs, rule, .. } => (addrs, rule),
    };
    let upstream = match connect_any(&addrs, shared.connect_timeout).await {
        Ok(s) => s,
        Err(e) => {
            let code = match e.kind() {
                io::ErrorKind::ConnectionRefused => socks5::Reply::ConnectionRefused,
                io::ErrorKind::TimedOut => socks5::Reply::TtlExpired,
                _ => socks5::Reply::HostUnreachable,
            };
            let _ = client.write_all(&socks5::reply(code, None)).await;
            shared.audit.record(event(
                "socks5",
                &host,
                port,
                "allow",
                Some("connect-failed"),
                Some(rule),
                Some(e.to_string()),
                start,
            ));
            return;
        }
    };
    let mut ev = event(
        "socks5",
        &host,
        port,
        "allow",
        None,
        Some(rule),
        None,
        start,
    );
    ev.addr = upstream.peer_addr().ok();
    let mut tunnel = Tunnel::new(shared, ev, start, grant);
    if let Some((interceptor, name)) = intercepts(shared, &host, port) {
        let bound = upstream.local_addr().ok();
        let acks = Acks {
            ok: socks5::reply(socks5::Reply::Succeeded, bound),
            failed: |_: &str| socks5::reply(socks5::Reply::GeneralFailure, None),
        };
        let rest = buf[consumed..].to_vec();
        tunnel.mark_intercepted();
        let (reason, message) = intercept(
            shared,
            interceptor,
            client,
            upstream,
            &name,
            port,
            rest,
            &tunnel,
            acks,
        )
        .await;
        if let Some(m) = message {
            tunnel.note(m);
        }
        return tunnel.finish(reason);
    }
    if client
        .write_all(&socks5::reply(
            socks5::Reply::Succeeded,
            upstream.local_addr().ok(),
        ))
        .await
        .is_err()
    {
        return tunnel.finish(Some("client-gone".into()));
    }
    let mut upstream = upstream;
    let rest = buf[consumed..].to_vec();
    if !rest.is_empty() {
        if upstream.write_all(&rest).await.is_err() {
            return tunnel.finish(Some("upstream-gone".into()));
        }
        tunnel.up.fetch_add(rest.len() as u64, Ordering::Relaxed);
        shared.bytes.fetch_add(rest.len() as u64, Ordering::Relaxed);
    }
    let err = relay(client, upstream, shared, &tunnel).await;
    tunnel.finish(err);
}

/// The event of an allowed connection, recorded with its byte counts when the connection ends —
/// or, if the proxy stops while it is open, when it is dropped (reason `closed-at-shutdown`), so
/// no connection goes unreported.
struct Tunnel<'a> {
    shared: &'a Shared,
    event: Option<NetEvent>,
    start: Instant,
    /// The approval grant it was allowed by; its bytes count against the grant's budget.
    grant: Option<Arc<Grant>>,
    up: AtomicU64,
    down: AtomicU64,
    finished: bool,
}

impl<'a> Tunnel<'a> {
    fn new(
        shared: &'a Shared,
        event: NetEvent,
        start: Instant,
        grant: Option<Arc<Grant>>,
    ) -> Tunnel<'a> {
        shared.active.fetch_add(1, Ordering::Relaxed);
        Tunnel {
            shared,
            grant,
            event: Some(event),
            start,
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            finished: false,
        }
    }

    /// Records that the connection is intercepted (a secret is bound to its host).
    fn mark_intercepted(&mut self) {
        if let Some(ev) = self.event.as_mut() {
            ev.intercepted = true;
        }
    }

    /// Adds a message to the connection's record.
    fn note(&mut self, message: String) {
        if let Some(ev) = self.event.as_mut() {
            ev.message = Some(message);
        }
    }

    /// Ends the connection's record; `reason` says why it stopped early, if it did.
    fn finish(mut self, reason: Option<String>) {
        if let Some(ev) = self.event.as_mut() {
            ev.reason = reason;
        }
        self.finished = true;
    }
}

impl Drop for Tunnel<'_> {
    fn drop(&mut self) {
        self.shared.active.fetch_sub(1, Ordering::Relaxed);
        if let Some(mut ev) = self.event.take() {
            if !self.finished {
                ev.reason = Some("closed-at-shutdown".into());
            }
            ev.bytes_up = self.up.load(Ordering::Relaxed);
            ev.bytes_down = self.down.load(Ordering::Relaxed);
            ev.duration_ms = self.start.elapsed().as_secs_f64() * 1000.0;
            self.shared.audit.record(ev);
        }
    }
}

/// The interceptor and the normalised host, when a connection to `host:port` carries secrets.
fn intercepts(shared: &Shared, host: &str, port: u16) -> Option<(Arc<Interceptor>, String)> {
    let interceptor = shared.intercept.as_ref()?;
    let name = crate::rules::normalize_host(host).ok()?;
    interceptor
        .intercepts(&name, port)
        .then(|| (interceptor.clone(), name))
}

/// The tripwire over bytes bound for `host:port`.
fn find_leak_in(
    shared: &Shared,
    data: &[u8],
    host: &str,
    port: u16,
) -> Option<crate::secrets::Leak> {
    let interceptor = shared.intercept.as_ref()?;
    let name = crate::rules::normalize_host(host).unwrap_or_else(|_| host.to_string());
    crate::secrets::find_leak(interceptor.secrets(), data, &name, port)
}

/// What the box is told when an intercepted connection is (or cannot be) set up, in its
/// protocol (HTTP CONNECT or SOCKS5).
struct Acks {
    ok: Vec<u8>,
    failed: fn(&str) -> Vec<u8>,
}

/// An allowed connection to a host a secret is bound to: the verified TLS connection upstream
/// first (a server the host's trust store does not accept is refused before the box is told
/// anything else), then the box's side, intercepted. Returns why it ended early, if it did.
#[allow(clippy::too_many_arguments)]
async fn intercept(
    shared: &Arc<Shared>,
    interceptor: Arc<Interceptor>,
    mut client: TcpStream,
    upstream: TcpStream,
    host: &str,
    port: u16,
    prefix: Vec<u8>,
    tunnel: &Tunnel<'_>,
    acks: Acks,
) -> (Option<String>, Option<String>) {
    let upstream = match crate::intercept::connect_upstream(
        upstream,
        host,
        port,
        interceptor.client(),
    )
    .await
    {
        Ok(u) => u,
        Err(e) => {
            let message = e.to_string();
            let _ = client.write_all(&(acks.failed)(&message)).await;
            return (Some("upstream-tls-failed".into()), Some(message));
        }
    };
    if client.write_all(&acks.ok).await.is_err() {
        return (Some("client-gone".into()), None);
    }
    let _ = client.set_nodelay(true);
    let counters = crate::intercept::Counters {
        total: shared.bytes.clone(),
        budget: shared.budget,
        ..Default::default()
    };
    let conn = crate::intercept::InterceptedConn {
        host: host.to_string(),
        port,
        audit: shared.audit.clone(),
        counters: counters.clone(),
    };
    let reason =
        crate::intercept::intercept_connection(interceptor, conn, client, prefix, upstream).await;
    tunnel
        .up
        .fetch_add(counters.up.load(Ordering::Relaxed), Ordering::Relaxed);
    tunnel
        .down
        .fetch_add(counters.down.load(Ordering::Relaxed), Ordering::Relaxed);
    (reason, None)
}

fn kebab<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "denied".into())
}

/// A refusal the approval gate may turn into a yes (approval `on-request`), with the grant that
/// allowed it. Without a gate (approval `never`) the decision is returned as it is.
async fn approve(
    shared: &Shared,
    protocol: &'static str,
    decision: EgressDecision,
    start: Instant,
    client: &TcpStream,
) -> (EgressDecision, Option<Arc<Grant>>) {
    let Some(gate) = shared.approval.as_ref() else {
        return (decision, None);
    };
    if decision.is_allowed() {
        return (decision, None);
    }
    let held = crate::approval::Held {
        protocol,
        rules: shared.rules.read().map(|r| r.clone()).unwrap_or_default(),
        resolver: shared.resolver.clone(),
        host_own: &shared.host_own,
        audit: &shared.audit,
        start,
        peer: match (&shared.peer_names, client.peer_addr(), client.local_addr()) {
            (Some(namer), Ok(client), Ok(listener)) => Some(crate::approval::Peer {
                namer: namer.clone(),
                client,
                listener,
            }),
            _ => None,
        },
    };
    match gate.reconsider(&held, &decision).await {
        Some(approved) => (approved.decision, Some(approved.grant)),
        None => (decision, None),
    }
}

async fn decide_async(shared: &Shared, host: &str, port: u16) -> EgressDecision {
    let rules = shared.rules.read().map(|r| r.clone()).unwrap_or_default();
    decide_off_loop(
        rules,
        shared.resolver.clone(),
        shared.host_own.clone(),
        host,
        port,
    )
    .await
}

/// Connects to the checked addresses in order — never to a re-resolved name.
async fn connect_any(addrs: &[SocketAddr], timeout: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address to connect to");
    for addr in addrs {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        };
        let socket = match socket {
            Ok(s) => s,
            Err(e) => {
                last = e;
                continue;
            }
        };
        crate::relay::unpace_if_loopback(&socket, *addr);
        match tokio::time::timeout(timeout, socket.connect(*addr)).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Ok(Err(e)) => last = e,
            Err(_) => {
                last = io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connecting to {addr} timed out"),
                )
            }
        }
    }
    Err(last)
}

/// Relays both ways until both sides are done, counting bytes in the tunnel's record and
/// against the box's budget. Returns why it stopped early, if it did.
async fn relay(
    client: TcpStream,
    upstream: TcpStream,
    shared: &Shared,
    tunnel: &Tunnel<'_>,
) -> Option<String> {
    let _ = client.set_nodelay(true);
    let up =
        Meter::new(&shared.bytes, shared.budget, &tunnel.up).with_grant(tunnel.grant.as_deref());
    let down =
        Meter::new(&shared.bytes, shared.budget, &tunnel.down).with_grant(tunnel.grant.as_deref());
    crate::relay::relay(&client, &upstream, up, down)
        .await
        .err()
        .map(|e| e.reason())
}

/// The host's own addresses (every interface), which a box may not reach unless granted.
pub fn host_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills ifap with a list we free below.
    if unsafe { libc::getifaddrs(&mut ifap) } != 0 {
        return out;
    }
    let mut cur = ifap;
    while !cur.is_null() {
        // SAFETY: cur points into the list returned by getifaddrs, valid until freeifaddrs.
        let ifa = unsafe { &*cur };
        if !ifa.ifa_addr.is_null() {
            // SAFETY: ifa_addr is non-null and points at a sockaddr of the family it declares.
            let family = unsafe { (*ifa.ifa_addr).sa_family } as libc::c_int;
            if family == libc::AF_INET {
                // SAFETY: the family says this is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                out.push(IpAddr::from(
                    u32::from_be(sin.sin_addr.s_addr).to_be_bytes(),
                ));
            } else if family == libc::AF_INET6 {
                // SAFETY: the family says this is a sockaddr_in6.
                let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                out.push(IpAddr::from(sin6.sin6_addr.s6_addr));
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: ifap came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(ifap) };
    out
}
