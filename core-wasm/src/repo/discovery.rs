//! v1alpha2 PackageRevisions for the packages a full sync finds in Git
//! (`REPO/pkgrevsync.go`, only with `--repositories.create-v1alpha2-rpkg`
//! and the Repository annotated [`super::V1ALPHA2_MIGRATION_ANNOTATION`]).
//!
//! The repository controller owns, and applies with force, only identity
//! and Git facts: the repository label, the owner reference, package name,
//! repository, workspace, the two locks and `deployment`. Lifecycle,
//! readiness gates, package metadata, package conditions and publish data
//! are only seeded when the object is created (manager
//! [`super::SEED_FIELD_MANAGER`], no force), since the PR controller and
//! clients own them afterwards.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::api::meta::{ObjectMeta, OwnerReference};
use crate::api::package_revision::v1alpha2::{self, PackageRevision};
use crate::api::package_revision::v1alpha2::{object_name, LATEST_REVISION_LABEL};
use crate::api::package_revision::Lifecycle;
use crate::api::repository::{self, Repository};
use crate::krm::readiness;

use super::REPOSITORY_LABEL;

/// `repository.RepositoryKey`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryKey {
    /// Namespace of the Repository.
    #[serde(default)]
    pub namespace: String,
    /// Name of the Repository.
    #[serde(default)]
    pub name: String,
}

/// `repository.PackageRevisionKey`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRevisionKey {
    /// The Repository.
    #[serde(default)]
    pub repo_key: RepositoryKey,
    /// Directory of the package in the repository (empty at the top).
    #[serde(default)]
    pub path: String,
    /// The package's own name.
    #[serde(default)]
    pub package: String,
    /// The revision's workspace.
    #[serde(default)]
    pub workspace_name: String,
    /// Published revision number (0 for drafts, -1 for placeholders).
    #[serde(default)]
    pub revision: i64,
}

impl PackageRevisionKey {
    /// `ToPkgPathname`: `<path>/<package>`, or the package alone.
    pub fn package_path(&self) -> String {
        if self.path.is_empty() {
            self.package.clone()
        } else {
            format!("{}/{}", self.path, self.package)
        }
    }

    /// `KubeObjectName`: `<repo>.<package path with / as .>.<workspace>`.
    pub fn object_name(&self) -> String {
        object_name(
            &self.repo_key.name,
            &self.package_path(),
            &self.workspace_name,
        )
    }
}

/// `GetCommitInfo`: the commit of the revision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitInfo {
    /// Commit time (RFC 3339; `None` = zero time).
    #[serde(default)]
    pub time: Option<String>,
    /// Commit author.
    #[serde(default)]
    pub author: String,
}

/// A package revision found in Git (what the cache's
/// `ListPackageRevisions` returns, reduced to what discovery reads).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveredPackageRevision {
    /// Identity.
    #[serde(default)]
    pub key: PackageRevisionKey,
    /// Lifecycle in Git.
    #[serde(default)]
    pub lifecycle: Lifecycle,
    /// The root Kptfile as JSON (`{}` or null when none).
    #[serde(default)]
    pub kptfile: Value,
    /// The Kptfile's upstream lock (kpt `Locator` shape).
    #[serde(default)]
    pub upstream_lock: Value,
    /// Where the package itself lives (kpt `Locator` shape).
    #[serde(default)]
    pub self_lock: Value,
    /// The revision's commit.
    #[serde(default)]
    pub commit_info: CommitInfo,
    /// Whether it is the latest published revision of its package.
    #[serde(default)]
    pub is_latest_revision: bool,
}

/// `packageRevisionLabels`: the repository label and
/// `porch.kpt.dev/latest-revision` (`"true"`/`"false"`). Upstream uses it
/// only in tests: objects carry [`labels_for_update`], the latest label
/// being the PR controller's.
pub fn package_revision_labels(repo_name: &str, is_latest: bool) -> BTreeMap<String, String> {
    let mut labels = labels_for_update(repo_name);
    labels.insert(
        LATEST_REVISION_LABEL.to_string(),
        if is_latest { "true" } else { "false" }.to_string(),
    );
    labels
}

