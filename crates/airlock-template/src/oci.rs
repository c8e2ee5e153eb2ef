//! Reading an image: an OCI image layout directory (`oci-layout`, `index.json`, `blobs/`) or a
//! `docker save` directory (`manifest.json`), into the list of layers and the config, every
//! blob checked against its digest.

use crate::digest::hex;
use crate::error::{io_err, TemplateError};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most a manifest, index or config may weigh (they are read whole).
const MAX_JSON: u64 = 8 << 20;

/// An image, located but not yet unpacked.
#[derive(Debug)]
pub(crate) struct ImageLayout {
    /// The layer blobs, bottom first, with the digest each must have (when the format names
    /// one: OCI blobs do, legacy `docker save` layer files do not).
    pub layers: Vec<LayerRef>,
    /// The uncompressed digest of each layer (`rootfs.diff_ids` of the config).
    pub diff_ids: Vec<String>,
    pub config: ImageConfig,
    /// The manifest's digest (or the config's, for a legacy `docker save`).
    pub image_digest: String,
    /// A name the image gives itself (`RepoTags` or the OCI ref name), if any.
    pub ref_name: Option<String>,
}

#[derive(Debug)]
pub(crate) struct LayerRef {
    pub path: PathBuf,
    pub digest: Option<String>,
}

/// The parts of an image config a template keeps.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ImageConfig {
    #[serde(default)]
    pub config: Option<RunConfig>,
    #[serde(default)]
    pub rootfs: Option<RootFs>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RunConfig {
    #[serde(default)]
    pub env: Option<Vec<String>>,
    #[serde(default)]
    pub working_dir: Option<String>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub cmd: Option<Vec<String>>,
    #[serde(default)]
    pub entrypoint: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RootFs {
    #[serde(default)]
    pub diff_ids: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    #[serde(default)]
    media_type: Option<String>,
    digest: String,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Deserialize)]
struct Platform {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Index {
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DockerEntry {
    config: String,
    #[serde(default)]
    repo_tags: Option<Vec<String>>,
    layers: Vec<String>,
}

/// Reads the image in `dir` (an OCI layout, else a `docker save` tree).
pub(crate) fn read_layout(dir: &Path) -> Result<ImageLayout, TemplateError> {
    if dir.join("index.json").is_file() {
        read_oci(dir)
    } else if dir.join("manifest.json").is_file() {
        read_docker(dir)
    } else {
        Err(TemplateError::NotAnImage(dir.to_path_buf()))
    }
}

fn read_oci(dir: &Path) -> Result<ImageLayout, TemplateError> {
    let index: Index = json(&read_capped(&dir.join("index.json"))?, "index.json")?;
    let mut desc = pick(index.manifests)?;
    let mut ref_name = desc
        .annotations
        .get("org.opencontainers.image.ref.name")
        .cloned();
    // An index may point at a further index (multi-platform): follow one level.
    for _ in 0..2 {
        let kind = desc.media_type.as_deref().unwrap_or_default();
        if !kind.contains("index") && !kind.contains("manifest.list") {
            break;
        }
        let bytes = verified_blob(dir, &desc.digest, "the image index")?;
        let nested: Index = json(&bytes, "the image index")?;
        desc = pick(nested.manifests)?;
        ref_name = ref_name.or_else(|| {
            desc.annotations
                .get("org.opencontainers.image.ref.name")
                .cloned()
        });
    }
    let manifest_bytes = verified_blob(dir, &desc.digest, "the manifest")?;
    let manifest: Manifest = json(&manifest_bytes, "the manifest")?;
    let config_bytes = verified_blob(dir, &manifest.config.digest, "the config")?;
    let config: ImageConfig = json(&config_bytes, "the config")?;
    let mut layers = Vec::new();
    for l in &manifest.layers {
        layers.push(LayerRef {
            path: blob_path(dir, &l.digest)?,
            digest: Some(l.digest.clone()),
        });
    }
    finish(layers, config, desc.digest, ref_name)
}

fn read_docker(dir: &Path) -> Result<ImageLayout, TemplateError> {
    let entries: Vec<DockerEntry> =
        json(&read_capped(&dir.join("manifest.json"))?, "manifest.json")?;
    let [entry] = <[DockerEntry; 1]>::try_from(entries).map_err(|v| {
        TemplateError::Unsupported(format!(
            "the tarball holds {} images; save one image per tarball",
            v.len()
        ))
    })?;
    let config_path = member(dir, &entry.config)?;
    let config_bytes = read_capped(&config_path)?;
    let actual = format!("sha256:{}", hex(&Sha256::digest(&config_bytes)));
    // The config's file name is its digest (`<hex>.json` or `blobs/sha256/<hex>`).
    let named = Path::new(&entry.config)
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".json").to_string())
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if let Some(h) = &named {
        let expected = format!("sha256:{h}");
        if expected != actual {
            return Err(TemplateError::DigestMismatch {
                what: "the image config".into(),
                expected,
                actual,
            });
        }
    }
    let config: ImageConfig = json(&config_bytes, "the config")?;
    let mut layers = Vec::new();
    for l in &entry.layers {
        let digest = l
            .strip_prefix("blobs/sha256/")
            .map(|h| format!("sha256:{h}"));
        layers.push(LayerRef {
            path: member(dir, l)?,
            digest,
        });
    }
    let ref_name = entry.repo_tags.and_then(|t| t.into_iter().next());
    finish(layers, config, actual, ref_name)
}

