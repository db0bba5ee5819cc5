//! In-memory stores with the semantics of the Git backend and of the
//! Kubernetes API (for fast tests, and as the object model of local mode).

use std::collections::BTreeMap;
use std::sync::Mutex;

use pv_core::api::package_revision::{GitLock, Lifecycle, Locator};
use pv_core::api::{ObjectMeta, PackageRevision, PackageRevisionResources, PackageVariant};
use pv_core::variantset::{PackageVariantSet, Repository};
use serde_json::Value;

use super::rules::{check_transition, copy_metadata, ns_or_default, resources_of};
use super::{
    mark_latest, revision_name, stable_uid, Files, NewRevision, ObjectStore, PackageRevisionStore,
    PrFilter, StoreError, StoreResult,
};

struct Rev {
    pr: PackageRevision,
    files: Files,
    /// The files' version: 1 at creation, one more at each update.
    files_version: u64,
}

/// PackageRevisions in memory, laid out as [`super::git`] lays them out
/// (the same names, refs in the locks, revision numbers and rules).
#[derive(Default)]
pub struct MemoryRevisions {
    revs: Mutex<BTreeMap<(String, String), Rev>>,
}

impl MemoryRevisions {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), Rev>> {
        self.revs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn not_found(ns: &str, name: &str) -> StoreError {
    StoreError::NotFound {
        kind: "PackageRevision",
        namespace: ns.to_string(),
        name: name.to_string(),
    }
}

fn self_lock(pr: &PackageRevision, r: String) -> Option<Locator> {
    Some(Locator {
        type_: "git".into(),
        git: Some(GitLock {
            repo: pr.spec.repository.clone(),
            directory: pr.spec.package_name.clone(),
            r#ref: r,
            commit: String::new(),
        }),
    })
}

impl PackageRevisionStore for MemoryRevisions {
    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>> {
        let revs = self.lock();
        let mut all: Vec<PackageRevision> = revs
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|(_, r)| r.pr.clone())
            .collect();
        mark_latest(&mut all);
        all.retain(|pr| filter.matches(pr));
        Ok(all)
    }

    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision> {
        let pr = self
            .lock()
            .get(&(namespace.to_string(), name.to_string()))
            .map(|r| r.pr.clone())
            .ok_or_else(|| not_found(namespace, name))?;
        let filter = PrFilter::package(&pr.spec.repository, &pr.spec.package_name);
        self.list(namespace, &filter)?
            .into_iter()
            .find(|p| p.metadata.name == name)
            .ok_or_else(|| not_found(namespace, name))
    }

    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        let revs = self.lock();
        let r = revs
            .get(&(namespace.to_string(), name.to_string()))
            .ok_or_else(|| not_found(namespace, name))?;
        let mut prr = resources_of(&r.pr, r.files.clone());
        prr.metadata.resource_version = r.files_version.to_string();
        Ok(prr)
    }

    fn update_resources(
        &self,
        ns: &str,
        name: &str,
        files: &Files,
        read: &str,
    ) -> StoreResult<PackageRevision> {
        let mut revs = self.lock();
        let r = revs
            .get_mut(&(ns.to_string(), name.to_string()))
            .ok_or_else(|| not_found(ns, name))?;
        if r.pr.spec.lifecycle != Lifecycle::Draft {
            return Err(StoreError::Conflict(format!(
                "cannot update the resources of {name}: it is {:?}, not a draft",
                r.pr.spec.lifecycle
            )));
        }
        if !read.is_empty() && read != r.files_version.to_string() {
            return Err(StoreError::Conflict(format!(
                "the resources of {name} changed since they were read (version {read}, now {})",
                r.files_version
            )));
        }
        r.files = files.clone();
        r.files_version += 1;
        Ok(r.pr.clone())
    }

    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision> {
        let mut pr = new.revision;
        let ns = pr.metadata.namespace.clone();
        let name = revision_name(
            &pr.spec.repository,
            &pr.spec.package_name,
            &pr.spec.workspace_name,
        );
        let mut revs = self.lock();
        let clash = revs.iter().any(|((n, _), r)| {
            *n == ns
                && r.pr.spec.repository == pr.spec.repository
                && r.pr.spec.package_name == pr.spec.package_name
                && r.pr.spec.workspace_name == pr.spec.workspace_name
        });
        if clash {
            return Err(StoreError::Conflict(format!("{name} already exists")));
        }
        pr.metadata.name = name.clone();
        pr.spec.lifecycle = Lifecycle::Draft;
        pr.spec.revision = 0;
        pr.status.upstream_lock = new.upstream_lock;
        pr.status.self_lock = self_lock(
            &pr,
            format!("drafts/{}/{}", pr.spec.package_name, pr.spec.workspace_name),
        );
        revs.insert(
            (ns, name),
            Rev {
                pr: pr.clone(),
                files: new.files,
                files_version: 1,
            },
        );
        Ok(pr)
    }

    fn update_lifecycle(
        &self,
        ns: &str,
        name: &str,
        to: Lifecycle,
    ) -> StoreResult<PackageRevision> {
        let mut revs = self.lock();
        let key = (ns.to_string(), name.to_string());
        let (repo, package, from) = {
            let r = revs.get(&key).ok_or_else(|| not_found(ns, name))?;
            (
                r.pr.spec.repository.clone(),
                r.pr.spec.package_name.clone(),
                r.pr.spec.lifecycle,
            )
        };
        check_transition(from, to).map_err(StoreError::Conflict)?;
        let next = revs
            .values()
            .filter(|r| r.pr.spec.repository == repo && r.pr.spec.package_name == package)
            .map(|r| r.pr.spec.revision)
            .max()
            .unwrap_or(0)
            .max(0)
            + 1;
        let r = revs.get_mut(&key).ok_or_else(|| not_found(ns, name))?;
        let pkg = r.pr.spec.package_name.clone();
        let ws = r.pr.spec.workspace_name.clone();
        match (from, to) {
            (Lifecycle::Proposed, Lifecycle::Published) => {
                r.pr.spec.revision = next;
                r.pr.status.self_lock = self_lock(&r.pr, format!("{pkg}/v{next}"));
            }
            (_, Lifecycle::Proposed) => {
                r.pr.status.self_lock = self_lock(&r.pr, format!("proposed/{pkg}/{ws}"));
            }
            (_, Lifecycle::Draft) => {
                r.pr.status.self_lock = self_lock(&r.pr, format!("drafts/{pkg}/{ws}"));
            }
            _ => {}
        }
        r.pr.spec.lifecycle = to;
        drop(revs);
        self.get(ns, name)
    }

    fn update_metadata(
        &self,
        ns: &str,
        name: &str,
        m: &ObjectMeta,
    ) -> StoreResult<PackageRevision> {
        {
            let mut revs = self.lock();
            let r = revs
                .get_mut(&(ns.to_string(), name.to_string()))
                .ok_or_else(|| not_found(ns, name))?;
            copy_metadata(&mut r.pr.metadata, m);
        }
        self.get(ns, name)
    }

    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        let mut revs = self.lock();
        let key = (namespace.to_string(), name.to_string());
        let r = revs.get(&key).ok_or_else(|| not_found(namespace, name))?;
        if r.pr.spec.lifecycle == Lifecycle::Published {
            return Err(StoreError::Conflict(format!(
                "cannot delete {name}: it is published; propose its deletion first"
            )));
        }
        revs.remove(&key);
        Ok(())
    }
}

