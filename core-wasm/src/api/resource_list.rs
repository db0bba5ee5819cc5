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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// A failure.
    Error,
    /// A problem that does not fail the function.
    Warning,
    /// Information.
    Info,
}

impl Severity {
    /// The name results carry: `error`, `warning`, `info`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One result of a function (`framework.Result`, kpt's `ResultItem`),
/// with Go's `omitempty` rules: a severity the function did not send stays
/// absent, a `resourceRef` that is present but empty prints as `{}`, and a
/// file index of 0 is omitted while -1 prints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResultItem {
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

impl ResultItem {
    /// A result with a severity and a message.
    pub fn new(severity: Severity, message: impl Into<String>) -> ResultItem {
        ResultItem {
            message: message.into(),
            severity: Some(severity.as_str().to_string()),
            ..ResultItem::default()
        }
    }

    /// An `error` result.
    pub fn error(message: impl Into<String>) -> ResultItem {
        ResultItem::new(Severity::Error, message)
    }

    /// A `warning` result.
    pub fn warning(message: impl Into<String>) -> ResultItem {
        ResultItem::new(Severity::Warning, message)
    }

    /// An `info` result.
    pub fn info(message: impl Into<String>) -> ResultItem {
        ResultItem::new(Severity::Info, message)
    }

    /// Whether the severity is `error`.
    pub fn is_error(&self) -> bool {
        self.severity.as_deref() == Some("error")
    }
}

/// `resourceRef` (kyaml's `ResourceIdentifier`: every field `omitempty`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Field {
    /// Dotted path of the field (`spec.template.downstream.repoExpr`).
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
