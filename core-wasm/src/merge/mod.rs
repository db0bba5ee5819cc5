//! Package content operations of Porch's source execution, as pure
//! functions over a package's files (path → text):
//!
//! * [`resource`] — the three-way resource merge of an upgrade
//!   (kpt's `resource-merge` strategy): base = the old upstream, theirs =
//!   the new upstream, ours = the local package;
//! * [`kptfile`] — what a clone or an upgrade writes into the Kptfile
//!   (`upstream`, `upstreamLock`, the package name) and into
//!   `package-context.yaml`;
//! * [`strategy`] — kpt's four update strategies (`resource-merge`,
//!   `fast-forward`, `force-delete-replace`, `copy-merge`) as the v1alpha2
//!   PackageRevision controller's upgrade runs them, and its
//!   `stripKptfileStatus`.
//!
//! The host's PackageRevision lifecycle calls these (through the component)
//! and stores the result; nothing here does I/O.

pub mod kptfile;
pub mod resource;
pub mod strategy;

pub use kptfile::{prepare_clone, prepare_upgrade, UpstreamSource};
pub use resource::{merge_packages, MergeConflict, MergeOutcome};

use std::collections::BTreeMap;

/// A package: file path (relative to the package root) → UTF-8 content.
pub type Files = BTreeMap<String, String>;

/// A package operation could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// A file the operation must edit could not be parsed or written.
    #[error("{file}: {message}")]
    File {
        /// Path of the file.
        file: String,
        /// What went wrong.
        message: String,
    },
    /// `fast-forward`: the local package differs from the original.
    #[error(
        "local package files have been modified: [{}].\n  use a different update --strategy.",
        .files.join(" ")
    )]
    LocalChanges {
        /// What differs (paths relative to their package), sorted.
        files: Vec<String>,
    },
    /// `resource-merge`: a subpackage is new both upstream and locally.
    #[error("subpackage {path:?} added in both upstream and local")]
    SubpackageAddedInBoth {
        /// The subpackage's directory.
        path: String,
    },
}

impl MergeError {
    pub(crate) fn file(file: &str, message: impl std::fmt::Display) -> Self {
        MergeError::File {
            file: file.to_string(),
            message: message.to_string(),
        }
    }
}
