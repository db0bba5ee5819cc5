//! Helpers shared by the cross-crate tests: locating the upstream Porch
//! conformance cases that live beside the repository, and the conformance
//! runner's adapters.

use std::path::PathBuf;

pub mod conformance;

/// The upstream conformance folder (`../shared/conformance/porch-upstream`
/// from the repository root), or `None` when it is absent.
pub fn conformance_dir() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = root.join("../shared/conformance/porch-upstream");
    dir.is_dir().then_some(dir)
}

/// Reads a file as UTF-8, panicking with its path on failure (tests only).
pub fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}
