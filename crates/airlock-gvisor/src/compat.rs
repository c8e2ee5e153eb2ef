//! The statx compatibility shim (`compat/statx_compat.c`): older runsc releases refuse the
//! `AT_NO_AUTOMOUNT` flag that coreutils pass to every stat, so `ls -l` and `stat` fail in the
//! box. Each command preloads a tiny library that clears the flag (meaningless in the Sentry,
//! which has no automount points). Answering ENOSYS to statx from the agent's seccomp filter
//! would not do: glibc then emulates statx with fstatat and passes the same flag on, which the
//! Sentry refuses as well.

use std::collections::BTreeMap;

/// The shim, built from `compat/statx_compat.c` by this crate's build script.
pub const STATX_COMPAT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/statx-compat.so"));
/// Where the shim appears inside the box (read-only).
pub const STATX_COMPAT_INSIDE: &str = "/.airlock/statx-compat.so";

/// Adds the shim to the `LD_PRELOAD` of a command environment (before what is there).
pub fn preload(env: &mut BTreeMap<String, String>) {
    let value = match env.get("LD_PRELOAD").filter(|v| !v.is_empty()) {
        Some(existing) => format!("{STATX_COMPAT_INSIDE}:{existing}"),
        None => STATX_COMPAT_INSIDE.to_string(),
    };
    env.insert("LD_PRELOAD".into(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_is_a_shared_object_and_goes_first() {
        assert_eq!(&STATX_COMPAT[..4], b"\x7fELF");
        let mut env = BTreeMap::new();
        preload(&mut env);
        assert_eq!(env["LD_PRELOAD"], STATX_COMPAT_INSIDE);
        env.insert("LD_PRELOAD".into(), "/lib/x.so".into());
        preload(&mut env);
        assert_eq!(
            env["LD_PRELOAD"],
            format!("{STATX_COMPAT_INSIDE}:/lib/x.so")
        );
    }
}
