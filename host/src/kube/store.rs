//! The Kubernetes backend of the store traits: reads come from the
//! reflector caches ([`Caches`]), writes go through the API.
//!
//! The reconcilers are synchronous; a [`KubeStore`] lives for one
//! reconcile on a blocking thread and runs each API call with
//! [`Handle::block_on`]. Revisions written are read over the cache until
//! the watch delivers them ([`RecentWrites`], shared by the reconciles of
//! a controller), so no reconcile misses a draft that was just created.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Client, ResourceExt};
use pv_core::api::package_revision::{Lifecycle, RenderStatus};
use pv_core::api::{ObjectMeta as CoreMeta, PackageRevisionResources as CorePrr};
use pv_core::api::{PackageRevision as CorePr, PackageVariant as CorePv};
use pv_core::variantset::{PackageVariantSet as CorePvs, Repository as CoreRepo};
use serde_json::{json, Value};
use tokio::runtime::Handle;
use tokio::sync::watch;

use super::api::{
    KubeResource, PackageRevision, PackageRevisionResources, PackageVariant, PackageVariantSet,
};
use super::cache::Caches;
use super::recent::Expectations;
use super::FIELD_MANAGER;
use crate::store::{
    revision_name, Files, NewRevision, ObjectStore, PackageRevisionStore, PrFilter, StoreError,
    StoreResult,
};

/// One reconcile's view of the cluster.
pub struct KubeStore {
    client: Client,
    caches: Caches,
    handle: Handle,
    /// Objects written that the caches may not show yet.
    written: Expectations,
    /// Render results Porch returned for the resources written.
    rendered: Mutex<HashMap<(String, String), RenderStatus>>,
    /// Whether this replica holds the leader Lease (`None`: always).
    leader: Option<watch::Receiver<bool>>,
}

/// A [`StoreError`] from an API error.
pub fn api_error(
    kind: &'static str,
    ns: &str,
    name: &str,
    what: &str,
    e: kube::Error,
) -> StoreError {
    match &e {
        kube::Error::Api(status) if status.code == 404 => StoreError::NotFound {
            kind,
            namespace: ns.to_string(),
            name: name.to_string(),
        },
        kube::Error::Api(status) if status.code == 409 => {
            StoreError::Conflict(format!("{what} {kind} {ns}/{name}: {}", status.message))
        }
        kube::Error::Api(status) if status.code == 400 || status.code == 422 => {
            StoreError::Invalid(format!("{what} {kind} {ns}/{name}: {}", status.message))
        }
        _ => StoreError::Data {
            context: format!("{what} {kind} {ns}/{name}"),
            message: e.to_string(),
        },
    }
}

fn convert_error(context: impl Into<String>, e: serde_json::Error) -> StoreError {
    StoreError::Data {
        context: context.into(),
        message: e.to_string(),
    }
}

fn to_core<K: KubeResource>(obj: &K) -> StoreResult<K::Core> {
    obj.to_core().map_err(|e| {
        convert_error(
            format!(
                "reading {} {}/{}",
                K::kind(&()),
                obj.namespace().unwrap_or_default(),
                obj.name_any()
            ),
            e,
        )
    })
}

fn from_core<K: KubeResource>(core: &K::Core) -> StoreResult<K> {
    K::from_core(core).map_err(|e| convert_error(format!("writing {}", K::kind(&())), e))
}

impl KubeStore {
    /// A store over `caches`, writing with `client`; API calls run on
    /// `handle` (call the store from a blocking thread only). Its writes
    /// are read over the cache by this store only.
    pub fn new(client: Client, caches: Caches, handle: Handle) -> Self {
        KubeStore::sharing(client, caches, handle, Expectations::default())
    }

    /// [`KubeStore::new`], reading and recording writes in `written`
    /// (shared with the other reconciles of the controller).
    pub fn sharing(client: Client, caches: Caches, handle: Handle, written: Expectations) -> Self {
        KubeStore {
            client,
            caches,
            handle,
            written,
            rendered: Mutex::default(),
            leader: None,
        }
    }

