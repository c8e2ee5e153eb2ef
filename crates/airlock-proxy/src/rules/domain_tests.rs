use super::*;

fn pat(text: &str) -> DomainPattern {
    DomainPattern::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn parses_exact_wildcard_and_port() {
    assert_eq!(
        pat("api.example.com"),
        DomainPattern {
            name: "api.example.com".into(),
            subdomains: false,
            port: None
        }
    );
    assert_eq!(
        pat("*.Example.com:443"),
        DomainPattern {
            name: "example.com".into(),
            subdomains: true,
            port: Some(443)
        }
    );
    assert_eq!(pat("example.com.:8080").port, Some(8080));
    assert_eq!(pat("localhost").name, "localhost");
    assert_eq!(pat("*.co.uk").name, "co.uk");
    assert_eq!(pat("a:65535").port, Some(65535));
    assert_eq!(pat("a:1").port, Some(1));
}

#[test]
fn displays_as_written() {
    for text in [
        "api.example.com",
        "*.example.com",
        "*.example.com:443",
        "svc.test:8080",
    ] {
        assert_eq!(pat(text).to_string(), text);
    }
    assert_eq!(
        pat("BÜCHER.example:443").to_string(),
        "xn--bcher-kva.example:443"
    );
}

#[test]
fn refuses_bare_and_misplaced_wildcards() {
    for text in ["*", "*.", "*:443", "*..", "*.:443"] {
        assert!(
            matches!(
                DomainPattern::parse(text),
                Err(RuleError::BareWildcard { .. })
            ),
            "{text}"
        );
    }
    for text in [
        "a.*.com",
        "*example.com",
        "**.example.com",
        "*.*.example.com",
        "example.*",
        "ex*ample.com",
    ] {
        assert!(
            matches!(
                DomainPattern::parse(text),
                Err(RuleError::WildcardPlacement { .. })
            ),
            "{text}: {:?}",
            DomainPattern::parse(text)
        );
    }
}

#[test]
fn refuses_single_label_wildcard_suffix() {
    for text in ["*.com", "*.COM.", "*.localhost", "*.internal:443"] {
        let err = DomainPattern::parse(text).unwrap_err();
        assert!(
            matches!(err, RuleError::WildcardTooBroad { .. }),
            "{text}: {err:?}"
        );
        assert!(err.to_string().contains("top-level domain"), "{err}");
    }
}

#[test]
fn refuses_bad_names() {
    for text in [
        "a..b",
        "-a.com",
        "a_b.com",
        "",
        &format!("{}.com", "a".repeat(64)),
    ] {
        assert!(DomainPattern::parse(text).is_err(), "{text}");
    }
}

#[test]
fn refuses_bad_ports() {
    for text in [
        "a.com:0",
        "a.com:65536",
        "a.com:abc",
        "a.com:",
        "a.com:+443",
        "a.com:-1",
        "a.com: 443",
    ] {
        assert!(
            matches!(
                DomainPattern::parse(text),
                Err(RuleError::InvalidPort { .. })
            ),
            "{text}: {:?}",
            DomainPattern::parse(text)
        );
    }
    let err = DomainPattern::parse("a.com:99999").unwrap_err().to_string();
    assert!(err.contains("99999") && err.contains("1 to 65535"), "{err}");
}

#[test]
fn refuses_ip_addresses() {
    for text in [
        "127.0.0.1",
        "127.0.0.1:443",
        "::1",
        "[::1]:443",
        "2130706433",
        "10.0.0.0",
    ] {
        let err = DomainPattern::parse(text).unwrap_err();
        assert!(
            matches!(err, RuleError::IpLiteral { .. }),
            "{text}: {err:?}"
        );
        assert!(err.to_string().contains("--allow-ip"));
    }
}

#[test]
fn wildcard_matches_subdomains_only() {
    let p = pat("*.example.com");
    assert!(p.matches("a.example.com", 443));
    assert!(p.matches("a.b.example.com", 1));
    assert!(!p.matches("example.com", 443));
    assert!(!p.matches("badexample.com", 443));
    assert!(!p.matches("a.badexample.com", 443));
    assert!(!p.matches("example.com.evil.test", 443));
    assert!(!p.matches(".example.com", 443));
}

#[test]
fn exact_matches_only_the_name() {
    let p = pat("example.com");
    assert!(p.matches("example.com", 80));
    assert!(!p.matches("a.example.com", 80));
    assert!(!p.matches("example.co", 80));
    assert!(!p.matches("xexample.com", 80));
}

#[test]
fn port_specific_patterns() {
    let p = pat("api.example.com:443");
    assert!(p.matches("api.example.com", 443));
    assert!(!p.matches("api.example.com", 80));
    assert!(p.matches_name("api.example.com"));
    let any = pat("api.example.com");
    assert!(any.matches("api.example.com", 1) && any.matches("api.example.com", 65535));
}

#[test]
fn idna_pattern_matches_punycode_host() {
    let p = pat("BÜCHER.example");
    assert_eq!(p, pat("xn--bcher-kva.example"));
    assert!(p.matches(&normalize_host("bücher.example").unwrap(), 443));
}
