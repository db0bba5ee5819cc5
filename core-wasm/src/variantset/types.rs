//! PackageVariantSet `config.porch.kpt.dev/v1alpha2` (every field of the
//! CRD), its unserved `v1alpha1` shape, Porch's `Repository`
//! `config.porch.kpt.dev/v1alpha1`, and the generic cluster object that
//! `objectSelector` targets are drawn from.
//!
//! Optional scalars of the template are `Option<String>` because the Go
//! types are pointers and validation tells "absent" from "empty" (for
//! example `downstream.repo` together with `downstream.repoExpr` is an error
//! even when one of them is `""`). Lists that validation tells apart from
//! "absent" (`targets[].repositories`) are `Option<Vec<_>>` for the same
//! reason.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::selector::LabelSelector;
use crate::api::{Condition, Function, ObjectMeta, Upstream};

/// The API group of PackageVariantSet, PackageVariant and Repository.
pub const API_GROUP: &str = "config.porch.kpt.dev";
/// The served and stored version of PackageVariantSet.
pub const API_VERSION: &str = "config.porch.kpt.dev/v1alpha2";
/// The kind.
pub const KIND: &str = "PackageVariantSet";
/// API version of Porch's `Repository`.
pub const REPOSITORY_API_VERSION: &str = "config.porch.kpt.dev/v1alpha1";
/// Kind of Porch's `Repository`.
pub const REPOSITORY_KIND: &str = "Repository";

/// A PackageVariantSet object (`v1alpha2`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageVariantSet {
    /// `config.porch.kpt.dev/v1alpha2`.
    #[serde(default)]
    pub api_version: String,
    /// `PackageVariantSet`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Desired state.
    #[serde(default)]
    pub spec: PackageVariantSetSpec,
    /// Observed state.
    #[serde(default, skip_serializing_if = "PackageVariantSetStatus::is_empty")]
    pub status: PackageVariantSetStatus,
}

/// `spec` of a PackageVariantSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageVariantSetSpec {
    /// The package every generated PackageVariant clones (the same type as a
    /// PackageVariant's `spec.upstream`; copied verbatim into each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// Where the variants go, each with an optional template.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Target>,
    /// How a change reaches the variants: in ordered steps (porch-variants'
    /// extension; absent, every variant is changed at once as upstream
    /// does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_strategy: Option<RolloutStrategy>,
}

/// `spec.rolloutStrategy`: a change (a new upstream revision, a template
/// change) is written to the variants step by step. A step starts when
/// every variant of the steps before it has its new revision published
/// (and Ready, with `requireReady`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// Holds every step: no variant is changed while true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// A variant is done only when its published downstream revision's
    /// readiness gates are all `True`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_ready: bool,
    /// A CEL expression over `revision` (the published downstream
    /// PackageRevision, as the API serves it) that must be true for a
    /// variant to be done, e.g. `has(revision.status.conditions) &&
    /// revision.status.conditions.exists(c, c.type == 'Ready' && c.status
    /// == 'True')`; an expression that fails to evaluate (a missing field
    /// read without `has`) makes the variant failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_when: Option<String>,
    /// The steps, in order. A variant belongs to the first step whose
    /// selector matches its labels (its repository's or target object's
    /// labels and the labels its template gives); variants no step selects
    /// form a last, implicit step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<RolloutStep>,
}

/// `spec.rolloutStrategy.steps[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RolloutStep {
    /// The step's name (unique in the set).
    #[serde(default)]
    pub name: String,
    /// Which variants the step holds; absent or empty: every variant not
    /// in an earlier step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// How many of the step's variants may be changing at once: a count
    /// (`2`) or a percentage of the step (`"25%"`, rounded up); absent:
    /// all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "int_or_string"))]
    pub max_update: Option<serde_json::Value>,
}

/// The schema of a Kubernetes `IntOrString`.
#[cfg(feature = "schema")]
fn int_or_string(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"x-kubernetes-int-or-string": true})
}

