//! PackageRevision and PackageRevisionResources `porch.kpt.dev/v1alpha1`
//! (Porch's aggregated API), and the `porch.kpt.dev/v1alpha2` PackageRevision
//! CRD.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::meta::ObjectMeta;
use super::resource_list::FunctionResultList;

/// API version of the aggregated PackageRevision types.
pub const API_VERSION: &str = "porch.kpt.dev/v1alpha1";
/// Label Porch keeps on the highest published revision of a package.
pub const LATEST_REVISION_LABEL: &str = "kpt.dev/latest-revision";

/// A PackageRevision `porch.kpt.dev/v1alpha1`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageRevision {
    /// `porch.kpt.dev/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `PackageRevision`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Desired state.
    #[serde(default)]
    pub spec: PackageRevisionSpec,
    /// Observed state.
    #[serde(default)]
    pub status: PackageRevisionStatus,
}

/// Lifecycle of a PackageRevision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Lifecycle {
    /// Not set (the server defaults it to Draft).
    #[default]
    #[serde(rename = "")]
    Unset,
    /// Being edited.
    Draft,
    /// Waiting for approval.
    Proposed,
    /// Released; immutable.
    Published,
    /// Published and waiting for approval of its deletion.
    DeletionProposed,
}

impl PackageRevision {
    /// `PackageRevisionIsReady`: every readiness gate has a condition of
    /// its type with status `True` (no gates: ready).
    pub fn gates_met(&self) -> bool {
        gates_met(&self.spec.readiness_gates, &self.status.conditions)
    }
}

/// `PackageRevisionIsReady` over a revision's gates and conditions.
pub fn gates_met(gates: &[ReadinessGate], conditions: &[PackageCondition]) -> bool {
    gates.iter().all(|g| {
        conditions
            .iter()
            .any(|c| c.type_ == g.condition_type && c.status == "True")
    })
}

impl Lifecycle {
    /// `LifecycleIsPublished`: Published or DeletionProposed.
    pub fn is_published(self) -> bool {
        matches!(self, Lifecycle::Published | Lifecycle::DeletionProposed)
    }
}

/// `spec` of a PackageRevision.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageRevisionSpec {
    /// Package name (its path in the repository).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub package_name: String,
    /// Repository name.
    #[serde(
        default,
        rename = "repository",
        skip_serializing_if = "String::is_empty"
    )]
    pub repository: String,
    /// Workspace name, unique per package.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workspace_name: String,
    /// Revision number: 0 for drafts, -1 for the branch placeholder.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub revision: i64,
    /// Deprecated parent reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<NameRef>,
    /// Lifecycle.
    #[serde(default, skip_serializing_if = "is_unset")]
    pub lifecycle: Lifecycle,
    /// How the revision was made (one task).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<Task>,
    /// Conditions that must be true before proposal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readiness_gates: Vec<ReadinessGate>,
    /// Kptfile metadata surfaced on the revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_metadata: Option<PackageMetadata>,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

fn is_unset(l: &Lifecycle) -> bool {
    *l == Lifecycle::Unset
}

/// A reference by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NameRef {
    /// The referenced object's name.
    #[serde(default)]
    pub name: String,
}

/// `spec.readinessGates[]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReadinessGate {
    /// Condition type that must be True.
    #[serde(default)]
    pub condition_type: String,
}

/// `spec.packageMetadata`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PackageMetadata {
    /// Labels.
    // `null` reads as none: the Kptfile sync writes a nil map so.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "super::meta::null_as_default"
    )]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "super::meta::null_as_default"
    )]
    pub annotations: BTreeMap<String, String>,
}

/// `spec.tasks[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// `init`, `clone`, `edit`, `upgrade`, `render`, `push`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// Init parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<serde_json::Value>,
    /// Clone parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone: Option<CloneTask>,
    /// Edit parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<EditTask>,
    /// Upgrade parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<UpgradeTask>,
}

/// `tasks[].clone`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CloneTask {
    /// The upstream (`clone.upstreamRef.upstreamRef.name` for a PackageRevision).
    #[serde(default)]
    pub upstream_ref: UpstreamPackage,
}

/// `UpstreamPackage`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UpstreamPackage {
    /// `git` or `oci`.
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// A Git upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<serde_json::Value>,
    /// An OCI upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<serde_json::Value>,
    /// A PackageRevision upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_ref: Option<NameRef>,
}

/// `tasks[].edit`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct EditTask {
    /// The revision to copy.
    #[serde(default)]
    pub source_ref: NameRef,
}