/// `packageRevisionLabelsForUpdate`: the repository label only.
pub fn labels_for_update(repo_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(REPOSITORY_LABEL.to_string(), repo_name.to_string())])
}

/// `buildPackageRevision`: the object with only the repository
/// controller's fields set (see the module doc); see [`owned_apply`] for
/// the apply object.
pub fn build_package_revision(
    repo: &Repository,
    found: &DiscoveredPackageRevision,
) -> PackageRevision {
    let key = &found.key;
    PackageRevision {
        api_version: v1alpha2::API_VERSION.to_string(),
        kind: "PackageRevision".to_string(),
        metadata: ObjectMeta {
            name: key.object_name(),
            namespace: key.repo_key.namespace.clone(),
            labels: labels_for_update(&repo.metadata.name),
            owner_references: vec![OwnerReference {
                api_version: repository::API_VERSION.to_string(),
                kind: "Repository".to_string(),
                name: repo.metadata.name.clone(),
                uid: repo.metadata.uid.clone(),
                controller: None,
                block_owner_deletion: None,
            }],
            ..ObjectMeta::default()
        },
        spec: v1alpha2::Spec {
            package_name: key.package_path(),
            repository: key.repo_key.name.clone(),
            workspace_name: key.workspace_name.clone(),
            ..v1alpha2::Spec::default()
        },
        status: v1alpha2::Status {
            upstream_lock: readiness::locator(&found.upstream_lock),
            self_lock: readiness::locator(&found.self_lock),
            deployment: repo.spec.deployment,
            ..v1alpha2::Status::default()
        },
    }
}

/// The object the repository controller applies (spec apply and, with the
/// same status part, status apply): exactly its owned fields, so that SSA
/// never claims `revision`, `lifecycle` or the other fields it must leave
/// alone (Go's `omitempty` drops them; re-sending `revision: 0` once reset
/// published revisions).
pub fn owned_apply(pr: &PackageRevision) -> Value {
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(pr.metadata.name));
    if !pr.metadata.namespace.is_empty() {
        metadata.insert("namespace".into(), json!(pr.metadata.namespace));
    }
    if !pr.metadata.labels.is_empty() {
        metadata.insert("labels".into(), json!(pr.metadata.labels));
    }
    if !pr.metadata.owner_references.is_empty() {
        metadata.insert(
            "ownerReferences".into(),
            json!(pr.metadata.owner_references),
        );
    }
    let mut spec = Map::new();
    for (k, v) in [
        ("packageName", &pr.spec.package_name),
        ("repository", &pr.spec.repository),
        ("workspaceName", &pr.spec.workspace_name),
    ] {
        if !v.is_empty() {
            spec.insert(k.into(), json!(v));
        }
    }
    json!({
        "apiVersion": pr.api_version,
        "kind": pr.kind,
        "metadata": metadata,
        "spec": spec,
        "status": owned_status(&pr.status),
    })
}

fn owned_status(status: &v1alpha2::Status) -> Value {
    let mut out = Map::new();
    if status.deployment {
        out.insert("deployment".into(), json!(true));
    }
    if let Some(l) = &status.upstream_lock {
        out.insert("upstreamLock".into(), json!(l));
    }
    if let Some(l) = &status.self_lock {
        out.insert("selfLock".into(), json!(l));
    }
    Value::Object(out)
}

/// `packageRevisionUpToDate`: the owned fields that can change match —
/// every label the desired object sets, `deployment` and both locks.
/// Upstream compares the whole label map, so a label another writer owns
/// (the PackageRevision controller's latest-revision) makes every sync
/// re-apply every such object (§13.6); here labels the repository
/// controller does not set are not its business.
pub fn package_revision_up_to_date(existing: &PackageRevision, desired: &PackageRevision) -> bool {
    desired
        .metadata
        .labels
        .iter()
        .all(|(k, v)| existing.metadata.labels.get(k) == Some(v))
        && existing.status.deployment == desired.status.deployment
        && existing.status.upstream_lock == desired.status.upstream_lock
        && existing.status.self_lock == desired.status.self_lock
}