#[derive(Default)]
struct Objects {
    pvs: BTreeMap<(String, String), PackageVariant>,
    sets: BTreeMap<(String, String), PackageVariantSet>,
    repos: BTreeMap<(String, String), Repository>,
    other: BTreeMap<(String, String, String), Value>,
    /// The last resourceVersion handed out.
    version: u64,
}

impl Objects {
    /// Stamps the next resourceVersion on `meta` (when versions are kept).
    fn stamp(&mut self, on: bool, meta: &mut ObjectMeta) {
        if on {
            self.version += 1;
            meta.resource_version = self.version.to_string();
        }
    }
}

/// Optimistic concurrency: an update carrying a resourceVersion other than
/// the current one was made from an outdated read.
/// A write of an object's status subresource: the object must exist and,
/// when versions are kept, be the version read; its version then moves.
struct StatusUpdate<'a> {
    kind: &'static str,
    versions: bool,
    incoming: &'a ObjectMeta,
}

impl StatusUpdate<'_> {
    /// Finds the object in `map`, checks its version (`meta` gives its
    /// metadata), lets `set` write the status and moves the version.
    fn apply<T>(
        &self,
        map: &mut BTreeMap<(String, String), T>,
        version: &mut u64,
        meta: fn(&mut T) -> &mut ObjectMeta,
        set: impl FnOnce(&mut T),
    ) -> StoreResult<()> {
        let k = key(self.incoming);
        let current = map.get_mut(&k).ok_or_else(|| StoreError::NotFound {
            kind: self.kind,
            namespace: k.0.clone(),
            name: k.1.clone(),
        })?;
        check_version(self.versions, self.kind, meta(current), self.incoming)?;
        set(current);
        if self.versions {
            *version += 1;
            meta(current).resource_version = version.to_string();
        }
        Ok(())
    }
}

