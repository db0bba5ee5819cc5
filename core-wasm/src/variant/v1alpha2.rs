//! PackageVariants over v1alpha2 PackageRevisions: how the variant
//! controller's view of a revision (the aggregated v1alpha1 type its plan
//! is written against) is read from a v1alpha2 object, how a planned draft
//! becomes a v1alpha2 object with a `spec.source`, and when the
//! PackageRevision controller has finished that source.
//!
//! The plan itself is the same in both modes: only the way its drafts are
//! made differs (declared here and made by the PackageRevision controller,
//! instead of written with their content).

use std::collections::BTreeMap;

use crate::api::package_revision::v1alpha2::{
    object_name, LATEST_REVISION_LABEL as V2_LATEST_REVISION_LABEL, RENDER_REQUEST_ANNOTATION,
};
use crate::api::package_revision::v1alpha2::{
    CloneFrom, PackageRevision as PrV2, PackageRevisionRef, Source, Upgrade, API_VERSION,
};
use crate::api::package_revision::{
    CloneTask, EditTask, Lifecycle, NameRef, PackageRevision, Task, UpgradeTask, UpstreamPackage,
    LATEST_REVISION_LABEL,
};
use crate::api::ObjectMeta;

/// Labels and annotations the API machinery and the controllers keep on a
/// v1alpha2 object; they are not the variant's metadata and are not
/// copied to or from Git.
pub const SYSTEM_KEYS: [&str; 5] = [
    V2_LATEST_REVISION_LABEL,
    LATEST_REVISION_LABEL,
    RENDER_REQUEST_ANNOTATION,
    "porch.kpt.dev/repository",
    "porch-variants.dev/declared",
];

/// Where a revision's source stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceState {
    /// The content is there (the source ran, or the revision has none:
    /// it was found in Git).
    Done,
    /// The PackageRevision controller has not finished it yet (what it
    /// last said, if anything).
    Pending(String),
    /// The controller tried and failed (its message); it tries again.
    Failed(String),
}

/// The state of `obj`'s source, read from its status: done once
/// `status.creationSource` is set, failed while its `Ready` condition is
/// `False` with reason `Failed`, pending otherwise.
pub fn source_state(obj: &PrV2) -> SourceState {
    if obj.spec.source.is_none() || !obj.status.creation_source.is_empty() {
        return SourceState::Done;
    }
    let ready = obj.status.conditions.iter().find(|c| c.type_ == "Ready");
    match ready {
        Some(c) if c.status == "False" && c.reason == "Failed" => {
            SourceState::Failed(c.message.clone())
        }
        Some(c) => SourceState::Pending(c.message.clone()),
        None => SourceState::Pending(String::new()),
    }
}

