//! Approvals through the real proxy over real loopback sockets: a connection the rules refuse is
//! held (nothing answered) while the approver is asked; a yes lets it through and may become a
//! grant with a time to live and a byte budget; no answer by the deadline is today's refusal,
//! byte for byte; refusals that may not be asked about are final at once. The approver here is
//! a test double the test answers through the gate (the program approver gets its own tests at
//! the end). A fake resolver maps the names: nothing leaves the machine.

use airlock_proxy::approval::{
    Answer, ApprovalGate, ApprovalRequest, ApprovalScope, ApprovalStage, Approver, PendingQueue,
    ProgramApprover, Verdict,
};
use airlock_proxy::audit::NetEvent;
use airlock_proxy::decision::Resolver;
use airlock_proxy::rules::EgressRules;
use airlock_proxy::server::{start_with_resolver, ProxyConfig, ProxyHandle};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// `svc.test` and `other.test` → 127.0.0.1, `inside.test` → 10.0.0.7; nothing else resolves.
struct Names;

impl Resolver for Names {
    fn resolve(&self, name: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
        match name {
            "svc.test" | "other.test" => Ok(vec![LOCALHOST]),
            "inside.test" => Ok(vec!["10.0.0.7".parse().expect("literal")]),
            _ => Err(io::Error::new(io::ErrorKind::NotFound, "not a test name")),
        }
    }
}

/// An approver the test answers: every request it is asked about arrives on a channel.
struct Asked {
    tx: Mutex<mpsc::Sender<ApprovalRequest>>,
    withdrawn: Mutex<Vec<u64>>,
}

impl Approver for Asked {
    fn name(&self) -> String {
        "test".into()
    }
    fn ask(&self, request: &ApprovalRequest) {
        let _ = self.tx.lock().expect("tx").send(request.clone());
    }
    fn withdrawn(&self, id: u64) {
        self.withdrawn.lock().expect("withdrawn").push(id);
    }
}

/// An echo server on 127.0.0.1:0 that counts the connections it accepts.
struct Echo {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

impl Echo {
    fn start() -> Echo {
        let listener = TcpListener::bind((LOCALHOST, 0)).expect("bind echo");
        let port = listener.local_addr().expect("addr").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(mut s) = s else { return };
                count.fetch_add(1, Ordering::SeqCst);
                thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 || s.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = s.shutdown(Shutdown::Write);
                });
            }
        });
        Echo { port, accepted }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// 127.0.0.1 granted as an address (so `svc.test` resolves to something allowed), no name
/// allowed: every name is refused as `not-allowed`, which is askable.
fn rules() -> EgressRules {
    EgressRules::parse(&[], &[], &["127.0.0.1".into()], &[]).expect("rules")
}

struct Setup {
    proxy: ProxyHandle,
    gate: Arc<ApprovalGate>,
    asked: mpsc::Receiver<ApprovalRequest>,
    approver: Arc<Asked>,
}

fn start(rules: EgressRules, timeout: Duration) -> Setup {
    let (tx, rx) = mpsc::channel();
    let approver = Arc::new(Asked {
        tx: Mutex::new(tx),
        withdrawn: Mutex::new(Vec::new()),
    });
    let gate = Arc::new(ApprovalGate::new(
        approver.clone(),
        Arc::new(PendingQueue::new()),
        timeout,
    ));
    let proxy = start_proxy(rules, Some(gate.clone()));
    Setup {
        proxy,
        gate,
        asked: rx,
        approver,
    }
}

fn start_proxy(rules: EgressRules, approval: Option<Arc<ApprovalGate>>) -> ProxyHandle {
    let config = ProxyConfig {
        rules,
        max_connections: 64,
        byte_budget: None,
        connect_timeout: Duration::from_secs(5),
        audit: None,
        on_event: None,
        intercept: None,
        approval,
        peer_names: None,
    };
    let listener = TcpListener::bind((LOCALHOST, 0)).expect("bind proxy");
    start_with_resolver(listener, config, Arc::new(Names)).expect("start proxy")
}

fn client(proxy: &ProxyHandle) -> TcpStream {
    let s = TcpStream::connect(proxy.local_addr()).expect("connect to proxy");
    s.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    s.set_write_timeout(Some(IO_TIMEOUT)).expect("timeout");
    s
}

fn send_connect(s: &mut TcpStream, host: &str, port: u16) {
    let req = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n");
    s.write_all(req.as_bytes()).expect("write CONNECT");
}

