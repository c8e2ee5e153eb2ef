//! Builds the compatibility shims that gVisor boxes preload (`compat/statx_compat.c` and
//! `compat/xattr_compat.c`; see their comments), with the C compiler Rust links with, into
//! `OUT_DIR`.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    for (src, so) in [
        ("compat/statx_compat.c", "statx-compat.so"),
        ("compat/xattr_compat.c", "xattr-compat.so"),
    ] {
        println!("cargo:rerun-if-changed={src}");
        let status = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o"])
            .arg(out.join(so))
            .arg(src)
            .status()
            .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?} for {src}: {e}"));
        assert!(status.success(), "the C compiler failed on {src}");
    }
}
