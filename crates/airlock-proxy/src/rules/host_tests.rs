use std::net::IpAddr;

use super::*;

fn problem(text: &str) -> NameProblem {
    match normalize_host(text) {
        Err(RuleError::InvalidName { problem, .. }) => problem,
        other => panic!("{text:?}: expected InvalidName, got {other:?}"),
    }
}

#[test]
fn lowercases_and_strips_one_trailing_dot() {
    assert_eq!(
        normalize_host("API.Example.COM").unwrap(),
        "api.example.com"
    );
    assert_eq!(normalize_host("example.com.").unwrap(), "example.com");
    assert_eq!(normalize_host("localhost").unwrap(), "localhost");
    assert_eq!(problem("example.com.."), NameProblem::EmptyLabel);
}

#[test]
fn idna_to_punycode() {
    assert_eq!(
        normalize_host("BÜCHER.example").unwrap(),
        "xn--bcher-kva.example"
    );
    assert_eq!(
        normalize_host("bücher.example").unwrap(),
        "xn--bcher-kva.example"
    );
    assert_eq!(
        normalize_host("xn--bcher-kva.example").unwrap(),
        "xn--bcher-kva.example"
    );
    assert_eq!(
        normalize_host("XN--BCHER-KVA.example").unwrap(),
        "xn--bcher-kva.example"
    );
    // Full-width letters and the ideographic full stop map to their ASCII forms.
    assert_eq!(
        normalize_host("ｅｘａｍｐｌｅ。com").unwrap(),
        "example.com"
    );
}

#[test]
fn invalid_punycode_is_refused() {
    assert_eq!(problem("xn--a.example"), NameProblem::Idna);
}

#[test]
fn label_rules() {
    assert_eq!(problem("a..b"), NameProblem::EmptyLabel);
    assert_eq!(problem(".a.com"), NameProblem::EmptyLabel);
    assert!(matches!(
        problem("-a.com"),
        NameProblem::HyphenAtEdge { .. }
    ));
    assert!(matches!(
        problem("a-.com"),
        NameProblem::HyphenAtEdge { .. }
    ));
    assert_eq!(normalize_host("a-b.com").unwrap(), "a-b.com");
    assert!(matches!(
        problem("a_b.com"),
        NameProblem::BadCharacter { .. }
    ));
    assert!(matches!(
        problem("a b.com"),
        NameProblem::BadCharacter { .. }
    ));
    assert!(matches!(
        problem("a@b.com"),
        NameProblem::BadCharacter { .. }
    ));
    assert!(matches!(
        problem("a/b.com"),
        NameProblem::BadCharacter { .. }
    ));
    assert!(matches!(problem("a:80"), NameProblem::BadCharacter { .. }));
    assert!(matches!(
        problem("*.example.com"),
        NameProblem::BadCharacter { .. }
    ));
    let label63 = "a".repeat(63);
    assert!(normalize_host(&format!("{label63}.com")).is_ok());
    assert!(matches!(
        problem(&format!("{label63}a.com")),
        NameProblem::LabelTooLong { len: 64, .. }
    ));
}

#[test]
fn total_length_limit() {
    // 4 * 63 + 3 dots = 255 > 253.
    let label = "a".repeat(63);
    let long = [label.as_str(); 4].join(".");
    assert!(matches!(problem(&long), NameProblem::TooLong { len: 255 }));
    let ok = format!("{}.{}.{}.{}", label, label, label, "a".repeat(61));
    assert_eq!(ok.len(), 253);
    assert!(normalize_host(&ok).is_ok());
    // The trailing dot does not count.
    assert!(normalize_host(&format!("{ok}.")).is_ok());
}

#[test]
fn numeric_last_label_is_refused() {
    assert_eq!(problem("1.2.3.4.5"), NameProblem::NumericLastLabel);
    assert_eq!(problem("example.123"), NameProblem::NumericLastLabel);
    assert_eq!(problem("example.0x1f"), NameProblem::NumericLastLabel);
    assert_eq!(problem("08.0.0.1"), NameProblem::NumericLastLabel);
    assert_eq!(normalize_host("123.example").unwrap(), "123.example");
    assert_eq!(normalize_host("example.0xg").unwrap(), "example.0xg");
}

#[test]
fn ip_literals_are_not_names() {
    for text in [
        "127.0.0.1",
        "2130706433",
        "0x7f.1",
        "::1",
        "[::1]",
        "::ffff:127.0.0.1",
        "１２７.０.０.１",
    ] {
        match normalize_host(text) {
            Err(RuleError::IpLiteral { ip, .. }) => {
                assert!(ip.is_loopback(), "{text}: {ip}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    let err = normalize_host("0x7f.1").unwrap_err().to_string();
    assert!(
        err.contains("127.0.0.1") && err.contains("--allow-ip"),
        "{err}"
    );
}

#[test]
fn parse_host_separates_addresses_from_names() {
    assert_eq!(
        parse_host("[::ffff:10.0.0.1]").unwrap(),
        Host::Ip("10.0.0.1".parse::<IpAddr>().unwrap())
    );
    assert_eq!(
        parse_host("１２７.０.０.１").unwrap(),
        Host::Ip("127.0.0.1".parse::<IpAddr>().unwrap())
    );
    assert_eq!(
        parse_host("Example.com.").unwrap(),
        Host::Name("example.com".into())
    );
}

#[test]
fn empty_is_refused() {
    assert_eq!(normalize_host(""), Err(RuleError::EmptyName));
    assert_eq!(normalize_host("."), Err(RuleError::EmptyName));
}

#[test]
fn messages_escape_control_characters() {
    let err = normalize_host("a\nb.com").unwrap_err().to_string();
    assert!(!err.contains('\n'), "{err}");
    assert!(err.contains("\\n"), "{err}");
    assert_eq!(printable("a\u{202e}b"), "a\\u{202e}b");
    assert_eq!(printable("bücher"), "bücher");
}
