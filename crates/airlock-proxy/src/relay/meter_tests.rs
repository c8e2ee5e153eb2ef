use super::Meter;
use std::sync::atomic::{AtomicU64, Ordering};

#[test]
fn unlimited_grants_everything_and_counts_what_was_read() {
    let (total, fwd) = (AtomicU64::new(5), AtomicU64::new(0));
    let m = Meter::new(&total, None, &fwd);
    assert_eq!(m.reserve(1 << 20), 1 << 20);
    m.settle(1 << 20, 1000);
    assert_eq!(total.load(Ordering::SeqCst), 1005);
    m.forwarded(1000);
    assert_eq!(fwd.load(Ordering::SeqCst), 1000);
}

#[test]
fn a_budget_grants_what_is_left_and_takes_back_what_was_not_read() {
    let (total, fwd) = (AtomicU64::new(0), AtomicU64::new(0));
    let m = Meter::new(&total, Some(100), &fwd);
    assert_eq!(m.reserve(60), 60);
    m.settle(60, 60);
    assert_eq!(m.reserve(60), 40, "only the rest of the budget");
    m.settle(40, 10);
    assert_eq!(total.load(Ordering::SeqCst), 70, "the unread 30 went back");
    assert_eq!(m.reserve(1000), 30);
    m.settle(30, 30);
    assert_eq!(m.reserve(1), 0, "exhausted");
    m.settle(0, 0);
    assert_eq!(total.load(Ordering::SeqCst), 100);
}

#[test]
fn directions_share_the_box_budget() {
    let (total, up, down) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let a = Meter::new(&total, Some(10), &up);
    let b = Meter::new(&total, Some(10), &down);
    assert_eq!(a.reserve(7), 7);
    assert_eq!(b.reserve(7), 3, "the other direction's reservation counts");
    a.settle(7, 7);
    b.settle(3, 3);
    assert_eq!(a.reserve(1), 0);
}
