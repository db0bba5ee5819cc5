//! Helpers shared by the cross-crate tests: locating the upstream Porch
//! conformance cases that live beside the repository, and the conformance
//! runner's adapters.

use std::path::PathBuf;

pub mod conformance;
pub mod prc_cases;

/// The upstream conformance cases (`tests/conformance/porch-upstream`: a
/// snapshot of the cases extracted from Porch's own tests, see its
/// `cases/INDEX.md`).
pub fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance/porch-upstream")
}

/// Reads a file as UTF-8, panicking with its path on failure (tests only).
pub fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}