/// `spec.targets[]`: exactly one of `repositories`, `repositorySelector`
/// and `objectSelector`, plus an optional template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// Explicit repositories (option 1). `Some(vec![])` is an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repositories: Option<Vec<RepositoryTarget>>,
    /// Repositories chosen by label (option 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_selector: Option<LabelSelector>,
    /// Arbitrary objects chosen by kind and label (option 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_selector: Option<ObjectSelector>,
    /// How each generated PackageVariant's spec is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<PackageVariantTemplate>,
}

/// `spec.targets[].repositories[]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RepositoryTarget {
    /// Repository name (required).
    #[serde(default)]
    pub name: String,
    /// Package names in that repository; `[upstream.package]` when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub package_names: Vec<String>,
}

/// `spec.targets[].objectSelector`: a label selector over objects of one
/// kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ObjectSelector {
    /// `matchLabels` / `matchExpressions` (inlined).
    #[serde(flatten)]
    pub selector: LabelSelector,
    /// API version of the selected objects (required).
    #[serde(default)]
    pub api_version: String,
    /// Kind of the selected objects (required).
    #[serde(default)]
    pub kind: String,
    /// Declared by the CRD but ignored by the controller (as upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `spec.targets[].template`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageVariantTemplate {
    /// Downstream repository and package (static or CEL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downstream: Option<DownstreamTemplate>,
    /// Copied to the PackageVariant when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adoption_policy: Option<String>,
    /// Copied to the PackageVariant when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<String>,
    /// Static labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Labels overlaid from expressions, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub label_exprs: Vec<MapExpr>,
    /// Static annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Annotations overlaid from expressions, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotation_exprs: Vec<MapExpr>,
    /// Package context edits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_context: Option<PackageContextTemplate>,
    /// Functions prepended to the downstream pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<PipelineTemplate>,
    /// Injection selectors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub injectors: Vec<InjectionSelectorTemplate>,
}

/// `template.downstream`: each of repo and package given at most once,
/// statically or as an expression.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DownstreamTemplate {
    /// Static repository name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// Static package name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// CEL for the repository name (`repository` is not yet available).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_expr: Option<String>,
    /// CEL for the package name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_expr: Option<String>,
}

/// One map entry given statically or by expression (key and value each at
/// most once).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct MapExpr {
    /// Static key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Static value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// CEL for the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_expr: Option<String>,
    /// CEL for the value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_expr: Option<String>,
}

/// `template.packageContext`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageContextTemplate {
    /// Static data.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Static keys to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_keys: Vec<String>,
    /// Data overlaid from expressions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_exprs: Vec<MapExpr>,
    /// CEL for further keys to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_key_exprs: Vec<String>,
}

/// `template.pipeline`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PipelineTemplate {
    /// Validator functions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validators: Vec<FunctionTemplate>,
    /// Mutator functions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mutators: Vec<FunctionTemplate>,
}

/// A pipeline function with `configMap` entries from expressions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FunctionTemplate {
    /// The function (`image`, `exec`, `configPath`, `configMap`, `name`,
    /// `tag`, `selectors`, `exclude`), inlined.
    #[serde(flatten)]
    pub function: Function,
    /// `configMap` entries overlaid from expressions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_map_exprs: Vec<MapExpr>,
}

/// `template.injectors[]`: exactly one of `name` and `nameExpr`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InjectionSelectorTemplate {
    /// API group to match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// API version to match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Kind to match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Static name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// CEL for the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_expr: Option<String>,
}

/// `status` of a PackageVariantSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageVariantSetStatus {
    /// `Stalled` and `Ready` (and `Rollout` with a rollout strategy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Where a staged rollout stands (with a rollout strategy only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutStatus>,
}

impl PackageVariantSetStatus {
    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.rollout.is_none()
    }
}

/// `status.rollout`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// The step being rolled out; empty when every step is done.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_step: String,
    /// Each step's counts, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<RolloutStepStatus>,
    /// The variants that stopped the rollout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// `status.rollout.steps[]`: how many of the step's variants are in each
/// state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RolloutStepStatus {
    /// The step's name.
    pub name: String,
    /// Variants in the step.
    pub variants: i64,
    /// Waiting for the change.
    pub pending: i64,
    /// Changed, their new revision not yet published (or Ready).
    pub updating: i64,
    /// Changed and published.
    pub done: i64,
    /// Changed and failing.
    pub failed: i64,
}