/// `tasks[].upgrade`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UpgradeTask {
    /// The upstream revision the local package was made from.
    #[serde(default)]
    pub old_upstream_ref: NameRef,
    /// The upstream revision to move to.
    #[serde(default)]
    pub new_upstream_ref: NameRef,
    /// The local package revision.
    #[serde(default)]
    pub local_package_revision_ref: NameRef,
    /// `resource-merge`, `fast-forward`, `force-delete-replace`, `copy-merge`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub strategy: String,
}

/// `status` of a PackageRevision.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageRevisionStatus {
    /// Where the upstream content came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_lock: Option<Locator>,
    /// Where this revision lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_lock: Option<Locator>,
    /// Who published it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub published_by: String,
    /// When it was published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish_timestamp: Option<String>,
    /// Whether it is a deployment package.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deployment: bool,
    /// Conditions mirrored from the Kptfile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<PackageCondition>,
}

/// A condition of the package (from the Kptfile's `status.conditions`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PackageCondition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False`, `Unknown`.
    pub status: String,
    /// Reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// `Locator`: a Git location.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Locator {
    /// `git`.
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// The Git lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitLock>,
}

/// `Locator.git`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GitLock {
    /// Repository URL or name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repo: String,
    /// Directory in the repository.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub directory: String,
    /// Ref (`pkg/v1`, `drafts/pkg/ws`, `main`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub r#ref: String,
    /// Commit.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub commit: String,
}

/// PackageRevisionResources `porch.kpt.dev/v1alpha1`: a revision's files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageRevisionResources {
    /// `porch.kpt.dev/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `PackageRevisionResources`.
    #[serde(default)]
    pub kind: String,
    /// Metadata (same name as the PackageRevision).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Files.
    #[serde(default)]
    pub spec: PackageRevisionResourcesSpec,
    /// Render result.
    #[serde(default)]
    pub status: PackageRevisionResourcesStatus,
}

/// `spec` of PackageRevisionResources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageRevisionResourcesSpec {
    /// Package name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub package_name: String,
    /// Workspace name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workspace_name: String,
    /// Revision number.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub revision: i64,
    /// Repository.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repository: String,
    /// File name → content. `None` when the server sent no map.
    #[serde(default)]
    pub resources: Option<BTreeMap<String, String>>,
}

/// `status` of PackageRevisionResources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageRevisionResourcesStatus {
    /// The last render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_status: Option<RenderStatus>,
}

/// `RenderStatus`: the result of rendering a package.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RenderStatus {
    /// Function results.
    #[serde(default)]
    pub result: FunctionResultList,
    /// Error text (always written, as upstream's JSON has no omitempty).
    #[serde(default)]
    pub error: String,
}

/// The `porch.kpt.dev/v1alpha2` PackageRevision CRD, where the object is
/// the intent (lifecycle, how the package is made) and Git the content.
/// Fields, optionality and required fields follow upstream's
/// `api/porch/v1alpha2` types (the CRD drift test compares them).
pub mod v1alpha2 {
    use serde::{Deserialize, Serialize};

    use super::{Lifecycle, Locator, PackageCondition, PackageMetadata, ReadinessGate};
    use crate::api::meta::{Condition, ObjectMeta};

    /// The label marking the latest published revision of a package.
    pub const LATEST_REVISION_LABEL: &str = "porch.kpt.dev/latest-revision";
    /// The annotation that asks for a render (porch-server writes the
    /// revision's resourceVersion into it after storing unrendered content).
    pub const RENDER_REQUEST_ANNOTATION: &str = "porch.kpt.dev/render-request";

    /// `ComposePkgRevObjName`: `<repo>.<package with / as .>.<workspace>`, or
    /// empty when any part is empty.
    pub fn object_name(repository: &str, package: &str, workspace: &str) -> String {
        if repository.is_empty() || package.is_empty() || workspace.is_empty() {
            return String::new();
        }
        format!("{repository}.{}.{workspace}", package.replace('/', "."))
    }

    /// API version of the kind.
    pub const API_VERSION: &str = "porch.kpt.dev/v1alpha2";

    /// The field selectors the API serves (upstream's `PkgRevFieldSelector`
    /// constants, in their order): the CRD's `selectableFields` are the
    /// non-metadata ones, each as a JSON path (`.spec.lifecycle`).
    pub const SELECTABLE_FIELDS: [&str; 7] = [
        "metadata.name",
        "metadata.namespace",
        "status.revision",
        "spec.packageName",
        "spec.repository",
        "spec.workspaceName",
        "spec.lifecycle",
    ];

    /// The CRD's `selectableFields` JSON paths: `.` + every non-metadata
    /// entry of [`SELECTABLE_FIELDS`].
    pub fn selectable_json_paths() -> Vec<String> {
        SELECTABLE_FIELDS
            .iter()
            .filter(|f| !f.starts_with("metadata."))
            .map(|f| format!(".{f}"))
            .collect()
    }