fn read_head(s: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Everything the proxy sends until it closes.
fn read_all(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// Asserts that nothing arrives on `s` for `wait` (the connection is held, not answered).
fn assert_silent(s: &mut TcpStream, wait: Duration) {
    s.set_read_timeout(Some(wait)).expect("timeout");
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) => {}
        other => panic!("a held connection must get nothing yet, got {other:?}"),
    }
    s.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
}

fn round_trip(s: &mut TcpStream, data: &[u8]) {
    s.write_all(data).expect("write through the tunnel");
    let mut back = vec![0u8; data.len()];
    s.read_exact(&mut back).expect("echo through the tunnel");
    assert_eq!(back, data);
}

fn next_request(asked: &mpsc::Receiver<ApprovalRequest>) -> ApprovalRequest {
    asked
        .recv_timeout(IO_TIMEOUT)
        .expect("the approver must be asked")
}

fn allow(scope: ApprovalScope) -> Answer {
    Answer {
        verdict: Verdict::Allow,
        scope,
        ttl: None,
        byte_budget: None,
        grant: None,
        by: "tester".into(),
    }
}

fn stages(events: &[NetEvent]) -> Vec<(u64, ApprovalStage)> {
    events
        .iter()
        .filter_map(|e| e.approval.as_ref().map(|a| (a.id, a.stage)))
        .collect()
}

