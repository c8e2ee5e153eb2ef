//! The microVM door's frames, as the host reads them from a guest (untrusted): any byte stream
//! parses into frames or a typed error, never a panic or an allocation past the payload cap;
//! every frame read re-encodes to the bytes it came from. The guest's config line, parsed by
//! the init from what the host sends, must refuse anything malformed the same way.
#![no_main]

use airlock_microvm_guest::mux::{Frame, MAX_PAYLOAD};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    loop {
        let before = rest;
        match Frame::read(&mut rest) {
            Ok(Some(frame)) => {
                assert!(frame.payload.len() <= MAX_PAYLOAD);
                let used = before.len() - rest.len();
                assert_eq!(frame.encode(), before[..used]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    let _ = serde_json::from_slice::<airlock_microvm_guest::GuestConfig>(data);
});
