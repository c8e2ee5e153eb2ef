use super::*;

fn request() -> ApprovalRequest {
    ApprovalRequest {
        id: 7,
        protocol: "http".into(),
        host: "svc.test".into(),
        port: 8080,
        addrs: Vec::new(),
        reason: "not-allowlisted".into(),
        rule: None,
        message: "refused".into(),
        grant: "svc.test:8080".into(),
        time_ms: 0,
        deadline_ms: 0,
        process: None,
    }
}

#[test]
fn the_question_names_the_destination_the_reason_and_what_a_yes_allows() {
    let q = question(&request());
    assert!(q.contains("svc.test:8080 (http)"), "{q}");
    assert!(q.contains("not-allowlisted"), "{q}");
    assert!(q.contains("until the sandbox ends"), "{q}");
}

#[test]
fn only_a_yes_allows_and_no_answer_is_left_to_the_deadline() {
    let yes = answer_of(&Consent::Yes).unwrap();
    assert_eq!(yes.answer, ApprovalVerdict::Allow);
    assert_eq!(yes.scope, ApprovalScope::Run);
    assert!(yes.ttl_secs.is_none() && yes.grant.is_none() && yes.byte_budget.is_none());
    for no in [
        Consent::No("declined".into()),
        Consent::CannotAsk("failed".into()),
    ] {
        assert_eq!(answer_of(&no).unwrap().answer, ApprovalVerdict::Deny);
    }
    assert!(answer_of(&Consent::NoAnswer(Duration::from_secs(1))).is_none());
}

#[test]
fn a_deadline_in_the_past_leaves_no_time() {
    assert_eq!(until(0), Duration::ZERO);
    let later = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 60_000;
    let left = until(later);
    assert!(left > Duration::from_secs(50) && left <= Duration::from_secs(60));
}