fn wait_events(proxy: &ProxyHandle, pred: impl Fn(&[NetEvent]) -> bool) -> Vec<NetEvent> {
    let deadline = Instant::now() + IO_TIMEOUT;
    loop {
        let (events, _) = proxy.events();
        if pred(&events) || Instant::now() > deadline {
            return events;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_held_connection_goes_through_when_allowed_once_and_the_next_is_asked_again() {
    let echo = Echo::start();
    let s = start(rules(), Duration::from_secs(10));
    let mut c = client(&s.proxy);
    send_connect(&mut c, "svc.test", echo.port);
    let req = next_request(&s.asked);
    assert_eq!(
        (req.protocol.as_str(), req.host.as_str(), req.port),
        ("connect", "svc.test", echo.port)
    );
    assert_eq!(req.grant, format!("svc.test:{}", echo.port));
    assert_eq!(req.reason, "not-allowed");
    assert_eq!(req.addrs, vec![(LOCALHOST, echo.port).into()]);
    assert!(req.deadline_ms > req.time_ms);
    // Held: nothing answered, nothing connected, and the queue lists it.
    assert_silent(&mut c, Duration::from_millis(300));
    assert_eq!(echo.accepted(), 0);
    assert_eq!(s.gate.pending(), vec![req.clone()]);
    let started = Instant::now();
    s.gate
        .answer(req.id, allow(ApprovalScope::Once))
        .expect("answer");
    let head = read_head(&mut c);
    // The answer's own latency aside, letting a held connection through is quick (loaded
    // machine: the bound is loose; BENCHMARKS.md has the measured figure).
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    round_trip(&mut c, b"hello through an approval");
    drop(c);
    assert!(s.gate.pending().is_empty());
    // `once` made no grant: the next connection is asked again; denied, it is refused.
    let mut c = client(&s.proxy);
    send_connect(&mut c, "svc.test", echo.port);
    let again = next_request(&s.asked);
    assert_ne!(again.id, req.id);
    s.gate
        .answer(again.id, Answer::deny("tester"))
        .expect("answer");
    let refused = String::from_utf8_lossy(&read_all(&mut c)).into_owned();
    assert!(refused.starts_with("HTTP/1.1 403 "), "{refused}");
    assert!(refused.contains("--allow-domain svc.test"), "{refused}");
    assert_eq!(
        echo.accepted(),
        1,
        "the denied connection never reached the server"
    );
    // An answer to a request no longer waiting is refused.
    assert!(s.gate.answer(again.id, allow(ApprovalScope::Once)).is_err());
    let events = wait_events(&s.proxy, |e| {
        e.iter().filter(|e| e.decision == "deny").count() == 1
            && e.iter().any(|e| e.decision == "allow")
    });
    assert_eq!(
        stages(&events),
        vec![
            (req.id, ApprovalStage::Requested),
            (req.id, ApprovalStage::Allowed),
            (again.id, ApprovalStage::Requested),
            (again.id, ApprovalStage::Denied),
        ],
        "{events:#?}"
    );
    let allowed = events
        .iter()
        .find(|e| e.decision == "allow")
        .expect("allow");
    assert_eq!(
        allowed.rule.as_deref(),
        Some(format!("approval #{} (svc.test:{}, by tester)", req.id, echo.port).as_str())
    );
    let answered = events
        .iter()
        .find(|e| {
            e.approval
                .as_ref()
                .is_some_and(|a| a.stage == ApprovalStage::Allowed)
        })
        .and_then(|e| e.approval.clone())
        .expect("answer event");
    assert_eq!(answered.by.as_deref(), Some("tester"));
    assert_eq!(answered.scope, Some(ApprovalScope::Once));
}

#[test]
fn no_answer_by_the_deadline_is_todays_refusal_byte_for_byte() {
    let echo = Echo::start();
    // The same request through a proxy without approvals: today's refusal.
    let never = start_proxy(rules(), None);
    let mut c = client(&never);
    send_connect(&mut c, "svc.test", echo.port);
    let today = read_all(&mut c);
    let s = start(rules(), Duration::from_millis(400));
    let mut c = client(&s.proxy);
    let t = Instant::now();
    send_connect(&mut c, "svc.test", echo.port);
    let req = next_request(&s.asked);
    let held = read_all(&mut c);
    assert!(
        t.elapsed() >= Duration::from_millis(400),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(
        String::from_utf8_lossy(&held),
        String::from_utf8_lossy(&today)
    );
    assert_eq!(echo.accepted(), 0);
    assert_eq!(*s.approver.withdrawn.lock().expect("w"), vec![req.id]);
    assert!(s.gate.pending().is_empty());
    assert!(
        s.gate.answer(req.id, allow(ApprovalScope::Run)).is_err(),
        "too late"
    );
    let events = wait_events(&s.proxy, |e| e.iter().any(|e| e.decision == "deny"));
    assert_eq!(
        stages(&events),
        vec![
            (req.id, ApprovalStage::Requested),
            (req.id, ApprovalStage::TimedOut)
        ]
    );
    // SOCKS5 too: held, then refused in its own protocol (rule set refusal, code 2).
    let mut c = client(&s.proxy);
    c.write_all(&[5, 1, 0]).expect("greeting");
    let mut m = [0u8; 2];
    c.read_exact(&mut m).expect("method");
    let mut r = vec![5, 1, 0, 3, 8];
    r.extend_from_slice(b"svc.test");
    r.extend_from_slice(&echo.port.to_be_bytes());
    c.write_all(&r).expect("request");
    let req = next_request(&s.asked);
    assert_eq!(req.protocol, "socks5");
    let mut reply = [0u8; 2];
    c.read_exact(&mut reply).expect("reply");
    assert_eq!(reply, [5, 2]);
}

#[test]
fn a_run_grant_allows_new_connections_until_its_time_runs_out() {
    let echo = Echo::start();
    let s = start(rules(), Duration::from_millis(500));
    let mut c = client(&s.proxy);
    send_connect(&mut c, "svc.test", echo.port);
    let req = next_request(&s.asked);
    let mut answer = allow(ApprovalScope::Run);
    answer.ttl = Some(Duration::from_secs(1));
    s.gate.answer(req.id, answer).expect("answer");
    assert!(read_head(&mut c).starts_with("HTTP/1.1 200 "));
    let granted = s.gate.grants();
    assert_eq!(granted.len(), 1);
    assert!(granted[0].expires_ms.is_some());
    // Within its time: allowed without asking.
    let mut c2 = client(&s.proxy);
    send_connect(&mut c2, "svc.test", echo.port);
    assert!(read_head(&mut c2).starts_with("HTTP/1.1 200 "));
    round_trip(&mut c2, b"granted");
    assert!(s.asked.try_recv().is_err(), "a live grant does not ask");
    // Another port or name is not covered.
    let mut c3 = client(&s.proxy);
    send_connect(&mut c3, "other.test", echo.port);
    let other = next_request(&s.asked);
    assert_eq!(other.host, "other.test");
    s.gate
        .answer(other.id, Answer::deny("tester"))
        .expect("deny");
    assert!(read_head(&mut c3).starts_with("HTTP/1.1 403 "));
    // After it: asked again; nobody answers, refused; the end of the grant is recorded.
    thread::sleep(Duration::from_millis(1100));
    let before = echo.accepted();
    let mut c4 = client(&s.proxy);
    send_connect(&mut c4, "svc.test", echo.port);
    let asked_again = next_request(&s.asked);
    assert!(read_head(&mut c4).starts_with("HTTP/1.1 403 "));
    assert_eq!(echo.accepted(), before, "an expired grant connects nothing");
    let events = wait_events(&s.proxy, |e| {
        stages(e).contains(&(asked_again.id, ApprovalStage::TimedOut))
    });
    assert!(
        stages(&events).contains(&(req.id, ApprovalStage::Expired)),
        "{events:#?}"
    );
    assert!(s.gate.grants().is_empty());
}

#[test]
fn a_grant_byte_budget_cuts_its_connections_and_then_asks_again() {
    let echo = Echo::start();
    let s = start(rules(), Duration::from_millis(300));
    let mut c = client(&s.proxy);
    send_connect(&mut c, "svc.test", echo.port);
    let req = next_request(&s.asked);
    let mut answer = allow(ApprovalScope::Run);
    answer.byte_budget = Some(1000);
    s.gate.answer(req.id, answer).expect("answer");
    assert!(read_head(&mut c).starts_with("HTTP/1.1 200 "));
    round_trip(&mut c, &[7u8; 300]); // 600 bytes of the 1000
    let _ = c.write_all(&[8u8; 4000]);
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    assert!(
        got.len() <= 400,
        "at most the budget's rest is relayed back, got {}",
        got.len()
    );
    let grant = &s.gate.grants()[0];
    assert!(grant.bytes_used() <= 1000, "{}", grant.bytes_used());
    // Spent: the next connection is asked about again (and refused at the deadline).
    let mut c2 = client(&s.proxy);
    send_connect(&mut c2, "svc.test", echo.port);
    let again = next_request(&s.asked);
    assert_ne!(again.id, req.id);
    assert!(read_head(&mut c2).starts_with("HTTP/1.1 403 "));
}

#[test]
fn refusals_that_may_not_be_asked_about_are_final_at_once() {
    let echo = Echo::start();
    let r = EgressRules::parse(&[], &["svc.test".into()], &[], &[]).expect("rules");
    let s = start(r, Duration::from_secs(10));
    // Denied by rule; a name resolving to a private address; loopback, private and metadata
    // literals: no question, and the refusal comes at once (well before the deadline).
    for (host, port) in [
        ("svc.test", echo.port),
        ("inside.test", 80),
        ("127.0.0.1", echo.port),
        ("10.0.0.7", 80),
        ("169.254.169.254", 80),
    ] {
        let mut c = client(&s.proxy);
        let t = Instant::now();
        send_connect(&mut c, host, port);
        let head = read_head(&mut c);
        assert!(head.starts_with("HTTP/1.1 403 "), "{host}: {head}");
        assert!(t.elapsed() < Duration::from_secs(5), "{host}: not held");
    }
    assert!(s.asked.try_recv().is_err(), "nobody was asked");
    assert_eq!(echo.accepted(), 0);
    let (events, _) = s.proxy.events();
    assert!(events.iter().all(|e| e.decision == "deny"), "{events:#?}");
}

#[test]
fn connections_held_for_the_same_destination_share_one_question() {
    let echo = Echo::start();
    let s = start(rules(), Duration::from_secs(10));
    let mut a = client(&s.proxy);
    send_connect(&mut a, "svc.test", echo.port);
    let req = next_request(&s.asked);
    let mut b = client(&s.proxy);
    send_connect(&mut b, "svc.test", echo.port);
    // Until b is queued (it is held, so poll the queue's view indirectly: give it a moment).
    thread::sleep(Duration::from_millis(200));
    assert!(s.asked.try_recv().is_err(), "one question for both");
    assert_eq!(s.gate.pending().len(), 1);
    s.gate
        .answer(req.id, allow(ApprovalScope::Once))
        .expect("answer");
    assert!(read_head(&mut a).starts_with("HTTP/1.1 200 "));
    assert!(read_head(&mut b).starts_with("HTTP/1.1 200 "));
    round_trip(&mut a, b"a");
    round_trip(&mut b, b"b");
}

#[test]
fn an_answer_naming_a_grant_that_does_not_cover_the_request_is_a_refusal() {
    let echo = Echo::start();
    let s = start(rules(), Duration::from_secs(10));
    let mut c = client(&s.proxy);
    send_connect(&mut c, "svc.test", echo.port);
    let req = next_request(&s.asked);
    let mut answer = allow(ApprovalScope::Run);
    answer.grant = Some("other.test:1".into());
    s.gate.answer(req.id, answer).expect("answer");
    assert!(read_head(&mut c).starts_with("HTTP/1.1 403 "));
    assert!(s.gate.grants().is_empty());
    let events = wait_events(&s.proxy, |e| e.iter().any(|e| e.decision == "deny"));
    let denied = events
        .iter()
        .find(|e| {
            e.approval
                .as_ref()
                .is_some_and(|a| a.stage == ApprovalStage::Denied)
        })
        .expect("denied step");
    assert!(
        denied
            .message
            .as_deref()
            .unwrap_or("")
            .contains("does not cover"),
        "{denied:?}"
    );
}

// ----- the approver program -----

/// A program approver running `script` (sh), with a proxy that asks it.
fn with_program(script: &str, timeout: Duration) -> (ProxyHandle, Arc<ApprovalGate>) {
    let pending = Arc::new(PendingQueue::new());
    let program = ProgramApprover::spawn(script, pending.clone()).expect("start the approver");
    let gate = Arc::new(ApprovalGate::new(program, pending, timeout));
    (start_proxy(rules(), Some(gate.clone())), gate)
}

/// Answers every request with `answer` (a JSON fragment after the id), logging requests.
fn answering(answer: &str, log: &std::path::Path) -> String {
    format!(
        r#"while IFS= read -r line; do printf '%s\n' "$line" >> '{}'; id=$(printf '%s' "$line" | sed 's/^{{"id":\([0-9]*\),.*/\1/'); printf '{{"id":%s,%s}}\n' "$id" '{answer}'; done"#,
        log.display()
    )
}

fn temp_log(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("airlock-approvals-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

#[test]
fn the_approver_program_reads_one_json_line_and_its_answer_lets_the_connection_through() {
    let echo = Echo::start();
    let log = temp_log("allow");
    let (proxy, gate) = with_program(
        &answering(r#""answer":"allow","scope":"run","ttl_secs":60"#, &log),
        Duration::from_secs(10),
    );
    let mut c = client(&proxy);
    send_connect(&mut c, "svc.test", echo.port);
    let head = read_head(&mut c);
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    round_trip(&mut c, b"approved by a program");
    let lines = std::fs::read_to_string(&log).expect("the program's log");
    let request: serde_json::Value =
        serde_json::from_str(lines.lines().next().expect("one line")).expect("JSON");
    assert_eq!(request["host"], "svc.test");
    assert_eq!(request["port"], echo.port);
    assert_eq!(request["grant"], format!("svc.test:{}", echo.port));
    assert_eq!(gate.grants().len(), 1);
    assert!(gate.grants()[0].by.starts_with("program: "));
    let _ = std::fs::remove_file(&log);
}

#[test]
fn an_approver_program_that_says_no_answers_garbage_or_exits_refuses() {
    let echo = Echo::start();
    let refused = |script: &str| {
        let (proxy, _gate) = with_program(script, Duration::from_secs(5));
        let mut c = client(&proxy);
        let t = Instant::now();
        send_connect(&mut c, "svc.test", echo.port);
        let head = read_head(&mut c);
        assert!(head.starts_with("HTTP/1.1 403 "), "{script}: {head}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{script}: refused at once"
        );
    };
    let log = temp_log("deny");
    refused(&answering(r#""answer":"deny""#, &log));
    refused(&answering(r#""answer":"perhaps""#, &log));
    refused(&answering(r#""answer":"allow","scope":"save""#, &log));
    refused("exit 0");
    // A line that names no request cannot answer one: the request waits for its deadline.
    let (proxy, _gate) = with_program(
        "read line; echo not-json; sleep 30",
        Duration::from_millis(300),
    );
    let mut c = client(&proxy);
    send_connect(&mut c, "svc.test", echo.port);
    assert!(read_head(&mut c).starts_with("HTTP/1.1 403 "));
    assert_eq!(echo.accepted(), 0);
    let _ = std::fs::remove_file(&log);
}

#[test]
fn the_approver_program_ends_with_the_proxy() {
    let pid_file = temp_log("pid");
    let pending = Arc::new(PendingQueue::new());
    let script = format!("echo $$ > '{}'; exec sleep 300", pid_file.display());
    let program = ProgramApprover::spawn(&script, pending.clone()).expect("start");
    let deadline = Instant::now() + IO_TIMEOUT;
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the program did not start");
        thread::sleep(Duration::from_millis(10));
    };
    let alive = |pid: i32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    assert!(alive(pid));
    drop(program);
    assert!(!alive(pid), "the approver program outlived its approver");
    let _ = std::fs::remove_file(&pid_file);
}
