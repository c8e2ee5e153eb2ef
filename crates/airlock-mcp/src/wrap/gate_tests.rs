#![allow(clippy::unwrap_used)]

use super::*;

fn gate() -> Gate {
    Gate::new(ToolFilter::from_flags(&["read_*,list_*".into()], &["read_secret".into()]).unwrap())
}

fn parse(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap()
}

#[test]
fn tools_list_answers_are_filtered() {
    let mut g = gate();
    assert!(matches!(
        g.from_client(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        FromClient::Forward(_)
    ));
    let answer = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read_file"},{"name":"write_file"},{"name":"read_secret"},{"name":"list_directory"}]}}"#;
    let (out, rec) = g.from_server(answer);
    assert!(rec.is_empty());
    let names: Vec<String> = parse(&out)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["read_file", "list_directory"]);
}

#[test]
fn filtered_calls_are_answered_by_airlock() {
    let mut g = gate();
    match g.from_client(br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"write_file","arguments":{"path":"/x"}}}"#) {
        FromClient::Answer(out, Some(Record::Call(rec))) => {
            let v = parse(&out);
            assert_eq!(v["id"], "a");
            assert_eq!(v["result"]["isError"], true);
            assert!(v["result"]["content"][0]["text"].as_str().unwrap().contains("--tools"));
            assert_eq!(rec.status, "refused");
            assert_eq!(rec.tool, "write_file");
        }
        other => panic!("{other:?}"),
    }
    // Batches cannot smuggle a call through.
    match g.from_client(
        br#"[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file"}}]"#,
    ) {
        FromClient::Answer(out, None) => {
            assert_eq!(parse(&out)[0]["error"]["code"], INVALID_REQUEST)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn allowed_calls_are_audited_when_answered() {
    let mut g = gate();
    assert!(matches!(g.from_client(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/w/a"}}}"#), FromClient::Forward(_)));
    let (_, rec) =
        g.from_server(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}"#);
    let [Record::Call(rec)] = rec.as_slice() else {
        panic!("{rec:?}")
    };
    assert_eq!((rec.tool.as_str(), rec.status), ("read_file", "error"));
    assert_eq!(rec.arguments_sha256.len(), 64);
}

#[test]
fn a_server_that_ends_answers_everything_in_flight_and_after() {
    let mut g = gate();
    assert!(matches!(
        g.from_client(
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file"}}"#
        ),
        FromClient::Forward(_)
    ));
    let answers = g.server_ended("the server was killed by signal 9".into());
    assert_eq!(answers.len(), 1);
    let v = parse(&answers[0].0);
    assert_eq!(v["id"], 3);
    assert!(v["error"]["message"].as_str().unwrap().contains("signal 9"));
    assert_eq!(answers[0].1.as_ref().unwrap().status, "server_ended");
    match g.from_client(br#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#) {
        FromClient::Answer(out, None) => assert_eq!(parse(&out)["id"], 4),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        g.from_client(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#),
        FromClient::Drop
    );
}

/// The gate refused `raw` from the client: an error answer for `id`, an audit record naming
/// `needle`, nothing forwarded and nothing left in flight.
fn assert_refused(g: &mut Gate, raw: &[u8], id: Value, needle: &str) {
    let shown = String::from_utf8_lossy(raw);
    match g.from_client(raw) {
        FromClient::Answer(out, Some(Record::Invalid(rec))) => {
            let v = parse(&out);
            assert_eq!(v["id"], id, "{shown}: {v}");
            assert_eq!(v["error"]["code"], INVALID_REQUEST, "{shown}: {v}");
            let msg = v["error"]["message"].as_str().unwrap();
            assert!(msg.contains(needle), "{shown}: {msg}");
            assert_eq!((rec.kind, rec.from), ("invalid_message", "client"));
            assert!(rec.reason.contains(needle), "{shown}: {}", rec.reason);
            assert_eq!(rec.line_sha256.len(), 64);
        }
        other => panic!("{shown} must be refused: {other:?}"),
    }
    assert!(g.pending.is_empty(), "{shown} left a request in flight");
}

#[test]
fn what_is_forwarded_is_the_checked_object_re_serialised() {
    let mut g = gate();
    let raw = br#"{ "jsonrpc":"2.0", "id":9, "method":"tools/call", "params":{"name":"read_\u0066ile","arguments":{"z":1,"a":[true]}} }"#;
    match g.from_client(raw) {
        FromClient::Forward(out) => assert_eq!(
            out,
            b"{\"id\":9,\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"arguments\":{\"a\":[true],\"z\":1},\"name\":\"read_file\"}}\n"
        ),
        other => panic!("{other:?}"),
    }
    // Notifications and answers to the server's requests are re-serialised too.
    match g.from_client(br#"{"jsonrpc":"2.0" , "method":"notifications/initialized"}"#) {
        FromClient::Forward(out) => assert_eq!(
            out,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn case_variant_keys_from_the_client_are_refused() {
    let mut g = gate();
    let cases: [(&[u8], Value, &str); 7] = [
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_x","Name":"delete_everything"}}"#,
            json!(1),
            "\"Name\"",
        ),
        (
            br#"{"jsonrpc":"2.0","ID":2,"method":"tools/call","params":{"name":"delete_everything"}}"#,
            Value::Null,
            "\"ID\"",
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","METHOD":"tools/call","params":{"name":"delete_everything"}}"#,
            json!(3),
            "\"METHOD\"",
        ),
        (
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_x"},"Params":{"name":"delete_everything"}}"#,
            json!(4),
            "\"Params\"",
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"read_x\"},\"param\u{17f}\":{\"name\":\"delete_everything\"}}".as_bytes(),
            json!(5),
            "param\u{17f}",
        ),
        (
            br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_x","Arguments":{"p":1}}}"#,
            json!(6),
            "\"Arguments\"",
        ),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"NAME":"delete_everything"}}"#,
            json!(7),
            "\"NAME\"",
        ),
    ];
    for (raw, id, needle) in cases {
        assert_refused(&mut g, raw, id, needle);
    }
}

#[test]
fn duplicate_keys_from_the_client_are_refused_at_any_depth() {
    let mut g = gate();
    assert_refused(
        &mut g,
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything","name":"read_x"}}"#,
        json!(1),
        "\"name\" appears twice in params",
    );
    assert_refused(
        &mut g,
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","method":"tools/list","params":{"name":"delete_everything"}}"#,
        json!(2),
        "\"method\" appears twice in the message",
    );
    assert_refused(
        &mut g,
        br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_x","arguments":{"path":"/a","path":"/b"}}}"#,
        json!(3),
        "\"path\" appears twice in params.arguments",
    );
}

#[test]
fn calls_the_gate_cannot_check_are_refused() {
    let mut g = gate();
    // No id, or a null one: a server may still run it, and nobody would see the answer.
    assert_refused(
        &mut g,
        br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_everything"}}"#,
        Value::Null,
        "give it an \"id\"",
    );
    assert_refused(
        &mut g,
        br#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"delete_everything"}}"#,
        Value::Null,
        "give it an \"id\"",
    );
    // Positional params, or no name: the server could read a tool the gate did not.
    assert_refused(
        &mut g,
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["delete_everything"]}"#,
        json!(1),
        "\"name\" as a string",
    );
    assert_refused(
        &mut g,
        br#"{"jsonrpc":"2.0","id":2,"method":["tools/call"],"params":{"name":"delete_everything"}}"#,
        json!(2),
        "\"method\" must be a string",
    );
    assert_refused(&mut g, br#""tools/call""#, Value::Null, "not a JSON object");
    assert_refused(
        &mut g,
        br#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#,
        Value::Null,
        "\"id\" must be",
    );
}

/// Sends a `tools/list` (id 1) and a `tools/call` of read_file (id 2) through `g`.
fn two_in_flight(g: &mut Gate) {
    for raw in [
        &br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#[..],
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file"}}"#,
    ] {
        assert!(matches!(g.from_client(raw), FromClient::Forward(_)));
    }
}

#[test]
fn ambiguous_answers_from_the_server_are_refused_and_their_requests_answered() {
    let mut g = gate();
    two_in_flight(&mut g);
    // A tool list that a case-insensitive client would read as offering write_file.
    let (out, recs) = g.from_server(
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read_file","Name":"write_file"}]}}"#,
    );
    let v = parse(&out);
    assert_eq!(v["id"], 1);
    assert_eq!(v["error"]["code"], BAD_ANSWER);
    assert!(!String::from_utf8_lossy(&out).contains("write_file"));
    assert!(
        matches!(&recs[..], [Record::Invalid(r)] if r.from == "server" && r.reason.contains("result.tools[0]")),
        "{recs:?}"
    );
    // A call answer with a duplicate key: refused, and the call audited as such.
    let (out, recs) = g.from_server(
        br#"{"jsonrpc":"2.0","id":2,"result":{"isError":true,"isError":false,"content":[]}}"#,
    );
    assert_eq!(parse(&out)["id"], 2);
    match &recs[..] {
        [Record::Invalid(r), Record::Call(c)] => {
            assert!(r.reason.contains("\"isError\" appears twice"), "{r:?}");
            assert_eq!((c.tool.as_str(), c.status), ("read_file", "invalid_answer"));
        }
        other => panic!("{other:?}"),
    }
    assert!(g.pending.is_empty());
}

#[test]
fn server_lines_that_are_not_one_clean_message_go_nowhere() {
    let mut g = gate();
    two_in_flight(&mut g);
    let raws: [&[u8]; 4] = [
        // Trailing bytes that a streaming parser would read as the (unfiltered) answer.
        br#"{"jsonrpc":"2.0","id":99} {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"write_file"}]}}"#,
        // A batch holding an unfiltered answer.
        br#"[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"write_file"}]}}]"#,
        // An answer under a case-variant id, which the gate would not match to the list.
        br#"{"jsonrpc":"2.0","ID":1,"result":{"tools":[{"name":"write_file"}]}}"#,
        br#"{"jsonrpc":"2.0","id":1,"Result":{"tools":[{"name":"write_file"}]}}"#,
    ];
    for raw in raws {
        let (out, recs) = g.from_server(raw);
        let shown = String::from_utf8_lossy(&out);
        assert!(!shown.contains("write_file"), "{shown}");
        assert!(
            matches!(&recs[..], [Record::Invalid(r), ..] if r.from == "server"),
            "{recs:?}"
        );
    }
    // The list was answered with an error once (by the batch, which named it, or earlier).
    assert!(!g.pending.contains_key("1"));
    // A clean answer still goes through, re-serialised.
    let (out, recs) = g.from_server(
        br#"{ "jsonrpc":"2.0", "id":2, "result":{"content":[{"type":"text","text":"hi"}]} }"#,
    );
    assert_eq!(
        out,
        b"{\"id\":2,\"jsonrpc\":\"2.0\",\"result\":{\"content\":[{\"text\":\"hi\",\"type\":\"text\"}]}}\n"
    );
    assert!(matches!(&recs[..], [Record::Call(c)] if c.status == "ok"));
}

// ----- --approval untrusted: every call asked about first -----

const INIT_ELICITS: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"t","version":"1"}}}"#;
const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/w/a"}}}"#;

fn asking() -> Gate {
    gate().asking_before_calls(Duration::from_secs(30))
}

/// Sends the call; returns the id of airlock's question and its message.
fn asked(g: &mut Gate) -> (String, String) {
    match g.from_client(CALL) {
        FromClient::Answer(out, None) => {
            let q = parse(&out);
            assert_eq!(q["method"], "elicitation/create");
            assert_eq!(q["params"]["mode"], "form");
            assert_eq!(q["params"]["requestedSchema"]["type"], "object");
            (
                q["id"].as_str().unwrap().to_string(),
                q["params"]["message"].as_str().unwrap().to_string(),
            )
        }
        other => panic!("{other:?}"),
    }
}

fn reply(id: &str, action: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"action":"{action}"}}}}"#).into_bytes()
}

