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

/// The fields of kpt's `KptFile` Go struct and the structs under it, in
/// struct order: what a strict decode accepts and the order a re-marshal
/// writes. One table for both kpts a Kptfile meets here: the one Porch
/// pins (its package writes and merges) and kpt at HEAD (`fn render`'s
/// status), which adds `configRef` and `when` to a function and `when`
/// and `skipped` to a render step.
pub mod fields {
    /// Which kpt's structs.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Schema {
        /// The kpt Porch pins (`v1.0.0-beta.62.1`'s API).
        Porch,
        /// kpt at HEAD, whose render writes the status.
        Head,
    }

    /// `KptFile`.
    pub const TOP: &[&str] = &[
        "apiVersion",
        "kind",
        "metadata",
        "upstream",
        "upstreamLock",
        "info",
        "pipeline",
        "inventory",
        "status",
    ];
    /// `Function` at HEAD.
    pub const FUNCTION: &[&str] = &[
        "image",
        "exec",
        "configPath",
        "configMap",
        "configRef",
        "name",
        "tag",
        "selectors",
        "exclude",
        "when",
    ];
    /// `Function` as Porch's kpt has it.
    const FUNCTION_PORCH: &[&str] = &[
        "image",
        "exec",
        "configPath",
        "configMap",
        "name",
        "tag",
        "selectors",
        "exclude",
    ];
    /// `ResourceReference` (a function's `configRef`).
    pub const REFERENCE: &[&str] = &["apiVersion", "kind", "name", "namespace"];
    /// `Selector`.
    pub const SELECTOR: &[&str] = &[
        "apiVersion",
        "kind",
        "name",
        "namespace",
        "labels",
        "annotations",
    ];
    /// `PackageInfo`.
    pub const INFO: &[&str] = &[
        "site",
        "emails",
        "license",
        "licenseFile",
        "description",
        "keywords",
        "man",
        "readinessGates",
    ];
    /// A render step (`PipelineStepResult`) at HEAD.
    const STEP: &[&str] = &[
        "name",
        "image",
        "exec",
        "executionError",
        "stderr",
        "exitCode",
        "results",
        "errorResults",
        "when",
        "skipped",
    ];
    /// A render step as Porch's kpt has it.
    const STEP_PORCH: &[&str] = &[
        "name",
        "image",
        "exec",
        "executionError",
        "stderr",
        "exitCode",
        "results",
        "errorResults",
    ];
    /// A function result (`ResultItem`).
    pub const RESULT: &[&str] = &["message", "severity", "resourceRef", "field", "file"];

    /// Pointer-typed struct fields: Go writes them even when empty
    /// (`upstream: {}`).
    pub const POINTERS: &[&str] = &[
        "upstream",
        "upstreamLock",
        "info",
        "pipeline",
        "inventory",
        "status",
        "upstream.git",
        "upstreamLock.git",
        "status.renderStatus",
    ];

    /// The struct fields of the object at `path` (`""` is the Kptfile,
    /// `pipeline.mutators[]` a function, `status.conditions[]` a
    /// condition), in order; `None` where the path is a map or unknown.
    pub fn of(path: &str, schema: Schema) -> Option<&'static [&'static str]> {
        let head = schema == Schema::Head;
        Some(match path {
            "" => TOP,
            "metadata" => &["name", "namespace", "labels", "annotations"],
            "upstream" => &["type", "git", "updateStrategy"],
            "upstream.git" => &["repo", "directory", "ref"],
            "upstreamLock" => &["type", "git"],
            "upstreamLock.git" => &["repo", "directory", "ref", "commit"],
            "info" => INFO,
            "info.readinessGates[]" => &["conditionType"],
            "pipeline" => &["mutators", "validators"],
            "pipeline.mutators[]" | "pipeline.validators[]" if head => FUNCTION,
            "pipeline.mutators[]" | "pipeline.validators[]" => FUNCTION_PORCH,
            "inventory" => &["namespace", "name", "inventoryID", "labels", "annotations"],
            "status" => &["conditions", "renderStatus"],
            "status.conditions[]" => &["type", "status", "reason", "message"],
            "status.renderStatus" => &["mutationSteps", "validationSteps", "errorSummary"],
            "status.renderStatus.mutationSteps[]" | "status.renderStatus.validationSteps[]" => {
                if head {
                    STEP
                } else {
                    STEP_PORCH
                }
            }
            "pipeline.mutators[].configRef" | "pipeline.validators[].configRef" => REFERENCE,
            "pipeline.mutators[].selectors[]"
            | "pipeline.mutators[].exclude[]"
            | "pipeline.validators[].selectors[]"
            | "pipeline.validators[].exclude[]" => SELECTOR,
            p => {
                // A result of a step, and its parts.
                let (step, rest) = p.split_once("Steps[].")?;
                if !matches!(
                    step,
                    "status.renderStatus.mutation" | "status.renderStatus.validation"
                ) {
                    return None;
                }
                match rest {
                    "results[]" | "errorResults[]" => RESULT,
                    "results[].resourceRef" | "errorResults[].resourceRef" => REFERENCE,
                    "results[].field" | "errorResults[].field" => {
                        &["path", "currentValue", "proposedValue"]
                    }
                    "results[].file" | "errorResults[].file" => &["path", "index"],
                    _ => return None,
                }
            }
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_two_kpts_differ_only_in_functions_and_steps() {
            let step = "status.renderStatus.validationSteps[]";
            assert!(of(step, Schema::Head).unwrap().contains(&"skipped"));
            assert!(!of(step, Schema::Porch).unwrap().contains(&"skipped"));
            assert!(of("pipeline.mutators[]", Schema::Head)
                .unwrap()
                .contains(&"configRef"));
            assert!(!of("pipeline.mutators[]", Schema::Porch)
                .unwrap()
                .contains(&"configRef"));
            assert_eq!(of("info", Schema::Porch), of("info", Schema::Head));
            assert_eq!(
                of(
                    "status.renderStatus.mutationSteps[].errorResults[].file",
                    Schema::Porch
                ),
                Some(&["path", "index"][..])
            );
            // A map the user writes is not a struct, whatever its keys.
            assert_eq!(
                of("pipeline.mutators[].configMap.field", Schema::Head),
                None
            );
            assert_eq!(of("metadata.labels", Schema::Head), None);
        }
    }
}