    /// The store, writing only while `leader` says this replica holds the
    /// Lease: a reconcile that outlives the leadership stops at its next
    /// write instead of writing beside the new leader.
    #[must_use]
    pub fn leading(mut self, leader: watch::Receiver<bool>) -> Self {
        self.leader = Some(leader);
        self
    }

    /// Fails when this replica no longer leads (`what`: the write).
    fn may_write(&self, what: impl FnOnce() -> String) -> StoreResult<()> {
        match &self.leader {
            Some(leader) if !*leader.borrow() => Err(StoreError::NotLeader { what: what() }),
            _ => Ok(()),
        }
    }

    fn api<K>(&self, ns: &str) -> Api<K>
    where
        K: KubeResource + kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        Api::namespaced(self.client.clone(), ns)
    }

    /// The cache's resourceVersion of a revision (`None`: not cached).
    /// Records a write of a PackageRevision (`None`: deleted).
    fn remember(&self, ns: &str, name: &str, pr: Option<&PackageRevision>) {
        let cached = self.caches.revision(ns, name);
        self.written
            .revisions
            .record_over(ns, name, pr, cached.as_deref());
    }

    /// The current object of a revision: a write the cache has not seen
    /// yet, else the cache.
    fn current(&self, ns: &str, name: &str) -> StoreResult<PackageRevision> {
        self.written
            .revisions
            .read_over(ns, name, self.caches.revision(ns, name))
            .ok_or_else(|| not_found(ns, name))
    }

    /// The cached PackageVariant `ns/name`.
    fn cached_variant(&self, ns: &str, name: &str) -> Option<Arc<PackageVariant>> {
        self.caches
            .package_variants
            .get(&ObjectRef::new(name).within(ns))
    }

    /// Records a write of a PackageVariant (`None`: deleted).
    fn remember_variant(&self, ns: &str, name: &str, pv: Option<&PackageVariant>) {
        let cached = self.cached_variant(ns, name);
        self.written
            .variants
            .record_over(ns, name, pv, cached.as_deref());
    }

    /// The current PackageVariant `ns/name`: a write the cache has not seen
    /// yet, else the cache (`None`: none).
    fn current_variant(&self, ns: &str, name: &str) -> Option<PackageVariant> {
        self.written
            .variants
            .read_over(ns, name, self.cached_variant(ns, name))
    }

    fn replace_revision(&self, pr: &PackageRevision, what: &str) -> StoreResult<PackageRevision> {
        let ns = pr.namespace().unwrap_or_default();
        let name = pr.name_any();
        self.may_write(|| format!("{what} PackageRevision {ns}/{name}"))?;
        let api = self.api::<PackageRevision>(&ns);
        let out = self
            .handle
            .block_on(api.replace(&name, &PostParams::default(), pr))
            .map_err(|e| api_error("PackageRevision", &ns, &name, what, e))?;
        self.remember(&ns, &name, remaining(out.clone(), false).as_ref());
        Ok(out)
    }

    fn get_prr(&self, ns: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        let api = self.api::<PackageRevisionResources>(ns);
        self.handle
            .block_on(api.get(name))
            .map_err(|e| api_error("PackageRevisionResources", ns, name, "get", e))
    }

    /// Replaces the files of `ns/name` if they are still at the version
    /// `read` (empty: whatever they are); the API server checks the
    /// version again at the update.
    fn put_files(&self, ns: &str, name: &str, files: &Files, read: &str) -> StoreResult<()> {
        self.may_write(|| format!("update PackageRevisionResources {ns}/{name}"))?;
        let mut prr = self.get_prr(ns, name)?;
        if !read.is_empty() {
            let now = prr.metadata.resource_version.clone().unwrap_or_default();
            if now != read {
                return Err(StoreError::Conflict(format!(
                    "the resources of {ns}/{name} changed since they were read \
                     (resourceVersion {read}, now {now})"
                )));
            }
        }
        prr.spec.resources = Some(files.clone());
        let api = self.api::<PackageRevisionResources>(ns);
        let out = self
            .handle
            .block_on(api.replace(name, &PostParams::default(), &prr))
            .map_err(|e| api_error("PackageRevisionResources", ns, name, "update", e))?;
        if let Some(rendered) = out.status.render_status {
            self.rendered
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((ns.to_string(), name.to_string()), rendered);
        }
        Ok(())
    }

    fn apply_status<K>(
        &self,
        kind: &'static str,
        ns: &str,
        name: &str,
        status: Value,
    ) -> StoreResult<()>
    where
        K: KubeResource + kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K: Clone + std::fmt::Debug,
    {
        self.may_write(|| format!("apply the status of {kind} {ns}/{name}"))?;
        let api = self.api::<K>(ns);
        let patch = json!({
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "status": status,
        });
        let params = PatchParams::apply(FIELD_MANAGER).force();
        self.handle
            .block_on(api.patch_status(name, &params, &Patch::Apply(&patch)))
            .map_err(|e| api_error(kind, ns, name, "apply the status of", e))?;
        Ok(())
    }
}

