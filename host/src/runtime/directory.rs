//! Where wasm KRM function modules are found: a local directory of
//! `.wasm` files and OCI image layouts, looked up by image reference.
//!
//! For an image `ghcr.io/kptdev/krm-functions-catalog/set-foo:v1` (or
//! `set-foo:v1`, or `…/set-foo@sha256:…`), with `<name>` the last path
//! segment of the repository (`set-foo`) and `<tag>` the tag (`latest`
//! when the reference has neither tag nor digest, as kpt does), a
//! [`FunctionDirectory`] over `<dir>` looks, in order, at:
//!
//! 1. `<dir>/<name>:<tag>.wasm` — a module for that tag;
//! 2. `<dir>/<name>.wasm` — a module for any tag;
//! 3. `<dir>/<name>/` holding an OCI image layout (`oci-layout`,
//!    `index.json`, `blobs/`), where the manifest annotated
//!    `org.opencontainers.image.ref.name` = `<tag>` (or the whole
//!    reference) is used, or the only manifest when none is annotated;
//! 4. `<dir>` itself as an OCI image layout whose `index.json` annotates
//!    a manifest with the whole reference (`<repository>:<tag>`), or with
//!    `<name>:<tag>`.
//!
//! A digest reference (`@sha256:…`) only matches an OCI manifest with that
//! digest. In a layout, what `kpt alpha wasm push` pushes is found: an
//! index (OCI image index or Docker manifest list) whose entry for
//! platform `js`/`wasm` (or its only entry) is an image manifest, whose
//! first layer gives the module. A layer is a tar,
//! gzip-compressed or not (kpt's layer is a gzip tar of the one file), or
//! the raw module (`application/wasm`). Every blob read is checked against
//! its sha256 digest.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::error::WasmFnError;

/// Largest JSON document (index, manifest) read from a layout.
const MAX_JSON: u64 = 4 << 20;
/// Largest layer blob read, and largest module extracted from one.
const MAX_LAYER: u64 = 512 << 20;

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// Everything before the tag or digest
    /// (`ghcr.io/kptdev/krm-functions-catalog/set-foo`).
    pub repository: String,
    /// The last path segment of the repository (`set-foo`).
    pub name: String,
    /// The tag, if any.
    pub tag: Option<String>,
    /// The digest (`sha256:…`), if any.
    pub digest: Option<String>,
}

impl ImageRef {
    /// Parses `image`.
    pub fn parse(image: &str) -> Result<ImageRef, WasmFnError> {
        let invalid = |reason: &str| WasmFnError::InvalidReference {
            image: image.to_string(),
            reason: reason.to_string(),
        };
        let (rest, digest) = match image.split_once('@') {
            Some((rest, digest)) => {
                let hex = digest
                    .strip_prefix("sha256:")
                    .ok_or_else(|| invalid("only sha256 digests are supported"))?;
                if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(invalid("the digest is not 64 hex digits"));
                }
                (rest, Some(digest.to_ascii_lowercase()))
            }
            None => (image, None),
        };
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match rest[last_slash..].find(':') {
            Some(i) => (
                &rest[..last_slash + i],
                Some(rest[last_slash + i + 1..].to_string()),
            ),
            None => (rest, None),
        };
        let name = repository.rsplit('/').next().unwrap_or_default();
        let name_ok = |s: &str| {
            !s.is_empty()
                && s != "."
                && s != ".."
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        };
        if !name_ok(name) {
            return Err(invalid(
                "the image name must be letters, digits, '-', '_' or '.'",
            ));
        }
        if let Some(tag) = &tag {
            if !name_ok(tag) {
                return Err(invalid("the tag must be letters, digits, '-', '_' or '.'"));
            }
        }
        Ok(ImageRef {
            repository: repository.to_string(),
            name: name.to_string(),
            tag: match (&tag, &digest) {
                (None, None) => Some("latest".to_string()),
                _ => tag,
            },
            digest,
        })
    }
}

