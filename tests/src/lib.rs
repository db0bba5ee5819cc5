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

/// Copies a directory tree (files and directories; tests only).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("creating {}: {e}", to.display()));
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("reading {}: {e}", from.display()));
    for entry in entries {
        let entry = entry.expect("a directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("its type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("copying to {}: {e}", target.display()));
        }
    }
}