/// What is left of an object after a write the API server answered with
/// `answer` (`deletion`: the write was a DELETE): `None` when it is gone.
///
/// A deletion leaves the object only when it is marked and a finalizer
/// holds it (Porch answers a revision's deletion with the object as it
/// was, unmarked, and it is gone); an update that removes the last
/// finalizer of a marked object ends it.
fn remaining<K: kube::Resource>(answer: K, deletion: bool) -> Option<K> {
    let meta = answer.meta();
    let marked = meta.deletion_timestamp.is_some();
    let held = meta.finalizers.as_ref().is_some_and(|f| !f.is_empty());
    let gone = if deletion {
        !(marked && held)
    } else {
        marked && !held
    };
    (!gone).then_some(answer)
}

fn not_found(ns: &str, name: &str) -> StoreError {
    StoreError::NotFound {
        kind: "PackageRevision",
        namespace: ns.to_string(),
        name: name.to_string(),
    }
}

/// Kubernetes metadata with the labels, annotations and owner references
/// of `m`.
fn set_writable_metadata(
    dst: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    m: &CoreMeta,
) -> StoreResult<()> {
    let owners = serde_json::to_value(&m.owner_references)
        .and_then(serde_json::from_value)
        .map_err(|e| convert_error("owner references", e))?;
    dst.labels = Some(m.labels.clone()).filter(|l| !l.is_empty());
    dst.annotations = Some(m.annotations.clone()).filter(|a| !a.is_empty());
    dst.owner_references = Some(owners).filter(|o: &Vec<_>| !o.is_empty());
    Ok(())
}

impl PackageRevisionStore for KubeStore {
    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<CorePr>> {
        let index = &self.caches.revision_index;
        let mut names: Vec<String> = match (&filter.owner_uid, &filter.repository, &filter.package)
        {
            (Some(uid), _, _) => index
                .by_owner(uid)
                .into_iter()
                .filter(|(ns, _)| ns == namespace)
                .map(|(_, n)| n)
                .collect(),
            (None, Some(repo), Some(pkg)) => index.by_package(namespace, repo, pkg),
            _ => self
                .caches
                .revisions
                .state()
                .iter()
                .filter(|pr| pr.namespace().as_deref() == Some(namespace))
                .map(|pr| pr.name_any())
                .collect(),
        };
        for name in self.written.revisions.names(namespace) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names.sort();
        let mut out = Vec::new();
        for name in names {
            let Ok(pr) = self.current(namespace, &name) else {
                continue;
            };
            let core = to_core(&pr)?;
            if filter.matches(&core) {
                out.push(core);
            }
        }
        Ok(out)
    }

    fn get(&self, namespace: &str, name: &str) -> StoreResult<CorePr> {
        to_core(&self.current(namespace, name)?)
    }

    fn resources(&self, namespace: &str, name: &str) -> StoreResult<CorePrr> {
        to_core(&self.get_prr(namespace, name)?)
    }

