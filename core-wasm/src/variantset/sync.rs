//! `ensurePackageVariants` as a plan: given the rendered specs and the
//! existing children, which PackageVariants to create, update and delete.
//!
//! Children are matched by identity key `<pvs>-<repo>-<package>` computed
//! from the **existing spec**'s downstream (not from the object's name).
//! Desired targets with the same key: the last wins (as upstream).
//! Differences from upstream, all about writing less:
//!
//! * an existing child is updated only when its spec differs from the
//!   desired one (upstream updates every one on every reconcile); the others
//!   are listed as `unchanged`;
//! * existing PackageVariants controlled by another owner, or in another
//!   namespace, are never touched (`foreign`);
//! * of several existing children with the same desired key, the last is
//!   kept (as upstream) and the others are left alone (`duplicates`);
//!   children whose key is not desired are all deleted (upstream deletes
//!   only one per key and leaks the rest).

use std::collections::HashMap;

use super::naming::{identity_key, owner_reference, package_variant_name, FINALIZER, OWNER_LABEL};
use super::scope::in_namespace;
use super::types::PackageVariantSet;
use crate::api::package_variant::{API_VERSION, KIND};
use crate::api::{ObjectMeta, PackageVariant, PackageVariantSpec};

/// The writes that bring the children of a set to the desired state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncPlan {
    /// New PackageVariants, in target order.
    pub create: Vec<PackageVariant>,
    /// Existing PackageVariants with their spec replaced (metadata kept), in
    /// target order.
    pub update: Vec<PackageVariant>,
    /// Existing PackageVariants no target wants, in the order given.
    pub delete: Vec<PackageVariant>,
    /// Names of existing children already as desired.
    pub unchanged: Vec<String>,
    /// Names of existing PackageVariants controlled by another owner or in
    /// another namespace.
    pub foreign: Vec<String>,
    /// Names of existing children left alone because a later one has the
    /// same identity.
    pub duplicates: Vec<String>,
}

impl SyncPlan {
    /// Number of API writes.
    pub fn writes(&self) -> usize {
        self.create.len() + self.update.len() + self.delete.len()
    }

    /// Whether nothing needs writing.
    pub fn is_noop(&self) -> bool {
        self.writes() == 0
    }
}

/// The identity key of an existing child (from its spec's downstream).
pub fn existing_key(pvs_name: &str, pv: &PackageVariant) -> String {
    let (repo, package) = pv
        .spec
        .downstream
        .as_ref()
        .map_or(("", ""), |d| (d.repo.as_str(), d.package.as_str()));
    identity_key(pvs_name, repo, package)
}

/// The identity key of a desired spec.
pub fn spec_key(pvs_name: &str, spec: &PackageVariantSpec) -> String {
    let (repo, package) = spec
        .downstream
        .as_ref()
        .map_or(("", ""), |d| (d.repo.as_str(), d.package.as_str()));
    identity_key(pvs_name, repo, package)
}

/// A new child of `pvs` with `spec`: named from its key, in the set's
/// namespace, with the owner label, the finalizer and a controller owner
/// reference.
pub fn new_package_variant(
    pvs: &PackageVariantSet,
    key: &str,
    spec: PackageVariantSpec,
) -> PackageVariant {
    PackageVariant {
        api_version: API_VERSION.to_string(),
        kind: KIND.to_string(),
        metadata: ObjectMeta {
            name: package_variant_name(key),
            namespace: pvs.metadata.namespace.clone(),
            labels: [(OWNER_LABEL.to_string(), pvs.metadata.uid.clone())].into(),
            owner_references: vec![owner_reference(pvs)],
            finalizers: vec![FINALIZER.to_string()],
            ..ObjectMeta::default()
        },
        spec,
        status: Default::default(),
    }
}

/// The desired children of `pvs`, one per identity key (the last spec of a
/// key wins, at the position of the first), each with its key.
pub fn desired_children(
    pvs: &PackageVariantSet,
    specs: Vec<PackageVariantSpec>,
) -> Vec<(String, PackageVariant)> {
    let mut out: Vec<(String, PackageVariant)> = Vec::with_capacity(specs.len());
    let mut index: HashMap<String, usize> = HashMap::with_capacity(specs.len());
    for spec in specs {
        let key = spec_key(&pvs.metadata.name, &spec);
        match index.get(&key) {
            Some(&i) => out[i].1.spec = spec,
            None => {
                index.insert(key.clone(), out.len());
                let pv = new_package_variant(pvs, &key, spec);
                out.push((key, pv));
            }
        }
    }
    out
}

/// Whether `pv` is not the set's to manage: controlled by another owner, or
/// in another namespace.
pub(super) fn is_foreign(pvs: &PackageVariantSet, pv: &PackageVariant) -> bool {
    let other_owner = !pvs.metadata.uid.is_empty()
        && pv
            .metadata
            .owner_references
            .iter()
            .any(|o| o.controller == Some(true) && o.uid != pvs.metadata.uid);
    other_owner || !in_namespace(&pv.metadata.namespace, &pvs.metadata.namespace)
}

