use super::*;

#[test]
fn an_answer_line_parses_with_defaults() {
    let a = AnswerLine::parse(r#"{"id":3,"answer":"allow"}"#).unwrap();
    assert_eq!(a.id, 3);
    assert_eq!(a.scope, ApprovalScope::Once);
    let a = a.into_answer("program: x").unwrap();
    assert_eq!(a.verdict, Verdict::Allow);
    assert_eq!(a.by, "program: x");
    let a = AnswerLine::parse(
        r#" {"id":4,"answer":"allow","scope":"run","ttl_secs":60,"byte_budget":1000,"grant":"a.example:443"} "#,
    )
    .unwrap()
    .into_answer("t")
    .unwrap();
    assert_eq!(a.scope, ApprovalScope::Run);
    assert_eq!(a.ttl, Some(Duration::from_secs(60)));
    assert_eq!(a.byte_budget, Some(1000));
    assert_eq!(a.grant.as_deref(), Some("a.example:443"));
}

#[test]
fn bad_answer_lines_are_refused_with_the_format() {
    for bad in [
        "",
        "yes",
        r#"{"id":1}"#,
        r#"{"id":1,"answer":"maybe"}"#,
        r#"{"id":1,"answer":"allow","scope":"forever"}"#,
        r#"{"id":1,"answer":"allow","extra":true}"#,
        r#"{"id":-1,"answer":"allow"}"#,
    ] {
        let e = AnswerLine::parse(bad).unwrap_err().to_string();
        assert!(e.contains("one JSON object per line"), "{bad}: {e}");
    }
    for ttl in [0u64, 86_401] {
        let line = format!(r#"{{"id":1,"answer":"allow","scope":"run","ttl_secs":{ttl}}}"#);
        let e = AnswerLine::parse(&line)
            .unwrap()
            .into_answer("t")
            .unwrap_err();
        assert!(e.to_string().contains("ttl_secs"), "{e}");
    }
}
