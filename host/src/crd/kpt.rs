//! kpt's function results (`kpt.dev/v1` `FunctionResultList` items), typed
//! for the schema of `status.downstreamTargets[].renderStatus` (the core
//! keeps the items as free-form JSON).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One function's result (`kptfile/v1.Result`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FunctionResult {
    /// Image of the function.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image: String,
    /// Executable of the function.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub exec: String,
    /// What the function wrote to stderr.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Exit code of the function.
    pub exit_code: i64,
    /// Structured results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<ResultItem>,
}

/// One structured result (`framework.Result`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResultItem {
    /// What happened.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `error`, `warning` or `info`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub severity: String,
    /// The object concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_ref: Option<ResourceRef>,
    /// The field concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<Field>,
    /// The file concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<File>,
    /// Free-form tags.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

/// An object reference: the API's, every field `omitempty`.
pub use pv_core::api::resource_list::ResourceRef;

/// A field reference.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Field {
    /// Path of the field.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Current value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_value: String,
    /// Proposed value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub proposed_value: String,
}

/// A file reference.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct File {
    /// Path relative to the package.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Index of the object in the file.
    #[serde(default)]
    pub index: i64,
}
