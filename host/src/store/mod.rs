//! Where the reconcilers read and write: PackageRevisions (Porch's
//! aggregated API, here backed by Git or memory) and the other objects
//! (PackageVariants, PackageVariantSets, Repositories, target and injection
//! objects).
//!
//! The reconcilers are written once against [`PackageRevisionStore`] and
//! [`ObjectStore`]. Backends:
//! * [`git`] — Porch's Git layout on local repositories;
//! * [`memory`] — the same semantics in memory (local mode's object
//!   table, and fast tests);
//! * [`counting`] — a wrapper that counts calls;
//! * [`planned`] — an overlay that records writes instead of making them
//!   (`--dry-run`).
//!
//! The tests' fault injector (crashes before or after any write, errors,
//! conflicts, stale list answers) is in the `porch-variants-testkit`
//! crate, outside the binary.
//!
//! Every write method is atomic on its own: it happens completely or not
//! at all (the Git backend orders its ref updates so that an interrupted
//! write leaves a state the next listing reads consistently).
//!
//! Reads may lag behind other writers' writes (the Kubernetes backend reads
//! informer caches), but not behind the caller's own successful writes: a
//! list shows the drafts and variants the process has just created,
//! changed or deleted. The reconcilers rely on it to create no second
//! draft; the Kubernetes backend keeps its writes over its caches until
//! they show them ([`crate::kube::recent`]).

pub mod counting;
pub mod git;
pub mod memory;
pub mod planned;
pub mod remote;
pub mod rules;
pub mod v1alpha2;

use std::collections::BTreeMap;

use pv_core::api::package_revision::{Lifecycle, Locator, RenderStatus};
use pv_core::api::{ObjectMeta, PackageRevision, PackageRevisionResources, PackageVariant};
use pv_core::variantset::{PackageVariantSet, Repository};
use serde_json::Value;

pub use pv_core::variant::v1alpha2::SourceState;

/// A package's files: path relative to the package root → UTF-8 text.
pub type Files = BTreeMap<String, String>;

/// Result of a store call.
pub type StoreResult<T> = Result<T, StoreError>;

/// A store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The object does not exist.
    #[error("{kind} {namespace}/{name} not found")]
    NotFound {
        /// Kind of the object.
        kind: &'static str,
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// The write conflicts with the object's current state (it already
    /// exists, is immutable in its lifecycle, or changed since it was read).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The request itself is invalid (unknown repository, bad path, ...).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// A Git operation failed. libgit2's message is part of this one's (it
    /// is not also given as the error's source, which would print it
    /// twice in a chain).
    #[error("git: {context}: {}", error.message())]
    Git {
        /// What was being done.
        context: String,
        /// The libgit2 error.
        error: git2::Error,
    },
    /// A file operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Stored data could not be read or written.
    #[error("{context}: {message}")]
    Data {
        /// What was being read or written.
        context: String,
        /// What was wrong.
        message: String,
    },
    /// A remote repository could not be fetched from or pushed to (its
    /// address, the network or the credentials); `message` ends with
    /// git's own last lines.
    #[error("{context}: {message}")]
    Remote {
        /// `Repository ns/name: git fetch URL`.
        context: String,
        /// What went wrong.
        message: String,
    },
    /// This replica lost the leader Lease during the reconcile: the write
    /// was not made (another replica may be writing).
    #[error("{what}: not written, this replica no longer holds the leader Lease")]
    NotLeader {
        /// The write (`create PackageRevision ns/name`, ...).
        what: String,
    },
    /// The store takes no more writes in this run: its writer is going
    /// away (a process being killed, as the tests' fault injector stands
    /// in for) before write #N, or right after it (the write happened but
    /// nobody saw the answer). Every later write is refused; the run stops.
    #[error("store stopped at write #{0}")]
    Stopped(usize),
}

impl StoreError {
    /// A [`StoreError::Git`] with context.
    pub fn git(context: impl Into<String>) -> impl FnOnce(git2::Error) -> StoreError {
        let context = context.into();
        move |error| StoreError::Git { context, error }
    }

    /// A [`StoreError::Io`] with context.
    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> StoreError {
        let context = context.into();
        move |source| StoreError::Io { context, source }
    }

    /// Whether this is [`StoreError::Remote`]: a remote repository that
    /// could not be reached.
    pub fn is_remote_unreachable(&self) -> bool {
        matches!(self, StoreError::Remote { .. })
    }

    /// Whether this is [`StoreError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, StoreError::NotFound { .. })
    }
}

