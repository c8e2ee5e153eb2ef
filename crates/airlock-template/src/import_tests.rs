//! Imports of images the tests write themselves (tar bytes and JSON), including every hostile
//! archive case: each must be refused or neutralised, and nothing may appear outside the store.

use super::*;
use crate::TemplateStore;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

/// One tar entry, written by hand so hostile paths (`..`, absolute) are possible.
struct E {
    path: Vec<u8>,
    kind: u8,
    mode: u32,
    data: Vec<u8>,
    link: Vec<u8>,
}

fn file(path: &str, data: &str) -> E {
    E {
        path: path.into(),
        kind: b'0',
        mode: 0o644,
        data: data.into(),
        link: vec![],
    }
}
fn dir(path: &str, mode: u32) -> E {
    E {
        path: path.into(),
        kind: b'5',
        mode,
        data: vec![],
        link: vec![],
    }
}
fn symlink(path: &str, to: &str) -> E {
    E {
        path: path.into(),
        kind: b'2',
        mode: 0o777,
        data: vec![],
        link: to.into(),
    }
}
fn hardlink(path: &str, to: &str) -> E {
    E {
        path: path.into(),
        kind: b'1',
        mode: 0o644,
        data: vec![],
        link: to.into(),
    }
}
fn with_mode(mut e: E, mode: u32) -> E {
    e.mode = mode;
    e
}

fn octal(field: &mut [u8], v: u64) {
    let s = format!("{:0w$o}\0", v, w = field.len() - 1);
    field.copy_from_slice(s.as_bytes());
}

fn tar_bytes(entries: &[E]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let mut h = [0u8; 512];
        assert!(e.path.len() <= 100 && e.link.len() <= 100);
        h[..e.path.len()].copy_from_slice(&e.path);
        octal(&mut h[100..108], e.mode as u64);
        octal(&mut h[108..116], 0);
        octal(&mut h[116..124], 0);
        octal(&mut h[124..136], e.data.len() as u64);
        octal(&mut h[136..148], 0);
        h[156] = e.kind;
        h[157..157 + e.link.len()].copy_from_slice(&e.link);
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|b| *b as u32).sum();
        let s = format!("{sum:06o}\0 ");
        h[148..156].copy_from_slice(s.as_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(&e.data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    g.write_all(bytes).unwrap();
    g.finish().unwrap()
}

fn sha(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// How a test layer is stored in its image.
#[derive(Clone, Copy)]
enum Codec {
    Plain,
    Gzip,
    Zstd,
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
}

/// Writes an OCI layout: each layer is (uncompressed tar, gzip it?).
fn oci(dir: &Path, layers: &[(Vec<u8>, bool)], config: serde_json::Value) {
    let coded: Vec<(Vec<u8>, Codec)> = layers
        .iter()
        .map(|(tar, gz)| (tar.clone(), if *gz { Codec::Gzip } else { Codec::Plain }))
        .collect();
    oci_coded(dir, &coded, config)
}

/// Writes an OCI layout: each layer is (uncompressed tar, how it is stored).
fn oci_coded(dir: &Path, layers: &[(Vec<u8>, Codec)], config: serde_json::Value) {
    let stored: Vec<(Vec<u8>, Vec<u8>, &str)> = layers
        .iter()
        .map(|(tar, codec)| match codec {
            Codec::Plain => (
                tar.clone(),
                tar.clone(),
                "application/vnd.oci.image.layer.v1.tar",
            ),
            Codec::Gzip => (
                tar.clone(),
                gzip(tar),
                "application/vnd.oci.image.layer.v1.tar+gzip",
            ),
            Codec::Zstd => (
                tar.clone(),
                zstd(tar),
                "application/vnd.oci.image.layer.v1.tar+zstd",
            ),
        })
        .collect();
    oci_blobs(dir, &stored, config)
}

/// Writes an OCI layout: each layer is (uncompressed tar, the blob stored, its media type).
fn oci_blobs(dir: &Path, layers: &[(Vec<u8>, Vec<u8>, &str)], config: serde_json::Value) {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let d = sha(bytes);
        std::fs::write(blobs.join(&d[7..]), bytes).unwrap();
        d
    };
    let mut descs = Vec::new();
    let mut diff_ids = Vec::new();
    for (tar, blob, media) in layers {
        diff_ids.push(sha(tar));
        descs
            .push(serde_json::json!({"mediaType": media, "digest": put(blob), "size": blob.len()}));
    }
    let mut config = config;
    config["rootfs"] = serde_json::json!({"type": "layers", "diff_ids": diff_ids});
    let config_bytes = serde_json::to_vec(&config).unwrap();
    let config_digest = put(&config_bytes);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config_bytes.len()},
        "layers": descs,
    });
    let mb = serde_json::to_vec(&manifest).unwrap();
    let md = put(&mb);
    let index = serde_json::json!({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": mb.len(),
        "annotations": {"org.opencontainers.image.ref.name": "test:1"}}]});
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
}

