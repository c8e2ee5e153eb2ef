//! Builds the statx compatibility shim that gVisor boxes preload (`compat/statx_compat.c`; see
//! its comment), with the C compiler Rust links with, into `OUT_DIR`.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "compat/statx_compat.c";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let so = out.join("statx-compat.so");
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
        .arg(&so)
        .arg(src)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?} for {src}: {e}"));
    assert!(status.success(), "the C compiler failed on {src}");
}