/// The seed spec apply of a new object: `lifecycle`, `readinessGates`,
/// `packageMetadata` from Git and the Kptfile.
pub fn seed_spec_apply(pr: &PackageRevision, found: &DiscoveredPackageRevision) -> Value {
    let mut spec = Map::new();
    if found.lifecycle != Lifecycle::Unset {
        spec.insert("lifecycle".into(), json!(found.lifecycle));
    }
    if let Some(gates) = readiness::readiness_gates(&found.kptfile).filter(|g| !g.is_empty()) {
        spec.insert("readinessGates".into(), json!(gates));
    }
    if let Some(meta) = readiness::package_metadata(&found.kptfile) {
        let mut m = Map::new();
        if let Some(labels) = meta.labels {
            m.insert("labels".into(), json!(labels));
        }
        if let Some(annotations) = meta.annotations {
            m.insert("annotations".into(), json!(annotations));
        }
        spec.insert("packageMetadata".into(), Value::Object(m));
    }
    json!({
        "apiVersion": pr.api_version,
        "kind": pr.kind,
        "metadata": {"name": pr.metadata.name, "namespace": pr.metadata.namespace},
        "spec": spec,
    })
}

/// The seed status apply of a new object: `packageConditions`, and for
/// published (or deletion-proposed) revisions `revision`, `publishedBy`
/// and `publishedAt` (absent for a zero commit time).
pub fn seed_status_apply(pr: &PackageRevision, found: &DiscoveredPackageRevision) -> Value {
    let mut status = Map::new();
    if let Some(c) = readiness::package_conditions(&found.kptfile).filter(|c| !c.is_empty()) {
        status.insert("packageConditions".into(), json!(c));
    }
    if found.lifecycle.is_published() {
        if found.key.revision != 0 {
            status.insert("revision".into(), json!(found.key.revision));
        }
        if !found.commit_info.author.is_empty() {
            status.insert("publishedBy".into(), json!(found.commit_info.author));
        }
        let t = super::time::Time::from_k8s(found.commit_info.time.as_deref());
        if !t.is_zero() {
            status.insert("publishedAt".into(), json!(t.to_rfc3339()));
        }
    }
    json!({
        "apiVersion": pr.api_version,
        "kind": pr.kind,
        "metadata": {"name": pr.metadata.name, "namespace": pr.metadata.namespace},
        "status": status,
    })
}

/// What `syncPackageRevisions` does with the listed and the discovered
/// package revisions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncPlan {
    /// Objects to apply (owned fields), with whether each is new (then
    /// also seeded), in discovery order.
    pub apply: Vec<(PackageRevision, bool)>,
    /// Names of up-to-date objects left alone.
    pub unchanged: Vec<String>,
    /// Names of listed objects no longer in Git, to delete.
    pub delete: Vec<String>,
}

