//! PackageVariantSet `config.porch.kpt.dev/v1alpha1`: the old API, kept in
//! the CRD unserved (as upstream keeps it) and implemented by no
//! controller. Typed only for its schema.

use std::collections::BTreeMap;

use pv_core::variantset::selector::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec` of a v1alpha1 PackageVariantSet.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageVariantSetSpec {
    /// The package the variants are cloned from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// Where the variants go.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Target>,
    /// `adoptExisting` or `adoptNone`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub adoption_policy: String,
    /// `delete` or `orphan`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub deletion_policy: String,
    /// Labels of the generated variants.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations of the generated variants.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// `spec.upstream`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Upstream {
    /// Repository and package name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<Package>,
    /// Revision number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// Git tag or branch.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// A package by repository and name.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Package {
    /// Repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// Package name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `spec.targets[]`: a package, a repository selector or object selectors.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// Option 1: one package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<Package>,
    /// Option 2: repositories by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repositories: Option<LabelSelector>,
    /// Option 3: arbitrary objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<ObjectSelector>,
    /// How the downstream package is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_name: Option<PackageName>,
}

/// `targets[].objects`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectSelector {
    /// Object selectors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<Selector>,
    /// Repository name of each target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_name: Option<ValueOrFromField>,
}

/// One object selector.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Selector {
    /// API version of the targets.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of the targets.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name of the targets.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Namespace of the targets.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Labels of the targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Annotations of the targets.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// `packageName`: base name, prefix and suffix.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
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

/// A literal value or a field path of the target object.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValueOrFromField {
    /// Literal.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// Field path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from_field: String,
}
