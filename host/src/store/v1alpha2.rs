//! The variant controllers over v1alpha2 PackageRevisions
//! (`--porch-api v1alpha2`): [`V2Revisions`] is a
//! [`PackageRevisionStore`] whose revisions are v1alpha2 objects and whose
//! content is Git.
//!
//! * A new draft is **declared**: `create` writes an object with a
//!   `spec.source` (cloneFrom, upgrade, copyFrom) and no content. The
//!   PackageRevision controller makes the content in Git; until its status
//!   says so ([`PackageRevisionStore::source_state`]) the variant waits.
//! * Mutations go the way a user's push goes: the files are written to the
//!   draft in Git and a render is requested on the object
//!   (`porch.kpt.dev/render-request`), which the controller answers.
//! * Lifecycle changes and deletions are made on the object's spec and
//!   metadata; the controller carries them out in Git.
//! * Revisions are read from the objects: lifecycle from the spec, number,
//!   locks and readiness from the status
//!   ([`pv_core::variant::v1alpha2::revision_view`]).
//! * Owner references, labels and annotations are kept in Git as well (as
//!   in v1alpha1 mode), so a fleet can move between the modes.
//!
//! Where the controller runs in this process (local mode) a
//! [`SourceController`] is woken after each write; in a cluster it watches
//! the objects itself.

use pv_core::api::package_revision::v1alpha2::PackageRevision as PrV2;
use pv_core::api::package_revision::{Lifecycle, RenderStatus};
use pv_core::api::{ObjectMeta, PackageRevision, PackageRevisionResources};
use pv_core::prc::RENDER_REQUEST_ANNOTATION;
use pv_core::variant::v1alpha2::{
    kptfile_update_strategy, object_for_draft, revision_view, source_state, variant_metadata,
    SourceState,
};
use serde_json::{json, Map, Value};

use super::{Files, NewRevision, PackageRevisionStore, PrFilter, StoreError, StoreResult};
use crate::prc::{CallError, CallResult};

/// Which API the variant controllers drive (`--porch-api`). `Default` is
/// Kubernetes mode's, `v1alpha1`; `local` defaults to `v1alpha2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
pub enum PorchApi {
    /// Porch's aggregated API: drafts are written with their content.
    #[default]
    #[value(name = "v1alpha1")]
    #[serde(rename = "v1alpha1")]
    V1alpha1,
    /// v1alpha2 PackageRevision objects: drafts are declared with a
    /// source and made by the PackageRevision controller.
    #[value(name = "v1alpha2")]
    #[serde(rename = "v1alpha2")]
    V1alpha2,
}

/// The v1alpha2 PackageRevision objects, as the API server serves them.
pub trait PrObjects: Send + Sync {
    /// The objects of `namespace` that pass `filter`
    /// ([`PrFilter::matches_v1alpha2`]), from an index where there is one.
    fn list(&self, namespace: &str, filter: &PrFilter) -> CallResult<Vec<Value>>;
    /// One object.
    fn get(&self, namespace: &str, name: &str) -> CallResult<Value>;
    /// Creates an object; the object as stored.
    fn create(&self, object: &Value) -> CallResult<Value>;
    /// JSON merge patch of an object.
    fn merge_patch(&self, namespace: &str, name: &str, patch: &Value) -> CallResult<()>;
    /// Deletes an object (marked while it has finalizers).
    fn delete(&self, namespace: &str, name: &str) -> CallResult<()>;
    /// The packages of the objects [`annotated_package`] names for `key`,
    /// in order, without duplicates.
    fn annotated_packages(&self, key: &str) -> CallResult<Vec<(String, String, String)>>;
}

/// The package (namespace, repository, package) of a v1alpha2 object that
/// carries the annotation `key`, is not published and not being deleted.
pub fn annotated_package(object: &Value, key: &str) -> Option<(String, String, String)> {
    let meta = &object["metadata"];
    if meta["annotations"].get(key).is_none() || !meta["deletionTimestamp"].is_null() {
        return None;
    }
    let lifecycle = object["spec"]["lifecycle"].as_str().unwrap_or_default();
    if lifecycle == "Published" || lifecycle == "DeletionProposed" {
        return None;
    }
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let ns = meta["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    Some((
        ns.to_string(),
        text(&object["spec"]["repository"]),
        text(&object["spec"]["packageName"]),
    ))
}

