//! The compatibility shims commands preload, each for a runsc bug a box's everyday tools hit:
//!
//! - statx (`compat/statx_compat.c`): older runsc releases refuse the `AT_NO_AUTOMOUNT` flag
//!   that coreutils pass to every stat, so `ls -l` and `stat` fail in the box. The shim clears
//!   the flag (meaningless in the Sentry, which has no automount points). Answering ENOSYS to
//!   statx from the agent's seccomp filter would not do: glibc then emulates statx with fstatat
//!   and passes the same flag on, which the Sentry refuses as well.
//! - xattr (`compat/xattr_compat.c`): gVisor #11049, `lgetxattr` on a symlink answers EBADF, so
//!   `ls -l` prints "Bad file descriptor" for every link it lists; the shim turns that EBADF
//!   (impossible for a path-based call otherwise) into ENODATA.

use std::collections::BTreeMap;

/// The shim, built from `compat/statx_compat.c` by this crate's build script.
pub const STATX_COMPAT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/statx-compat.so"));
/// Where the shim appears inside the box (read-only).
pub const STATX_COMPAT_INSIDE: &str = "/.airlock/statx-compat.so";
/// The xattr shim, built from `compat/xattr_compat.c` by this crate's build script.
pub const XATTR_COMPAT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xattr-compat.so"));
/// Where the xattr shim appears inside the box (read-only).
pub const XATTR_COMPAT_INSIDE: &str = "/.airlock/xattr-compat.so";

/// Adds the shim at `inside` to the `LD_PRELOAD` of a command environment (before what is
/// there).
pub fn preload(env: &mut BTreeMap<String, String>, inside: &str) {
    let value = match env.get("LD_PRELOAD").filter(|v| !v.is_empty()) {
        Some(existing) => format!("{inside}:{existing}"),
        None => inside.to_string(),
    };
    env.insert("LD_PRELOAD".into(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_is_a_shared_object_and_goes_first() {
        assert_eq!(&STATX_COMPAT[..4], b"\x7fELF");
        assert_eq!(&XATTR_COMPAT[..4], b"\x7fELF");
        let mut env = BTreeMap::new();
        preload(&mut env, STATX_COMPAT_INSIDE);
        assert_eq!(env["LD_PRELOAD"], STATX_COMPAT_INSIDE);
        env.insert("LD_PRELOAD".into(), "/lib/x.so".into());
        preload(&mut env, STATX_COMPAT_INSIDE);
        preload(&mut env, XATTR_COMPAT_INSIDE);
        assert_eq!(
            env["LD_PRELOAD"],
            format!("{XATTR_COMPAT_INSIDE}:{STATX_COMPAT_INSIDE}:/lib/x.so")
        );
    }
}
