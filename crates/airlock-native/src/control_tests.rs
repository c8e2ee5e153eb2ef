#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn messages_split_across_reads() {
    let mut r = ControlReader::default();
    assert!(r
        .feed(b"{\"network\": {\"allow_domain\": [\"a.ex")
        .is_empty());
    let out = r.feed(b"ample\"]}}\n\n  \n");
    assert_eq!(out.len(), 1);
    let Ok(ControlMessage::SetNetwork(rules)) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(rules.allow_domains.len(), 1);
    assert_eq!(rules.allow_domains[0].name, "a.example");
}

#[test]
fn bad_messages_are_errors_not_panics() {
    let mut r = ControlReader::default();
    let out = r.feed(b"nonsense\n{\"network\": {\"allow_domain\": [\"*\"]}}\n{\"other\": 1}\n{}\n");
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(Result::is_err), "{out:?}");
    assert!(
        out[1].as_ref().unwrap_err().contains("--allow-domain"),
        "{out:?}"
    );
}

#[test]
fn overlong_lines_are_discarded() {
    let mut r = ControlReader::default();
    let long = vec![b'x'; MAX_LINE + 10];
    assert!(r.feed(&long).is_empty());
    let out = r.feed(b"\n{\"network\": {}}\n");
    assert_eq!(out.len(), 2);
    assert!(out[0].is_err());
    assert!(matches!(out[1], Ok(ControlMessage::SetNetwork(_))));
}