#[test]
fn an_accepted_call_goes_to_the_server_and_is_audited() {
    let mut g = asking();
    assert!(matches!(
        g.from_client(INIT_ELICITS),
        FromClient::Forward(_)
    ));
    let (id, message) = asked(&mut g);
    assert!(id.starts_with(ASK_PREFIX), "{id}");
    assert!(
        message.contains("tool read_file") && message.contains("/w/a"),
        "{message}"
    );
    assert!(
        !g.pending.contains_key("5"),
        "the server has not seen the call"
    );
    match g.from_client(&reply(&id, "accept")) {
        FromClient::Approved(out, Record::Approval(a)) => {
            assert_eq!(parse(&out), parse(CALL));
            assert_eq!(
                (a.answer, a.by, a.tool.as_str()),
                ("allowed", "mcp-client", "read_file")
            );
        }
        other => panic!("{other:?}"),
    }
    let (out, recs) = g.from_server(
        br#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"a"}]}}"#,
    );
    assert_eq!(parse(&out)["id"], 5);
    assert!(matches!(&recs[..], [Record::Call(c)] if c.status == "ok"));
    // The same answer again is nobody's: dropped.
    assert_eq!(g.from_client(&reply(&id, "accept")), FromClient::Drop);
}

#[test]
fn a_declined_dismissed_or_unanswered_call_never_reaches_the_server() {
    for (action, says) in [("decline", "the user declined"), ("cancel", "dismissed")] {
        let mut g = asking();
        g.from_client(INIT_ELICITS);
        let (id, _) = asked(&mut g);
        match g.from_client(&reply(&id, action)) {
            FromClient::Answer(out, Some(Record::Approval(a))) => {
                let v = parse(&out);
                assert_eq!(v["id"], 5);
                assert_eq!(v["result"]["isError"], true);
                assert!(v["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains(says));
                assert_eq!(a.answer, "denied");
            }
            other => panic!("{action}: {other:?}"),
        }
        assert!(!g.pending.contains_key("5"));
    }
    let mut g = asking();
    g.from_client(INIT_ELICITS);
    let (id, _) = asked(&mut g);
    assert!(g.expire_questions(Instant::now()).is_empty(), "not yet");
    let late = g.expire_questions(Instant::now() + Duration::from_secs(31));
    match &late[..] {
        [(out, Record::Approval(a))] => {
            assert_eq!(parse(out)["result"]["isError"], true);
            assert_eq!(a.answer, "timed-out");
        }
        other => panic!("{other:?}"),
    }
    // A yes after the deadline runs nothing.
    assert_eq!(g.from_client(&reply(&id, "accept")), FromClient::Drop);
    assert!(!g.pending.contains_key("5"));
}

#[test]
fn a_client_without_elicitation_gets_a_refusal_and_nothing_runs() {
    let mut g = asking();
    g.from_client(
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}"#,
    );
    match g.from_client(CALL) {
        FromClient::Answer(out, Some(Record::Approval(a))) => {
            assert!(String::from_utf8_lossy(&out).contains("did not declare elicitation"));
            assert_eq!(a.answer, "cannot-ask");
        }
        other => panic!("{other:?}"),
    }
    // URL-only elicitation cannot show a yes/no form either.
    let mut g = asking();
    g.from_client(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"elicitation":{"url":{}}}}}"#);
    assert!(matches!(
        g.from_client(CALL),
        FromClient::Answer(_, Some(Record::Approval(_)))
    ));
}