/// The PackageRevision controller, where it runs in this process: woken
/// after an object was written, it reconciles it until it settles.
pub trait SourceController: Send + Sync {
    /// Reconciles `namespace/name`.
    fn wake(&self, namespace: &str, name: &str) -> StoreResult<()>;

    /// Reconciles `namespace/name`, just declared by a variant whose push
    /// follows once the source is done: the controller may leave the
    /// render for that push.
    fn declared(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.wake(namespace, name)
    }

    /// Takes a push of `files` (made from content version `read`) to the
    /// draft `namespace/name`, whose render was just requested: holds
    /// them for the render, reconciles, and writes what the render left
    /// unwritten. `false`: not taken (the caller writes the files).
    fn push(
        &self,
        _namespace: &str,
        _name: &str,
        _files: &Files,
        _read: &str,
    ) -> StoreResult<bool> {
        Ok(false)
    }
}

/// Revisions as v1alpha2 objects over their content in Git.
pub struct V2Revisions<'a> {
    objects: &'a dyn PrObjects,
    content: &'a dyn PackageRevisionStore,
    controller: Option<&'a dyn SourceController>,
}

fn store_error(namespace: &str, name: &str) -> impl FnOnce(CallError) -> StoreError {
    let (namespace, name) = (namespace.to_string(), name.to_string());
    move |e| match e {
        CallError::NotFound(_) => StoreError::NotFound {
            kind: "PackageRevision",
            namespace,
            name,
        },
        CallError::AlreadyExists(m) => StoreError::Conflict(m),
        CallError::Failed(message) => StoreError::Data {
            context: format!("PackageRevision {namespace}/{name}"),
            message,
        },
    }
}

fn typed(v: Value) -> StoreResult<PrV2> {
    let ns = v["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let name = v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    serde_json::from_value(v).map_err(|e| StoreError::Data {
        context: format!("PackageRevision {ns}/{name} (porch.kpt.dev/v1alpha2)"),
        message: e.to_string(),
    })
}

/// A merge patch that makes `meta`'s labels, annotations and owner
/// references those of `want` (keys of `have` that `want` lacks are
/// removed; the controllers' own keys are left alone).
fn metadata_patch(have: &ObjectMeta, want: &ObjectMeta) -> Value {
    let mut patch = Map::new();
    let all = have;
    let variant = variant_metadata(have);
    let have = &variant;
    let want = variant_metadata(want);
    for (key, old, new) in [
        ("labels", &have.labels, &want.labels),
        ("annotations", &have.annotations, &want.annotations),
    ] {
        let mut m = Map::new();
        for k in old.keys().filter(|k| !new.contains_key(*k)) {
            m.insert(k.clone(), Value::Null);
        }
        for (k, v) in new.iter().filter(|(k, v)| old.get(*k) != Some(*v)) {
            m.insert(k.clone(), json!(v));
        }
        if !m.is_empty() {
            patch.insert(key.to_string(), Value::Object(m));
        }
    }
    if have.owner_references != want.owner_references {
        // The controllers' own references (the Repository's) stay.
        let mut refs: Vec<_> = all
            .owner_references
            .iter()
            .filter(|o| !variant.owner_references.contains(o))
            .cloned()
            .collect();
        refs.extend(want.owner_references.iter().cloned());
        patch.insert("ownerReferences".into(), json!(refs));
    }
    json!({ "metadata": patch })
}

impl<'a> V2Revisions<'a> {
    /// Revisions as `objects`, content in `content`; `controller` is woken
    /// after each write when it runs in this process.
    pub fn new(
        objects: &'a dyn PrObjects,
        content: &'a dyn PackageRevisionStore,
        controller: Option<&'a dyn SourceController>,
    ) -> Self {
        V2Revisions {
            objects,
            content,
            controller,
        }
    }

    fn object(&self, namespace: &str, name: &str) -> StoreResult<PrV2> {
        let obj = typed(
            self.objects
                .get(namespace, name)
                .map_err(store_error(namespace, name))?,
        )?;
        if obj.metadata.deletion_timestamp.is_some() {
            // Being deleted: gone for the variants.
            return Err(StoreError::NotFound {
                kind: "PackageRevision",
                namespace: namespace.to_string(),
                name: name.to_string(),
            });
        }
        Ok(obj)
    }

