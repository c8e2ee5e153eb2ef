//! What E2B clients send the gateway: Connect request streams (envelopes split anywhere, each
//! message decoded as envd's process and filesystem requests), the control plane's create body
//! (with template, env, metadata, network planning and the ports rule), its list query and the
//! `Host` of a request for a sandbox's port. Any bytes: an error
//! or a value, never a panic or an unbounded allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(1, |b| usize::from(*b % 17) + 1);
    let _ = airlock_server::untrusted::e2b_connect_stream(data, split);
    let _ = airlock_server::untrusted::e2b_create_body(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = airlock_server::untrusted::e2b_list_query(text);
        let _ = airlock_server::untrusted::e2b_port_host(text);
    }
});
