//! Gives this build of the native box an identity, which `airlock-sandbox-host` prints and
//! airlock compares with its own before it lets that program hold its boxes (see
//! `src/box_host.rs`): the two speak a control protocol that changes between builds.

use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rustc-env=AIRLOCK_NATIVE_BUILD_ID={version}-{now:x}");
}
