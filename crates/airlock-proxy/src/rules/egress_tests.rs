use std::net::IpAddr;

use super::*;

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

#[test]
fn empty_rules_are_the_default() {
    assert_eq!(
        EgressRules::parse(&[], &[], &[], &[]).unwrap(),
        EgressRules::default()
    );
}

#[test]
fn parses_all_four_flags() {
    let rules = EgressRules::parse(
        &strings(&["*.example.com", "api.test:443"]),
        &strings(&["evil.example.com"]),
        &strings(&["127.0.0.1", "10.0.0.0/8:5432"]),
        &strings(&[
            "Svc.Test=127.0.0.1",
            "db.test=[::1]",
            "v6.test=::ffff:10.0.0.1",
        ]),
    )
    .unwrap();
    assert_eq!(rules.allow_domains.len(), 2);
    assert_eq!(rules.deny_domains[0].name, "evil.example.com");
    assert_eq!(rules.allow_ips.len(), 2);
    assert_eq!(
        rules.map_hosts["svc.test"],
        "127.0.0.1".parse::<IpAddr>().unwrap()
    );
    assert_eq!(rules.map_hosts["db.test"], "::1".parse::<IpAddr>().unwrap());
    assert_eq!(
        rules.map_hosts["v6.test"],
        "10.0.0.1".parse::<IpAddr>().unwrap()
    );
}

#[test]
fn errors_name_the_flag() {
    type Case<'a> = (
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
        &'a str,
    );
    let cases: [Case; 4] = [
        (&["*.com"], &[], &[], &[], "--allow-domain"),
        (&[], &["*"], &[], &[], "--deny-domain"),
        (&[], &[], &["10.0.0.0/33"], &[], "--allow-ip"),
        (&[], &[], &[], &["svc.test"], "--map-host"),
    ];
    for (a, d, i, m, flag) in cases {
        let err =
            EgressRules::parse(&strings(a), &strings(d), &strings(i), &strings(m)).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with(flag), "{text}");
        assert!(matches!(err, RuleError::Flag { flag: f, .. } if f == flag));
    }
}

#[test]
fn map_host_validation() {
    for bad in [
        "svc.test",
        "=127.0.0.1",
        "svc.test=",
        "svc.test=localhost",
        "svc.test=127.1",
        "*.test=127.0.0.1",
        "svc.test=127.0.0.1:80",
        "127.0.0.1=127.0.0.1",
        "svc.test=fe80::1%eth0",
    ] {
        assert!(
            EgressRules::parse(&[], &[], &[], &strings(&[bad])).is_err(),
            "{bad}"
        );
    }
    for never in [
        "svc.test=0.0.0.0",
        "svc.test=::",
        "svc.test=224.0.0.1",
        "svc.test=255.255.255.255",
    ] {
        let err = EgressRules::parse(&[], &[], &[], &strings(&[never])).unwrap_err();
        assert!(err.to_string().contains("cannot be a destination"), "{err}");
    }
}

#[test]
fn map_host_conflicts_are_refused_duplicates_are_not() {
    let err = EgressRules::parse(
        &[],
        &[],
        &[],
        &strings(&["a.test=10.0.0.1", "A.test.=10.0.0.2"]),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("both 10.0.0.1 and 10.0.0.2"),
        "{err}"
    );
    let rules = EgressRules::parse(
        &[],
        &[],
        &[],
        &strings(&["a.test=10.0.0.1", "a.test=10.0.0.1"]),
    )
    .unwrap();
    assert_eq!(rules.map_hosts.len(), 1);
}

#[test]
fn serializes_for_audit() {
    let rules = EgressRules::parse(
        &strings(&["*.example.com:443"]),
        &[],
        &strings(&["[::1]:8080"]),
        &strings(&["s.test=127.0.0.1"]),
    )
    .unwrap();
    let json = serde_json::to_value(&rules).unwrap();
    assert_eq!(json["allow_domains"][0]["name"], "example.com");
    assert_eq!(json["allow_ips"][0]["net"], "::1/128");
    assert_eq!(json["map_hosts"]["s.test"], "127.0.0.1");
}
