//! PackageVariant `config.porch.kpt.dev/v1alpha1`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::kptfile::Pipeline;
use super::meta::{Condition, ObjectMeta};
use super::package_revision::RenderStatus;

/// The API group and version of PackageVariant.
pub const API_VERSION: &str = "config.porch.kpt.dev/v1alpha1";
/// The kind.
pub const KIND: &str = "PackageVariant";
/// Finalizer the controller keeps on every PackageVariant.
pub const FINALIZER: &str = "config.porch.kpt.dev/packagevariants";

/// A PackageVariant object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageVariant {
    /// `config.porch.kpt.dev/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `PackageVariant`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Desired state.
    #[serde(default)]
    pub spec: PackageVariantSpec,
    /// Observed state.
    #[serde(default, skip_serializing_if = "PackageVariantStatus::is_empty")]
    pub status: PackageVariantStatus,
}

/// `spec` of a PackageVariant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageVariantSpec {
    /// The package to clone from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// Where the variant lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downstream: Option<Downstream>,
    /// `adoptExisting` or `adoptNone` (default).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub adoption_policy: String,
    /// `delete` (default) or `orphan`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub deletion_policy: String,
    /// Labels put on downstream PackageRevisions.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations put on downstream PackageRevisions.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Edits to `package-context.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_context: Option<PackageContext>,
    /// Functions prepended to the Kptfile pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Pipeline>,
    /// Which in-cluster objects satisfy injection points.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub injectors: Vec<InjectionSelector>,
}

/// `spec.upstream`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Upstream {
    /// Repository name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repo: String,
    /// Package name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub package: String,
    /// Published revision number (0 = not given).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub revision: i64,
    /// Workspace name of the upstream revision.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workspace_name: String,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// `spec.downstream`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Downstream {
    /// Repository name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repo: String,
    /// Package name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub package: String,
}

/// Adoption policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdoptionPolicy {
    /// Take ownership of matching unowned PackageRevisions.
    AdoptExisting,
    /// Only manage PackageRevisions this variant created.
    AdoptNone,
}

/// Deletion policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletionPolicy {
    /// Delete drafts and propose deletion of published revisions.
    Delete,
    /// Only drop ownership.
    Orphan,
}

impl AdoptionPolicy {
    /// The spec value of this policy (`adoptExisting` / `adoptNone`).
    pub fn as_str(self) -> &'static str {
        match self {
            AdoptionPolicy::AdoptExisting => "adoptExisting",
            AdoptionPolicy::AdoptNone => "adoptNone",
        }
    }

    /// Reads a spec value; `""` is the default `adoptNone`, an unknown value
    /// is `None`.
    pub fn from_spec(value: &str) -> Option<Self> {
        match value {
            "" | "adoptNone" => Some(AdoptionPolicy::AdoptNone),
            "adoptExisting" => Some(AdoptionPolicy::AdoptExisting),
            _ => None,
        }
    }
}

impl DeletionPolicy {
    /// The spec value of this policy (`delete` / `orphan`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeletionPolicy::Delete => "delete",
            DeletionPolicy::Orphan => "orphan",
        }
    }

    /// Reads a spec value; `""` is the default `delete`, an unknown value is
    /// `None`.
    pub fn from_spec(value: &str) -> Option<Self> {
        match value {
            "" | "delete" => Some(DeletionPolicy::Delete),
            "orphan" => Some(DeletionPolicy::Orphan),
            _ => None,
        }
    }
}

/// `spec.packageContext`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageContext {
    /// Keys set in `package-context.yaml`'s data.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Keys removed from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_keys: Vec<String>,
}

/// `spec.injectors[]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InjectionSelector {
    /// API group to match (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// API version to match (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Kind to match (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name of the in-cluster object.
    #[serde(default)]
    pub name: String,
}

/// `status` of a PackageVariant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PackageVariantStatus {
    /// `Stalled` and `Ready`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Downstream PackageRevisions and their render results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub downstream_targets: Vec<DownstreamTarget>,
}

impl PackageVariantStatus {
    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.downstream_targets.is_empty()
    }
}

/// `status.downstreamTargets[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DownstreamTarget {
    /// PackageRevision name.
    #[serde(default)]
    pub name: String,
    /// Result of the last render of its resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_status: Option<RenderStatus>,
}
