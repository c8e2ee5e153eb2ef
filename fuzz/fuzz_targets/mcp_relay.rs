//! The `airlock wrap` relay's decisions on untrusted lines: from the client (the model's calls)
//! and from the wrapped server (hostile by assumption). Must never panic, whatever the bytes.
#![no_main]

use airlock_mcp::wrap::Gate;
use airlock_mcp::ToolFilter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let filter = ToolFilter::from_flags(&["read_*,list_*".to_string()], &["read_secret".to_string()]).unwrap_or_default();
    let mut gate = Gate::new(filter);
    let (client, server) = data.split_at(data.len() / 2);
    for line in client.split(|b| *b == b'\n') {
        let _ = gate.from_client(line);
    }
    for line in server.split(|b| *b == b'\n') {
        let _ = gate.from_server(line);
    }
    let _ = gate.server_ended("fuzz".into());
    let _ = gate.from_client(client);
});