/// Which PackageRevisions to list (all given fields must match).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrFilter {
    /// Repository name.
    pub repository: Option<String>,
    /// Package name (path).
    pub package: Option<String>,
    /// UID one of the owner references must carry.
    pub owner_uid: Option<String>,
}

impl PrFilter {
    /// Revisions of one package.
    pub fn package(repository: &str, package: &str) -> Self {
        PrFilter {
            repository: Some(repository.to_string()),
            package: Some(package.to_string()),
            owner_uid: None,
        }
    }

    /// Revisions owned by `uid`.
    pub fn owned_by(uid: &str) -> Self {
        PrFilter {
            owner_uid: Some(uid.to_string()),
            ..PrFilter::default()
        }
    }

    /// Whether a v1alpha2 PackageRevision object, as JSON, passes the
    /// filter: it is read from the fields its revision view
    /// ([`pv_core::variant::v1alpha2::revision_view`]) takes them from, so
    /// an object is tested without being converted.
    pub fn matches_v1alpha2(&self, object: &serde_json::Value) -> bool {
        let is = |v: &serde_json::Value, want: &Option<String>| {
            want.as_deref().is_none_or(|w| v.as_str() == Some(w))
        };
        is(&object["spec"]["repository"], &self.repository)
            && is(&object["spec"]["packageName"], &self.package)
            && self.owner_uid.as_deref().is_none_or(|uid| {
                !uid.is_empty()
                    && object["metadata"]["ownerReferences"]
                        .as_array()
                        .is_some_and(|refs| refs.iter().any(|r| r["uid"].as_str() == Some(uid)))
            })
    }

    /// Whether `pr` passes the filter.
    pub fn matches(&self, pr: &PackageRevision) -> bool {
        self.repository
            .as_ref()
            .is_none_or(|r| *r == pr.spec.repository)
            && self
                .package
                .as_ref()
                .is_none_or(|p| *p == pr.spec.package_name)
            && self
                .owner_uid
                .as_ref()
                .is_none_or(|u| pr.metadata.is_owned_by(u))
    }
}

/// A new draft: the object (metadata, spec with repository, package,
/// workspace and the task that made it) and its prepared content.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRevision {
    /// The PackageRevision to create (`metadata.name` is generated).
    pub revision: PackageRevision,
    /// The package's files, as the task (init/clone/edit/upgrade) and the
    /// mutations produced them.
    pub files: Files,
    /// Where the content came from (`status.upstreamLock`).
    pub upstream_lock: Option<Locator>,
}

/// `<repo>.<package>.<workspace>`, the name Porch gives a PackageRevision of
/// a Git repository (slashes of nested package paths become dots).
pub fn revision_name(repository: &str, package: &str, workspace: &str) -> String {
    format!("{repository}.{}.{workspace}", package.replace('/', "."))
}