/// Every entry under `root`: "path kind mode content-or-target".
fn tree(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for p in names {
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let mode = m.mode() & 0o7777;
            if m.file_type().is_symlink() {
                out.push(format!(
                    "{rel} -> {}",
                    std::fs::read_link(&p).unwrap().display()
                ));
            } else if m.is_dir() {
                out.push(format!("{rel}/ {mode:o}"));
                walk(root, &p, out);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                let data = if bytes.len() > 64 {
                    format!("<{} bytes>", bytes.len())
                } else {
                    String::from_utf8_lossy(&bytes).into_owned()
                };
                out.push(format!("{rel} {mode:o} {data:?} links={}", m.nlink()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

struct Fixture {
    base: PathBuf,
    store: TemplateStore,
}

impl Fixture {
    fn new(tag: &str) -> Fixture {
        let base = std::env::temp_dir().join(format!("airlock-tpl-{tag}-{}", std::process::id()));
        let _ = crate::store::remove_tree(&base);
        std::fs::create_dir_all(&base).unwrap();
        let store = TemplateStore::open(&base.join("data")).unwrap();
        Fixture { base, store }
    }

    fn image(&self, layers: &[(Vec<u8>, bool)]) -> PathBuf {
        let dir = self.base.join("image");
        let _ = std::fs::remove_dir_all(&dir);
        oci(
            &dir,
            layers,
            serde_json::json!({"architecture": "amd64", "os": "linux"}),
        );
        dir
    }

    fn image_coded(&self, layers: &[(Vec<u8>, Codec)]) -> PathBuf {
        let dir = self.base.join("image");
        let _ = std::fs::remove_dir_all(&dir);
        oci_coded(
            &dir,
            layers,
            serde_json::json!({"architecture": "amd64", "os": "linux"}),
        );
        dir
    }

    fn import(&self, path: &Path) -> Result<(StoredTemplate, ImportReport), TemplateError> {
        import(
            &self.store,
            path,
            &ImportOptions {
                name: Some("t".into()),
                max_bytes: 1 << 20,
            },
        )
    }

    /// Everything under the base that is not the store's own images: the host side the
    /// import must leave untouched, and no staging left behind.
    fn outside(&self) -> Vec<String> {
        let mut all = tree(&self.base);
        all.retain(|l| {
            (!l.starts_with("data/templates/images/") || l.starts_with("data/templates/images/ "))
                && !l.starts_with("image")
        });
        all
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = crate::store::remove_tree(&self.base);
    }
}

const EMPTY_STORE: [&str; 4] = [
    "data/ 755",
    "data/templates/ 755",
    "data/templates/images/ 755",
    "data/templates/names/ 755",
];

fn empty_store_and(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = EMPTY_STORE.iter().map(|s| s.to_string()).collect();
    v.push("data/templates/staging/ 755".into());
    v.extend(extra.iter().map(|s| s.to_string()));
    v.sort();
    v
}

#[test]
fn layers_with_whiteouts_an_opaque_dir_a_symlink_and_a_hardlink_import_to_exactly_the_expected_tree(
) {
    let f = Fixture::new("layers");
    let l1 = tar_bytes(&[
        dir("etc/", 0o755),
        file("etc/keep", "k"),
        file("etc/gone", "g"),
        dir("opt/", 0o755),
        file("opt/old1", "o1"),
        dir("opt/sub/", 0o755),
        file("opt/sub/old2", "o2"),
        dir("bin/", 0o755),
        file("bin/tool", "v1"),
        with_mode(file("bin/suid", "s"), 0o4755),
    ]);
    let l2 = tar_bytes(&[
        file("etc/.wh.gone", ""),
        file("opt/new", "n"),
        file("opt/.wh..wh..opq", ""),
        dir("opt/sub/", 0o750),
        file("bin/tool", "v2"),
        symlink("bin/sh", "/bin/tool"),
        hardlink("bin/tool2", "bin/tool"),
        dir("ro/", 0o555),
        file("ro/inside", "r"),
    ]);
    let img = f.image(&[(l1, true), (l2, false)]);
    let (stored, report) = f.import(&img).unwrap();
    assert_eq!(
        tree(&stored.rootfs),
        vec![
            "bin/ 755",
            "bin/sh -> /bin/tool",
            "bin/suid 755 \"s\" links=1",
            "bin/tool 644 \"v2\" links=2",
            "bin/tool2 644 \"v2\" links=2",
            "etc/ 755",
            "etc/keep 644 \"k\" links=1",
            "opt/ 755",
            "opt/new 644 \"n\" links=1",
            "opt/sub/ 750",
            "ro/ 555",
            "ro/inside 644 \"r\" links=1",
        ]
    );
    assert_eq!(report.layers, 2);
    assert_eq!(report.setid_cleared, 1);
    assert!(stored.meta.digest.starts_with("sha256:"));
    // Nothing but the stored image and the name outside the image itself.
    assert_eq!(
        f.outside(),
        empty_store_and(&["data/templates/names/t 644 \"<89 bytes>\" links=1"])
    );
    // Stored once: the same content under another name shares the tree and the digest.
    let (again, _) = import(
        &f.store,
        &img,
        &ImportOptions {
            name: Some("u".into()),
            max_bytes: 1 << 20,
        },
    )
    .unwrap();
    assert_eq!(again.meta.digest, stored.meta.digest);
    assert_eq!(again.rootfs, stored.rootfs);
}

/// Imports `layers`, expects a refusal whose message contains `why`, and checks that nothing
/// was stored and nothing was written outside the store.
fn refused(tag: &str, layers: Vec<Vec<E>>, why: &str) {
    let f = Fixture::new(tag);
    let victim = f.base.join("victim");
    std::fs::write(&victim, "untouched").unwrap();
    let img = f.image(
        &layers
            .iter()
            .map(|l| (tar_bytes(l), true))
            .collect::<Vec<_>>(),
    );
    let err = f.import(&img).unwrap_err().to_string();
    assert!(err.contains(why), "{tag}: {err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    assert_eq!(
        f.outside(),
        empty_store_and(&["victim 644 \"untouched\" links=1"]),
        "{tag}"
    );
    assert!(f.store.names().unwrap().is_empty());
    assert!(f
        .base
        .join("data/templates/images")
        .read_dir()
        .unwrap()
        .next()
        .is_none());
}

#[test]
fn a_path_climbing_out_with_dotdot_is_refused() {
    refused(
        "dotdot",
        vec![vec![file("../victim", "owned")]],
        "climbs out",
    );
    refused(
        "dotdot2",
        vec![vec![dir("a/", 0o755), file("a/../../victim", "owned")]],
        "climbs out",
    );
}

#[test]
fn an_absolute_path_lands_inside_the_image() {
    let f = Fixture::new("abs");
    let victim = f.base.join("victim");
    std::fs::write(&victim, "untouched").unwrap();
    let abs = format!("{}", victim.display());
    let img = f.image(&[(tar_bytes(&[file(&abs, "owned")]), true)]);
    let (stored, _) = f.import(&img).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    let inside = stored.rootfs.join(abs.trim_start_matches('/'));
    assert_eq!(std::fs::read_to_string(inside).unwrap(), "owned");
}

#[test]
fn writes_through_a_symlink_of_an_earlier_layer_are_refused() {
    let f = Fixture::new("through-host");
    let target = f.base.join("outside");
    std::fs::create_dir_all(&target).unwrap();
    let abs = target.display().to_string();
    refused(
        "through",
        vec![vec![symlink("evil", &abs)], vec![file("evil/planted", "x")]],
        "through the symlink evil",
    );
    refused(
        "through-rel",
        vec![
            vec![symlink("evil", "../../../../../../../../tmp")],
            vec![file("evil/planted", "x")],
        ],
        "through the symlink evil",
    );
    refused(
        "through-same",
        vec![vec![symlink("evil", "/etc"), file("evil/passwd", "x")]],
        "through the symlink evil",
    );
    // A whiteout through a symlink would delete outside: refused too.
    refused(
        "whiteout-through",
        vec![
            vec![symlink("evil", &abs)],
            vec![file("evil/.wh.victim", "")],
        ],
        "through the symlink evil",
    );
    assert!(std::fs::read_dir(&target).unwrap().next().is_none());
}

#[test]
fn a_symlink_pointing_out_is_stored_but_never_followed() {
    let f = Fixture::new("linkout");
    let victim = f.base.join("victim");
    std::fs::write(&victim, "untouched").unwrap();
    let img = f.image(&[(
        tar_bytes(&[
            symlink("etc", &victim.display().to_string()),
            symlink("up", "../../.."),
        ]),
        true,
    )]);
    let (stored, _) = f.import(&img).unwrap();
    assert_eq!(
        std::fs::read_link(stored.rootfs.join("etc")).unwrap(),
        victim
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
}

#[test]
fn a_hardlink_to_outside_or_to_nothing_is_refused() {
    refused(
        "hl-out",
        vec![vec![hardlink("pw", "../victim")]],
        "climbs out",
    );
    refused(
        "hl-missing",
        vec![vec![hardlink("pw", "/etc/shadow")]],
        "not in the image",
    );
    refused(
        "hl-through",
        vec![vec![symlink("l", "/etc"), hardlink("pw", "l/passwd")]],
        "through the symlink l",
    );
}

#[test]
fn device_nodes_are_dropped_and_setid_bits_cleared() {
    let f = Fixture::new("dev");
    let mut null = file("dev/null", "");
    null.kind = b'3';
    let mut blk = file("dev/sda", "");
    blk.kind = b'4';
    let img = f.image(&[(
        tar_bytes(&[
            null,
            blk,
            with_mode(file("sgid", "x"), 0o2755),
            with_mode(dir("d/", 0o6775), 0o6775),
        ]),
        true,
    )]);
    let (stored, report) = f.import(&img).unwrap();
    assert_eq!(report.dropped.len(), 2, "{report:?}");
    assert_eq!(report.setid_cleared, 2);
    assert_eq!(
        tree(&stored.rootfs),
        vec!["d/ 775", "dev/ 755", "sgid 755 \"x\" links=1"]
    );
}

/// 64 MiB of zeros, compressed with `codec` to well under 1 MiB, against a cap of 1 MiB: the
/// import stops at the cap and stores nothing.
fn bomb_stops_at_the_cap(tag: &str, codec: Codec) {
    let f = Fixture::new(tag);
    let mut big = file("zeros", "");
    big.data = vec![0u8; 64 << 20];
    let img = f.image_coded(&[(tar_bytes(&[big]), codec)]);
    let blob_total: u64 = std::fs::read_dir(img.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(
        blob_total < 1 << 20,
        "the test's bomb is not small: {blob_total}"
    );
    let err = f.import(&img).unwrap_err();
    assert!(matches!(err, TemplateError::TooLarge { .. }), "{err}");
    assert!(f.store.names().unwrap().is_empty());
    assert_eq!(f.outside(), empty_store_and(&[]));
}

#[test]
fn a_decompression_bomb_stops_at_the_size_cap_and_stores_nothing() {
    bomb_stops_at_the_cap("bomb", Codec::Gzip);
}

#[test]
fn a_layer_whose_digest_does_not_match_is_refused() {
    let f = Fixture::new("digest");
    let img = f.image(&[(tar_bytes(&[file("a", "1")]), true)]);
    // Swap the layer's content for another (valid) archive.
    let manifest_layer = std::fs::read_dir(img.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| std::fs::read(p).unwrap().starts_with(&[0x1f, 0x8b]))
        .unwrap();
    std::fs::write(&manifest_layer, gzip(&tar_bytes(&[file("a", "2")]))).unwrap();
    let err = f.import(&img).unwrap_err().to_string();
    assert!(err.contains("does not match its digest"), "{err}");
    assert!(f.store.names().unwrap().is_empty());
}

#[test]
fn config_env_workdir_user_and_cmd_become_the_defaults() {
    let f = Fixture::new("config");
    let dir_ = f.base.join("image");
    oci(
        &dir_,
        &[(tar_bytes(&[file("a", "1")]), true)],
        serde_json::json!({"architecture": "amd64", "os": "linux", "config": {
            "Env": ["PATH=/usr/local/bin:/usr/bin", "LANG=C.UTF-8"],
            "WorkingDir": "/srv", "User": "app", "Entrypoint": ["/bin/sh", "-c"], "Cmd": ["echo hi"]}}),
    );
    let (stored, _) = f.import(&dir_).unwrap();
    let d = &stored.meta.defaults;
    assert_eq!(
        d.env,
        BTreeMap::from([
            ("LANG".to_string(), "C.UTF-8".to_string()),
            ("PATH".into(), "/usr/local/bin:/usr/bin".into())
        ])
    );
    assert_eq!(d.cwd.as_deref(), Some("/srv"));
    assert_eq!(d.user.as_deref(), Some("app"));
    assert_eq!(d.cmd, vec!["/bin/sh", "-c", "echo hi"]);
}

#[test]
fn a_docker_save_tarball_imports_with_its_diff_ids_checked() {
    let f = Fixture::new("docker");
    let layer = tar_bytes(&[dir("etc/", 0o755), file("etc/os", "x")]);
    let config = serde_json::json!({"architecture": "amd64", "os": "linux",
        "config": {"Env": ["A=1"]}, "rootfs": {"type": "layers", "diff_ids": [sha(&layer)]}});
    let cb = serde_json::to_vec(&config).unwrap();
    let cname = format!("{}.json", &sha(&cb)[7..]);
    let manifest = serde_json::json!([{"Config": cname, "RepoTags": ["library/demo:1.0"], "Layers": ["abc/layer.tar", "dup/layer.tar"]}]);
    // The second layer entry is a symlink to the first (as old `docker save` writes them), and
    // the config must then name both diff_ids.
    let config = serde_json::json!({"architecture": "amd64", "os": "linux",
        "config": {"Env": ["A=1"]}, "rootfs": {"type": "layers", "diff_ids": [sha(&layer), sha(&layer)]}});
    let cb = serde_json::to_vec(&config).unwrap();
    let cname = format!("{}.json", &sha(&cb)[7..]);
    let mut manifest = manifest;
    manifest[0]["Config"] = serde_json::json!(cname);
    let mut entries = vec![
        E {
            path: cname.clone().into(),
            kind: b'0',
            mode: 0o644,
            data: cb,
            link: vec![],
        },
        dir("abc/", 0o755),
        E {
            path: "abc/layer.tar".into(),
            kind: b'0',
            mode: 0o644,
            data: layer,
            link: vec![],
        },
        dir("dup/", 0o755),
        symlink("dup/layer.tar", "../abc/layer.tar"),
    ];
    entries.push(E {
        path: "manifest.json".into(),
        kind: b'0',
        mode: 0o644,
        data: serde_json::to_vec(&manifest).unwrap(),
        link: vec![],
    });
    let tarball = f.base.join("demo.tar");
    std::fs::write(&tarball, tar_bytes(&entries)).unwrap();
    let (stored, report) = import(&f.store, &tarball, &ImportOptions::default()).unwrap();
    assert_eq!(stored.name, "demo:1.0");
    assert_eq!(report.layers, 2);
    assert_eq!(
        tree(&stored.rootfs),
        vec!["etc/ 755", "etc/os 644 \"x\" links=1"]
    );
    assert_eq!(
        stored.meta.defaults.env.get("A").map(String::as_str),
        Some("1")
    );
    // The unpacked tarball is not kept.
    let mut outside = f.outside();
    outside.retain(|l| {
        !l.starts_with("data/templates/names/demo:1.0 ") && !l.starts_with("demo.tar ")
    });
    assert_eq!(outside, empty_store_and(&[]));
    assert!(!f
        .base
        .join("data/templates/staging")
        .read_dir()
        .unwrap()
        .any(|_| true));
    let _ = std::fs::set_permissions(&tarball, std::fs::Permissions::from_mode(0o644));
}

#[test]
fn zstd_layers_import_to_the_same_tree_as_gzip_ones() {
    let l1 = tar_bytes(&[
        dir("etc/", 0o755),
        file("etc/keep", "k"),
        file("etc/gone", "g"),
        dir("opt/", 0o755),
        file("opt/old", "o"),
        dir("bin/", 0o755),
        file("bin/tool", "v1"),
    ]);
    let l2 = tar_bytes(&[
        file("etc/.wh.gone", ""),
        file("opt/.wh..wh..opq", ""),
        file("opt/new", "n"),
        file("bin/tool", "v2"),
        symlink("bin/sh", "/bin/tool"),
        hardlink("bin/tool2", "bin/tool"),
    ]);
    let g = Fixture::new("zstd-ref");
    let img = g.image_coded(&[(l1.clone(), Codec::Gzip), (l2.clone(), Codec::Gzip)]);
    let (gz, _) = g.import(&img).unwrap();
    let want = tree(&gz.rootfs);
    let f = Fixture::new("zstd");
    // A zstd layer under a zstd layer, and one over a plain one.
    let img = f.image_coded(&[(l1.clone(), Codec::Zstd), (l2.clone(), Codec::Zstd)]);
    let (z, report) = f.import(&img).unwrap();
    assert_eq!(tree(&z.rootfs), want);
    assert_eq!(report.layers, 2);
    // The image's digest is the manifest's, so differently compressed images differ; the
    // trees are what must agree.
    assert!(z.meta.digest.starts_with("sha256:"));
    let img = f.image_coded(&[(l1, Codec::Plain), (l2, Codec::Zstd)]);
    let mixed = import(
        &f.store,
        &img,
        &ImportOptions {
            name: Some("mixed".into()),
            max_bytes: 1 << 20,
        },
    )
    .unwrap();
    assert_eq!(tree(&mixed.0.rootfs), want);
}

#[test]
fn a_zstd_decompression_bomb_stops_at_the_size_cap_and_stores_nothing() {
    bomb_stops_at_the_cap("zstd-bomb", Codec::Zstd);
}

#[test]
fn a_zstd_layer_whose_digest_or_stream_is_wrong_is_refused() {
    let f = Fixture::new("zstd-digest");
    let img = f.image_coded(&[(tar_bytes(&[file("a", "1")]), Codec::Zstd)]);
    let layer = std::fs::read_dir(img.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            std::fs::read(p)
                .unwrap()
                .starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
        })
        .unwrap();
    // Another valid archive under the old digest.
    std::fs::write(&layer, zstd(&tar_bytes(&[file("a", "2")]))).unwrap();
    let err = f.import(&img).unwrap_err().to_string();
    assert!(err.contains("does not match its digest"), "{err}");
    // A stream cut in half (whatever its digest) is corrupt, never a shorter tree.
    let whole = zstd(&tar_bytes(&[file("a", &"x".repeat(100_000))]));
    std::fs::write(&layer, &whole[..whole.len() / 2]).unwrap();
    let err = f.import(&img).unwrap_err().to_string();
    assert!(
        err.contains("zstd") || err.contains("digest"),
        "a cut zstd layer is refused: {err}"
    );
    assert!(f.store.names().unwrap().is_empty());
    assert_eq!(f.outside(), empty_store_and(&[]));
}

/// Compresses with the real `zstd` tool (checksummed frames, as `zstd` and image tools write
/// them); `scripts/test.sh` installs it.
fn zstd_tool(bytes: &[u8]) -> Vec<u8> {
    let mut child = std::process::Command::new("zstd")
        .args(["-q", "-c", "-3"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the zstd tool is needed for this test (scripts/test.sh installs it)");
    let mut stdin = child.stdin.take().unwrap();
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "zstd failed: {:?}", out.status);
    out.stdout
}

#[test]
fn a_layer_compressed_by_the_zstd_tool_in_two_frames_imports() {
    let f = Fixture::new("zstd-tool");
    let tar = tar_bytes(&[
        dir("data/", 0o755),
        file("data/big", &"airlock ".repeat(40_000)),
        file("data/small", "s"),
    ]);
    // Two frames back to back, as `cat a.zst b.zst` or a chunked image makes them.
    let cut = tar.len() / 2;
    let blob = [zstd_tool(&tar[..cut]), zstd_tool(&tar[cut..])].concat();
    let dir_ = f.base.join("image");
    oci_blobs(
        &dir_,
        &[(tar, blob, "application/vnd.oci.image.layer.v1.tar+zstd")],
        serde_json::json!({"architecture": "amd64", "os": "linux"}),
    );
    let (stored, _) = f.import(&dir_).unwrap();
    assert_eq!(
        std::fs::read_to_string(stored.rootfs.join("data/big")).unwrap(),
        "airlock ".repeat(40_000)
    );
    assert_eq!(
        std::fs::read_to_string(stored.rootfs.join("data/small")).unwrap(),
        "s"
    );
}

#[test]
fn an_image_with_apt_gets_the_box_roots_apt_configuration_and_one_behind_a_symlink_does_not() {
    let f = Fixture::new("apt-conf");
    let with_apt = tar_bytes(&[
        dir("etc/", 0o755),
        dir("etc/apt/", 0o755),
        dir("etc/apt/apt.conf.d/", 0o755),
        file("etc/apt/apt.conf.d/70debconf", "x"),
    ]);
    let img = f.image(&[(with_apt, true)]);
    let (stored, report) = f.import(&img).unwrap();
    assert!(report.apt_root_conf);
    let conf = std::fs::read_to_string(stored.rootfs.join("etc/apt/apt.conf.d/99airlock-box-root"))
        .unwrap();
    assert!(conf.contains("APT::Sandbox::User \"root\";"), "{conf}");
    // No apt, no file; an apt directory that is a symlink (here pointing out of the image) is
    // never written through.
    let no_apt = tar_bytes(&[dir("etc/", 0o755), file("etc/motd", "m")]);
    let img = f.image(&[(no_apt, true)]);
    let (stored, report) = f.import(&img).unwrap();
    assert!(!report.apt_root_conf);
    assert!(!stored.rootfs.join("etc/apt").exists());
    let outside = f.base.join("outside-apt");
    std::fs::create_dir_all(&outside).unwrap();
    let linked = tar_bytes(&[
        dir("etc/", 0o755),
        symlink("etc/apt", &outside.display().to_string()),
    ]);
    let img = f.image(&[(linked, true)]);
    let (_, report) = f.import(&img).unwrap();
    assert!(!report.apt_root_conf);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}