/// `syncPackageRevisions` minus the calls: `existing` is the list of
/// PackageRevisions labelled for the Repository.
pub fn plan_sync(
    repo: &Repository,
    found: &[DiscoveredPackageRevision],
    existing: &[PackageRevision],
) -> SyncPlan {
    let by_name: BTreeMap<&str, &PackageRevision> = existing
        .iter()
        .map(|p| (p.metadata.name.as_str(), p))
        .collect();
    let mut plan = SyncPlan::default();
    let mut desired_names = BTreeSet::new();
    for f in found {
        let desired = build_package_revision(repo, f);
        desired_names.insert(desired.metadata.name.clone());
        match by_name.get(desired.metadata.name.as_str()) {
            Some(ex) if package_revision_up_to_date(ex, &desired) => {
                plan.unchanged.push(desired.metadata.name.clone())
            }
            Some(_) => plan.apply.push((desired, false)),
            None => plan.apply.push((desired, true)),
        }
    }
    plan.delete = by_name
        .keys()
        .filter(|n| !desired_names.contains(**n))
        .map(|n| n.to_string())
        .collect();
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_another_controller_owns_does_not_make_a_sync_reapply() {
        let mut desired = PackageRevision::default();
        desired.metadata.labels = labels_for_update("repo");
        let mut existing = desired.clone();
        existing
            .metadata
            .labels
            .insert(LATEST_REVISION_LABEL.into(), "true".into());
        assert!(package_revision_up_to_date(&existing, &desired));
        existing
            .metadata
            .labels
            .insert(REPOSITORY_LABEL_FOR_TEST.into(), "other".into());
        assert!(!package_revision_up_to_date(&existing, &desired));
    }

    const REPOSITORY_LABEL_FOR_TEST: &str = "porch.kpt.dev/repository";

    fn found(package: &str, workspace: &str, lifecycle: Lifecycle) -> DiscoveredPackageRevision {
        DiscoveredPackageRevision {
            key: PackageRevisionKey {
                repo_key: RepositoryKey {
                    namespace: "ns".into(),
                    name: "repo".into(),
                },
                package: package.into(),
                workspace_name: workspace.into(),
                revision: 2,
                ..PackageRevisionKey::default()
            },
            lifecycle,
            kptfile: json!({"info": {"readinessGates": [{"conditionType": "A"}]},
                            "status": {"conditions": [{"type": "A", "status": "True"}]}}),
            commit_info: CommitInfo {
                time: Some("2025-06-15T10:30:00Z".into()),
                author: "me".into(),
            },
            ..DiscoveredPackageRevision::default()
        }
    }

    fn repo() -> Repository {
        let mut r = Repository::default();
        r.metadata.name = "repo".into();
        r.metadata.namespace = "ns".into();
        r.metadata.uid = "uid".into();
        r
    }

    #[test]
    fn the_plan_creates_updates_skips_and_deletes() {
        let r = repo();
        let a = found("a", "v1", Lifecycle::Published);
        let b = found("b", "v1", Lifecycle::Draft);
        let c = found("c", "v1", Lifecycle::Draft);
        let mut b_existing = build_package_revision(&r, &b);
        b_existing.status.deployment = !b_existing.status.deployment;
        // A label the PackageRevision controller owns is not a change.
        let mut c_existing = build_package_revision(&r, &c);
        c_existing
            .metadata
            .labels
            .insert(LATEST_REVISION_LABEL.into(), "false".into());
        let mut stale = c_existing.clone();
        stale.metadata.name = "repo.gone.v1".into();
        let plan = plan_sync(&r, &[a, b, c], &[b_existing, c_existing, stale]);
        let applied: Vec<(&str, bool)> = plan
            .apply
            .iter()
            .map(|(p, new)| (p.metadata.name.as_str(), *new))
            .collect();
        assert_eq!(applied, vec![("repo.a.v1", true), ("repo.b.v1", false)]);
        assert_eq!(plan.unchanged, vec!["repo.c.v1"]);
        assert_eq!(plan.delete, vec!["repo.gone.v1"]);
    }

    #[test]
    fn seeds_carry_publish_data_only_for_published_revisions() {
        let r = repo();
        let published = found("a", "v1", Lifecycle::Published);
        let pr = build_package_revision(&r, &published);
        let status = seed_status_apply(&pr, &published);
        assert_eq!(status["status"]["revision"], json!(2));
        assert_eq!(status["status"]["publishedBy"], json!("me"));
        assert_eq!(
            status["status"]["publishedAt"],
            json!("2025-06-15T10:30:00Z")
        );
        assert_eq!(status["status"]["packageConditions"][0]["type"], json!("A"));
        let spec = seed_spec_apply(&pr, &published);
        assert_eq!(spec["spec"]["lifecycle"], json!("Published"));
        assert_eq!(
            spec["spec"]["readinessGates"][0]["conditionType"],
            json!("A")
        );
        let draft = found("a", "v1", Lifecycle::Draft);
        let status = seed_status_apply(&pr, &draft);
        assert!(status["status"].get("revision").is_none());
        assert!(status["status"].get("publishedBy").is_none());
    }
}