pub use crate::api::package_revision::v1alpha2::SecretRef;
pub use crate::api::repository::{GitRepository, OciRepository};
/// Porch's `Repository`: the API's type. Only its metadata reaches
/// templates.
pub use crate::api::repository::{Repository, RepositorySpec};

/// Any cluster object an `objectSelector` may select: only its type and
/// metadata are read (the rest is dropped when deserializing), and only
/// name, namespace, labels and annotations ever reach a template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterObject {
    /// API version, e.g. `v1` or `apps/v1`.
    #[serde(default)]
    pub api_version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
}

/// The unserved `v1alpha1` shape of PackageVariantSet, kept so that stored
/// objects of that version can be read; no controller implements it.
pub mod v1alpha1 {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use super::LabelSelector;
    use crate::api::{Condition, ObjectMeta};

    /// The version string.
    pub const API_VERSION: &str = "config.porch.kpt.dev/v1alpha1";

    /// A `v1alpha1` PackageVariantSet.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct PackageVariantSet {
        /// API version.
        #[serde(default)]
        pub api_version: String,
        /// Kind.
        #[serde(default)]
        pub kind: String,
        /// Metadata.
        #[serde(default)]
        pub metadata: ObjectMeta,
        /// Desired state.
        #[serde(default)]
        pub spec: PackageVariantSetSpec,
        /// Observed state.
        #[serde(default)]
        pub status: PackageVariantSetStatus,
    }

    /// `spec`.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct PackageVariantSetSpec {
        /// The upstream package.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub upstream: Option<Upstream>,
        /// Targets.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub targets: Vec<Target>,
        /// Adoption policy for all variants.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub adoption_policy: String,
        /// Deletion policy for all variants.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub deletion_policy: String,
        /// Labels for all variants.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        pub labels: BTreeMap<String, String>,
        /// Annotations for all variants.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        pub annotations: BTreeMap<String, String>,
    }

    /// `spec.upstream`.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct Upstream {
        /// Repository and package name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub package: Option<Package>,
        /// Revision number.
        #[serde(default, skip_serializing_if = "is_zero")]
        pub revision: i64,
        /// Git ref (Go field `Tag`).
        #[serde(default, rename = "ref", skip_serializing_if = "String::is_empty")]
        pub ref_: String,
    }

    fn is_zero(v: &i64) -> bool {
        *v == 0
    }

    /// A package in a repository.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    pub struct Package {
        /// Repository name.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub repo: String,
        /// Package name.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub name: String,
    }

    /// `spec.targets[]`.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct Target {
        /// One explicit package.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub package: Option<Package>,
        /// Repositories by label.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub repositories: Option<LabelSelector>,
        /// Objects by selector.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub objects: Option<ObjectSelector>,
        /// How downstream package names are formed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub package_name: Option<PackageName>,
    }

    /// `targets[].objects`.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct ObjectSelector {
        /// Selectors (any matches).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub selectors: Vec<Selector>,
        /// Where the repository name comes from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub repo_name: Option<ValueOrFromField>,
    }

    /// One object selector.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct Selector {
        /// API version.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub api_version: String,
        /// Kind.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub kind: String,
        /// Name.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub name: String,
        /// Namespace.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub namespace: String,
        /// Label selector.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub label_selector: Option<LabelSelector>,
        /// Annotations that must match.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        pub annotations: BTreeMap<String, String>,
    }

    /// `packageName`.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct PackageName {
        /// Base name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub base_name: Option<ValueOrFromField>,
        /// Suffix.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub name_suffix: Option<ValueOrFromField>,
        /// Prefix.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub name_prefix: Option<ValueOrFromField>,
    }

    /// A literal value or a field path of the selected object.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct ValueOrFromField {
        /// Literal value.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub value: String,
        /// Field path.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub from_field: String,
    }

    /// `status`.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(rename_all = "camelCase")]
    pub struct PackageVariantSetStatus {
        /// Conditions.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub conditions: Vec<Condition>,
    }
}
