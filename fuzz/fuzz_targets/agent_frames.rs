//! Arbitrary bytes into the agent-protocol frame decoder (fed in two pieces) and every JSON body
//! parser: nothing may panic, and every decoded frame must re-encode to the bytes it came from.
#![no_main]

use airlock_protocol::{Event, FrameDecoder, FrameKind, Hello, Reply, Request, Role};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(0, |b| usize::from(*b)).min(data.len());
    let (a, b) = data.split_at(split);
    let mut decoder = FrameDecoder::new();
    let mut reencoded = Vec::new();
    for piece in [a, b] {
        decoder.feed(piece);
        while let Ok(Some(frame)) = decoder.next() {
            assert!(frame.body.len() <= airlock_protocol::MAX_BODY);
            frame.encode_into(&mut reencoded);
            match frame.kind {
                FrameKind::Hello => {
                    let _ = Hello::accept(&frame.body, Role::Host);
                }
                FrameKind::Request => {
                    if let Ok(req) = Request::decode(&frame.body) {
                        let again = Request::decode(&req.encode().unwrap()).unwrap();
                        assert_eq!(again, req);
                    }
                }
                FrameKind::Reply => {
                    let _ = Reply::decode(&frame.body);
                }
                FrameKind::Event => {
                    let _ = Event::decode(&frame.body);
                }
                FrameKind::Data | FrameKind::Eof => {}
            }
        }
    }
    assert!(data.starts_with(&reencoded));
    // The raw input is also tried as a JSON body of every kind.
    let _ = Request::decode(data);
    let _ = Reply::decode(data);
    let _ = Event::decode(data);
    let _ = Hello::accept(data, Role::Agent);
});
