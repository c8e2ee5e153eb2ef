//! The JSON bodies of airlock serve's API: create (with the template and policy resolution),
//! exec and timeout. Any bytes: an error or a value, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = airlock_server::untrusted::create_body(data);
    let _ = airlock_server::untrusted::exec_body(data);
    let _ = airlock_server::untrusted::timeout_body(data);
});