    fn update_resources(
        &self,
        ns: &str,
        name: &str,
        files: &Files,
        read: &str,
    ) -> StoreResult<CorePr> {
        self.put_files(ns, name, files, read)?;
        self.get(ns, name)
    }

    fn create(&self, new: NewRevision) -> StoreResult<CorePr> {
        let mut pr: PackageRevision = from_core(&new.revision)?;
        let ns = pr.namespace().unwrap_or_default();
        // Porch names revisions itself.
        pr.metadata.name = None;
        pr.metadata.resource_version = None;
        pr.metadata.uid = None;
        pr.status = Default::default();
        self.may_write(|| {
            let spec = &new.revision.spec;
            let name = revision_name(&spec.repository, &spec.package_name, &spec.workspace_name);
            format!("create PackageRevision {ns}/{name}")
        })?;
        let api = self.api::<PackageRevision>(&ns);
        let created = self
            .handle
            .block_on(api.create(&PostParams::default(), &pr))
            .map_err(|e| {
                let spec = &new.revision.spec;
                api_error(
                    "PackageRevision",
                    &ns,
                    &revision_name(&spec.repository, &spec.package_name, &spec.workspace_name),
                    "create",
                    e,
                )
            })?;
        let name = created.name_any();
        self.remember(&ns, &name, Some(&created));
        // Porch creates the draft with the task's content; the prepared
        // (mutated) files are a second call. When it fails, the draft goes
        // too, so that no unmutated draft stays; if that delete fails as
        // well, the draft carries its owner, and the next reconcile finds
        // it and writes its content.
        if let Err(e) = self.put_files(&ns, &name, &new.files, "") {
            if let Err(cleanup) = self.delete(&ns, &name) {
                tracing::warn!(
                    namespace = %ns,
                    name = %name,
                    error = %cleanup,
                    "could not delete a draft whose content was not written"
                );
            }
            return Err(e);
        }
        to_core(&created)
    }

    fn update_lifecycle(&self, ns: &str, name: &str, to: Lifecycle) -> StoreResult<CorePr> {
        let mut pr = self.current(ns, name)?;
        let from = pr.spec.lifecycle;
        pr.spec.lifecycle = to;
        if from == Lifecycle::Proposed && to == Lifecycle::Published {
            // Publishing is an approval (its own subresource).
            self.may_write(|| format!("approve PackageRevision {ns}/{name}"))?;
            let api = self.api::<PackageRevision>(ns);
            let out = self
                .handle
                .block_on(api.replace_subresource("approval", name, &PostParams::default(), &pr))
                .map_err(|e| api_error("PackageRevision", ns, name, "approve", e))?;
            self.remember(ns, name, Some(&out));
            return to_core(&out);
        }
        to_core(&self.replace_revision(&pr, "update lifecycle of")?)
    }

    fn update_metadata(&self, ns: &str, name: &str, m: &CoreMeta) -> StoreResult<CorePr> {
        let mut pr = self.current(ns, name)?;
        set_writable_metadata(&mut pr.metadata, m)?;
        to_core(&self.replace_revision(&pr, "update metadata of")?)
    }

    fn render_status(&self, namespace: &str, name: &str) -> Option<RenderStatus> {
        self.rendered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.may_write(|| format!("delete PackageRevision {namespace}/{name}"))?;
        let api = self.api::<PackageRevision>(namespace);
        let answer = self
            .handle
            .block_on(api.delete(name, &DeleteParams::default()))
            .map_err(|e| api_error("PackageRevision", namespace, name, "delete", e))?;
        let left = answer.left().and_then(|pr| remaining(pr, true));
        self.remember(namespace, name, left.as_ref());
        Ok(())
    }
}

fn sorted<T>(mut v: Vec<(String, String, T)>) -> Vec<T> {
    v.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    v.into_iter().map(|(_, _, t)| t).collect()
}

