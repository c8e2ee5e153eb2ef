use super::*;

fn request(id: u64) -> ApprovalRequest {
    ApprovalRequest {
        id,
        protocol: "connect".into(),
        host: "svc.example".into(),
        port: 443,
        addrs: Vec::new(),
        reason: "not-allowed".into(),
        rule: None,
        message: "refused".into(),
        grant: "svc.example:443".into(),
        time_ms: 1,
        deadline_ms: 2,
        process: None,
    }
}

#[test]
fn requests_are_kept_per_sandbox_until_answered_or_withdrawn() {
    let all = Arc::new(ServerApprovals::default());
    let a = all.sink("a");
    let b = all.sink("b");
    a.requested(request(1));
    a.requested(request(2));
    b.requested(request(1));
    assert_eq!(all.pending("a").len(), 2);
    assert_eq!(all.pending("b").len(), 1);
    assert_eq!(all.lookup("a", 3), Lookup::Unknown);
    all.finish("a", 1, Finished::Answered);
    a.withdrawn(2);
    assert_eq!(all.lookup("a", 1), Lookup::Finished(Finished::Answered));
    assert_eq!(all.lookup("a", 2), Lookup::Finished(Finished::TimedOut));
    assert!(all.pending("a").is_empty());
    // The other sandbox's request 1 is its own.
    assert!(matches!(all.lookup("b", 1), Lookup::Waiting(_)));
    all.forget("b");
    assert_eq!(all.lookup("b", 1), Lookup::Unknown);
    // A new box of a sandbox starts with nothing asked.
    let _a2 = all.sink("a");
    assert_eq!(all.lookup("a", 1), Lookup::Unknown);
}
