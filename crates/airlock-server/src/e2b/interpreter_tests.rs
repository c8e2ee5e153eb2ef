#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn languages_normalise_as_e2b_does() {
    assert_eq!(language(None).unwrap(), Language::Python);
    assert_eq!(language(Some("")).unwrap(), Language::Python);
    assert_eq!(language(Some("Python")).unwrap(), Language::Python);
    assert_eq!(language(Some("js")).unwrap(), Language::JavaScript);
    assert_eq!(language(Some("JavaScript")).unwrap(), Language::JavaScript);
    assert_eq!(language(Some("bash")).unwrap(), Language::Bash);
    assert_eq!(language(Some("ts")).unwrap(), Language::TypeScript);
    assert_eq!(
        language(Some(" TypeScript ")).unwrap(),
        Language::TypeScript
    );
    let refused = language(Some("r")).unwrap_err().to_string();
    assert!(refused.contains("typescript"), "{refused}");
}

#[test]
fn events_become_e2b_lines() {
    let out = event_line(&CodeEvent::Stdout {
        text: "hi\n".into(),
        time: 1.5,
    });
    assert_eq!(
        out,
        json!({"type": "stdout", "text": "hi\n", "timestamp": 1_500_000_000i64})
    );
    let r = event_line(&CodeEvent::Result(
        json!({"text/plain": "2", "image/png": "AAAA", "application/x-custom": 1}),
    ));
    assert_eq!(r["type"], "result");
    assert_eq!(r["is_main_result"], true);
    assert_eq!(r["text"], "2");
    assert_eq!(r["png"], "AAAA");
    assert_eq!(r["extra"]["application/x-custom"], 1);
    let d = event_line(&CodeEvent::Display(json!({"text/html": "<b>"})));
    assert_eq!(d["is_main_result"], false);
    assert_eq!(d["html"], "<b>");
    let e = event_line(&CodeEvent::Error {
        name: "E".into(),
        value: "v".into(),
        traceback: vec!["a".into(), "b".into()],
    });
    assert_eq!(e["traceback"], "a\nb");
}

#[test]
fn a_str_result_loses_one_pair_of_quotes_and_charts_and_data_have_their_keys() {
    assert_eq!(e2b_text("'hi'"), "hi");
    assert_eq!(e2b_text("\"it's\""), "it's");
    assert_eq!(e2b_text("''"), "");
    assert_eq!(e2b_text("'''"), "'", "one pair only");
    assert_eq!(e2b_text("42"), "42");
    assert_eq!(e2b_text("'a\""), "'a\"", "unmatched quotes stay");
    assert_eq!(e2b_text("'"), "'");
    let r = event_line(&CodeEvent::Display(json!({
        "text/plain": "'x'",
        CHART_MIME: {"type": "line", "title": null, "elements": []},
        DATA_MIME: {"a": [1]},
    })));
    assert_eq!(r["text"], "x");
    assert_eq!(r["chart"]["type"], "line");
    assert_eq!(r["data"], json!({"a": [1]}));
    assert!(r.get("extra").is_none());
}
