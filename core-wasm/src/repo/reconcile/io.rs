//! The Repository reconcile's conversation with the host: every read and
//! write the controller makes is a [`Call`]; the host makes it and gives
//! back an [`Answer`] (the PackageRevision reconcile's answer type). Each
//! step replays the reconcile over the answers given so far and stops at
//! the first call without an answer ([`Io::call`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::repository::Repository;

pub use crate::replay::{Answer, RepoKey};

/// One read or write of the Repository controller, in the order it makes
/// them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "call",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Call {
    /// Get the Repository. Answer: the object.
    GetRepository {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// A JSON merge patch of the Repository (finalizer, `runOnceAt`).
    /// Answer: null.
    PatchRepository {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The merge patch.
        patch: Value,
    },
    /// An Update of the whole Repository (finalizer removal). Answer: null.
    UpdateRepository {
        /// The object written.
        object: Repository,
    },
    /// Server-side apply of the Repository's status (forced). Answer: null.
    ApplyRepositoryStatus {
        /// The field manager.
        field_manager: String,
        /// The applied object.
        object: Repository,
    },
    /// List every Repository, all namespaces. Answer: a list of objects.
    ListRepositories,
    /// `Cache.CloseRepository`. Answer: null.
    CloseRepository {
        /// The Repository closed.
        repository: Repository,
        /// Every Repository (the cache checks shared Git remotes).
        all_repositories: Vec<Repository>,
    },
    /// `Cache.CheckRepositoryConnectivity`. Answer: null.
    CheckRepositoryConnectivity {
        /// The Repository.
        repository: Repository,
    },
    /// Take a slot of the sync semaphore if one is free. Answer: `true`
    /// when taken, `false` when every slot is in use.
    AcquireSyncSlot,
    /// Give the slot back (end of a background sync). Answer: null.
    ReleaseSyncSlot,
    /// `Cache.OpenRepository`. Answer: null (the host keeps the handle).
    OpenRepository {
        /// The Repository.
        repository: Repository,
    },
    /// `Refresh` of the opened repository. Answer: null.
    Refresh {
        /// Which.
        repository: RepoKey,
    },
    /// `ListPackageRevisions({})` of the opened repository. Answer: a list
    /// of [`crate::repo::discovery::DiscoveredPackageRevision`].
    ListPackages {
        /// Which.
        repository: RepoKey,
    },
    /// `BranchCommitHash`. Answer: the hash (a string).
    BranchCommitHash {
        /// Which.
        repository: RepoKey,
    },
    /// List the v1alpha2 PackageRevisions labelled
    /// `porch.kpt.dev/repository=<repository>`. Answer: a list of objects.
    ListPackageRevisions {
        /// Namespace.
        namespace: String,
        /// The Repository's name.
        repository: String,
    },
    /// Server-side apply of a PackageRevision (metadata and spec).
    /// Answer: null.
    ApplyPackageRevision {
        /// The field manager.
        field_manager: String,
        /// Whether conflicts are forced.
        force: bool,
        /// The applied object.
        object: Value,
    },
    /// Server-side apply of a PackageRevision's status. Answer: null.
    ApplyPackageRevisionStatus {
        /// The field manager.
        field_manager: String,
        /// Whether conflicts are forced.
        force: bool,
        /// The applied object.
        object: Value,
    },
    /// Delete a PackageRevision. Answer: null.
    DeletePackageRevision {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
}

/// The replay of this reconcile over the answers given so far.
pub(crate) type Io<'a> = crate::replay::Io<'a, Call>;
pub(crate) use crate::replay::Suspend;
