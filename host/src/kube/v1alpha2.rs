//! The variant controllers on v1alpha2 PackageRevisions in Kubernetes mode
//! (`controller --porch-api v1alpha2`): [`KubeV2Objects`] serves the
//! objects to [`crate::store::v1alpha2::V2Revisions`] from the v1alpha2
//! watch cache, with this process's own writes read over it until the
//! watch brings them (so a draft just declared is not declared again),
//! and writes to the API server only while this replica leads. The content
//! is the Repositories' Git, opened as the PackageRevision controller
//! opens it ([`super::prc::repo_configs`]).

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::ResourceExt;
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::watch;

use super::prc::{api_err, api_resource, PrcContext};
use super::recent::RecentWrites;
use crate::prc::{CallError, CallResult};
use crate::store::v1alpha2::PrObjects;
use crate::store::PrFilter;

/// The v1alpha2 objects for one reconcile, on a blocking thread.
pub struct KubeV2Objects<'a> {
    ctx: &'a PrcContext,
    recent: &'a RecentWrites<DynamicObject>,
    handle: Handle,
    gate: watch::Receiver<bool>,
}

/// [`PrFilter::matches_v1alpha2`] on a cached object, without copying it.
fn dynamic_matches(obj: &DynamicObject, filter: &PrFilter) -> bool {
    let is =
        |v: &Value, want: &Option<String>| want.as_deref().is_none_or(|w| v.as_str() == Some(w));
    is(&obj.data["spec"]["repository"], &filter.repository)
        && is(&obj.data["spec"]["packageName"], &filter.package)
        && filter.owner_uid.as_deref().is_none_or(|uid| {
            obj.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.uid == uid)
        })
}

fn to_value(obj: &DynamicObject) -> CallResult<Value> {
    serde_json::to_value(obj).map_err(|e| CallError::Failed(e.to_string()))
}

impl<'a> KubeV2Objects<'a> {
    /// Objects from `ctx`'s cache and `recent`; requests through
    /// `handle`, written only while `gate` (the reconciled variant's
    /// shard, or the leader Lease) is open.
    pub fn new(
        ctx: &'a PrcContext,
        recent: &'a RecentWrites<DynamicObject>,
        handle: Handle,
        gate: watch::Receiver<bool>,
    ) -> Self {
        KubeV2Objects {
            ctx,
            recent,
            handle,
            gate,
        }
    }

    fn api(&self, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.ctx.client.clone(), ns, &api_resource())
    }

    fn cached(&self, ns: &str, name: &str) -> Option<std::sync::Arc<DynamicObject>> {
        self.ctx
            .revisions
            .get(&ObjectRef::new_with(name, api_resource()).within(ns))
    }

    fn leading(&self, what: &str) -> CallResult<()> {
        super::prc::leading(&self.gate, what)
    }

    fn written(&self, ns: &str, name: &str, object: Option<&DynamicObject>) {
        let cached = self.cached(ns, name);
        self.recent.record_over(ns, name, object, cached.as_deref());
    }
}

impl PrObjects for KubeV2Objects<'_> {
    fn annotated_packages(&self, key: &str) -> CallResult<Vec<(String, String, String)>> {
        let mut found = std::collections::BTreeSet::new();
        for obj in self.ctx.revisions.state() {
            if obj.annotations().contains_key(key) {
                found.extend(super::super::store::v1alpha2::annotated_package(
                    &to_value(&obj)?,
                    key,
                ));
            }
        }
        Ok(found.into_iter().collect())
    }
    fn list(&self, namespace: &str, filter: &PrFilter) -> CallResult<Vec<Value>> {
        // The index names the candidates (the whole cache is scanned only
        // for a list by neither package nor owner); only the objects that
        // pass are copied (and this process's writes, read over them).
        let index = &self.ctx.index;
        let candidates: Vec<String> = match (&filter.repository, &filter.package, &filter.owner_uid)
        {
            (Some(r), Some(p), _) => index.by_package(namespace, r, p),
            (_, _, Some(uid)) => index
                .by_owner(uid)
                .into_iter()
                .filter(|(ns, _)| ns == namespace)
                .map(|(_, name)| name)
                .collect(),
            _ => self
                .ctx
                .revisions
                .state()
                .iter()
                .filter(|o| o.namespace().as_deref() == Some(namespace))
                .map(|o| o.name_any())
                .collect(),
        };
        let mut names: Vec<String> = candidates
            .into_iter()
            .filter(|name| {
                self.cached(namespace, name)
                    .is_some_and(|o| dynamic_matches(&o, filter))
            })
            .collect();
        names.extend(self.recent.names(namespace));
        names.sort();
        names.dedup();
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let cached = self.cached(namespace, &name);
            if let Some(obj) = self.recent.read_over(namespace, &name, cached) {
                let value = to_value(&obj)?;
                if filter.matches_v1alpha2(&value) {
                    out.push(value);
                }
            }
        }
        Ok(out)
    }

    fn get(&self, namespace: &str, name: &str) -> CallResult<Value> {
        let cached = self.cached(namespace, name);
        match self.recent.read_over(namespace, name, cached) {
            Some(obj) => to_value(&obj),
            None => Err(CallError::NotFound(format!(
                "PackageRevision {namespace}/{name} not found"
            ))),
        }
    }

    fn create(&self, object: &Value) -> CallResult<Value> {
        let ns = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let what = format!("create PackageRevision {ns}/{name}");
        self.leading(&what)?;
        let obj: DynamicObject =
            serde_json::from_value(object.clone()).map_err(|e| CallError::Failed(e.to_string()))?;
        let created = self
            .handle
            .block_on(self.api(&ns).create(&PostParams::default(), &obj))
            .map_err(|e| api_err(&what, e))?;
        self.written(&ns, &name, Some(&created));
        to_value(&created)
    }

    fn merge_patch(&self, namespace: &str, name: &str, patch: &Value) -> CallResult<()> {
        let what = format!("patch PackageRevision {namespace}/{name}");
        self.leading(&what)?;
        let patched = self
            .handle
            .block_on(self.api(namespace).patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(patch),
            ))
            .map_err(|e| api_err(&what, e))?;
        // The answer may carry only what the server echoes: read the
        // object as written over the cache's copy.
        let mut object = self
            .get(namespace, name)
            .ok()
            .and_then(|v| serde_json::from_value::<DynamicObject>(v).ok())
            .unwrap_or_else(|| patched.clone());
        let mut merged = serde_json::to_value(&object).unwrap_or(Value::Null);
        crate::prc::local_api::merge_patch(&mut merged, patch);
        if let Ok(o) = serde_json::from_value::<DynamicObject>(merged) {
            object = o;
        }
        object.metadata.resource_version = patched.metadata.resource_version.clone();
        self.written(namespace, name, Some(&object));
        Ok(())
    }

    fn delete(&self, namespace: &str, name: &str) -> CallResult<()> {
        let what = format!("delete PackageRevision {namespace}/{name}");
        self.leading(&what)?;
        let answer = self
            .handle
            .block_on(self.api(namespace).delete(name, &DeleteParams::default()))
            .map_err(|e| api_err(&what, e))?;
        // Marked (finalizers left) or gone: a variant no longer sees it
        // either way.
        let marked = answer
            .left()
            .filter(|o| o.metadata.deletion_timestamp.is_some());
        self.written(namespace, name, marked.as_ref());
        Ok(())
    }
}