/// Whether the controller has acted on `obj`'s current spec: its status
/// was written for this generation and says `Ready=True`.
pub fn is_settled(obj: &PrV2) -> bool {
    let generation = obj.metadata.generation.unwrap_or(0);
    obj.status.observed_generation.unwrap_or(0) == generation
        && obj
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn task_of(source: &Source) -> Option<Task> {
    if let Some(clone) = &source.clone_from {
        return Some(Task {
            type_: "clone".into(),
            clone: Some(CloneTask {
                upstream_ref: UpstreamPackage {
                    type_: clone.type_.clone(),
                    git: clone
                        .git
                        .as_ref()
                        .and_then(|g| serde_json::to_value(g).ok()),
                    upstream_ref: clone.upstream_ref.as_ref().map(|r| NameRef {
                        name: r.name.clone(),
                    }),
                    ..Default::default()
                },
            }),
            ..Default::default()
        });
    }
    if let Some(up) = &source.upgrade {
        return Some(Task {
            type_: "upgrade".into(),
            upgrade: Some(UpgradeTask {
                old_upstream_ref: NameRef {
                    name: up.old_upstream.name.clone(),
                },
                new_upstream_ref: NameRef {
                    name: up.new_upstream.name.clone(),
                },
                local_package_revision_ref: NameRef {
                    name: up.current_package.name.clone(),
                },
                strategy: up.strategy.clone(),
            }),
            ..Default::default()
        });
    }
    if let Some(copy) = &source.copy_from {
        return Some(Task {
            type_: "edit".into(),
            edit: Some(EditTask {
                source_ref: NameRef {
                    name: copy.name.clone(),
                },
            }),
            ..Default::default()
        });
    }
    source.init.as_ref().map(|init| Task {
        type_: "init".into(),
        init: serde_json::to_value(init).ok(),
        ..Default::default()
    })
}

/// The variant controller's view of a v1alpha2 object: lifecycle as the
/// spec asks, revision number and locks from the status, the source as
/// the one task, the Kptfile's conditions as the package conditions, and
/// the latest-revision label under its v1alpha1 key.
pub fn revision_view(obj: &PrV2) -> PackageRevision {
    let mut pr = PackageRevision {
        api_version: crate::api::package_revision::API_VERSION.into(),
        kind: "PackageRevision".into(),
        metadata: obj.metadata.clone(),
        ..Default::default()
    };
    if let Some(latest) = pr.metadata.labels.remove(V2_LATEST_REVISION_LABEL) {
        pr.metadata
            .labels
            .insert(LATEST_REVISION_LABEL.to_string(), latest);
    }
    pr.spec.package_name = obj.spec.package_name.clone();
    pr.spec.repository = obj.spec.repository.clone();
    pr.spec.workspace_name = obj.spec.workspace_name.clone();
    pr.spec.lifecycle = obj.spec.lifecycle;
    pr.spec.revision = if obj.spec.lifecycle.is_published() {
        obj.status.revision
    } else {
        0
    };
    pr.spec.tasks = obj
        .spec
        .source
        .as_ref()
        .and_then(task_of)
        .into_iter()
        .collect();
    pr.spec.readiness_gates = obj.spec.readiness_gates.clone();
    pr.spec.package_metadata = obj.spec.package_metadata.clone();
    pr.status.upstream_lock = obj.status.upstream_lock.clone();
    pr.status.self_lock = obj.status.self_lock.clone();
    pr.status.published_by = obj.status.published_by.clone();
    pr.status.publish_timestamp = obj.status.published_at.clone();
    pr.status.deployment = obj.status.deployment;
    pr.status.conditions = obj.status.package_conditions.clone();
    pr
}

/// A planned draft's one task as a v1alpha2 `spec.source`: clone →
/// `cloneFrom.upstreamRef`, upgrade → `upgrade` (with `strategy`, the
/// downstream's Kptfile's, when given), edit → `copyFrom`.
pub fn source_of_draft(draft: &PackageRevision, strategy: Option<&str>) -> Result<Source, String> {
    let task = draft
        .spec
        .tasks
        .first()
        .ok_or_else(|| format!("draft {}: no task", draft.spec.workspace_name))?;
    if let Some(clone) = &task.clone {
        let name = clone
            .upstream_ref
            .upstream_ref
            .as_ref()
            .map(|r| r.name.clone())
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                format!(
                    "draft {}: the clone task names no upstream revision",
                    draft.spec.workspace_name
                )
            })?;
        return Ok(Source {
            clone_from: Some(CloneFrom {
                upstream_ref: Some(PackageRevisionRef { name }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    if let Some(up) = &task.upgrade {
        return Ok(Source {
            upgrade: Some(Upgrade {
                old_upstream: PackageRevisionRef {
                    name: up.old_upstream_ref.name.clone(),
                },
                new_upstream: PackageRevisionRef {
                    name: up.new_upstream_ref.name.clone(),
                },
                current_package: PackageRevisionRef {
                    name: up.local_package_revision_ref.name.clone(),
                },
                strategy: strategy
                    .filter(|s| !s.is_empty())
                    .unwrap_or(&up.strategy)
                    .to_string(),
            }),
            ..Default::default()
        });
    }
    if let Some(edit) = &task.edit {
        return Ok(Source {
            copy_from: Some(PackageRevisionRef {
                name: edit.source_ref.name.clone(),
            }),
            ..Default::default()
        });
    }
    Err(format!(
        "draft {}: a {:?} task has no v1alpha2 source",
        draft.spec.workspace_name, task.type_
    ))
}

/// The v1alpha2 object that asks the PackageRevision controller for
/// `draft`: its name (`<repo>.<package>.<workspace>`), namespace, labels,
/// annotations and owner references, lifecycle Draft, and the source.
pub fn object_for_draft(draft: &PackageRevision, strategy: Option<&str>) -> Result<PrV2, String> {
    let source = source_of_draft(draft, strategy)?;
    let name = object_name(
        &draft.spec.repository,
        &draft.spec.package_name,
        &draft.spec.workspace_name,
    );
    let metadata = ObjectMeta {
        name,
        namespace: draft.metadata.namespace.clone(),
        labels: draft.metadata.labels.clone(),
        annotations: draft.metadata.annotations.clone(),
        owner_references: draft.metadata.owner_references.clone(),
        ..Default::default()
    };
    let mut obj = PrV2 {
        api_version: API_VERSION.into(),
        kind: "PackageRevision".into(),
        metadata,
        ..Default::default()
    };
    obj.spec.package_name = draft.spec.package_name.clone();
    obj.spec.repository = draft.spec.repository.clone();
    obj.spec.workspace_name = draft.spec.workspace_name.clone();
    obj.spec.lifecycle = Lifecycle::Draft;
    obj.spec.source = Some(source);
    Ok(obj)
}

/// The variant's part of an object's metadata: labels and annotations
/// without [`SYSTEM_KEYS`], and the owner references but the Repository's
/// (the PackageRevision controller's own). This is what Git
/// keeps beside the revision, in either mode.
pub fn variant_metadata(meta: &ObjectMeta) -> ObjectMeta {
    let keep = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.iter()
            .filter(|(k, _)| !SYSTEM_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    ObjectMeta {
        labels: keep(&meta.labels),
        annotations: keep(&meta.annotations),
        owner_references: meta
            .owner_references
            .iter()
            .filter(|o| {
                !(o.kind == "Repository" && o.api_version.starts_with("config.porch.kpt.dev/"))
            })
            .cloned()
            .collect(),
        ..Default::default()
    }
}

/// The upgrade strategy a package's Kptfile asks for
/// (`upstream.updateStrategy`), as a v1alpha2 `source.upgrade.strategy`;
/// `None` when the Kptfile sets none or cannot be read.
pub fn kptfile_update_strategy(kptfile: &str) -> Option<String> {
    let docs = crate::yaml::parse_stream(kptfile).ok()?;
    let json = crate::yaml::to_json_strict(docs.first()?).ok()?;
    let s = json["upstream"]["updateStrategy"].as_str()?;
    matches!(
        s,
        "resource-merge" | "fast-forward" | "force-delete-replace" | "copy-merge"
    )
    .then(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::meta::{Condition, OwnerReference};
    use crate::api::package_revision::{GitLock, Locator};

    fn draft(task: Task) -> PackageRevision {
        let mut d = PackageRevision::default();
        d.metadata.namespace = "default".into();
        d.metadata.labels.insert("team".into(), "a".into());
        d.metadata.owner_references.push(OwnerReference {
            api_version: "config.porch.kpt.dev/v1alpha1".into(),
            kind: "PackageVariant".into(),
            name: "pv".into(),
            uid: "u-1".into(),
            ..Default::default()
        });
        d.spec.repository = "edge".into();
        d.spec.package_name = "apps/web".into();
        d.spec.workspace_name = "packagevariant-2".into();
        d.spec.tasks = vec![task];
        d
    }

    fn upgrade_task() -> Task {
        Task {
            type_: "upgrade".into(),
            upgrade: Some(UpgradeTask {
                old_upstream_ref: NameRef {
                    name: "b.web.v1".into(),
                },
                new_upstream_ref: NameRef {
                    name: "b.web.v2".into(),
                },
                local_package_revision_ref: NameRef {
                    name: "edge.apps.web.packagevariant-1".into(),
                },
                strategy: "resource-merge".into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn drafts_become_objects_with_their_source() {
        let clone = Task {
            type_: "clone".into(),
            clone: Some(CloneTask {
                upstream_ref: UpstreamPackage {
                    upstream_ref: Some(NameRef {
                        name: "b.web.v1".into(),
                    }),
                    ..Default::default()
                },
            }),
            ..Default::default()
        };
        let obj = object_for_draft(&draft(clone), None).expect("clone");
        assert_eq!(obj.metadata.name, "edge.apps.web.packagevariant-2");
        assert_eq!(obj.metadata.owner_references[0].uid, "u-1");
        assert_eq!(obj.spec.lifecycle, Lifecycle::Draft);
        let json = serde_json::to_value(&obj).expect("json");
        assert_eq!(
            json["spec"]["source"],
            serde_json::json!({"cloneFrom": {"upstreamRef": {"name": "b.web.v1"}}})
        );

        let up = object_for_draft(&draft(upgrade_task()), Some("fast-forward")).expect("up");
        let u = up.spec.source.and_then(|s| s.upgrade).expect("upgrade");
        assert_eq!(u.strategy, "fast-forward");
        assert_eq!(u.current_package.name, "edge.apps.web.packagevariant-1");
        let kept = object_for_draft(&draft(upgrade_task()), None).expect("up");
        assert_eq!(
            kept.spec
                .source
                .and_then(|s| s.upgrade)
                .expect("u")
                .strategy,
            "resource-merge"
        );

        let edit = Task {
            type_: "edit".into(),
            edit: Some(EditTask {
                source_ref: NameRef {
                    name: "edge.apps.web.v1".into(),
                },
            }),
            ..Default::default()
        };
        let e = object_for_draft(&draft(edit), None).expect("edit");
        assert_eq!(
            e.spec.source.and_then(|s| s.copy_from).expect("copy").name,
            "edge.apps.web.v1"
        );

        let none = object_for_draft(&draft(Task::default()), None).expect_err("no source");
        assert!(none.contains("packagevariant-2"), "{none}");
    }

    #[test]
    fn the_view_reads_state_from_the_status() {
        let mut obj = object_for_draft(&draft(upgrade_task()), None).expect("up");
        obj.metadata
            .labels
            .insert(V2_LATEST_REVISION_LABEL.into(), "true".into());
        obj.status.revision = 3;
        obj.status.upstream_lock = Some(Locator {
            type_: "git".into(),
            git: Some(GitLock {
                r#ref: "web/v2".into(),
                ..Default::default()
            }),
        });
        let draft_view = revision_view(&obj);
        assert_eq!(draft_view.spec.revision, 0, "a draft has no number yet");
        assert_eq!(draft_view.spec.tasks[0].type_, "upgrade");
        assert_eq!(draft_view.metadata.labels[LATEST_REVISION_LABEL], "true");
        assert!(!draft_view
            .metadata
            .labels
            .contains_key(V2_LATEST_REVISION_LABEL));
        obj.spec.lifecycle = Lifecycle::Published;
        let published = revision_view(&obj);
        assert_eq!(published.spec.revision, 3);
        assert_eq!(
            published
                .status
                .upstream_lock
                .and_then(|l| l.git)
                .expect("lock")
                .r#ref,
            "web/v2"
        );
    }

    #[test]
    fn the_source_is_done_once_the_controller_says_so() {
        let mut obj = object_for_draft(&draft(upgrade_task()), None).expect("up");
        assert_eq!(source_state(&obj), SourceState::Pending(String::new()));
        obj.status.conditions.push(Condition {
            type_: "Ready".into(),
            status: "False".into(),
            reason: "Failed".into(),
            message: "no such revision".into(),
            ..Default::default()
        });
        assert_eq!(
            source_state(&obj),
            SourceState::Failed("no such revision".into())
        );
        obj.status.creation_source = "upgrade".into();
        assert_eq!(source_state(&obj), SourceState::Done);
        assert!(!is_settled(&obj));
        obj.status.conditions[0].status = "True".into();
        assert!(is_settled(&obj));
        obj.metadata.generation = Some(2);
        assert!(!is_settled(&obj), "a new generation is not acted on yet");
        let mut found = obj.clone();
        found.spec.source = None;
        found.status.creation_source.clear();
        assert_eq!(source_state(&found), SourceState::Done);
    }

    #[test]
    fn variant_metadata_leaves_the_system_keys() {
        let mut meta = ObjectMeta::default();
        meta.labels.insert("team".into(), "a".into());
        meta.labels
            .insert(V2_LATEST_REVISION_LABEL.into(), "true".into());
        meta.labels
            .insert("porch.kpt.dev/repository".into(), "edge".into());
        meta.annotations
            .insert(RENDER_REQUEST_ANNOTATION.into(), "7".into());
        meta.annotations.insert("note".into(), "x".into());
        for kind in ["Repository", "PackageVariant"] {
            meta.owner_references.push(OwnerReference {
                api_version: "config.porch.kpt.dev/v1alpha1".into(),
                kind: kind.into(),
                ..Default::default()
            });
        }
        let kept = variant_metadata(&meta);
        assert_eq!(kept.owner_references.len(), 1);
        assert_eq!(kept.owner_references[0].kind, "PackageVariant");
        assert_eq!(kept.labels.keys().collect::<Vec<_>>(), ["team"]);
        assert_eq!(kept.annotations.keys().collect::<Vec<_>>(), ["note"]);
    }

    /// The Kptfile sync writes a package without labels as `labels: null`
    /// (upstream's JSON); the object must still read.
    #[test]
    fn null_package_metadata_maps_read_as_empty() {
        let obj: PrV2 = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "r.p.ws"},
            "spec": {"packageMetadata": {"labels": null, "annotations": {"a": "b"}}},
        }))
        .expect("reads");
        let meta = obj.spec.package_metadata.expect("metadata");
        assert!(meta.labels.is_empty());
        assert_eq!(meta.annotations["a"], "b");
    }

    #[test]
    fn the_kptfile_names_the_upgrade_strategy() {
        let k = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\nupstream:\n  type: git\n  updateStrategy: fast-forward\n";
        assert_eq!(kptfile_update_strategy(k).as_deref(), Some("fast-forward"));
        assert_eq!(kptfile_update_strategy("kind: Kptfile\n"), None);
        assert_eq!(
            kptfile_update_strategy("upstream:\n  updateStrategy: bogus\n"),
            None
        );
        assert_eq!(kptfile_update_strategy(": : :\n\t"), None);
    }
}
