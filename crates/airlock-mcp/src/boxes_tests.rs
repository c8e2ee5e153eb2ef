use super::*;

fn event(decision: NetDecision, host: &str) -> NetworkEvent {
    NetworkEvent {
        time_ms: 1,
        protocol: airlock_runtime::backend::NetProtocol::Connect,
        host: host.into(),
        port: 443,
        addr: None,
        decision,
        reason: Some("not-allowed".into()),
        rule: None,
        message: Some("api.example is not on the allowlist".into()),
        bytes_up: 0,
        bytes_down: 0,
        duration_ms: 0.0,
        intercepted: false,
        secrets: Vec::new(),
        approval: None,
        denial: None,
    }
}

#[test]
fn denials_are_told_once_and_allowed_connections_not_at_all() {
    let sink = DenialSink::default();
    sink.network_event(event(NetDecision::Allow, "pypi.example"));
    sink.network_event(event(NetDecision::Deny, "api.example"));
    let d = std::mem::take(&mut sink.0.lock().unwrap().lines);
    assert_eq!(
        d,
        vec!["airlock refused a network connection to api.example:443: api.example is not on the allowlist"]
    );
}

#[test]
fn a_flood_of_denials_is_bounded_and_counted() {
    let sink = DenialSink::default();
    for i in 0..(MAX_DENIALS + 10) {
        sink.network_event(event(NetDecision::Deny, &format!("h{i}.example")));
    }
    let d = sink.0.lock().unwrap();
    assert_eq!((d.lines.len(), d.dropped), (MAX_DENIALS, 10));
}
