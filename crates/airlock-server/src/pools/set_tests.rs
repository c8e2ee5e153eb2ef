use super::*;

#[test]
fn a_claim_holds_the_refill_for_the_grace_and_only_once_per_refill_start() {
    let pools = Pools::none();
    let t0 = Instant::now();
    assert_eq!(pools.refill_held_for(t0), None, "no claim, no hold");
    pools.hold_refill(t0 + CLAIM_GRACE);
    assert_eq!(pools.refill_held_for(t0), Some(CLAIM_GRACE));
    // A second claim within the grace does not push the refill further out.
    pools.hold_refill(t0 + CLAIM_GRACE * 3);
    let half = t0 + CLAIM_GRACE / 2;
    assert_eq!(pools.refill_held_for(half), Some(CLAIM_GRACE / 2));
    // Once it has passed the hold is spent: the refill starts a box.
    let after = t0 + CLAIM_GRACE;
    assert_eq!(pools.refill_held_for(after), None);
    assert_eq!(pools.refill_held_for(t0), None, "the hold was cleared");
    // The next claim sets a new one.
    pools.hold_refill(after + CLAIM_GRACE);
    assert_eq!(pools.refill_held_for(after), Some(CLAIM_GRACE));
}
