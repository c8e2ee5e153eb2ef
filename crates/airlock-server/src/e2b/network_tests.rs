#![allow(clippy::unwrap_used)]

use super::*;

fn opts(allow: &[&str], deny: &[&str]) -> NetworkOptions {
    let v = |l: &[&str]| Some(l.iter().map(|s| s.to_string()).collect());
    NetworkOptions {
        allow_out: v(allow),
        deny_out: v(deny),
        ..NetworkOptions::default()
    }
}

#[test]
fn no_option_takes_the_servers_default() {
    let s = network_section(None, None, DefaultNetwork::Internet).unwrap();
    assert_eq!(s.mode, Some(NetworkMode::Proxy));
    assert_eq!(s.public_internet, Some(true));
    assert!(
        s.allow_domain.is_empty(),
        "no domain pattern stands for the internet"
    );
    let s = network_section(None, None, DefaultNetwork::None).unwrap();
    assert_eq!(s.mode, Some(NetworkMode::None));
}

#[test]
fn no_internet_means_no_network() {
    let s = network_section(Some(false), None, DefaultNetwork::Internet).unwrap();
    assert_eq!(s.mode, Some(NetworkMode::None));
    let s = network_section(
        None,
        Some(&opts(&[], &["0.0.0.0/0"])),
        DefaultNetwork::Internet,
    )
    .unwrap();
    assert_eq!(s.mode, Some(NetworkMode::None));
}

#[test]
fn deny_everything_plus_allow_is_only_those() {
    let s = network_section(
        None,
        Some(&opts(
            &["example.com", "*.pypi.example", "1.2.3.4", "10.0.0.0/8"],
            &["0.0.0.0/0"],
        )),
        DefaultNetwork::Internet,
    )
    .unwrap();
    assert_eq!(s.mode, Some(NetworkMode::Proxy));
    assert_eq!(s.allow_domain, vec!["example.com", "*.pypi.example"]);
    assert_eq!(s.allow_ip, vec!["1.2.3.4", "10.0.0.0/8"]);
    assert_eq!(s.public_internet, None, "only the listed destinations");
    let s = network_section(
        Some(false),
        Some(&opts(&["example.com"], &[])),
        DefaultNetwork::Internet,
    )
    .unwrap();
    assert_eq!(s.allow_domain, vec!["example.com"]);
}

#[test]
fn allow_and_deny_add_to_the_internet() {
    let s = network_section(
        None,
        Some(&opts(&["1.2.3.4"], &["bad.example"])),
        DefaultNetwork::None,
    )
    .unwrap();
    assert_eq!(s.mode, Some(NetworkMode::Proxy));
    assert_eq!(s.public_internet, Some(true));
    assert_eq!(s.allow_ip, vec!["1.2.3.4"]);
    assert_eq!(s.deny_domain, vec!["bad.example"]);
}

#[test]
fn deny_out_of_an_address_or_range_is_a_deny_ip_rule() {
    let s = network_section(
        None,
        Some(&opts(
            &["127.0.0.0/8"],
            &["8.8.8.8", "127.0.0.7", "10.0.0.0/8"],
        )),
        DefaultNetwork::Internet,
    )
    .unwrap();
    assert_eq!(s.public_internet, Some(true));
    assert_eq!(s.deny_ip, vec!["8.8.8.8", "127.0.0.7", "10.0.0.0/8"]);
    assert!(s.deny_domain.is_empty());
    // Each is a rule the proxy parses (a bad one would fail the box, not be dropped).
    airlock_proxy::rules::EgressRules::parse(&[], &[], &[], &[])
        .unwrap()
        .with_deny_ips(&s.deny_ip)
        .unwrap();
}

#[test]
fn what_the_proxy_cannot_enforce_is_refused() {
    assert!(network_section(
        None,
        Some(&opts(&["0.0.0.0/0"], &["0.0.0.0/0"])),
        DefaultNetwork::Internet
    )
    .is_err());
    // maskRequestHost is about traffic into the box (`ingress`): the egress is unchanged.
    let masked = NetworkOptions {
        mask_request_host: Some("${PORT}-x.example.com".into()),
        ..NetworkOptions::default()
    };
    assert_eq!(
        format!(
            "{:?}",
            network_section(None, Some(&masked), DefaultNetwork::Internet).unwrap()
        ),
        format!(
            "{:?}",
            network_section(None, None, DefaultNetwork::Internet).unwrap()
        )
    );
}

#[test]
fn mapped_rules_are_valid_proxy_rules() {
    let s = network_section(
        None,
        Some(&opts(
            &["example.com", "1.2.3.4", "10.0.0.0/8"],
            &["bad.example"],
        )),
        DefaultNetwork::Internet,
    )
    .unwrap();
    airlock_proxy_rules_parse(&s);
}

fn airlock_proxy_rules_parse(s: &airlock_policy::NetworkSection) {
    // The policy resolves (the proxy parses the same strings when the box starts).
    let file = airlock_policy::PolicyFile {
        network: s.clone(),
        workspace: Some("none".into()),
        ..Default::default()
    };
    let env = std::collections::BTreeMap::new();
    let ctx = airlock_policy::ResolveContext {
        cwd: "/".into(),
        env: &env,
        host: &airlock_runtime::RealHost,
    };
    airlock_policy::resolve(&file, &ctx).unwrap();
}
