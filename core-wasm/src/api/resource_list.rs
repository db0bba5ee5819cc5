//! KRM function `ResourceList` and results (`config.kubernetes.io/v1`), and
//! kpt's `FunctionResultList`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A ResourceList as typed JSON (the functions keep items as YAML nodes to
/// preserve formatting; this type is for results and light inspection).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResourceList {
    /// `config.kubernetes.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `ResourceList`.
    #[serde(default)]
    pub kind: String,
    /// The resources.
    #[serde(default)]
    pub items: Vec<serde_json::Value>,
    /// The function's configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_config: Option<serde_json::Value>,
    /// Results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<ResultItem>,
}

/// Severity of a result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A failure.
    #[default]
    Error,
    /// A problem that does not fail the function.
    Warning,
    /// Information.
    Info,
}

/// A result (`framework.Result` / kpt `ResultItem`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResultItem {
    /// What happened.
    pub message: String,
    /// How bad it is.
    #[serde(default)]
    pub severity: Severity,
    /// The object it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_ref: Option<ResourceRef>,
    /// The field it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<FieldRef>,
    /// The file it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileRef>,
    /// Free-form tags.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

/// `resourceRef` of a result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResourceRef {
    /// API version.
    #[serde(default)]
    pub api_version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// `field` of a result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FieldRef {
    /// Path of the field (`spec.template.downstream.repoExpr`).
    pub path: String,
    /// Current value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_value: Option<serde_json::Value>,
    /// Proposed value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_value: Option<serde_json::Value>,
}

/// `file` of a result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FileRef {
    /// Slash-separated path relative to the package.
    pub path: String,
    /// Index of the object within the file.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub index: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// kpt's `FunctionResultList` (`kpt.dev/v1`), as carried in render status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FunctionResultList {
    /// `kpt.dev/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `FunctionResultList`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Metadata.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub metadata: serde_json::Value,
    /// Overall exit code.
    #[serde(default)]
    pub exit_code: i64,
    /// One entry per function run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<serde_json::Value>,
}