/// PackageRevisions and their resources (Porch's aggregated API:
/// `porch.kpt.dev/v1alpha1` PackageRevision and PackageRevisionResources).
///
/// Lifecycle rules (Porch's): a draft's resources can be updated; a
/// proposed revision can go back to draft or be published; publishing
/// assigns the next revision number; a published revision is immutable,
/// can have its deletion proposed, and can only be deleted once proposed
/// (deletion gating); metadata (owner references, labels, annotations) can
/// always be updated.
pub trait PackageRevisionStore: Send + Sync {
    /// Revisions of `namespace` passing `filter`, in name order.
    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>>;
    /// One revision.
    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision>;
    /// A revision's files, with the version they were read at
    /// (`metadata.resourceVersion`).
    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources>;
    /// Replaces a draft's files if they are still at the version `read`
    /// (from [`PackageRevisionStore::resources`]), else fails with
    /// [`StoreError::Conflict`]: an edit made since the files were read is
    /// not overwritten. An empty `read` replaces them whatever they are.
    fn update_resources(
        &self,
        namespace: &str,
        name: &str,
        files: &Files,
        read: &str,
    ) -> StoreResult<PackageRevision>;
    /// Creates a draft (Conflict if the workspace exists for the package).
    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision>;
    /// Moves a revision to `lifecycle`.
    fn update_lifecycle(
        &self,
        namespace: &str,
        name: &str,
        lifecycle: Lifecycle,
    ) -> StoreResult<PackageRevision>;
    /// Replaces labels, annotations and owner references.
    fn update_metadata(
        &self,
        namespace: &str,
        name: &str,
        metadata: &ObjectMeta,
    ) -> StoreResult<PackageRevision>;
    /// Deletes a draft, proposed or deletion-proposed revision.
    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()>;
    /// The render result Porch returned when this store last wrote the
    /// revision's resources; `None` when unknown (backends that do not
    /// render).
    fn render_status(&self, _namespace: &str, _name: &str) -> Option<RenderStatus> {
        None
    }
    /// Whether [`PackageRevisionStore::create`] only declares a draft's
    /// source and another controller makes its content (v1alpha2, see
    /// [`v1alpha2`]): the files given to `create` are then not used, and
    /// the content is there once [`PackageRevisionStore::source_state`]
    /// says so.
    fn declares_sources(&self) -> bool {
        false
    }
    /// Where a revision's source stands ([`SourceState::Done`] where
    /// `create` writes the content itself).
    fn source_state(&self, _namespace: &str, _name: &str) -> StoreResult<SourceState> {
        Ok(SourceState::Done)
    }
    /// A fingerprint of what [`PackageRevisionStore::list`] answers for
    /// `filter`, and of everything the revisions it lists hold (their
    /// resources, render status and source state): while it is unchanged,
    /// so are they. `None` where the store cannot tell, and then nothing
    /// that depends on it is skipped. It may change when they did not (a
    /// coarser fingerprint costs only a skip), never the other way round.
    fn fingerprint(&self, _namespace: &str, _filter: &PrFilter) -> StoreResult<Option<String>> {
        Ok(None)
    }
    /// The packages (namespace, repository, package) holding a revision
    /// not yet published that carries the annotation `key`, in order,
    /// where revisions can be annotated by hand and the store finds them
    /// by it (the v1alpha2 objects, declared in files or annotated with
    /// kubectl). Stores whose revisions carry only the annotations their
    /// writers gave them answer none.
    fn annotated_packages(&self, _key: &str) -> StoreResult<Vec<(String, String, String)>> {
        Ok(Vec::new())
    }
}

/// The other objects: PackageVariants (with Kubernetes' finalizer semantics:
/// deleting an object with finalizers only marks it), PackageVariantSets,
/// Repositories and any other objects (targets and injection candidates).
pub trait ObjectStore: Send + Sync {
    /// PackageVariants of `namespace` (all namespaces for `None`), by
    /// namespace and name.
    fn list_package_variants(&self, namespace: Option<&str>) -> StoreResult<Vec<PackageVariant>>;
    /// Creates a PackageVariant (a UID is assigned when empty).
    fn create_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant>;
    /// Updates a PackageVariant's metadata and spec. Removing the last
    /// finalizer of a PackageVariant being deleted removes it.
    fn update_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant>;
    /// Writes a PackageVariant's status.
    fn update_package_variant_status(&self, pv: &PackageVariant) -> StoreResult<()>;
    /// Deletes a PackageVariant: marks it (deletionTimestamp) while it has
    /// finalizers, removes it otherwise.
    fn delete_package_variant(&self, namespace: &str, name: &str) -> StoreResult<()>;
    /// PackageVariantSets of `namespace` (all for `None`).
    fn list_package_variant_sets(
        &self,
        namespace: Option<&str>,
    ) -> StoreResult<Vec<PackageVariantSet>>;
    /// Writes a PackageVariantSet's status.
    fn update_package_variant_set_status(&self, pvs: &PackageVariantSet) -> StoreResult<()>;
    /// Repositories of `namespace`.
    fn list_repositories(&self, namespace: &str) -> StoreResult<Vec<Repository>>;
    /// Every other object of `namespace` (as JSON), by kind and name.
    fn list_objects(&self, namespace: &str) -> StoreResult<Vec<Value>>;
}

