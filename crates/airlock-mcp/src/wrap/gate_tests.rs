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
    assert_eq!(
        g.from_client(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        FromClient::Forward
    );
    let answer = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read_file"},{"name":"write_file"},{"name":"read_secret"},{"name":"list_directory"}]}}"#.to_vec();
    let (out, rec) = g.from_server(answer);
    assert!(rec.is_none());
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
        FromClient::Answer(out, Some(rec)) => {
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
    assert_eq!(g.from_client(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/w/a"}}}"#), FromClient::Forward);
    let (_, rec) = g.from_server(
        br#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}"#.to_vec(),
    );
    let rec = rec.unwrap();
    assert_eq!((rec.tool.as_str(), rec.status), ("read_file", "error"));
    assert_eq!(rec.arguments_sha256.len(), 64);
}

#[test]
fn a_server_that_ends_answers_everything_in_flight_and_after() {
    let mut g = gate();
    assert_eq!(
        g.from_client(
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file"}}"#
        ),
        FromClient::Forward
    );
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