    fn wake(&self, namespace: &str, name: &str) -> StoreResult<()> {
        match self.controller {
            Some(c) => c.wake(namespace, name),
            None => Ok(()),
        }
    }

    fn patch(&self, namespace: &str, name: &str, patch: &Value) -> StoreResult<()> {
        self.objects
            .merge_patch(namespace, name, patch)
            .map_err(store_error(namespace, name))
    }

    /// The strategy of an upgrade: the one the downstream's Kptfile asks
    /// for (`upstream.updateStrategy`), if it can be read.
    fn upgrade_strategy(&self, new: &NewRevision) -> Option<String> {
        let current = new
            .revision
            .spec
            .tasks
            .first()?
            .upgrade
            .as_ref()?
            .local_package_revision_ref
            .name
            .clone();
        let files = self
            .content
            .resources(&new.revision.metadata.namespace, &current)
            .ok()?
            .spec
            .resources?;
        kptfile_update_strategy(files.get("Kptfile")?)
    }

    /// Records `obj`'s variant metadata with its content in Git, where it
    /// differs.
    fn record_metadata(&self, obj: &PrV2) -> StoreResult<()> {
        let (ns, name) = (&obj.metadata.namespace, &obj.metadata.name);
        let in_git = match self.content.get(ns, name) {
            Ok(pr) => pr,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
        };
        let want = variant_metadata(&obj.metadata);
        if variant_metadata(&in_git.metadata) != want {
            self.content.update_metadata(ns, name, &want)?;
        }
        Ok(())
    }
}