impl ObjectStore for KubeStore {
    fn list_package_variants(&self, namespace: Option<&str>) -> StoreResult<Vec<CorePv>> {
        let mut keys: std::collections::BTreeSet<(String, String)> = self
            .caches
            .package_variants
            .state()
            .iter()
            .map(|pv| (pv.namespace().unwrap_or_default(), pv.name_any()))
            .collect();
        keys.extend(self.written.variants.keys());
        let mut out = Vec::new();
        for (ns, name) in keys {
            if namespace.is_some_and(|n| n != ns) {
                continue;
            }
            if let Some(pv) = self.current_variant(&ns, &name) {
                out.push((ns, name, to_core(&pv)?));
            }
        }
        Ok(sorted(out))
    }

    fn create_package_variant(&self, pv: &CorePv) -> StoreResult<CorePv> {
        let obj: PackageVariant = from_core(pv)?;
        let ns = pv.metadata.namespace.clone();
        self.may_write(|| format!("create PackageVariant {ns}/{}", pv.metadata.name))?;
        let api = self.api::<PackageVariant>(&ns);
        let out = self
            .handle
            .block_on(api.create(&PostParams::default(), &obj))
            .map_err(|e| api_error("PackageVariant", &ns, &pv.metadata.name, "create", e))?;
        self.remember_variant(&ns, &pv.metadata.name, Some(&out));
        to_core(&out)
    }

    fn update_package_variant(&self, pv: &CorePv) -> StoreResult<CorePv> {
        let mut obj: PackageVariant = from_core(pv)?;
        obj.status = Default::default();
        let (ns, name) = (&pv.metadata.namespace, &pv.metadata.name);
        self.may_write(|| format!("update PackageVariant {ns}/{name}"))?;
        let api = self.api::<PackageVariant>(ns);
        let out = self
            .handle
            .block_on(api.replace(name, &PostParams::default(), &obj))
            .map_err(|e| api_error("PackageVariant", ns, name, "update", e))?;
        self.remember_variant(ns, name, remaining(out.clone(), false).as_ref());
        to_core(&out)
    }

    fn update_package_variant_status(&self, pv: &CorePv) -> StoreResult<()> {
        let status = serde_json::to_value(&pv.status).map_err(|e| convert_error("status", e))?;
        self.apply_status::<PackageVariant>(
            "PackageVariant",
            &pv.metadata.namespace,
            &pv.metadata.name,
            status,
        )
    }

    fn delete_package_variant(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.may_write(|| format!("delete PackageVariant {namespace}/{name}"))?;
        let api = self.api::<PackageVariant>(namespace);
        let answer = self
            .handle
            .block_on(api.delete(name, &DeleteParams::default()))
            .map_err(|e| api_error("PackageVariant", namespace, name, "delete", e))?;
        let left = answer.left().and_then(|pv| remaining(pv, true));
        self.remember_variant(namespace, name, left.as_ref());
        Ok(())
    }

    fn list_package_variant_sets(&self, namespace: Option<&str>) -> StoreResult<Vec<CorePvs>> {
        let mut out = Vec::new();
        for pvs in self.caches.package_variant_sets.state() {
            let ns = pvs.namespace().unwrap_or_default();
            if namespace.is_none_or(|n| n == ns) {
                out.push((ns, pvs.name_any(), to_core(pvs.as_ref())?));
            }
        }
        Ok(sorted(out))
    }

    fn update_package_variant_set_status(&self, pvs: &CorePvs) -> StoreResult<()> {
        let status = serde_json::to_value(&pvs.status).map_err(|e| convert_error("status", e))?;
        self.apply_status::<PackageVariantSet>(
            "PackageVariantSet",
            &pvs.metadata.namespace,
            &pvs.metadata.name,
            status,
        )
    }

    fn list_repositories(&self, namespace: &str) -> StoreResult<Vec<CoreRepo>> {
        let mut out = Vec::new();
        for repo in self.caches.repositories.state() {
            let ns = repo.namespace().unwrap_or_default();
            if ns == namespace {
                out.push((ns, repo.name_any(), to_core(repo.as_ref())?));
            }
        }
        Ok(sorted(out))
    }

    fn list_objects(&self, namespace: &str) -> StoreResult<Vec<Value>> {
        Ok(self.caches.objects.list(namespace))
    }
}
