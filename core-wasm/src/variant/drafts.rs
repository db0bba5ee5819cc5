//! The drafts a PackageVariant creates, as values: a clone of the upstream
//! (no downstream yet), an upgrade of a published downstream to a new
//! upstream revision, and an edit copy of a published downstream to mutate.
//!
//! They are built exactly as upstream builds them; `metadata.name` is left
//! empty for the server to generate.

use crate::api::package_revision::{
    self, CloneTask, EditTask, Lifecycle, NameRef, PackageRevision, Task, UpgradeTask,
    UpstreamPackage,
};
use crate::api::package_variant::PackageVariant;
use crate::api::ObjectMeta;
use crate::variant::downstream::owner_reference;
use crate::variant::naming::new_workspace_name;
use crate::variant::upstream::{lock_ref_revision, published_upstream_by_revision, UpstreamError};
use crate::variant::validate::ValidPackageVariant;

/// Merge strategy of the upgrade drafts (`porchapi.ResourceMerge`).
pub const RESOURCE_MERGE: &str = "resource-merge";

/// Which kind of draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftKind {
    /// `clone` task from the upstream: the first downstream revision.
    Clone,
    /// `upgrade` task: a published downstream moved to a new upstream.
    Upgrade,
    /// `edit` task: a copy of a published downstream, to be mutated.
    Edit,
}

/// A draft could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DraftError {
    /// The variant has no `spec.upstream` to look the old upstream up in.
    #[error("PackageVariant {namespace:?}/{name:?}: spec.upstream is missing")]
    MissingUpstream {
        /// Namespace of the variant.
        namespace: String,
        /// Name of the variant.
        name: String,
    },
    /// The downstream does not say which upstream revision it came from.
    #[error(
        "PackageRevision {namespace:?}/{name:?}: status.upstreamLock.git.ref is empty, so its old upstream is unknown"
    )]
    MissingUpstreamLock {
        /// Namespace of the downstream.
        namespace: String,
        /// Name of the downstream.
        name: String,
    },
    /// The old upstream (from the downstream's lock) was not found.
    #[error(transparent)]
    OldUpstream(#[from] UpstreamError),
}

