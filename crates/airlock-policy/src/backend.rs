//! Which kind of box enforces a policy. The same policy means the same thing on every kind; the
//! kinds differ in how much of the host a broken box could reach (see the README's backend
//! table). Which kinds exist in this build, and which this host can run, is the runtime's to say.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A kind of box: the vocabulary of `--backend`, the policy file's `backend` key and the
/// server's `backend` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// Linux namespaces, seccomp, Landlock and cgroups around processes on the host kernel.
    #[default]
    Native,
    /// gVisor's user-space kernel (`runsc`) between the box and the host kernel.
    Gvisor,
    /// A guest kernel of its own under a hypervisor (QEMU's `microvm` machine).
    Microvm,
    /// WebAssembly (WASI) modules under wasmtime, with only the exits the host opens.
    Wasm,
}

impl BackendKind {
    /// Every kind, in the order `airlock check` lists them.
    pub const ALL: [BackendKind; 4] = [
        BackendKind::Native,
        BackendKind::Gvisor,
        BackendKind::Microvm,
        BackendKind::Wasm,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Native => "native",
            BackendKind::Gvisor => "gvisor",
            BackendKind::Microvm => "microvm",
            BackendKind::Wasm => "wasm",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BackendKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BackendKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown backend {s:?}: use native, gvisor, microvm or wasm"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_say_the_choices() {
        for k in BackendKind::ALL {
            assert_eq!(k.as_str().parse::<BackendKind>(), Ok(k));
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
        }
        let err = "docker".parse::<BackendKind>().unwrap_err();
        assert!(err.contains("native, gvisor, microvm or wasm"), "{err}");
        assert_eq!(BackendKind::default(), BackendKind::Native);
    }
}