fn check_version(
    on: bool,
    kind: &str,
    current: &ObjectMeta,
    incoming: &ObjectMeta,
) -> StoreResult<()> {
    if on
        && !incoming.resource_version.is_empty()
        && incoming.resource_version != current.resource_version
    {
        return Err(StoreError::Conflict(format!(
            "{kind} {}/{}: the object has been modified (resourceVersion {} is not {}); \
             please apply your changes to the latest version and try again",
            current.namespace, current.name, incoming.resource_version, current.resource_version
        )));
    }
    Ok(())
}

/// Objects in memory with Kubernetes semantics (UIDs, finalizers,
/// deletion timestamps).
#[derive(Default)]
pub struct MemoryObjects {
    objects: Mutex<Objects>,
    /// The time stamped on deletions.
    pub now: String,
    /// Whether writes stamp resourceVersions and updates are checked
    /// against them.
    versions: bool,
}

fn key(meta: &ObjectMeta) -> (String, String) {
    (ns_or_default(&meta.namespace), meta.name.clone())
}

impl MemoryObjects {
    /// No objects; deletions stamped with `now`.
    pub fn new(now: &str) -> Self {
        MemoryObjects {
            objects: Mutex::default(),
            now: now.to_string(),
            versions: false,
        }
    }

    /// No objects; deletions stamped with `now`; with the API server's
    /// optimistic concurrency: every write (including the `put_*` of a
    /// user) stamps a new `metadata.resourceVersion`, and an update or
    /// status write carrying a resourceVersion other than the current one
    /// is refused as [`StoreError::Conflict`] (one made from a stale read).
    /// An update without a resourceVersion is not checked.
    pub fn with_resource_versions(now: &str) -> Self {
        MemoryObjects {
            versions: true,
            ..Self::new(now)
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Objects> {
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts a PackageVariant as is (namespace and UID defaulted), as if a
    /// user applied it.
    pub fn put_package_variant(&self, mut pv: PackageVariant) {
        pv.metadata.namespace = ns_or_default(&pv.metadata.namespace);
        if pv.metadata.uid.is_empty() {
            pv.metadata.uid =
                stable_uid("PackageVariant", &pv.metadata.namespace, &pv.metadata.name);
        }
        let mut objects = self.lock();
        objects.stamp(self.versions, &mut pv.metadata);
        objects.pvs.insert(key(&pv.metadata), pv);
    }

    /// Puts a PackageVariantSet as is (namespace and UID defaulted).
    pub fn put_package_variant_set(&self, mut pvs: PackageVariantSet) {
        pvs.metadata.namespace = ns_or_default(&pvs.metadata.namespace);
        if pvs.metadata.uid.is_empty() {
            pvs.metadata.uid = stable_uid(
                "PackageVariantSet",
                &pvs.metadata.namespace,
                &pvs.metadata.name,
            );
        }
        let mut objects = self.lock();
        objects.stamp(self.versions, &mut pvs.metadata);
        objects.sets.insert(key(&pvs.metadata), pvs);
    }

    /// Removes a PackageVariantSet (no finalizers: gone at once).
    pub fn remove_package_variant_set(&self, namespace: &str, name: &str) {
        self.lock()
            .sets
            .remove(&(namespace.to_string(), name.to_string()));
    }

    /// Puts a Repository.
    pub fn put_repository(&self, mut repo: Repository) {
        repo.metadata.namespace = ns_or_default(&repo.metadata.namespace);
        let mut objects = self.lock();
        objects.stamp(self.versions, &mut repo.metadata);
        objects.repos.insert(key(&repo.metadata), repo);
    }

    /// Removes a Repository (unregisters it; its revisions stay where
    /// they are).
    pub fn remove_repository(&self, namespace: &str, name: &str) {
        self.lock()
            .repos
            .remove(&(namespace.to_string(), name.to_string()));
    }

    /// Puts any other object (JSON with apiVersion, kind, metadata).
    pub fn put_object(&self, obj: Value) {
        let ns = ns_or_default(obj["metadata"]["namespace"].as_str().unwrap_or_default());
        let kind = obj["kind"].as_str().unwrap_or_default().to_string();
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut obj = obj;
        if let Some(object) = obj.as_object_mut() {
            let metadata = object
                .entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()));
            if !metadata.is_object() {
                *metadata = Value::Object(Default::default());
            }
            metadata["namespace"] = Value::String(ns.clone());
        }
        self.lock().other.insert((ns, kind, name), obj);
    }

    /// One PackageVariant.
    pub fn package_variant(&self, namespace: &str, name: &str) -> Option<PackageVariant> {
        self.lock()
            .pvs
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }
}

impl ObjectStore for MemoryObjects {
    fn list_package_variants(&self, namespace: Option<&str>) -> StoreResult<Vec<PackageVariant>> {
        Ok(self
            .lock()
            .pvs
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .map(|(_, pv)| pv.clone())
            .collect())
    }

