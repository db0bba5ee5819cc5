//! The `config.porch.kpt.dev/v1alpha1` Repository, as upstream's
//! `api/porchconfig/v1alpha1` types define it (the CRD drift test compares
//! them). The variant controllers read Repositories through the smaller
//! `variantset::Repository` view; this is the whole object, for the
//! PackageRevision and Repository controllers.

use serde::{Deserialize, Serialize};

use super::meta::{Condition, ObjectMeta};
use super::package_revision::v1alpha2::SecretRef;

/// API version of the kind.
pub const API_VERSION: &str = "config.porch.kpt.dev/v1alpha1";

/// A Repository.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Repository {
    /// `config.porch.kpt.dev/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `Repository`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Desired state.
    #[serde(default)]
    pub spec: RepositorySpec,
    /// Observed state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RepositoryStatus>,
}

/// `spec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RepositorySpec {
    /// What the repository holds, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// `git` or `oci`.
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// Deprecated; only `Package` is valid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
    /// Whether the packages are deployment-ready.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deployment: bool,
    /// The Git repository (`type: git`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitRepository>,
    /// The OCI registry (`type: oci`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<OciRepository>,
    /// When the repository is synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<RepositorySync>,
}

/// `spec.git`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GitRepository {
    /// Address of the repository (required by the API; read leniently:
    /// local mode's Repositories name none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repo: String,
    /// Branch of the published packages (default `main`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub branch: String,
    /// Create the branch when it does not exist.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub create_branch: bool,
    /// Directory of the packages in the repository.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub directory: String,
    /// Secret with the credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretRef>,
    /// Commit author.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub author: String,
    /// Commit author's e-mail.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
}

/// `spec.oci`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OciRepository {
    /// Registry address (required by the API).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub registry: String,
    /// Secret with the credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretRef>,
}

/// `spec.sync`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RepositorySync {
    /// Cron schedule of periodic syncs (`*/10 * * * *`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub schedule: String,
    /// A one-time sync at this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub run_once_at: Option<String>,
}

/// `status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RepositoryStatus {
    /// `Ready`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Commit of the last sync.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub git_commit_hash: String,
    /// Time of the last full sync (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_full_sync_time: Option<String>,
    /// Time of the next scheduled full sync (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub next_full_sync_time: Option<String>,
    /// `metadata.generation` of the last reconcile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The `spec.sync.runOnceAt` already acted on (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub observed_run_once_at: Option<String>,
    /// Packages in the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_count: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_repository_round_trips() {
        let text = r#"{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"Repository","metadata":{"name":"blueprints","namespace":"default"},"spec":{"type":"git","content":"Package","deployment":true,"git":{"repo":"https://example.com/b.git","branch":"main","directory":"pkgs","secretRef":{"name":"creds"}},"sync":{"schedule":"*/10 * * * *"}},"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"Ready","message":""}],"packageCount":3}}"#;
        let repo: Repository = serde_json::from_str(text).unwrap();
        assert_eq!(repo.spec.git.as_ref().unwrap().directory, "pkgs");
        assert_eq!(repo.status.as_ref().unwrap().package_count, Some(3));
        let back: serde_json::Value = serde_json::to_value(&repo).unwrap();
        let original: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(back, original);
    }
}
