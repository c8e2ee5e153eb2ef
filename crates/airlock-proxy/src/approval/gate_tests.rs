//! The gate's decisions without sockets: a careless answer (`0.0.0.0/0` for the run) still
//! opens no loopback, private or metadata address, and no name.

use super::*;
use crate::decision::{decide, Resolver};
use std::sync::Mutex;

/// Says yes to everything with the grant `0.0.0.0/0` for the run, counting what it is asked.
struct Careless {
    pending: Arc<PendingQueue>,
    asked: Mutex<Vec<String>>,
}

impl Approver for Careless {
    fn name(&self) -> String {
        "careless".into()
    }
    fn ask(&self, request: &ApprovalRequest) {
        if let Ok(mut a) = self.asked.lock() {
            a.push(format!("{}:{}", request.host, request.port));
        }
        let answer = Answer {
            verdict: Verdict::Allow,
            scope: ApprovalScope::Run,
            ttl: None,
            byte_budget: None,
            grant: Some("0.0.0.0/0".into()),
            by: "careless".into(),
        };
        let _ = self.pending.answer(request.id, answer);
    }
}

/// Nothing resolves (only literals are decided here: nothing is connected or looked up).
struct NoNames;

impl Resolver for NoNames {
    fn resolve(&self, _name: &str, _port: u16) -> std::io::Result<Vec<IpAddr>> {
        Err(std::io::Error::other("no names in this test"))
    }
}

#[test]
fn a_whole_range_granted_by_mistake_opens_no_special_address() {
    let pending = Arc::new(PendingQueue::new());
    let approver = Arc::new(Careless {
        pending: pending.clone(),
        asked: Mutex::new(Vec::new()),
    });
    let gate = ApprovalGate::new(approver.clone(), pending, Duration::from_secs(5));
    let audit = AuditLog::new(None, None);
    let rules = Arc::new(EgressRules::default());
    let held = Held {
        protocol: "connect",
        rules: rules.clone(),
        resolver: Arc::new(NoNames),
        host_own: &[],
        audit: &audit,
        start: Instant::now(),
        peer: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let reconsider = |host: &str, port: u16| {
        let refusal = decide(&rules, host, port, &NoNames, &[]);
        assert!(!refusal.is_allowed());
        runtime.block_on(gate.reconsider(&held, &refusal))
    };
    // A public literal: asked, and the answer's range becomes the run's grant.
    let first = reconsider("93.184.216.34", 443).expect("allowed by the answer");
    assert_eq!(first.grant.target.to_string(), "0.0.0.0/0");
    assert_eq!(gate.grants().len(), 1);
    // Another public literal: allowed by that grant, without asking.
    assert!(
        reconsider("198.51.100.1", 80).is_none(),
        "documentation range: not public"
    );
    assert!(reconsider("8.8.4.4", 53).is_some());
    // Loopback, private, link-local (metadata), CGNAT: still refused, and nobody was asked.
    for (host, port) in [
        ("127.0.0.1", 80),
        ("10.0.0.1", 80),
        ("169.254.169.254", 80),
        ("100.64.0.1", 80),
        ("0x7f000001", 80),
    ] {
        assert!(reconsider(host, port).is_none(), "{host} must stay refused");
    }
    assert_eq!(
        *approver.asked.lock().unwrap(),
        vec!["93.184.216.34:443".to_string()]
    );
}