/// Where a module was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleSource {
    /// A `.wasm` file.
    File(PathBuf),
    /// A layer blob of an OCI image layout.
    OciLayer {
        /// The layout directory.
        layout: PathBuf,
        /// The layer's digest (`sha256:…`).
        digest: String,
        /// The layer's media type.
        media_type: String,
    },
}

impl ModuleSource {
    /// A key that changes when the module's bytes may have: the file's
    /// path, size and modification time, or the layer's digest.
    pub fn cache_key(&self) -> String {
        match self {
            ModuleSource::File(path) => {
                let meta = std::fs::metadata(path).ok();
                let len = meta.as_ref().map_or(0, std::fs::Metadata::len);
                let modified = meta
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                format!("file:{}:{len}:{modified}", path.display())
            }
            ModuleSource::OciLayer { digest, .. } => format!("oci:{digest}"),
        }
    }

    /// The module's bytes (`module` names it in errors).
    pub fn read(&self, module: &str) -> Result<Vec<u8>, WasmFnError> {
        match self {
            ModuleSource::File(path) => read_limited(path, MAX_LAYER, module),
            ModuleSource::OciLayer {
                layout,
                digest,
                media_type,
            } => {
                let bad = |reason: String| WasmFnError::InvalidImage {
                    module: module.to_string(),
                    layout: layout.clone(),
                    reason,
                };
                let blob = read_blob(layout, digest, MAX_LAYER, module)?;
                extract_module(&blob, media_type).map_err(bad)
            }
        }
    }
}

/// A local directory of wasm KRM function modules (see the module
/// documentation for the lookup rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionDirectory {
    root: PathBuf,
}