    /// A PackageRevision `porch.kpt.dev/v1alpha2`.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct PackageRevision {
        /// `porch.kpt.dev/v1alpha2`.
        #[serde(default)]
        pub api_version: String,
        /// `PackageRevision`.
        #[serde(default)]
        pub kind: String,
        /// Metadata.
        #[serde(default)]
        pub metadata: ObjectMeta,
        /// Desired state.
        #[serde(default)]
        pub spec: Spec,
        /// Observed state.
        #[serde(default)]
        pub status: Status,
    }

    /// `spec`.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct Spec {
        /// Package path in the repository (may contain `/`).
        #[serde(default)]
        pub package_name: String,
        /// The Repository (same namespace).
        #[serde(default)]
        pub repository: String,
        /// The revision's workspace, unique per package.
        #[serde(default)]
        pub workspace_name: String,
        /// Desired lifecycle (client-owned; empty: nothing to do).
        #[serde(default)]
        pub lifecycle: Lifecycle,
        /// How the package is created (exactly one field set); none for
        /// packages discovered in Git.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub source: Option<Source>,
        /// Conditions that must be True before the package is ready.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub readiness_gates: Vec<ReadinessGate>,
        /// The Kptfile's own labels and annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub package_metadata: Option<PackageMetadata>,
    }

    /// `spec.source`: exactly one field set.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct Source {
        /// A new package (kpt's initializer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub init: Option<Init>,
        /// The first copy from an upstream.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub clone_from: Option<CloneFrom>,
        /// A new revision from a published revision of the same package.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub copy_from: Option<PackageRevisionRef>,
        /// A three-way merge of a new upstream into a local package.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub upgrade: Option<Upgrade>,
    }

    /// `spec.source.init`.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct Init {
        /// A subpackage directory to initialise instead of the package.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub subpackage: String,
        /// The package's description.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub description: String,
        /// Keywords.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub keywords: Vec<String>,
        /// Site of the package.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub site: String,
    }

    /// `spec.source.cloneFrom`: a registered revision (`upstreamRef`,
    /// which wins when both are set) or a raw Git location.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct CloneFrom {
        /// `git` (not read by the controller).
        #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
        pub type_: String,
        /// A Git location.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub git: Option<GitSource>,
        /// A PackageRevision of the same namespace.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub upstream_ref: Option<PackageRevisionRef>,
    }

    /// `cloneFrom.git`.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct GitSource {
        /// Repository address.
        pub repo: String,
        /// Branch, tag or commit.
        pub r#ref: String,
        /// Directory of the package in the repository.
        pub directory: String,
        /// Secret with the credentials.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub secret_ref: Option<SecretRef>,
    }

    /// A Secret of the same namespace.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    pub struct SecretRef {
        /// The Secret's name (required by the API).
        #[serde(default)]
        pub name: String,
    }

    /// A PackageRevision of the same namespace, by name.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    pub struct PackageRevisionRef {
        /// The object name (`<repo>.<package>.<workspace>`).
        pub name: String,
    }

    /// `spec.source.upgrade`.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct Upgrade {
        /// The upstream revision the local package was made from.
        #[serde(default)]
        pub old_upstream: PackageRevisionRef,
        /// The upstream revision to upgrade to.
        #[serde(default)]
        pub new_upstream: PackageRevisionRef,
        /// The local revision with its changes.
        #[serde(default)]
        pub current_package: PackageRevisionRef,
        /// `resource-merge` (the default when empty), `fast-forward`,
        /// `force-delete-replace` or `copy-merge`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub strategy: String,
    }

    /// `status`.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct Status {
        /// `metadata.generation` seen by the last status write.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub observed_generation: Option<i64>,
        /// Published revision number (0 for drafts, -1 for placeholders).
        #[serde(default)]
        pub revision: i64,
        /// The Kptfile's upstream lock.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub upstream_lock: Option<Locator>,
        /// Where the package itself lives in Git.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub self_lock: Option<Locator>,
        /// Author of the publish commit.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub published_by: String,
        /// Time of the publish commit (RFC 3339).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
        pub published_at: Option<String>,
        /// Copy of the Repository's `spec.deployment`.
        #[serde(default)]
        pub deployment: bool,
        /// The last render-request value whose render finished.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub observed_prr_resource_version: String,
        /// The render-request value being rendered now.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub rendering_prr_resource_version: String,
        /// `init`, `clone`, `copy` or `upgrade` once the source ran.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub creation_source: String,
        /// The Kptfile's `status.conditions`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub package_conditions: Vec<PackageCondition>,
        /// `Ready` and `Rendered`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub conditions: Vec<Condition>,
    }
}
