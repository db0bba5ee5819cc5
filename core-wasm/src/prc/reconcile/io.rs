//! The reconcile's conversation with the host: every read and write the
//! controller makes is a [`Call`]; the host makes it and gives back an
//! [`Answer`]. Natively the host is called back for each call
//! ([`super::run`]); in the component, which cannot call the host, each
//! step replays the reconcile over the answers given so far and stops at
//! the first call that has no answer yet ([`Io::call`]), taking what
//! earlier steps of the same reconcile computed ([`super::step_keeping`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::package_revision::v1alpha2::GitSource;
use crate::api::package_revision::{GitLock, Locator};
use crate::api::Lifecycle;
pub use crate::replay::{Answer, RepoKey};

/// A package's files: path relative to the package root → text.
pub type Files = BTreeMap<String, String>;

/// A package revision in a repository: which repository, package and
/// workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionKey {
    /// The repository.
    pub repository: RepoKey,
    /// Package path inside the repository.
    pub package: String,
    /// Workspace of the revision.
    pub workspace: String,
}

/// One read or write of the controller, in the order the controller makes
/// them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "call",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Call {
    /// Get a v1alpha2 PackageRevision through the (possibly lagging) cache.
    /// Answer: the object.
    GetPackageRevision {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// Get a PackageRevision past every cache (the API server's current
    /// object). Answer: the object.
    ReadPackageRevision {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// Get a Repository. Answer: the object.
    GetRepository {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// A JSON merge patch of a PackageRevision's metadata (finalizers,
    /// owner references, labels). Answer: null.
    MergePatch {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The merge patch.
        patch: Value,
    },
    /// Server-side apply of the status, as `field_manager`, forced. Answer:
    /// null.
    ApplyStatus {
        /// The field manager.
        field_manager: String,
        /// The applied object (name, namespace and the owned fields).
        object: Value,
    },
    /// Server-side apply of the spec, as `field_manager`, forced. Answer:
    /// null.
    ApplySpec {
        /// The field manager.
        field_manager: String,
        /// The applied object.
        object: Value,
    },
    /// The PackageRevisions of one package in one repository. Answer: a
    /// list of objects.
    ListPackageRevisions {
        /// Namespace.
        namespace: String,
        /// `spec.repository`.
        repository: String,
        /// `spec.packageName`.
        package_name: String,
    },
    /// A revision's content (`GetPackageContent`). Answer: [`Content`].
    GetPackageContent {
        /// The revision.
        revision: RevisionKey,
        /// Whether the files are needed.
        resources: bool,
    },
    /// A new draft (`CreateNewDraft`). Answer: the draft's handle (a
    /// string); `AlreadyExists` when the revision is already in Git.
    CreateNewDraft {
        /// The revision.
        revision: RevisionKey,
        /// Its lifecycle.
        lifecycle: Lifecycle,
    },
    /// A draft over an existing revision (`CreateDraftFromExisting`).
    /// Answer: the draft's handle.
    CreateDraftFromExisting {
        /// The revision.
        revision: RevisionKey,
    },
    /// Replace a draft's files. Answer: null.
    UpdateResources {
        /// The draft's handle.
        draft: String,
        /// Every file of the package.
        files: Files,
        /// What made them (`init`, `clone`, `rendered`, ...).
        message: String,
        /// The Kptfile's `upstreamLock`, for the revision's status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        upstream_lock: Option<Locator>,
    },
    /// Write a draft to Git (`CloseDraft`). Answer: null.
    CloseDraft {
        /// The draft's handle.
        draft: String,
        /// The revision number to publish with (0: not a publish).
        version: i64,
    },
    /// Move a revision to another lifecycle. Answer: the updated
    /// [`Content`].
    UpdateLifecycle {
        /// The revision.
        revision: RevisionKey,
        /// The lifecycle wanted.
        lifecycle: Lifecycle,
    },
    /// Delete a revision from Git. Answer: null.
    DeletePackage {
        /// The revision.
        revision: RevisionKey,
    },
    /// Fetch a package from a Git location. Answer: [`Fetched`].
    FetchGit {
        /// Namespace (of the credentials Secret).
        namespace: String,
        /// Where.
        git: GitSource,
    },
    /// Render a package (kpt's pipeline), if a render slot is free.
    /// Answer: [`Rendered`]; an error is an infrastructure failure.
    Render {
        /// The package's files.
        files: Files,
    },
}

/// What [`Call::GetPackageContent`] and [`Call::UpdateLifecycle`] answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Content {
    /// The revision's lifecycle in Git.
    #[serde(default)]
    pub lifecycle: Lifecycle,
    /// Its revision number (0 for drafts).
    #[serde(default)]
    pub revision: i64,
    /// Its files, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Files>,
    /// Why the files could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_error: Option<String>,
    /// Where the revision lives in Git (`GetLock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_lock: Option<Locator>,
    /// Its Kptfile's upstream lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_lock: Option<Locator>,
    /// Why the lock could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_error: Option<String>,
    /// Author of the publish commit.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub published_by: String,
    /// Time of the publish commit (RFC 3339), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_at: Option<String>,
}

/// What [`Call::FetchGit`] answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fetched {
    /// The package's files.
    pub files: Files,
    /// Where they were found (the commit resolved).
    pub lock: GitLock,
}

/// What [`Call::Render`] answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rendered {
    /// Every render slot is taken: nothing was rendered.
    #[serde(default)]
    pub busy: bool,
    /// The files after the pipeline (partial output on a pipeline error).
    #[serde(default)]
    pub files: Files,
    /// The pipeline's error, if a function failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_error: Option<String>,
}

/// The replay of this reconcile over the answers given so far.
pub(crate) type Io<'a> = crate::replay::Io<'a, Call>;
pub(crate) use crate::replay::Suspend;

/// The `upstreamLock` of the package's root Kptfile, if it has one with a
/// Git part.
pub fn upstream_lock_of(files: &Files) -> Option<Locator> {
    let kptfile = crate::krm::readiness::kptfile_from_resources(files).ok()?;
    crate::krm::readiness::locator(kptfile.get("upstreamLock")?)
}