impl FunctionDirectory {
    /// The directory `root`.
    pub fn new(root: impl Into<PathBuf>) -> FunctionDirectory {
        FunctionDirectory { root: root.into() }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Finds the module of `image`.
    pub fn locate(&self, image: &str) -> Result<ModuleSource, WasmFnError> {
        let reference = ImageRef::parse(image)?;
        let mut searched = Vec::new();
        if reference.digest.is_none() {
            if let Some(tag) = &reference.tag {
                let tagged = self.root.join(format!("{}:{tag}.wasm", reference.name));
                if tagged.is_file() {
                    return Ok(ModuleSource::File(tagged));
                }
                searched.push(tagged);
            }
            let untagged = self.root.join(format!("{}.wasm", reference.name));
            if untagged.is_file() {
                return Ok(ModuleSource::File(untagged));
            }
            searched.push(untagged);
        }
        let own = self.root.join(&reference.name);
        if own.join("index.json").is_file() {
            if let Some(found) = find_in_layout(&own, &reference, image, true)? {
                return Ok(found);
            }
        }
        searched.push(own);
        if self.root.join("index.json").is_file() {
            if let Some(found) = find_in_layout(&self.root, &reference, image, false)? {
                return Ok(found);
            }
            searched.push(self.root.join("index.json"));
        }
        Err(WasmFnError::NotFound {
            image: image.to_string(),
            searched,
        })
    }
}

fn read_limited(path: &Path, max: u64, module: &str) -> Result<Vec<u8>, WasmFnError> {
    let err = |reason: String| WasmFnError::Read {
        module: module.to_string(),
        path: path.to_path_buf(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(e.to_string()))?;
    if bytes.len() as u64 > max {
        return Err(err(format!("larger than {max} bytes")));
    }
    Ok(bytes)
}

/// `blobs/<alg>/<hex>` of a layout, checked against its digest.
fn read_blob(layout: &Path, digest: &str, max: u64, module: &str) -> Result<Vec<u8>, WasmFnError> {
    let bad = |reason: String| WasmFnError::InvalidImage {
        module: module.to_string(),
        layout: layout.to_path_buf(),
        reason,
    };
    let hex = digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| bad(format!("unsupported digest {digest}")))?;
    let bytes = read_limited(&layout.join("blobs/sha256").join(hex), max, module)?;
    let actual = format!("{:x}", Sha256::digest(&bytes));
    if !actual.eq_ignore_ascii_case(hex) {
        return Err(bad(format!("blob {digest} has digest sha256:{actual}")));
    }
    Ok(bytes)
}

fn read_json(layout: &Path, digest: Option<&str>, module: &str) -> Result<Value, WasmFnError> {
    let bytes = match digest {
        Some(d) => read_blob(layout, d, MAX_JSON, module)?,
        None => read_limited(&layout.join("index.json"), MAX_JSON, module)?,
    };
    serde_json::from_slice(&bytes).map_err(|e| WasmFnError::InvalidImage {
        module: module.to_string(),
        layout: layout.to_path_buf(),
        reason: format!("{} is not JSON: {e}", digest.unwrap_or("index.json")),
    })
}

const REF_NAME: &str = "org.opencontainers.image.ref.name";

fn is_index(media_type: &str) -> bool {
    media_type.ends_with("image.index.v1+json") || media_type.ends_with("manifest.list.v2+json")
}

/// The module in `layout` for `reference`, if the layout has the image.
/// `per_image`: the layout holds only this image, so tags alone match.
fn find_in_layout(
    layout: &Path,
    reference: &ImageRef,
    image: &str,
    per_image: bool,
) -> Result<Option<ModuleSource>, WasmFnError> {
    let index = read_json(layout, None, image)?;
    let manifests = index["manifests"].as_array().cloned().unwrap_or_default();
    let tagged_names: Vec<String> = match &reference.tag {
        Some(tag) => {
            let mut names = vec![
                format!("{}:{tag}", reference.repository),
                format!("{}:{tag}", reference.name),
            ];
            if per_image {
                names.push(tag.clone());
            }
            names
        }
        None => Vec::new(),
    };
    let annotated = |m: &Value| m["annotations"][REF_NAME].as_str().map(str::to_string);
    let chosen = manifests.iter().find(|m| match &reference.digest {
        Some(d) => m["digest"].as_str() == Some(d.as_str()),
        None => annotated(m).is_some_and(|n| tagged_names.contains(&n)),
    });
    let chosen = match chosen {
        Some(m) => m.clone(),
        None if per_image
            && reference.digest.is_none()
            && manifests.len() == 1
            && annotated(&manifests[0]).is_none() =>
        {
            manifests[0].clone()
        }
        None => return Ok(None),
    };
    resolve_descriptor(layout, &chosen, image, 0).map(Some)
}

/// Follows a descriptor (index → platform `js`/`wasm` manifest → layer).
fn resolve_descriptor(
    layout: &Path,
    descriptor: &Value,
    image: &str,
    depth: usize,
) -> Result<ModuleSource, WasmFnError> {
    let bad = |reason: String| WasmFnError::InvalidImage {
        module: image.to_string(),
        layout: layout.to_path_buf(),
        reason,
    };
    if depth > 4 {
        return Err(bad("indexes nest too deeply".into()));
    }
    let digest = descriptor["digest"]
        .as_str()
        .ok_or_else(|| bad("a descriptor has no digest".into()))?;
    let doc = read_json(layout, Some(digest), image)?;
    let media_type = descriptor["mediaType"]
        .as_str()
        .or_else(|| doc["mediaType"].as_str())
        .unwrap_or_default()
        .to_string();
    if is_index(&media_type) || (media_type.is_empty() && doc["manifests"].is_array()) {
        let entries = doc["manifests"].as_array().cloned().unwrap_or_default();
        let wasm = entries.iter().find(|m| {
            m["platform"]["os"].as_str() == Some("js")
                && m["platform"]["architecture"].as_str() == Some("wasm")
        });
        let entry = match (wasm, entries.as_slice()) {
            (Some(m), _) => m,
            (None, [only]) => only,
            _ => {
                return Err(bad(format!(
                    "index {digest} has no manifest for platform js/wasm"
                )))
            }
        };
        return resolve_descriptor(layout, entry, image, depth + 1);
    }
    let layers = doc["layers"]
        .as_array()
        .filter(|l| !l.is_empty())
        .ok_or_else(|| bad(format!("manifest {digest} has no layers")))?;
    // kpt pushes one layer, a tar of the module; the first layer is used.
    let layer = &layers[0];
    let layer_digest = layer["digest"].as_str().ok_or_else(|| {
        bad(format!(
            "the first layer of manifest {digest} has no digest"
        ))
    })?;
    Ok(ModuleSource::OciLayer {
        layout: layout.to_path_buf(),
        digest: layer_digest.to_string(),
        media_type: layer["mediaType"].as_str().unwrap_or_default().to_string(),
    })
}

/// The module in a layer: raw, or the first regular file of a (gzip) tar.
fn extract_module(blob: &[u8], media_type: &str) -> Result<Vec<u8>, String> {
    if blob.starts_with(b"\0asm") {
        return Ok(blob.to_vec());
    }
    let tar = if blob.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(blob)
            .take(MAX_LAYER + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("layer ({media_type}) is not valid gzip: {e}"))?;
        if out.len() as u64 > MAX_LAYER {
            return Err(format!("layer decompresses to more than {MAX_LAYER} bytes"));
        }
        out
    } else {
        blob.to_vec()
    };
    let file = first_regular_file(&tar)
        .ok_or_else(|| format!("layer ({media_type}) holds no regular file"))?;
    if !file.starts_with(b"\0asm") {
        return Err("the layer's file is not a WebAssembly module".into());
    }
    Ok(file.to_vec())
}

