#![allow(clippy::unwrap_used)]
use super::*;

fn ok(authority: &str) -> (String, u16) {
    parse_authority(authority, Some(80)).unwrap()
}

fn bad(authority: &str) -> HttpError {
    parse_authority(authority, Some(80)).unwrap_err()
}

#[test]
fn valid_authorities() {
    assert_eq!(ok("example.com"), ("example.com".into(), 80));
    assert_eq!(ok("example.com:8080"), ("example.com".into(), 8080));
    assert_eq!(ok("Example.COM:1"), ("Example.COM".into(), 1));
    assert_eq!(ok("a-b_c.d:65535"), ("a-b_c.d".into(), 65535));
    assert_eq!(ok("example.com.:80"), ("example.com.".into(), 80));
    assert_eq!(ok("127.0.0.1:80"), ("127.0.0.1".into(), 80));
    // Other IPv4 notations pass through as names; the decision layer reads them as IPs.
    assert_eq!(ok("0x7f.1"), ("0x7f.1".into(), 80));
    assert_eq!(ok("2130706433"), ("2130706433".into(), 80));
    assert_eq!(ok("h:00080"), ("h".into(), 80));
    assert_eq!(ok("[::1]"), ("::1".into(), 80));
    assert_eq!(ok("[::1]:8080"), ("::1".into(), 8080));
    assert_eq!(ok("[::FFFF:127.0.0.1]:1"), ("::ffff:127.0.0.1".into(), 1));
    assert_eq!(ok("[2001:0db8:0000::0001]"), ("2001:db8::1".into(), 80));
    assert_eq!(ok(&format!("{}.com", "a".repeat(63))).0.len(), 67);
}

#[test]
fn invalid_authorities() {
    for authority in [
        "",
        ":80",
        "h:",
        "h:0",
        "h:65536",
        "h:99999",
        "h:123456",
        "h:-1",
        "h:+80",
        "h:8o",
        "h: 80",
        "h:80:80",
        "::1",
        "::1:80",
        "[::1",
        "[::1]80",
        "[::1]:",
        "[::1]:0",
        "[]",
        "[127.0.0.1]",
        "[v1.x]",
        "[fe80::1%25eth0]",
        "[fe80::1%eth0]:80",
        "h%2ecom",
        "%65vil.com",
        "a b",
        "a\\b",
        "a\tb",
        "exa\u{e9}mple.com",
        "a..b",
        ".a",
        ".",
        "a/b",
        "a!b",
        "a;b",
        "a=b",
        "a,b",
    ] {
        assert!(
            matches!(bad(authority), HttpError::Authority(_)),
            "{authority:?}: {:?}",
            bad(authority)
        );
    }
    assert!(matches!(bad(&"a".repeat(64)), HttpError::Authority(_)));
    assert!(matches!(
        bad(&format!("{}.com", "a.".repeat(126))),
        HttpError::Authority(_)
    ));
    assert_eq!(bad("u@h"), HttpError::Userinfo);
    assert_eq!(bad("[::1]@h"), HttpError::Userinfo);
    assert!(matches!(
        parse_authority("h", None),
        Err(HttpError::Authority(_))
    ));
    assert!(matches!(
        parse_authority("[::1]", None),
        Err(HttpError::Authority(_))
    ));
}

#[test]
fn absolute_uris() {
    let uri = |t: &str| parse_absolute_uri(t).unwrap();
    assert_eq!(uri("http://h"), ("h".into(), 80, "/".into()));
    assert_eq!(uri("http://h/"), ("h".into(), 80, "/".into()));
    assert_eq!(
        uri("http://h:81/a//b/../c?x=y&z"),
        ("h".into(), 81, "/a//b/../c?x=y&z".into())
    );
    assert_eq!(uri("http://h?q"), ("h".into(), 80, "/?q".into()));
    assert_eq!(uri("hTTp://h/%41"), ("h".into(), 80, "/%41".into()));
    assert_eq!(uri("http://[::1]:81?q"), ("::1".into(), 81, "/?q".into()));
    assert_eq!(uri("http://h/a\\b"), ("h".into(), 80, "/a\\b".into()));
}

#[test]
fn invalid_absolute_uris() {
    let err = |t: &str| parse_absolute_uri(t).unwrap_err();
    assert_eq!(err("/"), HttpError::NotProxyRequest);
    assert_eq!(err("*"), HttpError::NotProxyRequest);
    assert_eq!(err("h:80"), HttpError::NotProxyRequest);
    assert_eq!(err("http:/h/"), HttpError::NotProxyRequest);
    assert_eq!(err("https://h/"), HttpError::HttpsNeedsConnect);
    assert_eq!(err("file:///etc/passwd"), HttpError::UnsupportedScheme);
    assert!(matches!(err("1http://h/"), HttpError::Target(_)));
    assert!(matches!(err("://h/"), HttpError::Target(_)));
    assert!(matches!(err("http://h/#x"), HttpError::Target(_)));
    assert!(matches!(err("http:///path"), HttpError::Authority(_)));
    assert!(matches!(err("http://"), HttpError::Authority(_)));
    assert!(matches!(err("http://h\\x/"), HttpError::Authority(_)));
    assert_eq!(err("http://a@b/"), HttpError::Userinfo);
    assert!(matches!(
        parse_connect_target("h:443/"),
        Err(HttpError::Target(_))
    ));
}