impl<T: PackageRevisionStore + ?Sized> PackageRevisionStore for &T {
    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>> {
        (**self).list(namespace, filter)
    }
    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision> {
        (**self).get(namespace, name)
    }
    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        (**self).resources(namespace, name)
    }
    fn update_resources(
        &self,
        ns: &str,
        name: &str,
        files: &Files,
        read: &str,
    ) -> StoreResult<PackageRevision> {
        (**self).update_resources(ns, name, files, read)
    }
    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision> {
        (**self).create(new)
    }
    fn update_lifecycle(&self, ns: &str, name: &str, l: Lifecycle) -> StoreResult<PackageRevision> {
        (**self).update_lifecycle(ns, name, l)
    }
    fn update_metadata(
        &self,
        ns: &str,
        name: &str,
        m: &ObjectMeta,
    ) -> StoreResult<PackageRevision> {
        (**self).update_metadata(ns, name, m)
    }
    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        (**self).delete(namespace, name)
    }
    fn render_status(&self, namespace: &str, name: &str) -> Option<RenderStatus> {
        (**self).render_status(namespace, name)
    }
    fn declares_sources(&self) -> bool {
        (**self).declares_sources()
    }
    fn source_state(&self, namespace: &str, name: &str) -> StoreResult<SourceState> {
        (**self).source_state(namespace, name)
    }
    fn fingerprint(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Option<String>> {
        (**self).fingerprint(namespace, filter)
    }
    fn annotated_packages(&self, key: &str) -> StoreResult<Vec<(String, String, String)>> {
        (**self).annotated_packages(key)
    }
}

impl<T: ObjectStore + ?Sized> ObjectStore for &T {
    fn list_package_variants(&self, namespace: Option<&str>) -> StoreResult<Vec<PackageVariant>> {
        (**self).list_package_variants(namespace)
    }
    fn create_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        (**self).create_package_variant(pv)
    }
    fn update_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        (**self).update_package_variant(pv)
    }
    fn update_package_variant_status(&self, pv: &PackageVariant) -> StoreResult<()> {
        (**self).update_package_variant_status(pv)
    }
    fn delete_package_variant(&self, namespace: &str, name: &str) -> StoreResult<()> {
        (**self).delete_package_variant(namespace, name)
    }
    fn list_package_variant_sets(
        &self,
        namespace: Option<&str>,
    ) -> StoreResult<Vec<PackageVariantSet>> {
        (**self).list_package_variant_sets(namespace)
    }
    fn update_package_variant_set_status(&self, pvs: &PackageVariantSet) -> StoreResult<()> {
        (**self).update_package_variant_set_status(pvs)
    }
    fn list_repositories(&self, namespace: &str) -> StoreResult<Vec<Repository>> {
        (**self).list_repositories(namespace)
    }
    fn list_objects(&self, namespace: &str) -> StoreResult<Vec<Value>> {
        (**self).list_objects(namespace)
    }
}

/// A stable UID for an object that has none (local objects are not created
/// by an API server): derived from kind, namespace and name, formatted as a
/// UUID.
pub fn stable_uid(kind: &str, namespace: &str, name: &str) -> String {
    use sha1::{Digest, Sha1};
    let digest = Sha1::digest(format!("{kind}/{namespace}/{name}").as_bytes());
    let h: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Writes `bytes` to `path` (its directory created if missing) through a
/// new file renamed over the old one, so that a process stopped half-way
/// leaves the old content or the new, never part of it.
pub fn replace_file(path: &std::path::Path, bytes: &[u8]) -> StoreResult<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(StoreError::io(format!("creating {}", parent.display())))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(StoreError::io(format!("writing {}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(StoreError::io(format!("writing {}", path.display())))
}

/// A fingerprint: the hex SHA-256 of `parts`, each followed by a zero
/// byte (so that no two lists of parts run together alike).
pub fn fingerprint_of<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
        hasher.update([0u8]);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The latest-revision label value for each revision: `"true"` on the
/// published revision with the highest number of its package, `"false"` on
/// the others (Porch's `kpt.dev/latest-revision`).
pub fn mark_latest(prs: &mut [PackageRevision]) {
    let mut best: BTreeMap<(String, String), i64> = BTreeMap::new();
    for pr in prs.iter() {
        if pr.spec.lifecycle.is_published() {
            let key = (pr.spec.repository.clone(), pr.spec.package_name.clone());
            let e = best.entry(key).or_insert(pr.spec.revision);
            *e = (*e).max(pr.spec.revision);
        }
    }
    for pr in prs.iter_mut() {
        let key = (pr.spec.repository.clone(), pr.spec.package_name.clone());
        let latest = pr.spec.lifecycle.is_published() && best.get(&key) == Some(&pr.spec.revision);
        pr.metadata.labels.insert(
            pv_core::api::package_revision::LATEST_REVISION_LABEL.to_string(),
            latest.to_string(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_uids() {
        assert_eq!(revision_name("r", "a/b", "ws"), "r.a.b.ws");
        let u = stable_uid("PackageVariant", "default", "x");
        assert_eq!(u.len(), 36);
        assert_eq!(u, stable_uid("PackageVariant", "default", "x"));
        assert_ne!(u, stable_uid("PackageVariant", "default", "y"));
    }
}
