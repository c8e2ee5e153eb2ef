#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn text_chunks_stay_text_and_binary_goes_base64() {
    let line = chunk_line(Stream::Stdout, b"hi\n");
    let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(v, serde_json::json!({"type": "stdout", "data": "hi\n"}));
    assert!(line.ends_with(b"\n"));
    let v: serde_json::Value =
        serde_json::from_slice(&chunk_line(Stream::Stderr, &[0xff, 0x00])).unwrap();
    assert_eq!(v, serde_json::json!({"type": "stderr", "data_b64": "/wA="}));
}

#[test]
fn bad_commands_are_refused_before_running() {
    let req: ExecRequest = parse(br#"{"cmd": []}"#, false).unwrap();
    assert_eq!(command(req).unwrap_err().code(), "invalid");
    let req: ExecRequest = parse(br#"{"cmd": ["true"], "timeout": -1}"#, false).unwrap();
    assert_eq!(command(req).unwrap_err().code(), "invalid");
    assert!(parse::<ExecRequest>(br#"{"cmd": ["true"], "shell": true}"#, false).is_err());
}
