//! Porch's `config.porch.kpt.dev/v1alpha1` FunctionConfig
//! (`api/porchconfig/v1alpha1/function_config_types.go`): which executor
//! runs the functions of an image, by registry prefix and tag. The fields
//! the choice reads are typed; the pod executor's tuning (time to live,
//! queue lengths, template overrides) is kept as given, for Porch's
//! function runner.

use serde::{Deserialize, Serialize};

use super::meta::ObjectMeta;

/// API version of the kind.
pub const API_VERSION: &str = "config.porch.kpt.dev/v1alpha1";
/// The kind.
pub const KIND: &str = "FunctionConfig";

/// A FunctionConfig.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionConfig {
    /// `config.porch.kpt.dev/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `FunctionConfig`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Desired state.
    #[serde(default)]
    pub spec: FunctionConfigSpec,
}

/// `spec`: at least one executor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionConfigSpec {
    /// The image's name without registry or tag (`apply-setters`).
    #[serde(default)]
    pub image: String,
    /// Registry prefixes the image may come from; `""` is the default
    /// catalog registry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<String>,
    /// Run in a pod (Porch's function runner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_executor: Option<PodExecutor>,
    /// Run a binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_executor: Option<BinaryExecutor>,
    /// Run a function built into the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go_executor: Option<GoExecutor>,
}

/// `spec.podExecutor`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodExecutor {
    /// Semver constraints of the tags it runs (`*`: all; none: no tag).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The rest (`timeToLive`, `maxParallelExecutions`,
    /// `preferredMaxQueueLength`, `templateOverrides`), as given.
    #[serde(flatten)]
    pub tuning: serde_json::Map<String, serde_json::Value>,
}

/// `spec.binaryExecutor`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BinaryExecutor {
    /// Semver constraints of the tags it runs.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The binary: absolute, or relative to the functions directory.
    #[serde(default)]
    pub path: String,
}

/// `spec.goExecutor`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoExecutor {
    /// Semver constraints of the tags it runs.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The builtin's name (Porch falls back to the object's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl FunctionConfig {
    /// Why the object is not a usable FunctionConfig (its field named),
    /// as the CRD's validation would refuse it.
    pub fn invalid(&self) -> Option<String> {
        let s = &self.spec;
        if s.image.is_empty() {
            return Some("spec.image: must not be empty".into());
        }
        if s.pod_executor.is_none() && s.binary_executor.is_none() && s.go_executor.is_none() {
            return Some("spec: At least one configuration must be specified".into());
        }
        if let Some(b) = &s.binary_executor {
            if b.tags.is_empty() {
                return Some("spec.binaryExecutor.tags: must have at least 1 item".into());
            }
            if b.path.is_empty() {
                return Some("spec.binaryExecutor.path: must not be empty".into());
            }
        }
        if s.go_executor.as_ref().is_some_and(|g| g.tags.is_empty()) {
            return Some("spec.goExecutor.tags: must have at least 1 item".into());
        }
        None
    }
}
