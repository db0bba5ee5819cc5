//! Identity, names and ownership of the PackageVariants a set generates.
//!
//! A generated PackageVariant is identified by `<pvs>-<repo>-<package>`
//! (downstream repo and package of its spec), never by its object name, so
//! a renamed or re-hashed child is still recognised (kpt#3982). Its name is
//! that key when it fits a Kubernetes name (63 characters), else the first
//! 54 bytes, `-`, and the first 8 hex digits of the key's SHA-1.

use sha1::{Digest, Sha1};

use super::types::{PackageVariantSet, API_VERSION, KIND};
use crate::api::OwnerReference;

/// Label carrying the owning set's UID on every generated PackageVariant.
pub const OWNER_LABEL: &str = "config.porch.kpt.dev/packagevariantset";
/// Longest PackageVariant name.
pub const NAME_MAX_LENGTH: usize = 63;
/// Hex digits of the hash suffix of a shortened name.
pub const NAME_HASH_LENGTH: usize = 8;
/// Finalizer put on every generated PackageVariant.
pub const FINALIZER: &str = crate::api::package_variant::FINALIZER;

/// The identity key `<pvs>-<repo>-<package>`.
pub fn identity_key(pvs_name: &str, repo: &str, package: &str) -> String {
    let mut key = String::with_capacity(pvs_name.len() + repo.len() + package.len() + 2);
    key.push_str(pvs_name);
    key.push('-');
    key.push_str(repo);
    key.push('-');
    key.push_str(package);
    key
}

/// `packageVariantName`: the key if it has at most 63 bytes, else its first
/// 54 bytes, `-` and 8 hex digits of `sha1(key)`.
///
/// Go slices bytes; a key with multi-byte characters around byte 54 would
/// be cut inside a character there (an invalid name either way), here the
/// cut moves back to the previous character boundary so nothing panics.
pub fn package_variant_name(key: &str) -> String {
    if key.len() <= NAME_MAX_LENGTH {
        return key.to_string();
    }
    let keep = NAME_MAX_LENGTH - NAME_HASH_LENGTH - 1;
    let mut cut = keep;
    while !key.is_char_boundary(cut) {
        cut -= 1;
    }
    let digest = Sha1::digest(key.as_bytes());
    let mut name = String::with_capacity(NAME_MAX_LENGTH);
    name.push_str(&key[..cut]);
    name.push('-');
    for byte in digest.iter().take(NAME_HASH_LENGTH / 2) {
        name.push(hex_digit(byte >> 4));
        name.push(hex_digit(byte & 0x0f));
    }
    name
}

fn hex_digit(n: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(n & 0x0f)])
}

/// The controller owner reference to `pvs` (`controller: true`;
/// `blockOwnerDeletion` unset, as upstream). The set's own apiVersion and
/// kind are used, defaulting to `v1alpha2` / `PackageVariantSet` when the
/// object carries no type meta.
pub fn owner_reference(pvs: &PackageVariantSet) -> OwnerReference {
    OwnerReference {
        api_version: if pvs.api_version.is_empty() {
            API_VERSION.to_string()
        } else {
            pvs.api_version.clone()
        },
        kind: if pvs.kind.is_empty() {
            KIND.to_string()
        } else {
            pvs.kind.clone()
        },
        name: pvs.metadata.name.clone(),
        uid: pvs.metadata.uid.clone(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_joins_with_dashes() {
        assert_eq!(identity_key("pvs", "repo", "pkg"), "pvs-repo-pkg");
    }

    #[test]
    fn names_up_to_63_bytes_are_kept() {
        let k62 = "a".repeat(62);
        let k63 = "b".repeat(63);
        assert_eq!(package_variant_name(&k62), k62);
        assert_eq!(package_variant_name(&k63), k63);
    }

    #[test]
    fn longer_names_are_cut_and_hashed() {
        let k64 = "c".repeat(64);
        let name = package_variant_name(&k64);
        assert_eq!(name.len(), 63);
        assert_eq!(&name[..54], &k64[..54]);
        assert_eq!(&name[54..55], "-");
        // sha1("c" * 64)
        let digest = Sha1::digest(k64.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(&name[55..], &hex[..8]);
    }

    #[test]
    fn upstream_example_hash() {
        let key = "my-pvs-dnrepo4-supersupersuperloooooooooooooooooooooooooooooooooooooooooooooooooongpkgname";
        assert_eq!(
            package_variant_name(key),
            "my-pvs-dnrepo4-supersupersuperlooooooooooooooooooooooo-bec36506"
        );
    }

    #[test]
    fn multibyte_keys_do_not_panic() {
        let key = format!("{}é{}", "x".repeat(53), "y".repeat(20));
        let name = package_variant_name(&key);
        assert!(name.starts_with(&"x".repeat(53)));
        assert_eq!(name.len(), 53 + 1 + 8);
    }

    #[test]
    fn owner_reference_is_controller() {
        let mut pvs = PackageVariantSet::default();
        pvs.metadata.name = "s".into();
        pvs.metadata.uid = "u".into();
        let o = owner_reference(&pvs);
        assert_eq!(o.api_version, API_VERSION);
        assert_eq!(o.kind, KIND);
        assert_eq!(o.controller, Some(true));
        assert_eq!((o.name.as_str(), o.uid.as_str()), ("s", "u"));
    }
}
