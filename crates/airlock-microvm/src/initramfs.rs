//! The guest's initramfs: a `newc` cpio archive holding `/init` (airlock-vm-init), the static
//! agent and the kernel modules with their load order. Built once per set of inputs (named by
//! their digest) and cached.

use crate::guest_files::GuestFiles;
use crate::MicrovmError;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One archive entry.
enum Entry {
    Dir(String),
    File(String, Vec<u8>, u32),
}

/// The cached initramfs for `files`, built if it is not there yet.
pub fn cached(files: &GuestFiles) -> Result<PathBuf, MicrovmError> {
    let modules = files.module_files()?;
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| MicrovmError::io(format!("cannot read {}", p.display()), e))
    };
    let mut entries = vec![
        Entry::Dir("modules".into()),
        Entry::File("init".into(), read(&files.init)?, 0o755),
        Entry::File("airlock-agent".into(), read(&files.agent)?, 0o755),
    ];
    let mut order = String::new();
    for (name, path) in &modules {
        entries.push(Entry::File(format!("modules/{name}"), read(path)?, 0o644));
        order.push_str(name);
        order.push('\n');
    }
    entries.push(Entry::File(
        "modules/order".into(),
        order.into_bytes(),
        0o644,
    ));
    let mut hash = Sha256::new();
    for e in &entries {
        match e {
            Entry::Dir(n) => hash.update(format!("d {n}\n")),
            Entry::File(n, data, mode) => {
                hash.update(format!("f {n} {mode} {}\n", data.len()));
                hash.update(data);
            }
        }
    }
    let digest = hex(&hash.finalize()[..12]);
    let path = files.cache.join(format!("initramfs-{digest}.cpio"));
    if path.is_file() {
        crate::cache::touch(&path);
        return Ok(path);
    }
    let archive = newc(&entries);
    crate::cache::put(&path, &archive)?;
    crate::cache::prune(&files.cache, ".cpio", 2);
    Ok(path)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn newc(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ino = 1u32;
    let mut push = |out: &mut Vec<u8>, name: &str, mode: u32, data: &[u8]| {
        let namesize = name.len() + 1;
        let _ = write!(
            out,
            "070701{ino:08x}{mode:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{namesize:08x}{:08x}",
            0, 0, 1, 0, data.len(), 0, 0, 0, 0, 0
        );
        ino += 1;
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        while out.len() % 4 != 0 {
            out.push(0);
        }
        out.extend_from_slice(data);
        while out.len() % 4 != 0 {
            out.push(0);
        }
    };
    for e in entries {
        match e {
            Entry::Dir(n) => push(&mut out, n, 0o040755, &[]),
            Entry::File(n, data, mode) => push(&mut out, n, 0o100000 | mode, data),
        }
    }
    push(&mut out, "TRAILER!!!", 0, &[]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_is_newc_with_aligned_entries_and_a_trailer() {
        let a = newc(&[Entry::File("init".into(), b"abc".to_vec(), 0o755)]);
        assert!(a.starts_with(b"070701"));
        // Header 110 bytes + "init\0" padded to 116, data padded to 120, then the trailer.
        assert_eq!(&a[110..114], b"init");
        assert_eq!(&a[116..119], b"abc");
        assert_eq!(&a[120..126], b"070701");
        assert!(a.windows(10).any(|w| w == b"TRAILER!!!"));
        assert_eq!(a.len() % 4, 0);
        // mode field of the file entry
        assert_eq!(&a[14..22], b"000081ed");
    }
}
