use super::*;

fn readable(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}

#[test]
fn the_relay_has_no_turn_while_a_question_is_up_and_is_woken_after() {
    let floor = TerminalFloor::new().expect("floor");
    assert!(!floor.asking());
    assert!(floor.relay_turn().is_some());
    {
        let _q = floor.question();
        assert!(floor.asking());
        assert!(
            floor.relay_turn().is_none(),
            "no relaying during a question"
        );
        assert!(!readable(floor.wake_fd()));
    }
    assert!(!floor.asking());
    assert!(
        readable(floor.wake_fd()),
        "the relay is woken when the question ends"
    );
    floor.drain_wake();
    assert!(!readable(floor.wake_fd()));
    assert!(floor.relay_turn().is_some());
}

#[test]
fn a_question_waits_for_the_relays_chunk() {
    let floor = std::sync::Arc::new(TerminalFloor::new().expect("floor"));
    let turn = floor.relay_turn().expect("turn");
    let f = floor.clone();
    let asker = std::thread::spawn(move || {
        let _q = f.question();
        f.asking()
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(
        !floor.asking(),
        "the question waits while the relay moves its chunk"
    );
    drop(turn);
    assert!(asker.join().expect("asker"));
}
