//! The Kptfile `kpt.dev/v1` (the parts the variant logic compares and
//! writes). Unknown fields are kept so a typed round trip loses nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A Kptfile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Kptfile {
    /// `kpt.dev/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `Kptfile`.
    #[serde(default)]
    pub kind: String,
    /// Metadata (name, annotations, …) as JSON.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub metadata: serde_json::Value,
    /// Where the package came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<serde_json::Value>,
    /// The exact upstream commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_lock: Option<serde_json::Value>,
    /// Package information, including `readinessGates`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<serde_json::Value>,
    /// Functions run on render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Pipeline>,
    /// Inventory for `kpt live`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<serde_json::Value>,
    /// Conditions and render status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
    /// Anything else.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// `pipeline`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Pipeline {
    /// Functions that change resources, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mutators: Vec<Function>,
    /// Functions that check resources, after mutators.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validators: Vec<Function>,
}

impl Pipeline {
    /// Whether there is no function at all.
    pub fn is_empty(&self) -> bool {
        self.mutators.is_empty() && self.validators.is_empty()
    }
}

/// A function of a pipeline (`kptfilev1.Function`), with Go's JSON field
/// set and `omitempty` rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Function {
    /// Container image.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image: String,
    /// Executable (`--allow-exec`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub exec: String,
    /// In-package function config file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub config_path: String,
    /// Inline function config.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config_map: BTreeMap<String, String>,
    /// A resource of the package used as the function config (kpt's
    /// newer `configRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_ref: Option<ResourceReference>,
    /// Name (merge key).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Tag or semver constraint.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tag: String,
    /// Resources the function sees.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<Selector>,
    /// Resources the function does not see.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<Selector>,
    /// A CEL condition over the step's input (`resources`): the function
    /// runs only when it is true (kpt's newer `when`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub when: String,
}

/// `kptfilev1.ResourceReference`: a resource of the package, by kind and
/// name, and by API version and namespace when they are given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResourceReference {
    /// API version (any when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind (required).
    #[serde(default)]
    pub kind: String,
    /// Name (required).
    #[serde(default)]
    pub name: String,
    /// Namespace (any when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

impl ResourceReference {
    /// Whether a resource with these identity fields is the one referenced.
    pub fn matches(&self, api_version: &str, kind: &str, name: &str, namespace: &str) -> bool {
        (self.api_version.is_empty() || self.api_version == api_version)
            && self.kind == kind
            && self.name == name
            && (self.namespace.is_empty() || self.namespace == namespace)
    }
}

/// A resource selector of a function.
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
    /// Labels that must match.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations that must match.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}