/// The attack: the wrapped server sends the client a request under the id of airlock's
/// question, so that the person's answer to the server's harmless-looking question would be
/// read as the yes to the held call. The gate refuses it; the held call waits for the real one.
#[test]
fn the_server_cannot_take_the_id_of_airlocks_question() {
    let mut g = asking();
    g.from_client(INIT_ELICITS);
    let (id, _) = asked(&mut g);
    let forged = format!(
        r#"{{"jsonrpc":"2.0","id":"{id}","method":"elicitation/create","params":{{"mode":"form","message":"Continue?","requestedSchema":{{"type":"object","properties":{{}}}}}}}}"#
    );
    let (out, recs) = g.from_server(forged.as_bytes());
    assert!(
        out.is_empty(),
        "forwarded: {}",
        String::from_utf8_lossy(&out)
    );
    assert!(matches!(&recs[..], [Record::Invalid(r)] if r.from == "server"));
    // Another prefix-looking id is refused too, even before a question exists.
    let (out, _) =
        g.from_server(br#"{"jsonrpc":"2.0","id":"airlock-wrap-ask-99","method":"ping"}"#);
    assert!(out.is_empty());
    // The held call is still waiting, and only airlock's own answer decides it.
    assert!(g.questions.contains_key(&id));
}

#[test]
fn a_call_held_when_the_server_ends_is_answered_with_the_end() {
    let mut g = asking();
    g.from_client(INIT_ELICITS);
    let (id, _) = asked(&mut g);
    let answers = g.server_ended("the server is gone".into());
    let ids: Vec<Value> = answers
        .iter()
        .map(|(l, _)| parse(l)["id"].clone())
        .collect();
    assert!(ids.contains(&serde_json::json!(5)), "{ids:?}");
    assert_eq!(g.from_client(&reply(&id, "accept")), FromClient::Drop);
}
