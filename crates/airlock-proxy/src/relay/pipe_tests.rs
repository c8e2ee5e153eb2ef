use super::{PipePool, MIN_PIPE_BYTES, PIPE_BYTES};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

#[test]
fn a_pool_never_hands_out_more_than_its_maximum_and_counts_returns() {
    let pool = PipePool::new(2);
    let a = pool.take(PIPE_BYTES).expect("first pipe");
    let b = pool.take(PIPE_BYTES).expect("second pipe");
    assert!(
        pool.take(PIPE_BYTES).is_none(),
        "a third pipe beyond the maximum"
    );
    assert_eq!(pool.in_use(), 2);
    drop(a);
    assert_eq!(pool.in_use(), 1);
    let c = pool.take(PIPE_BYTES).expect("a pipe after one came back");
    drop((b, c));
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn the_pipe_gets_a_useful_capacity() {
    let pool = PipePool::new(1);
    let pipe = pool.take(PIPE_BYTES).expect("pipe");
    assert!(
        pipe.capacity() >= MIN_PIPE_BYTES && pipe.capacity() <= PIPE_BYTES,
        "{}",
        pipe.capacity()
    );
}

#[test]
fn bytes_pass_through_the_pipe_unchanged_and_counted() {
    let pool = PipePool::new(1);
    let mut pipe = pool.take(PIPE_BYTES).expect("pipe");
    let (mut a, b) = UnixStream::pair().expect("pair");
    let (c, mut d) = UnixStream::pair().expect("pair");
    b.set_nonblocking(true).expect("nonblocking");
    c.set_nonblocking(true).expect("nonblocking");
    let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    a.write_all(&data).expect("write");
    let mut moved = 0;
    while moved < data.len() {
        let n = pipe
            .fill_from(b.as_fd(), data.len() - moved)
            .expect("splice in");
        assert_eq!(pipe.len(), n);
        while pipe.len() > 0 {
            pipe.drain_to(c.as_fd()).expect("splice out");
        }
        moved += n;
    }
    let mut got = vec![0u8; data.len()];
    d.read_exact(&mut got).expect("read");
    assert!(got == data);
    // Nothing more: the socket has no data (not "pipe full").
    let e = pipe.fill_from(b.as_fd(), 10).expect_err("no data");
    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
    drop(a);
    assert_eq!(
        pipe.fill_from(b.as_fd(), 10).expect("eof"),
        0,
        "end of file"
    );
}

#[test]
fn read_into_empties_the_pipe_by_copying() {
    let pool = PipePool::new(1);
    let mut pipe = pool.take(PIPE_BYTES).expect("pipe");
    let (mut a, b) = UnixStream::pair().expect("pair");
    b.set_nonblocking(true).expect("nonblocking");
    a.write_all(b"hello pipe").expect("write");
    assert_eq!(pipe.fill_from(b.as_fd(), 100).expect("splice in"), 10);
    let mut buf = [0u8; 4];
    assert_eq!(pipe.read_into(&mut buf).expect("read"), 4);
    assert_eq!(&buf, b"hell");
    assert_eq!(pipe.len(), 6);
    let mut buf = [0u8; 64];
    assert_eq!(pipe.read_into(&mut buf).expect("read"), 6);
    assert_eq!(&buf[..6], b"o pipe");
    assert_eq!(pipe.len(), 0);
}

#[test]
fn the_test_process_ignores_sigpipe_so_pipes_are_handed_out() {
    // Rust's runtime ignores SIGPIPE before main; a process that did not would get no pipe.
    assert!(!super::sys::sigpipe_is_fatal());
}
