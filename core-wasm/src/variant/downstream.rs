//! Downstream discovery (`getDownstreamPRs`), adoption, and the
//! delete-or-orphan decision, as planned actions instead of client calls.
//!
//! Upstream performs these writes while it searches; here they are returned
//! as [`PrAction`]s, each carrying the object as it should be written, and the
//! caller carries them out in order.

use crate::api::meta::OwnerReference;
use crate::api::package_revision::{Lifecycle, PackageRevision};
use crate::api::package_variant::{self, AdoptionPolicy, DeletionPolicy, PackageVariant};
use crate::variant::validate::ValidPackageVariant;

/// Why a PackageRevision is written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateReason {
    /// Adopted: our owner reference added, `spec.labels`/`annotations` merged.
    Adopt,
    /// A published revision we no longer target: lifecycle set to
    /// `DeletionProposed`.
    ProposeDeletion,
    /// Our owner references removed.
    Orphan,
    /// The variant is being deleted: lifecycle set to `DeletionProposed`
    /// and our owner references removed, so that garbage collection leaves it
    /// for a human to approve the deletion.
    ProposeDeletionAndOrphan,
    /// A `DeletionProposed` revision that is our target again: lifecycle set
    /// back to `Published`.
    Unpropose,
}

/// A write to a PackageRevision decided by the planner.
#[derive(Debug, Clone, PartialEq)]
pub enum PrAction {
    /// `Update` the object (it is the whole object as it must be written).
    Update {
        /// Why.
        reason: UpdateReason,
        /// The PackageRevision after the change.
        object: PackageRevision,
    },
    /// `Delete` the object (a draft or proposed revision).
    Delete {
        /// The PackageRevision to delete, as listed.
        object: PackageRevision,
    },
}

impl PrAction {
    /// The object the action writes or deletes.
    pub fn object(&self) -> &PackageRevision {
        match self {
            PrAction::Update { object, .. } | PrAction::Delete { object } => object,
        }
    }

    /// Name of the PackageRevision acted on.
    pub fn name(&self) -> &str {
        &self.object().metadata.name
    }
}

/// Downstream discovery could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DownstreamError {
    /// Ownership is by UID; without one nothing can be recognised as ours and
    /// adoption would add useless owner references.
    #[error("PackageVariant {namespace:?}/{name:?}: metadata.uid must not be empty")]
    MissingUid {
        /// Namespace of the variant.
        namespace: String,
        /// Name of the variant.
        name: String,
    },
}

/// The revisions a variant manages, and the writes discovery decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Downstreams {
    /// Owned (or adopted) drafts and proposed revisions of the downstream
    /// package, in list order; if there are none, the owned published
    /// revision with the highest number; else empty.
    pub revisions: Vec<PackageRevision>,
    /// Adoptions, and deletions/orphanings of owned revisions that are not
    /// the downstream target, in list order.
    pub actions: Vec<PrAction>,
}

