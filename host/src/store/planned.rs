//! A dry run's store: every read goes to the stores underneath, every
//! write is recorded as a [`PlannedWrite`] and kept in an overlay instead,
//! so the rest of the reconcile reads what it would have written (the
//! draft it would create, the child variant a set would add) and nothing
//! reaches the stores underneath.
//!
//! `controller --dry-run` reconciles through it; what a write would
//! change in a package is given as a unified diff ([`package_diff`]), the
//! same as `local --dry-run` prints.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use pv_core::api::package_revision::{Lifecycle, RenderStatus};
use pv_core::api::{ObjectMeta, PackageRevision, PackageRevisionResources, PackageVariant};
use pv_core::variantset::{PackageVariantSet, Repository};
use serde::Serialize;
use serde_json::Value;

use super::rules::{check_transition, copy_metadata, resources_of};
use super::{
    revision_name, Files, NewRevision, ObjectStore, PackageRevisionStore, PrFilter, SourceState,
    StoreError, StoreResult,
};

/// One write a dry run would have made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedWrite {
    /// `Kind namespace/name`.
    pub object: String,
    /// What the write does (`create`, `update resources`, `lifecycle
    /// Proposed`, `delete`, …).
    pub action: String,
    /// More about it (the task of a new draft, the fields a variant's
    /// update changes); may be empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// A unified diff of what it changes: a package's files, or a
    /// variant's spec and metadata; empty when there is none to show.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub diff: String,
}

/// A revision as the overlay holds it: `None` once deleted.
struct Revision {
    pr: PackageRevision,
    /// Its files, when a write gave them (a declared v1alpha2 draft has
    /// none until its controller makes them).
    files: Option<Files>,
    /// Created by this dry run (no store underneath knows it).
    created: bool,
}

#[derive(Default)]
struct Overlay {
    revisions: BTreeMap<(String, String), Option<Revision>>,
    variants: BTreeMap<(String, String), Option<PackageVariant>>,
    sets: BTreeMap<(String, String), PackageVariantSet>,
    writes: Vec<PlannedWrite>,
}

/// Reads through to `revisions` and `objects`; writes into an overlay and
/// a list of [`PlannedWrite`]s.
pub struct Planned<'a> {
    revisions: &'a dyn PackageRevisionStore,
    objects: &'a dyn ObjectStore,
    overlay: Mutex<Overlay>,
}

fn key(ns: &str, name: &str) -> (String, String) {
    (ns.to_string(), name.to_string())
}

fn not_found(kind: &'static str, ns: &str, name: &str) -> StoreError {
    StoreError::NotFound {
        kind,
        namespace: ns.to_string(),
        name: name.to_string(),
    }
}