    fn create_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        let mut pv = pv.clone();
        pv.metadata.namespace = ns_or_default(&pv.metadata.namespace);
        if pv.metadata.uid.is_empty() {
            pv.metadata.uid =
                stable_uid("PackageVariant", &pv.metadata.namespace, &pv.metadata.name);
        }
        let mut objects = self.lock();
        let k = key(&pv.metadata);
        if objects.pvs.contains_key(&k) {
            return Err(StoreError::Conflict(format!(
                "PackageVariant {}/{} already exists",
                k.0, k.1
            )));
        }
        objects.stamp(self.versions, &mut pv.metadata);
        objects.pvs.insert(k, pv.clone());
        Ok(pv)
    }

    fn update_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        let mut guard = self.lock();
        let objects = &mut *guard;
        let k = key(&pv.metadata);
        let current = objects
            .pvs
            .get_mut(&k)
            .ok_or_else(|| StoreError::NotFound {
                kind: "PackageVariant",
                namespace: k.0.clone(),
                name: k.1.clone(),
            })?;
        check_version(
            self.versions,
            "PackageVariant",
            &current.metadata,
            &pv.metadata,
        )?;
        let status = std::mem::take(&mut current.status);
        let deletion = current.metadata.deletion_timestamp.clone();
        *current = pv.clone();
        current.status = status;
        current.metadata.deletion_timestamp = deletion;
        if self.versions {
            objects.version += 1;
            current.metadata.resource_version = objects.version.to_string();
        }
        let out = current.clone();
        if out.metadata.deletion_timestamp.is_some() && out.metadata.finalizers.is_empty() {
            objects.pvs.remove(&k);
        }
        Ok(out)
    }

    fn update_package_variant_status(&self, pv: &PackageVariant) -> StoreResult<()> {
        let mut guard = self.lock();
        let objects = &mut *guard;
        let status = StatusUpdate {
            kind: "PackageVariant",
            versions: self.versions,
            incoming: &pv.metadata,
        };
        status.apply(
            &mut objects.pvs,
            &mut objects.version,
            |pv| &mut pv.metadata,
            |current| current.status = pv.status.clone(),
        )
    }

    fn delete_package_variant(&self, namespace: &str, name: &str) -> StoreResult<()> {
        let mut objects = self.lock();
        let k = (namespace.to_string(), name.to_string());
        let Some(current) = objects.pvs.get_mut(&k) else {
            return Err(StoreError::NotFound {
                kind: "PackageVariant",
                namespace: k.0,
                name: k.1,
            });
        };
        if current.metadata.finalizers.is_empty() {
            objects.pvs.remove(&k);
        } else if current.metadata.deletion_timestamp.is_none() {
            current.metadata.deletion_timestamp = Some(self.now.clone());
            if self.versions {
                objects.version += 1;
                let v = objects.version.to_string();
                if let Some(pv) = objects.pvs.get_mut(&k) {
                    pv.metadata.resource_version = v;
                }
            }
        }
        Ok(())
    }

    fn list_package_variant_sets(
        &self,
        namespace: Option<&str>,
    ) -> StoreResult<Vec<PackageVariantSet>> {
        Ok(self
            .lock()
            .sets
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .map(|(_, s)| s.clone())
            .collect())
    }

    fn update_package_variant_set_status(&self, pvs: &PackageVariantSet) -> StoreResult<()> {
        let mut guard = self.lock();
        let objects = &mut *guard;
        let status = StatusUpdate {
            kind: "PackageVariantSet",
            versions: self.versions,
            incoming: &pvs.metadata,
        };
        status.apply(
            &mut objects.sets,
            &mut objects.version,
            |set| &mut set.metadata,
            |current| current.status = pvs.status.clone(),
        )
    }

    fn list_repositories(&self, namespace: &str) -> StoreResult<Vec<Repository>> {
        Ok(self
            .lock()
            .repos
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|(_, r)| r.clone())
            .collect())
    }

    fn list_objects(&self, namespace: &str) -> StoreResult<Vec<Value>> {
        Ok(self
            .lock()
            .other
            .iter()
            .filter(|((ns, _, _), _)| ns == namespace)
            .map(|(_, o)| o.clone())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pv(name: &str) -> PackageVariant {
        let mut pv = PackageVariant::default();
        pv.metadata.name = name.into();
        pv.metadata.namespace = "ns".into();
        pv
    }

    #[test]
    fn resource_versions_refuse_updates_made_from_a_stale_read() {
        let objects = MemoryObjects::with_resource_versions("now");
        let created = objects.create_package_variant(&pv("a")).unwrap();
        assert_eq!(created.metadata.resource_version, "1");
        let read = objects.list_package_variants(None).unwrap().remove(0);
        let mut first = read.clone();
        first.metadata.finalizers.push("f".into());
        let updated = objects.update_package_variant(&first).unwrap();
        assert_eq!(updated.metadata.resource_version, "2");
        // The same read again: outdated.
        let mut second = read.clone();
        second.spec.deletion_policy = "orphan".into();
        assert!(matches!(
            objects.update_package_variant(&second),
            Err(StoreError::Conflict(_))
        ));
        assert!(matches!(
            objects.update_package_variant_status(&read),
            Err(StoreError::Conflict(_))
        ));
        // No resourceVersion: not checked.
        let mut blind = second.clone();
        blind.metadata.resource_version.clear();
        blind.metadata.finalizers.push("f".into());
        assert!(objects.update_package_variant(&blind).is_ok());
        // Marking for deletion is a write too.
        let before = objects.package_variant("ns", "a").unwrap();
        objects.delete_package_variant("ns", "a").unwrap();
        let marked = objects.package_variant("ns", "a").unwrap();
        assert!(marked.metadata.deletion_timestamp.is_some());
        assert_ne!(
            marked.metadata.resource_version,
            before.metadata.resource_version
        );
    }

    #[test]
    fn without_resource_versions_nothing_is_stamped_or_checked() {
        let objects = MemoryObjects::new("now");
        let created = objects.create_package_variant(&pv("a")).unwrap();
        assert!(created.metadata.resource_version.is_empty());
        let mut stale = created.clone();
        stale.metadata.resource_version = "41".into();
        assert!(objects.update_package_variant(&stale).is_ok());
        objects.put_repository(Repository::default());
        objects.remove_repository("default", "");
        assert!(objects.list_repositories("default").unwrap().is_empty());
    }
}
