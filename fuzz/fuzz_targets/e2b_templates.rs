//! What E2B's Template SDK sends: a build request's body (base and steps, planned and rendered
//! as a template spec that the builder's parser must accept) and a COPY step's uploaded
//! archive (gzipped or plain tar, read as a build reads it). Any bytes: an error or a value,
//! never a panic, an unbounded allocation or a file outside the fuzz directory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = airlock_server::untrusted::e2b_template_build(data) {
        assert!(!e.contains("does not parse"), "{e}");
    }
    let dir = std::env::temp_dir().join(format!("airlock-fuzz-archive-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let _ = airlock_server::untrusted::e2b_template_archive(data, &dir);
});