/// A unified diff of two packages, file by file, in path order; files
/// only in `new` are diffed against `/dev/null`, and so on.
pub fn package_diff(old: &Files, new: &Files, old_name: &str, new_name: &str) -> String {
    let mut paths: Vec<&String> = old.keys().chain(new.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut out = String::new();
    for path in paths {
        let a = old.get(path).map_or("", String::as_str);
        let b = new.get(path).map_or("", String::as_str);
        if a == b {
            continue;
        }
        let from = if old.contains_key(path) {
            format!("{old_name}/{path}")
        } else {
            "/dev/null".to_string()
        };
        let to = if new.contains_key(path) {
            format!("{new_name}/{path}")
        } else {
            "/dev/null".to_string()
        };
        out.push_str(&text_diff(a, b, &from, &to));
    }
    out
}

/// A unified diff of two texts, ending with a newline (empty when equal).
fn text_diff(a: &str, b: &str, from: &str, to: &str) -> String {
    if a == b {
        return String::new();
    }
    let mut out = similar::TextDiff::from_lines(a, b)
        .unified_diff()
        .context_radius(3)
        .header(from, to)
        .to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// A variant as its update would write it, for a diff: its spec and the
/// metadata a reconcile writes (finalizers, labels, annotations, owners).
fn variant_text(pv: &PackageVariant) -> String {
    let meta = &pv.metadata;
    let shown = serde_json::json!({
        "metadata": {
            "labels": meta.labels,
            "annotations": meta.annotations,
            "finalizers": meta.finalizers,
            "ownerReferences": meta.owner_references,
        },
        "spec": pv.spec,
    });
    pretty(&shown)
}

/// An object's Ready condition as a person reads it (empty without one).
fn ready_line(conditions: &[pv_core::api::Condition]) -> String {
    conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| format!("Ready={} {}: {}", c.status, c.reason, c.message))
        .unwrap_or_default()
}

/// JSON pretty-printed: stable key order, one field a line (what a diff
/// of two objects needs).
fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

impl<'a> Planned<'a> {
    /// A dry run over `revisions` and `objects`, which are only read.
    pub fn new(revisions: &'a dyn PackageRevisionStore, objects: &'a dyn ObjectStore) -> Self {
        Planned {
            revisions,
            objects,
            overlay: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Overlay> {
        self.overlay.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The writes planned so far, in order.
    pub fn writes(&self) -> Vec<PlannedWrite> {
        self.lock().writes.clone()
    }

    /// The variants this dry run created or changed (not those it
    /// deleted), in name order: what a set's reconcile hands on to the
    /// variant controller.
    pub fn variants_written(&self) -> Vec<PackageVariant> {
        self.lock().variants.values().flatten().cloned().collect()
    }

    fn record(&self, object: String, action: &str, detail: String, diff: String) {
        self.lock().writes.push(PlannedWrite {
            object,
            action: action.to_string(),
            detail,
            diff,
        });
    }

    /// The revision as the dry run has it (overlay, else underneath);
    /// `None` when it was deleted here.
    fn current(&self, ns: &str, name: &str) -> StoreResult<PackageRevision> {
        if let Some(r) = self.lock().revisions.get(&key(ns, name)) {
            return r
                .as_ref()
                .map(|r| r.pr.clone())
                .ok_or_else(|| not_found("PackageRevision", ns, name));
        }
        self.revisions.get(ns, name)
    }

    /// The files as the dry run has them.
    fn files(&self, ns: &str, name: &str) -> StoreResult<Files> {
        Ok(self.resources(ns, name)?.spec.resources.unwrap_or_default())
    }

    fn put(&self, pr: PackageRevision, files: Option<Files>) {
        let k = key(&pr.metadata.namespace, &pr.metadata.name);
        let mut o = self.lock();
        let (created, kept) = match o.revisions.get(&k) {
            Some(Some(r)) => (r.created, r.files.clone()),
            _ => (false, None),
        };
        o.revisions.insert(
            k,
            Some(Revision {
                pr,
                files: files.or(kept),
                created,
            }),
        );
    }

    /// A variant as the dry run has it.
    fn variant(&self, ns: &str, name: &str) -> StoreResult<PackageVariant> {
        self.list_package_variants(Some(ns))?
            .into_iter()
            .find(|p| p.metadata.name == name)
            .ok_or_else(|| not_found("PackageVariant", ns, name))
    }

    /// The latest published revision of `pr`'s package, with its files
    /// (what a new draft of it is shown against).
    fn latest_published(&self, pr: &PackageRevision) -> Option<(String, Files)> {
        let ns = &pr.metadata.namespace;
        let prs = self
            .list(
                ns,
                &PrFilter::package(&pr.spec.repository, &pr.spec.package_name),
            )
            .ok()?;
        let latest = prs
            .into_iter()
            .filter(|p| p.spec.lifecycle == Lifecycle::Published)
            .max_by_key(|p| p.spec.revision)?;
        let files = self.files(ns, &latest.metadata.name).ok()?;
        Some((latest.metadata.name, files))
    }
}

impl PackageRevisionStore for Planned<'_> {
    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>> {
        let mut by_name: BTreeMap<String, PackageRevision> = self
            .revisions
            .list(namespace, filter)?
            .into_iter()
            .map(|pr| (pr.metadata.name.clone(), pr))
            .collect();
        for ((ns, name), r) in &self.lock().revisions {
            if ns != namespace {
                continue;
            }
            match r {
                Some(r) if filter.matches(&r.pr) => {
                    by_name.insert(name.clone(), r.pr.clone());
                }
                _ => {
                    by_name.remove(name);
                }
            }
        }
        Ok(by_name.into_values().collect())
    }

    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision> {
        self.current(namespace, name)
    }

    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        let held = match self.lock().revisions.get(&key(namespace, name)) {
            Some(None) => return Err(not_found("PackageRevision", namespace, name)),
            Some(Some(r)) => Some((r.pr.clone(), r.files.clone(), r.created)),
            None => None,
        };
        match held {
            Some((pr, Some(files), _)) => Ok(resources_of(&pr, files)),
            Some((pr, None, true)) => Ok(resources_of(&pr, Files::new())),
            _ => self.revisions.resources(namespace, name),
        }
    }

    fn update_resources(
        &self,
        namespace: &str,
        name: &str,
        files: &Files,
        _read: &str,
    ) -> StoreResult<PackageRevision> {
        let pr = self.current(namespace, name)?;
        if pr.spec.lifecycle != Lifecycle::Draft {
            return Err(StoreError::Invalid(format!(
                "{name} is {:?}: only a draft's resources can be updated",
                pr.spec.lifecycle
            )));
        }
        let before = self.files(namespace, name)?;
        self.record(
            format!("PackageRevision {namespace}/{name}"),
            "update resources",
            String::new(),
            package_diff(&before, files, name, name),
        );
        self.put(pr.clone(), Some(files.clone()));
        Ok(pr)
    }

    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision> {
        let mut pr = new.revision;
        let ns = pr.metadata.namespace.clone();
        let name = revision_name(
            &pr.spec.repository,
            &pr.spec.package_name,
            &pr.spec.workspace_name,
        );
        let clash = self
            .list(
                &ns,
                &PrFilter::package(&pr.spec.repository, &pr.spec.package_name),
            )?
            .iter()
            .any(|p| p.spec.workspace_name == pr.spec.workspace_name);
        if clash {
            return Err(StoreError::Conflict(format!("{name} already exists")));
        }
        pr.metadata.name = name.clone();
        pr.spec.lifecycle = Lifecycle::Draft;
        pr.spec.revision = 0;
        pr.status.upstream_lock = new.upstream_lock;
        let task = pr
            .spec
            .tasks
            .first()
            .map(|t| t.type_.clone())
            .unwrap_or_default();
        let (detail, diff, files) = if self.revisions.declares_sources() {
            (
                format!(
                    "{task} draft, declared: its content is made by the PackageRevision controller"
                ),
                String::new(),
                None,
            )
        } else {
            let (base_name, base) = self
                .latest_published(&pr)
                .unwrap_or_else(|| ("/dev/null".to_string(), Files::new()));
            let detail = if base.is_empty() {
                format!("{task} draft")
            } else {
                format!("{task} draft (shown against {base_name})")
            };
            (
                detail,
                package_diff(&base, &new.files, &base_name, &name),
                Some(new.files),
            )
        };
        self.record(
            format!("PackageRevision {ns}/{name}"),
            "create",
            detail,
            diff,
        );
        self.lock().revisions.insert(
            key(&ns, &name),
            Some(Revision {
                pr: pr.clone(),
                files,
                created: true,
            }),
        );
        Ok(pr)
    }

    fn update_lifecycle(
        &self,
        namespace: &str,
        name: &str,
        lifecycle: Lifecycle,
    ) -> StoreResult<PackageRevision> {
        let mut pr = self.current(namespace, name)?;
        check_transition(pr.spec.lifecycle, lifecycle).map_err(StoreError::Invalid)?;
        if lifecycle == Lifecycle::Published && !pr.spec.lifecycle.is_published() {
            let next = self
                .list(
                    namespace,
                    &PrFilter::package(&pr.spec.repository, &pr.spec.package_name),
                )?
                .iter()
                .filter(|p| p.spec.lifecycle.is_published())
                .map(|p| p.spec.revision)
                .max()
                .unwrap_or(0)
                + 1;
            pr.spec.revision = next;
        }
        let from = pr.spec.lifecycle;
        pr.spec.lifecycle = lifecycle;
        self.record(
            format!("PackageRevision {namespace}/{name}"),
            &format!("lifecycle {lifecycle:?}"),
            format!("from {from:?}"),
            String::new(),
        );
        self.put(pr.clone(), None);
        Ok(pr)
    }

    fn update_metadata(
        &self,
        namespace: &str,
        name: &str,
        metadata: &ObjectMeta,
    ) -> StoreResult<PackageRevision> {
        let mut pr = self.current(namespace, name)?;
        let before = pretty(&serde_json::json!({
            "labels": pr.metadata.labels,
            "annotations": pr.metadata.annotations,
            "ownerReferences": pr.metadata.owner_references,
        }));
        copy_metadata(&mut pr.metadata, metadata);
        let after = pretty(&serde_json::json!({
            "labels": pr.metadata.labels,
            "annotations": pr.metadata.annotations,
            "ownerReferences": pr.metadata.owner_references,
        }));
        self.record(
            format!("PackageRevision {namespace}/{name}"),
            "update metadata",
            String::new(),
            text_diff(&before, &after, name, name),
        );
        self.put(pr.clone(), None);
        Ok(pr)
    }

    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        let pr = self.current(namespace, name)?;
        if pr.spec.lifecycle == Lifecycle::Published {
            return Err(StoreError::Invalid(format!(
                "{name} is published: propose its deletion first"
            )));
        }
        self.record(
            format!("PackageRevision {namespace}/{name}"),
            "delete",
            format!("{:?}", pr.spec.lifecycle),
            String::new(),
        );
        self.lock().revisions.insert(key(namespace, name), None);
        Ok(())
    }

    fn render_status(&self, namespace: &str, name: &str) -> Option<RenderStatus> {
        if self.lock().revisions.contains_key(&key(namespace, name)) {
            return None;
        }
        self.revisions.render_status(namespace, name)
    }

    fn declares_sources(&self) -> bool {
        self.revisions.declares_sources()
    }

    fn source_state(&self, namespace: &str, name: &str) -> StoreResult<SourceState> {
        let created = matches!(
            self.lock().revisions.get(&key(namespace, name)),
            Some(Some(Revision { created: true, .. }))
        );
        if created && self.declares_sources() {
            return Ok(SourceState::Pending(
                "a dry run declares the draft; the PackageRevision controller would make its content".to_string(),
            ));
        }
        self.revisions.source_state(namespace, name)
    }

    fn annotated_packages(&self, key: &str) -> StoreResult<Vec<(String, String, String)>> {
        self.revisions.annotated_packages(key)
    }

    fn fingerprint(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Option<String>> {
        if self.lock().revisions.is_empty() {
            self.revisions.fingerprint(namespace, filter)
        } else {
            Ok(None)
        }
    }
}

impl ObjectStore for Planned<'_> {
    fn list_package_variants(&self, namespace: Option<&str>) -> StoreResult<Vec<PackageVariant>> {
        let mut by_key: BTreeMap<(String, String), PackageVariant> = self
            .objects
            .list_package_variants(namespace)?
            .into_iter()
            .map(|pv| (key(&pv.metadata.namespace, &pv.metadata.name), pv))
            .collect();
        for (k, pv) in &self.lock().variants {
            if namespace.is_some_and(|ns| ns != k.0) {
                continue;
            }
            match pv {
                Some(pv) => {
                    by_key.insert(k.clone(), pv.clone());
                }
                None => {
                    by_key.remove(k);
                }
            }
        }
        Ok(by_key.into_values().collect())
    }

    fn create_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        let (ns, name) = (&pv.metadata.namespace, &pv.metadata.name);
        let exists = self
            .list_package_variants(Some(ns))?
            .iter()
            .any(|p| &p.metadata.name == name);
        if exists {
            return Err(StoreError::Conflict(format!(
                "PackageVariant {ns}/{name} already exists"
            )));
        }
        let mut created = pv.clone();
        if created.metadata.uid.is_empty() {
            // The API server would assign one; the variant's own dry-run
            // reconcile owns its drafts by it.
            created.metadata.uid = super::stable_uid("PackageVariant", ns, name);
        }
        self.record(
            format!("PackageVariant {ns}/{name}"),
            "create",
            String::new(),
            text_diff("", &variant_text(&created), "/dev/null", name),
        );
        self.lock()
            .variants
            .insert(key(ns, name), Some(created.clone()));
        Ok(created)
    }

    fn update_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        let (ns, name) = (&pv.metadata.namespace, &pv.metadata.name);
        let before = self.variant(ns, name)?;
        let mut updated = pv.clone();
        updated.status = before.status.clone();
        self.record(
            format!("PackageVariant {ns}/{name}"),
            "update",
            String::new(),
            text_diff(&variant_text(&before), &variant_text(&updated), name, name),
        );
        self.lock()
            .variants
            .insert(key(ns, name), Some(updated.clone()));
        Ok(updated)
    }

    fn update_package_variant_status(&self, pv: &PackageVariant) -> StoreResult<()> {
        let (ns, name) = (&pv.metadata.namespace, &pv.metadata.name);
        let mut current = self.variant(ns, name)?;
        current.status = pv.status.clone();
        self.record(
            format!("PackageVariant {ns}/{name}"),
            "update status",
            ready_line(&current.status.conditions),
            String::new(),
        );
        self.lock().variants.insert(key(ns, name), Some(current));
        Ok(())
    }

    fn delete_package_variant(&self, namespace: &str, name: &str) -> StoreResult<()> {
        let current = self.variant(namespace, name)?;
        let finalizers = !current.metadata.finalizers.is_empty();
        self.record(
            format!("PackageVariant {namespace}/{name}"),
            "delete",
            if finalizers {
                "marked for deletion; its finalizer runs its deletion policy".to_string()
            } else {
                String::new()
            },
            String::new(),
        );
        let kept = finalizers.then(|| {
            let mut pv = current;
            pv.metadata.deletion_timestamp = Some(crate::clock::now());
            pv
        });
        self.lock().variants.insert(key(namespace, name), kept);
        Ok(())
    }

    fn list_package_variant_sets(
        &self,
        namespace: Option<&str>,
    ) -> StoreResult<Vec<PackageVariantSet>> {
        let mut sets = self.objects.list_package_variant_sets(namespace)?;
        let o = self.lock();
        for s in &mut sets {
            if let Some(held) = o.sets.get(&key(&s.metadata.namespace, &s.metadata.name)) {
                *s = held.clone();
            }
        }
        Ok(sets)
    }

    fn update_package_variant_set_status(&self, pvs: &PackageVariantSet) -> StoreResult<()> {
        let (ns, name) = (&pvs.metadata.namespace, &pvs.metadata.name);
        self.record(
            format!("PackageVariantSet {ns}/{name}"),
            "update status",
            ready_line(&pvs.status.conditions),
            String::new(),
        );
        self.lock().sets.insert(key(ns, name), pvs.clone());
        Ok(())
    }

    fn list_repositories(&self, namespace: &str) -> StoreResult<Vec<Repository>> {
        self.objects.list_repositories(namespace)
    }

    fn list_objects(&self, namespace: &str) -> StoreResult<Vec<Value>> {
        self.objects.list_objects(namespace)
    }
}