/// The first regular file of a tar archive (ustar, GNU and pax headers).
fn first_regular_file(tar: &[u8]) -> Option<&[u8]> {
    let mut at = 0usize;
    while at + 512 <= tar.len() {
        let header = &tar[at..at + 512];
        if header.iter().all(|b| *b == 0) {
            return None;
        }
        let size = tar_size(&header[124..136])?;
        let data = at + 512;
        let end = data.checked_add(usize::try_from(size).ok()?)?;
        if end > tar.len() {
            return None;
        }
        if matches!(header[156], b'0' | 0 | b'7') {
            return Some(&tar[data..end]);
        }
        at = data + (end - data).div_ceil(512) * 512;
    }
    None
}

/// A tar size field: octal, or base-256 when the high bit is set.
fn tar_size(field: &[u8]) -> Option<u64> {
    if field[0] & 0x80 != 0 {
        let mut n: u64 = u64::from(field[0] & 0x7f);
        for b in &field[1..] {
            n = n.checked_mul(256)?.checked_add(u64::from(*b))?;
        }
        return Some(n);
    }
    let text = std::str::from_utf8(field).ok()?;
    let digits = text.trim_matches(|c: char| c == '\0' || c == ' ');
    if digits.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(digits, 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse() {
        let r = ImageRef::parse("ghcr.io/kptdev/krm-functions-catalog/set-foo:v1").unwrap();
        assert_eq!(r.repository, "ghcr.io/kptdev/krm-functions-catalog/set-foo");
        assert_eq!((r.name.as_str(), r.tag.as_deref()), ("set-foo", Some("v1")));
        let r = ImageRef::parse("localhost:5000/set-foo").unwrap();
        assert_eq!(
            (r.name.as_str(), r.tag.as_deref()),
            ("set-foo", Some("latest"))
        );
        let d = format!("set-foo@sha256:{}", "a".repeat(64));
        let r = ImageRef::parse(&d).unwrap();
        assert_eq!((r.tag, r.digest.is_some()), (None, true));
        // Only the last segment names files: no way out of the directory.
        assert_eq!(ImageRef::parse("../x:v1").unwrap().name, "x");
        assert_eq!(ImageRef::parse("x:../../etc").unwrap().name, "etc");
        assert!(ImageRef::parse("x:..").is_err());
        assert!(ImageRef::parse("a/..:v1").is_err());
        assert!(ImageRef::parse("a/").is_err());
        assert!(ImageRef::parse("x@sha256:zz").is_err());
    }

    #[test]
    fn tar_sizes() {
        assert_eq!(tar_size(b"00000001750\0"), Some(1000));
        assert_eq!(
            tar_size(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x03, 0xe8]),
            Some(1000)
        );
    }
}