fn finish(
    layers: Vec<LayerRef>,
    config: ImageConfig,
    image_digest: String,
    ref_name: Option<String>,
) -> Result<ImageLayout, TemplateError> {
    let diff_ids = config
        .rootfs
        .as_ref()
        .map(|r| r.diff_ids.clone())
        .unwrap_or_default();
    if diff_ids.len() != layers.len() {
        return Err(TemplateError::Malformed(format!(
            "the config names {} layer digests (rootfs.diff_ids) but the manifest has {} layers",
            diff_ids.len(),
            layers.len()
        )));
    }
    Ok(ImageLayout {
        layers,
        diff_ids,
        config,
        image_digest,
        ref_name,
    })
}

/// The manifest for this machine's platform (or the only one).
fn pick(manifests: Vec<Descriptor>) -> Result<Descriptor, TemplateError> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let n = manifests.len();
    let mut fallback = None;
    for d in manifests {
        match &d.platform {
            Some(p) if p.os == "linux" && p.architecture == arch => return Ok(d),
            Some(_) => {}
            None => {
                fallback.get_or_insert(d);
            }
        }
    }
    fallback.ok_or_else(|| {
        TemplateError::Malformed(format!(
            "the index lists {n} manifests and none is for linux/{arch}"
        ))
    })
}

fn blob_path(dir: &Path, digest: &str) -> Result<PathBuf, TemplateError> {
    let hex = digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| {
            TemplateError::Unsupported(format!(
                "digest {digest:?}: only sha256 digests are supported"
            ))
        })?;
    Ok(dir.join("blobs").join("sha256").join(hex))
}

/// A blob read whole (small ones only) and checked against its digest.
fn verified_blob(dir: &Path, digest: &str, what: &str) -> Result<Vec<u8>, TemplateError> {
    let bytes = read_capped(&blob_path(dir, digest)?)?;
    let actual = format!("sha256:{}", hex(&Sha256::digest(&bytes)));
    if actual != digest {
        return Err(TemplateError::DigestMismatch {
            what: what.into(),
            expected: digest.into(),
            actual,
        });
    }
    Ok(bytes)
}

/// A path the image names inside its own directory, refused when it would leave it.
fn member(dir: &Path, rel: &str) -> Result<PathBuf, TemplateError> {
    match crate::tree::relative(rel.as_bytes()) {
        Ok(Some(r)) => Ok(dir.join(r)),
        _ => Err(TemplateError::Malformed(format!(
            "manifest.json names {rel:?}, which is not a file inside the image"
        ))),
    }
}

fn read_capped(path: &Path) -> Result<Vec<u8>, TemplateError> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(io_err("read", path))?;
    let mut buf = Vec::new();
    f.take(MAX_JSON + 1)
        .read_to_end(&mut buf)
        .map_err(io_err("read", path))?;
    if buf.len() as u64 > MAX_JSON {
        return Err(TemplateError::Malformed(format!(
            "{} is larger than {MAX_JSON} bytes",
            path.display()
        )));
    }
    Ok(buf)
}

fn json<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, TemplateError> {
    serde_json::from_slice(bytes).map_err(|e| TemplateError::Malformed(format!("{what}: {e}")))
}