/// Plans the writes from `existing` (the PackageVariants listed with the
/// set's owner label) to `desired` (from [`desired_children`]).
pub fn plan(
    pvs: &PackageVariantSet,
    desired: &[(String, PackageVariant)],
    existing: &[PackageVariant],
) -> SyncPlan {
    let mut out = SyncPlan::default();
    let wanted: HashMap<&str, usize> = desired
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k.as_str(), i))
        .collect();
    let mut current: HashMap<String, usize> = HashMap::with_capacity(existing.len());
    for (i, pv) in existing.iter().enumerate() {
        if is_foreign(pvs, pv) {
            out.foreign.push(pv.metadata.name.clone());
            continue;
        }
        let key = existing_key(&pvs.metadata.name, pv);
        if !wanted.contains_key(key.as_str()) {
            out.delete.push(pv.clone());
            continue;
        }
        if let Some(prev) = current.insert(key, i) {
            out.duplicates.push(existing[prev].metadata.name.clone());
        }
    }
    for (key, want) in desired {
        match current.get(key) {
            Some(&i) => {
                let have = &existing[i];
                if have.spec == want.spec {
                    out.unchanged.push(have.metadata.name.clone());
                } else {
                    let mut updated = have.clone();
                    updated.spec = want.spec.clone();
                    out.update.push(updated);
                }
            }
            None => out.create.push(want.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Downstream, OwnerReference, Upstream};

    fn pvs() -> PackageVariantSet {
        let mut p = PackageVariantSet::default();
        p.metadata.name = "s".into();
        p.metadata.namespace = "ns".into();
        p.metadata.uid = "uid-1".into();
        p
    }

    fn spec(repo: &str, pkg: &str) -> PackageVariantSpec {
        PackageVariantSpec {
            upstream: Some(Upstream {
                repo: "up".into(),
                package: "p".into(),
                revision: 1,
                workspace_name: String::new(),
            }),
            downstream: Some(Downstream {
                repo: repo.into(),
                package: pkg.into(),
            }),
            ..PackageVariantSpec::default()
        }
    }

    #[test]
    fn new_children_carry_ownership() {
        let d = desired_children(&pvs(), vec![spec("r", "p")]);
        let pv = &d[0].1;
        assert_eq!(d[0].0, "s-r-p");
        assert_eq!(pv.metadata.name, "s-r-p");
        assert_eq!(pv.metadata.namespace, "ns");
        assert_eq!(pv.metadata.labels[OWNER_LABEL], "uid-1");
        assert_eq!(pv.metadata.finalizers, vec![FINALIZER.to_string()]);
        assert_eq!(pv.metadata.owner_references[0].controller, Some(true));
        assert_eq!(pv.api_version, "config.porch.kpt.dev/v1alpha1");
    }

    #[test]
    fn last_duplicate_target_wins() {
        let mut second = spec("r", "p");
        second.labels.insert("second".into(), "yes".into());
        let d = desired_children(&pvs(), vec![spec("r", "p"), spec("r", "q"), second]);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].1.spec.labels["second"], "yes");
    }

    #[test]
    fn create_update_delete_and_unchanged() {
        let p = pvs();
        let d = desired_children(&p, vec![spec("a", "1"), spec("b", "2"), spec("c", "3")]);
        let mut existing_b = d[1].1.clone();
        existing_b.metadata.name = "old-name-b".into();
        let mut existing_c = d[2].1.clone();
        existing_c.spec.labels.insert("stale".into(), "x".into());
        let gone = desired_children(&p, vec![spec("z", "9")]).remove(0).1;
        let plan = plan(&p, &d, &[gone.clone(), existing_b, existing_c]);
        assert_eq!(
            plan.create
                .iter()
                .map(|c| c.metadata.name.as_str())
                .collect::<Vec<_>>(),
            ["s-a-1"]
        );
        assert_eq!(plan.unchanged, vec!["old-name-b".to_string()]);
        assert_eq!(plan.update.len(), 1);
        assert!(plan.update[0].spec.labels.is_empty());
        assert_eq!(plan.delete, vec![gone]);
        assert_eq!(plan.writes(), 3);
    }

    #[test]
    fn replanning_the_result_writes_nothing() {
        let p = pvs();
        let d = desired_children(&p, vec![spec("a", "1"), spec("b", "2")]);
        let first = plan(&p, &d, &[]);
        let existing: Vec<PackageVariant> = first.create.clone();
        let second = plan(&p, &d, &existing);
        assert!(second.is_noop());
        assert_eq!(second.unchanged.len(), 2);
    }

    #[test]
    fn foreign_children_are_left_alone() {
        let p = pvs();
        let mut other = desired_children(&p, vec![spec("x", "1")]).remove(0).1;
        other.metadata.owner_references = vec![OwnerReference {
            uid: "someone-else".into(),
            controller: Some(true),
            ..OwnerReference::default()
        }];
        let plan = plan(&p, &[], &[other]);
        assert!(plan.is_noop());
        assert_eq!(plan.foreign, vec!["s-x-1".to_string()]);
    }

    #[test]
    fn duplicate_existing_children() {
        let p = pvs();
        let d = desired_children(&p, vec![spec("a", "1")]);
        let mut first = d[0].1.clone();
        first.metadata.name = "first".into();
        let mut second = d[0].1.clone();
        second.metadata.name = "second".into();
        let plan = plan(&p, &d, &[first, second]);
        assert_eq!(plan.duplicates, vec!["first".to_string()]);
        assert_eq!(plan.unchanged, vec!["second".to_string()]);
        assert!(plan.is_noop());
    }
}
