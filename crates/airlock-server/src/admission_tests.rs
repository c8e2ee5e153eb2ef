#![allow(clippy::unwrap_used)]

use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;
use tokio::sync::oneshot::error::TryRecvError;

fn v4(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

#[test]
fn a_peer_over_its_cap_is_refused_while_others_get_in() {
    let table = Admissions::new(10, 2);
    let _a = table.admit(v4(1), false).unwrap();
    let _b = table.admit(v4(1), false).unwrap();
    assert_eq!(table.admit(v4(1), false).unwrap_err(), Refusal::PeerFull);
    let _c = table.admit(v4(2), false).unwrap();
    assert_eq!(table.len(), 3);
}

#[test]
fn a_closed_connection_frees_its_place() {
    let table = Admissions::new(10, 1);
    let a = table.admit(v4(1), false).unwrap();
    assert_eq!(table.admit(v4(1), false).unwrap_err(), Refusal::PeerFull);
    drop(a);
    let _b = table.admit(v4(1), false).unwrap();
    assert_eq!(table.len(), 1);
}

#[test]
fn when_full_the_longest_idle_connection_makes_room() {
    let table = Admissions::new(2, 10);
    let mut oldest = table.admit(v4(1), false).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let mut newer = table.admit(v4(2), false).unwrap();
    let _third = table.admit(v4(3), false).unwrap();
    assert_eq!(table.len(), 2);
    assert!(oldest
        .evicted
        .try_recv()
        .is_err_and(|e| e == TryRecvError::Closed));
    assert!(newer
        .evicted
        .try_recv()
        .is_err_and(|e| e == TryRecvError::Empty));
    // The evicted connection's own slot dropping later changes nothing.
    drop(oldest);
    assert_eq!(table.len(), 2);
}

#[test]
fn a_connection_with_a_request_in_flight_is_never_evicted() {
    let table = Admissions::new(1, 10);
    let mut busy = table.admit(v4(1), false).unwrap();
    let request = busy.activity.begin();
    assert_eq!(table.admit(v4(2), false).unwrap_err(), Refusal::ServerFull);
    assert!(busy
        .evicted
        .try_recv()
        .is_err_and(|e| e == TryRecvError::Empty));
    drop(request);
    let _next = table.admit(v4(2), false).unwrap();
    assert!(busy
        .evicted
        .try_recv()
        .is_err_and(|e| e == TryRecvError::Closed));
}

#[test]
fn short_of_descriptors_a_connection_comes_in_only_in_place_of_an_idle_one() {
    let table = Admissions::new(100, 100);
    let busy = table.admit(v4(1), false).unwrap();
    let _request = busy.activity.begin();
    assert_eq!(table.admit(v4(2), true).unwrap_err(), Refusal::ServerFull);
    let _idle = table.admit(v4(3), false).unwrap();
    let _in_its_place = table.admit(v4(4), true).unwrap();
    assert_eq!(table.len(), 2);
}

#[test]
fn ipv6_peers_are_counted_per_64_and_mapped_ipv4_as_ipv4() {
    let a: Ipv6Addr = "2001:db8:1:2::1".parse().unwrap();
    let b: Ipv6Addr = "2001:db8:1:2:ffff::9".parse().unwrap();
    let c: Ipv6Addr = "2001:db8:1:3::1".parse().unwrap();
    assert_eq!(peer_key(a.into()), peer_key(b.into()));
    assert_ne!(peer_key(a.into()), peer_key(c.into()));
    let mapped: Ipv6Addr = "::ffff:127.0.0.1".parse().unwrap();
    assert_eq!(peer_key(mapped.into()), v4(1));
}
