//! Which refusals may be asked about: the real decision procedure refuses, then `askable`
//! says whether a person may widen it, and the widened decision is checked again.

use super::*;
use crate::decision::{decide, Resolver};
use std::collections::HashMap;
use std::io;

/// Answers from a table; never touches the network.
struct Table(HashMap<&'static str, Vec<IpAddr>>);

impl Resolver for Table {
    fn resolve(&self, name: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
        self.0
            .get(name)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not in the table"))
    }
}

fn table() -> Table {
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    Table(HashMap::from([
        ("public.example", vec![ip("93.184.216.34")]),
        ("private.example", vec![ip("10.1.2.3")]),
        ("metadata.example", vec![ip("169.254.169.254")]),
        ("loop.example", vec![ip("127.0.0.1")]),
    ]))
}

fn rules(allow: &[&str], deny: &[&str], ips: &[&str]) -> EgressRules {
    let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    EgressRules::parse(&v(allow), &v(deny), &v(ips), &[]).unwrap()
}

/// The refusal, what may be asked, and the decision under that grant.
fn ask(rules: &EgressRules, host: &str, port: u16) -> (Option<GrantTarget>, Option<bool>) {
    let own = ["192.0.2.10".parse().unwrap()];
    let refusal = decide(rules, host, port, &table(), &own);
    assert!(!refusal.is_allowed(), "{host}:{port} must be refused first");
    let target = askable(&refusal, &own);
    let widened = target
        .as_ref()
        .map(|t| decide(&t.widen(rules), host, port, &table(), &own).is_allowed());
    (target, widened)
}

#[test]
fn a_name_not_in_the_allowlist_is_askable_for_exactly_its_host_and_port() {
    let r = rules(&["other.example"], &[], &[]);
    let (target, widened) = ask(&r, "Public.Example.", 443);
    let target = target.expect("askable");
    assert_eq!(target.to_string(), "public.example:443");
    assert_eq!(widened, Some(true));
    // The grant is that host and port only.
    let host = |s: &str| parse_host(s).unwrap();
    assert!(target.covers(&host("public.example"), 443));
    assert!(!target.covers(&host("public.example"), 80));
    assert!(!target.covers(&host("www.public.example"), 443));
    // A name allowed on other ports only is askable for the port asked.
    let r = rules(&["public.example:80"], &[], &[]);
    let (target, widened) = ask(&r, "public.example", 8443);
    assert_eq!(target.unwrap().to_string(), "public.example:8443");
    assert_eq!(widened, Some(true));
}

#[test]
fn deny_rules_win_and_are_never_askable() {
    let r = rules(&[], &["public.example"], &[]);
    assert_eq!(ask(&r, "public.example", 443), (None, None));
}

#[test]
fn private_loopback_metadata_and_own_addresses_are_never_askable() {
    // By name: the name is askable on its own, but the widened decision still refuses the
    // address, so the gate never asks (it checks the widened decision first).
    let r = rules(&[], &[], &[]);
    for name in ["private.example", "metadata.example", "loop.example"] {
        let (target, widened) = ask(&r, name, 443);
        assert!(target.is_some(), "{name}: the name is not in the allowlist");
        assert_eq!(
            widened,
            Some(false),
            "{name} must stay refused under its grant"
        );
    }
    // Allowed by name but resolving to such an address: never askable at all.
    let r = rules(
        &["private.example", "metadata.example", "loop.example"],
        &[],
        &[],
    );
    for name in ["private.example", "metadata.example", "loop.example"] {
        assert_eq!(ask(&r, name, 443), (None, None), "{name}");
    }
    // As literals, in several notations, and this host's own address.
    let r = rules(&[], &[], &[]);
    for lit in [
        "10.1.2.3",
        "127.0.0.1",
        "0x7f.1",
        "169.254.169.254",
        "::1",
        "::ffff:169.254.169.254",
        "fd00::1",
        "192.0.2.10",
    ] {
        assert_eq!(ask(&r, lit, 80), (None, None), "{lit}");
    }
    // A private literal allowed on other ports only stays final too.
    let r = rules(&[], &[], &["10.1.2.3:80"]);
    assert_eq!(ask(&r, "10.1.2.3", 8080), (None, None));
}

#[test]
fn malformed_and_unresolvable_destinations_are_never_askable() {
    let r = rules(&["nowhere.example"], &[], &[]);
    assert_eq!(ask(&r, "nowhere.example", 443), (None, None));
    assert_eq!(ask(&r, "a@b.example", 443), (None, None));
    assert_eq!(ask(&r, "public.example", 0), (None, None));
}

#[test]
fn a_public_literal_is_askable_as_a_single_address_on_its_port() {
    let r = rules(&[], &[], &[]);
    let (target, widened) = ask(&r, "93.184.216.34", 443);
    assert_eq!(target.unwrap().to_string(), "93.184.216.34:443");
    assert_eq!(widened, Some(true));
}

#[test]
fn answered_grants_parse_and_bad_ones_say_how_to_write_them() {
    assert_eq!(
        GrantTarget::parse("API.example:443").unwrap(),
        GrantTarget::Host {
            name: "api.example".into(),
            port: 443
        }
    );
    let range = GrantTarget::parse("203.0.113.0/24:443").unwrap();
    assert!(range.covers(&parse_host("203.0.113.9").unwrap(), 443));
    assert!(!range.covers(&parse_host("203.0.113.9").unwrap(), 80));
    assert!(!range.covers(&parse_host("api.example").unwrap(), 443));
    for bad in [
        "api.example",
        "*.example:443",
        "api.example:0",
        "api.example:http",
        "",
    ] {
        let e = GrantTarget::parse(bad).unwrap_err().to_string();
        assert!(e.contains("NAME:PORT"), "{bad}: {e}");
    }
}