/// `constructOwnerReference`: `{apiVersion, kind, name, uid, controller:
/// true}` of the variant. Upstream copies the object's TypeMeta verbatim;
/// when it is empty (typed clients often drop it) the PackageVariant
/// apiVersion and kind are used, since an owner reference without them is
/// rejected by the API server.
pub fn owner_reference(pv: &PackageVariant) -> OwnerReference {
    let or_default = |s: &str, d: &str| if s.is_empty() { d } else { s }.to_string();
    OwnerReference {
        api_version: or_default(&pv.api_version, package_variant::API_VERSION),
        kind: or_default(&pv.kind, package_variant::KIND),
        name: pv.metadata.name.clone(),
        uid: pv.metadata.uid.clone(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

/// `adoptPackageRevision`: `pr` with the variant's owner reference appended
/// and `pv.spec.labels`/`annotations` merged into its metadata.
pub fn adopted(pr: &PackageRevision, pv: &PackageVariant) -> PackageRevision {
    let mut pr = pr.clone();
    pr.metadata.owner_references.push(owner_reference(pv));
    for (k, v) in &pv.spec.labels {
        pr.metadata.labels.insert(k.clone(), v.clone());
    }
    for (k, v) in &pv.spec.annotations {
        pr.metadata.annotations.insert(k.clone(), v.clone());
    }
    pr
}

/// `orphanPackageRevision`: `pr` without the owner references carrying
/// `uid`.
pub fn orphaned(pr: &PackageRevision, uid: &str) -> PackageRevision {
    let mut pr = pr.clone();
    pr.metadata.owner_references.retain(|o| o.uid != uid);
    pr
}

/// `deleteOrOrphan` for an owned revision that is no longer the target:
/// * `orphan`: remove our owner references;
/// * `delete`: `Draft`, `Proposed` or unset → delete; `Published` → propose
///   deletion (owner references kept); `DeletionProposed` → nothing.
pub fn delete_or_orphan(
    pr: &PackageRevision,
    pv_uid: &str,
    policy: DeletionPolicy,
) -> Option<PrAction> {
    match policy {
        DeletionPolicy::Orphan => Some(PrAction::Update {
            reason: UpdateReason::Orphan,
            object: orphaned(pr, pv_uid),
        }),
        DeletionPolicy::Delete => match pr.spec.lifecycle {
            Lifecycle::Unset | Lifecycle::Draft | Lifecycle::Proposed => {
                Some(PrAction::Delete { object: pr.clone() })
            }
            Lifecycle::Published => {
                let mut object = pr.clone();
                object.spec.lifecycle = Lifecycle::DeletionProposed;
                Some(PrAction::Update {
                    reason: UpdateReason::ProposeDeletion,
                    object,
                })
            }
            Lifecycle::DeletionProposed => None,
        },
    }
}

/// What to do with the owned revisions of a variant that is being deleted
/// (upstream's deletion branch of `Reconcile`): [`delete_or_orphan`], and a
/// revision that ends up `DeletionProposed` is also orphaned so that garbage
/// collection does not remove it before its deletion is approved. Upstream
/// issues two updates for a published revision (propose, then orphan); this
/// plans one update doing both.
///
/// `policy` is `None` for a policy value that is neither `delete` nor
/// `orphan` (upstream then only logs, and still orphans `DeletionProposed`
/// revisions).
pub fn deletion_actions(
    pv: &PackageVariant,
    policy: Option<DeletionPolicy>,
    prs: &[PackageRevision],
) -> Vec<PrAction> {
    let uid = pv.metadata.uid.as_str();
    prs.iter()
        .filter(|pr| pr.metadata.is_owned_by(uid))
        .filter_map(|pr| {
            let planned = policy.and_then(|p| delete_or_orphan(pr, uid, p));
            match planned {
                Some(PrAction::Update {
                    reason: UpdateReason::ProposeDeletion,
                    object,
                }) => Some(PrAction::Update {
                    reason: UpdateReason::ProposeDeletionAndOrphan,
                    object: orphaned(&object, uid),
                }),
                Some(action) => Some(action),
                None if pr.spec.lifecycle == Lifecycle::DeletionProposed => {
                    Some(PrAction::Update {
                        reason: UpdateReason::Orphan,
                        object: orphaned(pr, uid),
                    })
                }
                None => None,
            }
        })
        .collect()
}

/// `getDownstreamPRs`: finds the revisions the variant manages, planning
/// adoptions (policy `adoptExisting`, unowned revisions of the downstream
/// repo/package, whatever their lifecycle) and the deletion or orphaning of
/// owned revisions of any other repo/package. Returned revisions include
/// the adoption changes.
pub fn discover_downstreams(
    pv: &ValidPackageVariant<'_>,
    prs: &[PackageRevision],
) -> Result<Downstreams, DownstreamError> {
    let uid = pv.pv.metadata.uid.as_str();
    if uid.is_empty() {
        return Err(DownstreamError::MissingUid {
            namespace: pv.pv.metadata.namespace.clone(),
            name: pv.pv.metadata.name.clone(),
        });
    }
    let mut out = Downstreams::default();
    let mut latest: Option<PackageRevision> = None;
    let mut drafts = Vec::new();
    for pr in prs {
        let owned = pr.metadata.is_owned_by(uid);
        if !owned && pv.adoption != AdoptionPolicy::AdoptExisting {
            continue;
        }
        if pr.spec.repository != pv.downstream.repo || pr.spec.package_name != pv.downstream.package
        {
            if owned {
                out.actions.extend(delete_or_orphan(pr, uid, pv.deletion));
            }
            continue;
        }
        let pr = if owned {
            pr.clone()
        } else {
            let adopted = adopted(pr, pv.pv);
            out.actions.push(PrAction::Update {
                reason: UpdateReason::Adopt,
                object: adopted.clone(),
            });
            adopted
        };
        if pr.spec.lifecycle.is_published() {
            let newer = latest
                .as_ref()
                .is_none_or(|l| pr.spec.revision > l.spec.revision);
            // Upstream starts from -1, so a published revision numbered
            // below that is never chosen.
            if newer && pr.spec.revision > -1 {
                latest = Some(pr);
            }
        } else {
            drafts.push(pr);
        }
    }
    out.revisions = if !drafts.is_empty() {
        drafts
    } else {
        latest.into_iter().collect()
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::package_variant::{Downstream, Upstream};
    use crate::variant::validate::validate;

    fn pv(adoption: &str, deletion: &str) -> PackageVariant {
        let mut pv = PackageVariant {
            api_version: "config.porch.kpt.dev/v1alpha1".into(),
            kind: "PackageVariant".into(),
            ..Default::default()
        };
        pv.metadata.name = "my-pv".into();
        pv.metadata.namespace = "ns".into();
        pv.metadata.uid = "pv-uid".into();
        pv.spec.upstream = Some(Upstream {
            repo: "blueprints".into(),
            package: "foo".into(),
            ..Default::default()
        });
        pv.spec.downstream = Some(Downstream {
            repo: "deployments".into(),
            package: "bar".into(),
        });
        pv.spec.adoption_policy = adoption.into();
        pv.spec.deletion_policy = deletion.into();
        pv.spec.labels.insert("team".into(), "a".into());
        pv.spec.annotations.insert("note".into(), "x".into());
        pv
    }

    fn pr(name: &str, package: &str, lc: Lifecycle, rev: i64, owners: &[&str]) -> PackageRevision {
        let mut pr = PackageRevision::default();
        pr.metadata.name = name.into();
        pr.spec.repository = "deployments".into();
        pr.spec.package_name = package.into();
        pr.spec.lifecycle = lc;
        pr.spec.revision = rev;
        for uid in owners {
            pr.metadata.owner_references.push(OwnerReference {
                api_version: "config.porch.kpt.dev/v1alpha1".into(),
                kind: "PackageVariant".into(),
                name: "x".into(),
                uid: (*uid).into(),
                ..Default::default()
            });
        }
        pr
    }

    fn names(prs: &[PackageRevision]) -> Vec<&str> {
        prs.iter().map(|p| p.metadata.name.as_str()).collect()
    }

    #[test]
    fn drafts_win_over_published() {
        let pv = pv("", "");
        let v = validate(&pv).unwrap();
        let prs = vec![
            pr("p1", "bar", Lifecycle::Published, 1, &["pv-uid"]),
            pr("d1", "bar", Lifecycle::Draft, 0, &["pv-uid"]),
            pr("p2", "bar", Lifecycle::Proposed, 0, &["pv-uid"]),
            pr("d3", "bar", Lifecycle::Draft, 0, &["someone-else"]),
        ];
        let d = discover_downstreams(&v, &prs).unwrap();
        assert_eq!(names(&d.revisions), vec!["d1", "p2"]);
        assert!(d.actions.is_empty());
    }

    #[test]
    fn latest_owned_published_when_no_drafts() {
        let pv = pv("", "");
        let v = validate(&pv).unwrap();
        let prs = vec![
            pr("p2", "bar", Lifecycle::Published, 2, &["pv-uid"]),
            pr("p3", "bar", Lifecycle::DeletionProposed, 3, &["pv-uid"]),
            pr("p1", "bar", Lifecycle::Published, 1, &["pv-uid"]),
            pr("p9", "bar", Lifecycle::Published, 9, &["other"]),
        ];
        let d = discover_downstreams(&v, &prs).unwrap();
        assert_eq!(names(&d.revisions), vec!["p3"]);
        assert!(discover_downstreams(&v, &[]).unwrap().revisions.is_empty());
    }

    #[test]
    fn stale_targets_are_deleted_or_orphaned() {
        let prs = vec![
            pr("d", "old", Lifecycle::Draft, 0, &["pv-uid"]),
            pr("p", "old", Lifecycle::Published, 1, &["pv-uid", "other"]),
            pr("dp", "old", Lifecycle::DeletionProposed, 2, &["pv-uid"]),
            pr("x", "old", Lifecycle::Draft, 0, &["other"]),
        ];
        let delete = pv("", "delete");
        let d = discover_downstreams(&validate(&delete).unwrap(), &prs).unwrap();
        assert!(d.revisions.is_empty());
        assert_eq!(d.actions.len(), 2);
        assert!(
            matches!(&d.actions[0], PrAction::Delete { object } if object.metadata.name == "d")
        );
        match &d.actions[1] {
            PrAction::Update { reason, object } => {
                assert_eq!(*reason, UpdateReason::ProposeDeletion);
                assert_eq!(object.spec.lifecycle, Lifecycle::DeletionProposed);
                assert_eq!(object.metadata.owner_references.len(), 2);
            }
            other => panic!("{other:?}"),
        }

        let orphan = pv("", "orphan");
        let d = discover_downstreams(&validate(&orphan).unwrap(), &prs).unwrap();
        assert_eq!(d.actions.len(), 3);
        for a in &d.actions {
            match a {
                PrAction::Update { reason, object } => {
                    assert_eq!(*reason, UpdateReason::Orphan);
                    assert!(!object.metadata.is_owned_by("pv-uid"));
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(d.actions[1].object().metadata.is_owned_by("other"));
    }

    #[test]
    fn adopt_existing_takes_unowned_revisions_of_the_target_only() {
        let pv = pv("adoptExisting", "");
        let v = validate(&pv).unwrap();
        let mut unowned = pr("u", "bar", Lifecycle::Draft, 0, &[]);
        unowned.metadata.labels.insert("team".into(), "old".into());
        unowned.metadata.labels.insert("keep".into(), "me".into());
        let prs = vec![
            pr("p1", "bar", Lifecycle::Published, 1, &["pv-uid"]),
            unowned,
            pr("other-pkg", "foo", Lifecycle::Draft, 0, &[]),
            pr("theirs", "bar", Lifecycle::Published, 5, &["other"]),
        ];
        let d = discover_downstreams(&v, &prs).unwrap();
        assert_eq!(names(&d.revisions), vec!["u"]);
        let adoptions: Vec<&str> = d.actions.iter().map(PrAction::name).collect();
        // Owned by someone else still counts as "not ours": upstream adopts it too.
        assert_eq!(adoptions, vec!["u", "theirs"]);
        let u = &d.revisions[0];
        let owner = u.metadata.owner_references.last().unwrap();
        assert_eq!(owner.uid, "pv-uid");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.api_version, "config.porch.kpt.dev/v1alpha1");
        assert_eq!(u.metadata.labels["team"], "a");
        assert_eq!(u.metadata.labels["keep"], "me");
        assert_eq!(u.metadata.annotations["note"], "x");
        assert_eq!(d.actions[0].object(), u);
    }

    #[test]
    fn adopt_none_ignores_unowned() {
        let pv = pv("adoptNone", "");
        let v = validate(&pv).unwrap();
        let prs = vec![pr("u", "bar", Lifecycle::Draft, 0, &[])];
        let d = discover_downstreams(&v, &prs).unwrap();
        assert!(d.revisions.is_empty() && d.actions.is_empty());
    }

    #[test]
    fn missing_uid_is_an_error() {
        let mut pv = pv("", "");
        pv.metadata.uid.clear();
        let v = validate(&pv).unwrap();
        assert_eq!(
            discover_downstreams(&v, &[]).unwrap_err().to_string(),
            "PackageVariant \"ns\"/\"my-pv\": metadata.uid must not be empty"
        );
    }

    #[test]
    fn delete_or_orphan_by_policy_and_lifecycle() {
        let uid = "pv-uid";
        let owners = &["pv-uid", "other"];
        for lc in [Lifecycle::Unset, Lifecycle::Draft, Lifecycle::Proposed] {
            let p = pr("x", "bar", lc, 0, owners);
            assert_eq!(
                delete_or_orphan(&p, uid, DeletionPolicy::Delete),
                Some(PrAction::Delete { object: p.clone() })
            );
        }
        let p = pr("x", "bar", Lifecycle::Published, 1, owners);
        let Some(PrAction::Update { reason, object }) =
            delete_or_orphan(&p, uid, DeletionPolicy::Delete)
        else {
            panic!("expected an update");
        };
        assert_eq!(reason, UpdateReason::ProposeDeletion);
        assert_eq!(object.spec.lifecycle, Lifecycle::DeletionProposed);
        let p = pr("x", "bar", Lifecycle::DeletionProposed, 1, owners);
        assert_eq!(delete_or_orphan(&p, uid, DeletionPolicy::Delete), None);
        for lc in [
            Lifecycle::Draft,
            Lifecycle::Published,
            Lifecycle::DeletionProposed,
        ] {
            let p = pr("x", "bar", lc, 1, owners);
            let Some(PrAction::Update { reason, object }) =
                delete_or_orphan(&p, uid, DeletionPolicy::Orphan)
            else {
                panic!("expected an update");
            };
            assert_eq!(reason, UpdateReason::Orphan);
            assert_eq!(object.spec.lifecycle, lc);
            assert_eq!(object.metadata.owner_references.len(), 1);
            assert_eq!(object.metadata.owner_references[0].uid, "other");
        }
    }

    #[test]
    fn deleting_the_variant() {
        let prs = vec![
            pr("d", "bar", Lifecycle::Draft, 0, &["pv-uid"]),
            pr("p", "bar", Lifecycle::Published, 1, &["pv-uid"]),
            pr("dp", "bar", Lifecycle::DeletionProposed, 2, &["pv-uid"]),
            pr("theirs", "bar", Lifecycle::Draft, 0, &["other"]),
        ];
        let pv = pv("", "");
        let actions = deletion_actions(&pv, Some(DeletionPolicy::Delete), &prs);
        assert_eq!(actions.len(), 3);
        assert!(matches!(&actions[0], PrAction::Delete { object } if object.metadata.name == "d"));
        match &actions[1] {
            PrAction::Update { reason, object } => {
                assert_eq!(*reason, UpdateReason::ProposeDeletionAndOrphan);
                assert_eq!(object.spec.lifecycle, Lifecycle::DeletionProposed);
                assert!(object.metadata.owner_references.is_empty());
            }
            other => panic!("{other:?}"),
        }
        match &actions[2] {
            PrAction::Update { reason, object } => {
                assert_eq!(*reason, UpdateReason::Orphan);
                assert_eq!(object.metadata.name, "dp");
                assert!(object.metadata.owner_references.is_empty());
            }
            other => panic!("{other:?}"),
        }

        let actions = deletion_actions(&pv, Some(DeletionPolicy::Orphan), &prs);
        assert_eq!(actions.len(), 3);
        assert!(actions.iter().all(|a| matches!(
            a,
            PrAction::Update { reason: UpdateReason::Orphan, object }
                if object.metadata.owner_references.is_empty()
                    && object.spec.lifecycle == prs.iter().find(|p| p.metadata.name == object.metadata.name).unwrap().spec.lifecycle
        )));

        // An unknown policy: only DeletionProposed revisions are orphaned.
        let actions = deletion_actions(&pv, None, &prs);
        assert_eq!(actions.len(), 1);
        assert_eq!(actions[0].name(), "dp");
    }

    #[test]
    fn owner_reference_defaults_type_meta() {
        let mut pv = pv("", "");
        pv.api_version.clear();
        pv.kind.clear();
        let o = owner_reference(&pv);
        assert_eq!(o.api_version, "config.porch.kpt.dev/v1alpha1");
        assert_eq!(o.kind, "PackageVariant");
        assert_eq!(o.name, "my-pv");
        assert_eq!(o.uid, "pv-uid");
        assert_eq!(o.controller, Some(true));
        assert_eq!(o.block_owner_deletion, None);
    }
}