fn new_draft(namespace: &str, pv: &PackageVariant) -> PackageRevision {
    PackageRevision {
        api_version: package_revision::API_VERSION.to_string(),
        kind: "PackageRevision".to_string(),
        metadata: ObjectMeta {
            namespace: namespace.to_string(),
            owner_references: vec![owner_reference(pv)],
            labels: pv.spec.labels.clone(),
            annotations: pv.spec.annotations.clone(),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// `createDraftTemplate`: a copy of `source.spec` with revision 0, lifecycle
/// `Draft`, a new workspace name, owned by the variant and labelled with
/// `pv.spec.labels`/`annotations` (not the source's).
fn draft_from(
    source: &PackageRevision,
    pv: &PackageVariant,
    prs: &[PackageRevision],
) -> PackageRevision {
    let mut draft = new_draft(&source.metadata.namespace, pv);
    draft.spec = source.spec.clone();
    draft.spec.revision = 0;
    draft.spec.workspace_name =
        new_workspace_name(prs, &source.spec.package_name, &source.spec.repository);
    draft.spec.lifecycle = Lifecycle::Draft;
    draft
}

/// The clone draft created when the variant has no downstream yet: in the
/// variant's namespace, `spec.downstream` repo/package, a new
/// `packagevariant-N` workspace, one `clone` task from `upstream`
/// (`clone.upstreamRef.upstreamRef.name`), lifecycle unset (the server
/// makes it a Draft).
pub fn clone_draft(
    pv: &ValidPackageVariant<'_>,
    upstream: &PackageRevision,
    prs: &[PackageRevision],
) -> PackageRevision {
    let mut draft = new_draft(&pv.pv.metadata.namespace, pv.pv);
    draft.spec.package_name = pv.downstream.package.clone();
    draft.spec.repository = pv.downstream.repo.clone();
    draft.spec.workspace_name =
        new_workspace_name(prs, &pv.downstream.package, &pv.downstream.repo);
    draft.spec.tasks = vec![Task {
        type_: "clone".to_string(),
        clone: Some(CloneTask {
            upstream_ref: UpstreamPackage {
                upstream_ref: Some(NameRef {
                    name: upstream.metadata.name.clone(),
                }),
                ..Default::default()
            },
        }),
        ..Default::default()
    }];
    draft
}

/// `createUpgradeDraft`: a draft of the published downstream `source` with
/// one `upgrade` task from its old upstream (the published revision of
/// `pv.spec.upstream`'s repo/package numbered as `source`'s lock ref says) to
/// `new_upstream`, merging with strategy `resource-merge`.
pub fn upgrade_draft(
    source: &PackageRevision,
    pv: &PackageVariant,
    new_upstream: &PackageRevision,
    prs: &[PackageRevision],
) -> Result<PackageRevision, DraftError> {
    let upstream = pv
        .spec
        .upstream
        .as_ref()
        .ok_or_else(|| DraftError::MissingUpstream {
            namespace: pv.metadata.namespace.clone(),
            name: pv.metadata.name.clone(),
        })?;
    let lock_ref = source
        .status
        .upstream_lock
        .as_ref()
        .and_then(|l| l.git.as_ref())
        .map(|g| g.r#ref.as_str())
        .filter(|r| !r.is_empty())
        .ok_or_else(|| DraftError::MissingUpstreamLock {
            namespace: source.metadata.namespace.clone(),
            name: source.metadata.name.clone(),
        })?;
    let old_upstream = published_upstream_by_revision(upstream, lock_ref_revision(lock_ref), prs)?;
    let mut draft = draft_from(source, pv, prs);
    draft.spec.tasks = vec![Task {
        type_: "upgrade".to_string(),
        upgrade: Some(UpgradeTask {
            old_upstream_ref: NameRef {
                name: old_upstream.metadata.name.clone(),
            },
            new_upstream_ref: NameRef {
                name: new_upstream.metadata.name.clone(),
            },
            local_package_revision_ref: NameRef {
                name: source.metadata.name.clone(),
            },
            strategy: RESOURCE_MERGE.to_string(),
        }),
        ..Default::default()
    }];
    Ok(draft)
}

/// `createEditDraft`: a draft of the published downstream `source` with one
/// `edit` task copying it.
pub fn edit_draft(
    source: &PackageRevision,
    pv: &PackageVariant,
    prs: &[PackageRevision],
) -> PackageRevision {
    let mut draft = draft_from(source, pv, prs);
    draft.spec.tasks = vec![Task {
        type_: "edit".to_string(),
        edit: Some(EditTask {
            source_ref: NameRef {
                name: source.metadata.name.clone(),
            },
        }),
        ..Default::default()
    }];
    draft
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::package_revision::{GitLock, Locator, ReadinessGate};
    use crate::api::package_variant::{Downstream, Upstream};
    use crate::variant::validate::validate;

    fn pv() -> PackageVariant {
        let mut pv = PackageVariant::default();
        pv.metadata.name = "my-pv".into();
        pv.metadata.namespace = "ns".into();
        pv.metadata.uid = "uid".into();
        pv.metadata
            .labels
            .insert("meta".into(), "not-copied".into());
        pv.spec.upstream = Some(Upstream {
            repo: "up".into(),
            package: "pkg".into(),
            ..Default::default()
        });
        pv.spec.downstream = Some(Downstream {
            repo: "down".into(),
            package: "dpkg".into(),
        });
        pv.spec.labels.insert("l".into(), "1".into());
        pv.spec.annotations.insert("a".into(), "2".into());
        pv
    }

    fn rev(name: &str, repo: &str, pkg: &str, ws: &str, n: i64, lc: Lifecycle) -> PackageRevision {
        let mut pr = PackageRevision::default();
        pr.metadata.name = name.into();
        pr.metadata.namespace = "ns".into();
        pr.spec.repository = repo.into();
        pr.spec.package_name = pkg.into();
        pr.spec.workspace_name = ws.into();
        pr.spec.revision = n;
        pr.spec.lifecycle = lc;
        pr
    }

    #[test]
    fn clone_template() {
        let pv = pv();
        let v = validate(&pv).unwrap();
        let up = rev("up.pkg.v1", "up", "pkg", "v1", 1, Lifecycle::Published);
        let prs = vec![
            up.clone(),
            rev("x", "down", "dpkg", "packagevariant-4", 0, Lifecycle::Draft),
        ];
        let d = clone_draft(&v, &up, &prs);
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiVersion": "porch.kpt.dev/v1alpha1",
                "kind": "PackageRevision",
                "metadata": {
                    "namespace": "ns",
                    "labels": {"l": "1"},
                    "annotations": {"a": "2"},
                    "ownerReferences": [{
                        "apiVersion": "config.porch.kpt.dev/v1alpha1",
                        "kind": "PackageVariant",
                        "name": "my-pv",
                        "uid": "uid",
                        "controller": true
                    }]
                },
                "spec": {
                    "packageName": "dpkg",
                    "repository": "down",
                    "workspaceName": "packagevariant-5",
                    "tasks": [{"type": "clone", "clone": {"upstreamRef": {"upstreamRef": {"name": "up.pkg.v1"}}}}]
                },
                "status": {}
            })
        );
    }

    #[test]
    fn upgrade_and_edit_templates_copy_the_source_spec() {
        let pv = pv();
        let mut source = rev(
            "down.dpkg.packagevariant-1",
            "down",
            "dpkg",
            "packagevariant-1",
            1,
            Lifecycle::Published,
        );
        source.spec.readiness_gates = vec![ReadinessGate {
            condition_type: "gate".into(),
        }];
        source.status.upstream_lock = Some(Locator {
            type_: "git".into(),
            git: Some(GitLock {
                r#ref: "pkg/v1".into(),
                ..Default::default()
            }),
        });
        let v1 = rev("up.pkg.v1", "up", "pkg", "v1", 1, Lifecycle::Published);
        let v2 = rev("up.pkg.v2", "up", "pkg", "v2", 2, Lifecycle::Published);
        let prs = vec![source.clone(), v1, v2.clone()];

        let d = upgrade_draft(&source, &pv, &v2, &prs).unwrap();
        assert_eq!(d.spec.lifecycle, Lifecycle::Draft);
        assert_eq!(d.spec.revision, 0);
        assert_eq!(d.spec.workspace_name, "packagevariant-2");
        assert_eq!(d.spec.readiness_gates, source.spec.readiness_gates);
        assert_eq!(d.metadata.labels, pv.spec.labels);
        assert_eq!(d.metadata.annotations, pv.spec.annotations);
        assert!(d.metadata.name.is_empty());
        let u = d.spec.tasks[0].upgrade.as_ref().unwrap();
        assert_eq!(d.spec.tasks.len(), 1);
        assert_eq!(d.spec.tasks[0].type_, "upgrade");
        assert_eq!(u.old_upstream_ref.name, "up.pkg.v1");
        assert_eq!(u.new_upstream_ref.name, "up.pkg.v2");
        assert_eq!(
            u.local_package_revision_ref.name,
            "down.dpkg.packagevariant-1"
        );
        assert_eq!(u.strategy, "resource-merge");

        let e = edit_draft(&source, &pv, &prs);
        assert_eq!(e.spec.tasks.len(), 1);
        assert_eq!(e.spec.tasks[0].type_, "edit");
        assert_eq!(
            e.spec.tasks[0].edit.as_ref().unwrap().source_ref.name,
            "down.dpkg.packagevariant-1"
        );
        assert_eq!(e.spec.workspace_name, "packagevariant-2");
        assert_eq!(e.spec.lifecycle, Lifecycle::Draft);
    }

    #[test]
    fn upgrade_errors_name_the_object_and_field() {
        let mut pv = pv();
        let source = rev(
            "src",
            "down",
            "dpkg",
            "packagevariant-1",
            1,
            Lifecycle::Published,
        );
        let v2 = rev("up.pkg.v2", "up", "pkg", "v2", 2, Lifecycle::Published);
        assert_eq!(
            upgrade_draft(&source, &pv, &v2, &[]).unwrap_err().to_string(),
            "PackageRevision \"ns\"/\"src\": status.upstreamLock.git.ref is empty, so its old upstream is unknown"
        );
        let mut locked = source.clone();
        locked.status.upstream_lock = Some(Locator {
            type_: String::new(),
            git: Some(GitLock {
                r#ref: "pkg/v1".into(),
                ..Default::default()
            }),
        });
        assert_eq!(
            upgrade_draft(&locked, &pv, &v2, &[])
                .unwrap_err()
                .to_string(),
            "could not find upstream package revision 'pkg/1' in repo 'up'"
        );
        locked
            .status
            .upstream_lock
            .as_mut()
            .unwrap()
            .git
            .as_mut()
            .unwrap()
            .r#ref = "drafts/pkg/ws".into();
        assert!(upgrade_draft(&locked, &pv, &v2, &[]).is_err());
        pv.spec.upstream = None;
        assert_eq!(
            upgrade_draft(&locked, &pv, &v2, &[])
                .unwrap_err()
                .to_string(),
            "PackageVariant \"ns\"/\"my-pv\": spec.upstream is missing"
        );
    }
}
