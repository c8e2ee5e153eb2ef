//! A 256 MiB file streamed in and out: the agent's peak RSS stays far below the file size.
//! (Its own test binary, so no other test's memory is inherited by the forked agent.)
#![allow(clippy::unwrap_used)]

mod support;

use airlock_protocol::{Frame, FrameKind, Op, ReadFileReply, WriteFileReply, MAX_BODY};
use support::{scratch, start};

const SIZE: usize = 256 << 20;

fn chunk(i: usize) -> Vec<u8> {
    (0..MAX_BODY)
        .map(|j| ((i * 7 + j / 4093) % 256) as u8)
        .collect()
}

#[test]
fn write_then_read_256_mib_streamed() {
    let dir = scratch("big");
    let path = dir.join("big.bin").display().to_string();
    let mut a = start();
    let id = a.client.request(Op::WriteFile {
        path: path.clone(),
        mode: Some(0o600),
        channel: 2,
    });
    let mut sum_in = 0u64;
    for i in 0..SIZE / MAX_BODY {
        let c = chunk(i);
        sum_in = c.iter().fold(sum_in, |s, b| {
            s.wrapping_mul(31).wrapping_add(u64::from(*b))
        });
        a.client.send(&Frame::data(2, c).unwrap());
    }
    a.client.send(&Frame::eof(2));
    let w: WriteFileReply = a.client.wait_reply(id).body().unwrap();
    assert_eq!(w.size, SIZE as u64);
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.len(), SIZE as u64);
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
        0o600
    );

    let r: ReadFileReply = a
        .client
        .call(Op::ReadFile { path: path.clone() })
        .body()
        .unwrap();
    assert_eq!(r.size, SIZE as u64);
    let (mut got, mut sum_out) = (0usize, 0u64);
    loop {
        let f = a.client.wait_for(|f| f.channel == r.channel);
        if f.kind == FrameKind::Eof {
            break;
        }
        assert!(f.body.len() <= MAX_BODY);
        got += f.body.len();
        sum_out = f.body.iter().fold(sum_out, |s, b| {
            s.wrapping_mul(31).wrapping_add(u64::from(*b))
        });
    }
    assert_eq!(got, SIZE);
    assert_eq!(sum_out, sum_in);
    let hwm = a.vm_hwm_kib();
    assert!(hwm < 64 * 1024, "agent peak RSS {hwm} KiB");
    eprintln!("agent VmHWM after 2 x 256 MiB: {hwm} KiB");
    assert_eq!(a.finish(), 0);
    drop(dir);
}
