//! Policy files: `PolicyFile::from_toml` on arbitrary UTF-8 text.
#![no_main]

use std::path::Path;

use airlock_policy::PolicyFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = PolicyFile::from_toml(text, Path::new("f"));
    }
});
