//! Results of a function (`framework.Result` as kpt records them), with
//! Go's `omitempty` rules: a severity the function did not send stays
//! absent, a `resourceRef` that is present but empty prints as `{}`, and a
//! file index of 0 is omitted while -1 prints.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One result of a function.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FnResult {
    /// What happened.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `error`, `warning` or `info`; absent when the function sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// The object it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_ref: Option<ResourceRef>,
    /// The field it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<Field>,
    /// The file it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileRef>,
    /// Free-form tags.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

impl FnResult {
    /// A result with a message and a severity.
    pub fn new(severity: &str, message: impl Into<String>) -> FnResult {
        FnResult {
            message: message.into(),
            severity: Some(severity.to_string()),
            ..FnResult::default()
        }
    }

    /// An `error` result.
    pub fn error(message: impl Into<String>) -> FnResult {
        FnResult::new("error", message)
    }

    /// A `warning` result.
    pub fn warning(message: impl Into<String>) -> FnResult {
        FnResult::new("warning", message)
    }

    /// An `info` result.
    pub fn info(message: impl Into<String>) -> FnResult {
        FnResult::new("info", message)
    }

    /// Whether the severity is `error`.
    pub fn is_error(&self) -> bool {
        self.severity.as_deref() == Some("error")
    }
}

/// `resourceRef` (kyaml's `ResourceIdentifier`: every field `omitempty`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRef {
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
}

/// `field` of a result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Field {
    /// Dotted path of the field.
    #[serde(default, skip_serializing_if = "String::is_empty")]
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
pub struct FileRef {
    /// Slash-separated path relative to the package.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Position of the object in the file (omitted when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub index: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}