impl PackageRevisionStore for V2Revisions<'_> {
    fn annotated_packages(&self, key: &str) -> StoreResult<Vec<(String, String, String)>> {
        self.objects
            .annotated_packages(key)
            .map_err(store_error("*", "*"))
    }
    fn fingerprint(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Option<String>> {
        // The objects the list would answer from (spec, status, metadata),
        // and the content of each of their repositories in Git.
        let mut parts: Vec<Vec<u8>> = vec![format!("{filter:?}").into_bytes()];
        let mut repositories = std::collections::BTreeSet::new();
        for v in self
            .objects
            .list(namespace, filter)
            .map_err(store_error(namespace, "*"))?
        {
            let bytes = serde_json::to_vec(&v).map_err(|e| StoreError::Data {
                context: format!("PackageRevision in {namespace}"),
                message: e.to_string(),
            })?;
            let pr = revision_view(&typed(v)?);
            if filter.matches(&pr) {
                repositories.insert(pr.spec.repository);
                parts.push(bytes);
            }
        }
        for repository in repositories {
            let by_repository = PrFilter {
                repository: Some(repository),
                ..PrFilter::default()
            };
            match self.content.fingerprint(namespace, &by_repository)? {
                Some(f) => parts.push(f.into_bytes()),
                None => return Ok(None),
            }
        }
        Ok(Some(super::fingerprint_of(parts.iter().map(Vec::as_slice))))
    }

    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>> {
        let mut out = Vec::new();
        for v in self
            .objects
            .list(namespace, filter)
            .map_err(store_error(namespace, "*"))?
        {
            let obj = typed(v)?;
            if obj.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let pr = revision_view(&obj);
            if filter.matches(&pr) {
                out.push(pr);
            }
        }
        out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(out)
    }

    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision> {
        Ok(revision_view(&self.object(namespace, name)?))
    }

    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        self.object(namespace, name)?;
        self.content.resources(namespace, name)
    }

    fn update_resources(
        &self,
        namespace: &str,
        name: &str,
        files: &Files,
        read: &str,
    ) -> StoreResult<PackageRevision> {
        let obj = self.object(namespace, name)?;
        if let Some(c) = self.controller {
            // The controller is in this process: the push waits for the
            // render it asks for, and both are one write (which fails, as
            // the push would have, if the draft moved on since `read`).
            self.patch(
                namespace,
                name,
                &json!({"metadata": {"annotations": {RENDER_REQUEST_ANNOTATION: format!("{}-pushed", obj.metadata.resource_version)}}}),
            )?;
            self.record_metadata(&obj)?;
            if c.push(namespace, name, files, read)? {
                return self.get(namespace, name);
            }
        }
        let written = self
            .content
            .update_resources(namespace, name, files, read)?;
        // As porch-server does after storing a push for a v1alpha2
        // repository: ask the controller for a render with the new
        // content's version.
        let version = if written.metadata.resource_version.is_empty() {
            // The patch below changes the object's version, so the next
            // push asks again.
            format!("{}-pushed", obj.metadata.resource_version)
        } else {
            written.metadata.resource_version.clone()
        };
        self.patch(
            namespace,
            name,
            &json!({"metadata": {"annotations": {RENDER_REQUEST_ANNOTATION: version}}}),
        )?;
        self.record_metadata(&obj)?;
        self.wake(namespace, name)?;
        self.get(namespace, name)
    }

    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision> {
        let strategy = self.upgrade_strategy(&new);
        let obj = object_for_draft(&new.revision, strategy.as_deref()).map_err(|message| {
            StoreError::Invalid(format!(
                "PackageRevision {}/{}: {message}",
                new.revision.metadata.namespace, new.revision.spec.package_name
            ))
        })?;
        let (ns, name) = (obj.metadata.namespace.clone(), obj.metadata.name.clone());
        let value = serde_json::to_value(&obj).map_err(|e| StoreError::Data {
            context: format!("PackageRevision {ns}/{name}"),
            message: e.to_string(),
        })?;
        self.objects
            .create(&value)
            .map_err(store_error(&ns, &name))?;
        if let Some(c) = self.controller {
            c.declared(&ns, &name)?;
        }
        self.get(&ns, &name)
    }

    fn update_lifecycle(
        &self,
        namespace: &str,
        name: &str,
        lifecycle: Lifecycle,
    ) -> StoreResult<PackageRevision> {
        self.object(namespace, name)?;
        self.patch(namespace, name, &json!({"spec": {"lifecycle": lifecycle}}))?;
        self.wake(namespace, name)?;
        self.get(namespace, name)
    }

    fn update_metadata(
        &self,
        namespace: &str,
        name: &str,
        metadata: &ObjectMeta,
    ) -> StoreResult<PackageRevision> {
        let obj = self.object(namespace, name)?;
        let patch = metadata_patch(&obj.metadata, metadata);
        if patch["metadata"].as_object().is_some_and(|m| !m.is_empty()) {
            self.patch(namespace, name, &patch)?;
        }
        self.record_metadata(&self.object(namespace, name)?)?;
        self.get(namespace, name)
    }

    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.object(namespace, name)?;
        self.objects
            .delete(namespace, name)
            .map_err(store_error(namespace, name))?;
        self.wake(namespace, name)
    }

    fn render_status(&self, _namespace: &str, _name: &str) -> Option<RenderStatus> {
        None
    }

    fn declares_sources(&self) -> bool {
        true
    }

    fn source_state(&self, namespace: &str, name: &str) -> StoreResult<SourceState> {
        let obj = self.object(namespace, name)?;
        let state = source_state(&obj);
        if state == SourceState::Done {
            self.record_metadata(&obj)?;
        }
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_patches_remove_what_is_gone_and_leave_system_keys() {
        let mut have = ObjectMeta::default();
        have.labels.insert("team".into(), "a".into());
        have.labels.insert("old".into(), "x".into());
        have.labels
            .insert(pv_core::prc::LATEST_REVISION_LABEL.into(), "true".into());
        let mut want = ObjectMeta::default();
        want.labels.insert("team".into(), "b".into());
        want.annotations.insert("note".into(), "n".into());
        let p = metadata_patch(&have, &want);
        assert_eq!(
            p,
            json!({"metadata": {
                "labels": {"old": null, "team": "b"},
                "annotations": {"note": "n"},
            }})
        );
        assert_eq!(metadata_patch(&want, &want), json!({"metadata": {}}));
    }

    #[test]
    fn orphaning_keeps_the_repository_reference() {
        let reference = |kind: &str| pv_core::api::OwnerReference {
            api_version: "config.porch.kpt.dev/v1alpha1".into(),
            kind: kind.into(),
            name: kind.to_lowercase(),
            uid: format!("uid-{kind}"),
            ..Default::default()
        };
        let have = ObjectMeta {
            owner_references: vec![reference("Repository"), reference("PackageVariant")],
            ..Default::default()
        };
        let p = metadata_patch(&have, &ObjectMeta::default());
        let refs = p["metadata"]["ownerReferences"].as_array().expect("refs");
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0]["kind"], "Repository");
    }
}
