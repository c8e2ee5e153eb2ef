#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn output_is_decoded_from_text_or_base64() {
    assert_eq!(event(r#"{"type":"start","pid":7}"#).unwrap(), Event::Start);
    assert_eq!(
        event(r#"{"type":"stdout","data":"hi\n"}"#).unwrap(),
        Event::Stdout(b"hi\n".to_vec())
    );
    assert_eq!(
        event(r#"{"type":"stderr","data_b64":"/wA="}"#).unwrap(),
        Event::Stderr(vec![0xff, 0])
    );
    assert!(event(r#"{"type":"stdout","data_b64":"%%"}"#).is_err());
    assert!(event("not json").is_err());
}

#[test]
fn the_end_event_gives_the_exit_status() {
    let end = |s: &str| event(s).unwrap();
    assert_eq!(
        end(r#"{"type":"end","exit_code":7,"signal":null,"timed_out":false}"#),
        Event::End(7)
    );
    assert_eq!(
        end(r#"{"type":"end","exit_code":null,"signal":9,"timed_out":false}"#),
        Event::End(137)
    );
    assert_eq!(
        end(r#"{"type":"end","exit_code":null,"signal":9,"timed_out":true}"#),
        Event::End(124)
    );
    assert_eq!(
        end(r#"{"type":"end","exit_code":null,"signal":null,"timed_out":false}"#),
        Event::End(125)
    );
}

#[test]
fn a_failure_in_the_stream_carries_message_and_code() {
    let e = event(r#"{"type":"error","code":"not_running","message":"the box is gone"}"#).unwrap();
    assert_eq!(e, Event::Failed("the box is gone (not_running)".into()));
}
