//! Readiness, and what a Kptfile contributes to a v1alpha2 PackageRevision
//! (`api/porch/v1alpha2/util.go`, `kptdata_conversion.go`). Where Go tells
//! a nil list or map from an empty one, these return `None` for nil.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::api::package_revision::v1alpha2::Source;
use crate::api::package_revision::{GitLock, Locator, PackageCondition, ReadinessGate};

/// `IsPackageCreation`: the source makes a new package (`init` or
/// `cloneFrom`), as opposed to a new revision of one (`copyFrom`,
/// `upgrade`).
pub fn is_package_creation(source: Option<&Source>) -> bool {
    source.is_some_and(|s| s.init.is_some() || s.clone_from.is_some())
}

/// `PackageRevisionIsReady`: every gate has a package condition of its
/// type with status `True` (no gates: ready).
pub fn is_ready(gates: &[ReadinessGate], conditions: &[PackageCondition]) -> bool {
    crate::api::package_revision::gates_met(gates, conditions)
}

/// `KptfileToPackageConditions`: the Kptfile's `status.conditions`; `None`
/// without a status, empty with a status that has none.
pub fn package_conditions(kptfile: &Value) -> Option<Vec<PackageCondition>> {
    let status = kptfile.get("status").filter(|s| !s.is_null())?;
    let list = status.get("conditions").and_then(Value::as_array);
    Some(
        list.into_iter()
            .flatten()
            .map(|c| PackageCondition {
                type_: text(c, "type"),
                status: text(c, "status"),
                reason: text(c, "reason"),
                message: text(c, "message"),
            })
            .collect(),
    )
}

/// `KptfileToReadinessGates`: the Kptfile's `info.readinessGates`; `None`
/// without `info`.
pub fn readiness_gates(kptfile: &Value) -> Option<Vec<ReadinessGate>> {
    let info = kptfile.get("info").filter(|s| !s.is_null())?;
    let list = info.get("readinessGates").and_then(Value::as_array);
    Some(
        list.into_iter()
            .flatten()
            .map(|g| ReadinessGate {
                condition_type: text(g, "conditionType"),
            })
            .collect(),
    )
}

/// `KptfileToPackageMetadata`: the Kptfile's own labels and annotations,
/// each `None` when absent; `None` when it has neither.
pub fn package_metadata(kptfile: &Value) -> Option<PackageMetadataMaps> {
    let meta = kptfile.get("metadata");
    let map = |key: &str| -> Option<BTreeMap<String, String>> {
        let m = meta?.get(key)?.as_object()?;
        Some(
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect(),
        )
    };
    let labels = map("labels").filter(|m| !m.is_empty());
    let annotations = map("annotations").filter(|m| !m.is_empty());
    if labels.is_none() && annotations.is_none() {
        return None;
    }
    Some(PackageMetadataMaps {
        labels,
        annotations,
    })
}

/// A package's labels and annotations, absent ones told from empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PackageMetadataMaps {
    /// The Kptfile's `metadata.labels`.
    pub labels: Option<BTreeMap<String, String>>,
    /// The Kptfile's `metadata.annotations`.
    pub annotations: Option<BTreeMap<String, String>>,
}

/// `KptLocatorToLocator`: a Kptfile `upstreamLock`-shaped locator; `None`
/// when it has no `git` part.
pub fn locator(kpt: &Value) -> Option<Locator> {
    let git = kpt.get("git").filter(|g| g.is_object())?;
    Some(Locator {
        type_: text(kpt, "type"),
        git: Some(GitLock {
            repo: text(git, "repo"),
            directory: text(git, "directory"),
            r#ref: text(git, "ref"),
            commit: text(git, "commit"),
        }),
    })
}

/// `kptfileFromResources`: the root `Kptfile` of a package's files as
/// JSON; `Null` (Go's zero value) when there is none or it is empty, an
/// error naming it when it does not parse as a mapping.
pub fn kptfile_from_resources(files: &BTreeMap<String, String>) -> Result<Value, String> {
    let Some(text) = files.get("Kptfile").filter(|t| !t.trim().is_empty()) else {
        return Ok(Value::Null);
    };
    // A reconcile run by replay (the component) reads the same Kptfile in
    // every step after its content was read: the last one read is kept.
    thread_local! {
        static LAST: std::cell::RefCell<Option<(String, Result<Value, String>)>> =
            const { std::cell::RefCell::new(None) };
    }
    if let Some(hit) = LAST.with(|last| {
        last.borrow()
            .as_ref()
            .filter(|(t, _)| t == text)
            .map(|(_, v)| v.clone())
    }) {
        return hit;
    }
    let v = parse_kptfile(text);
    LAST.with(|last| *last.borrow_mut() = Some((text.clone(), v.clone())));
    v
}

fn parse_kptfile(text: &str) -> Result<Value, String> {
    let doc = crate::yaml::parse_document(text).map_err(|e| format!("Kptfile: {e}"))?;
    let v = crate::yaml::to_json(&doc).map_err(|e| format!("Kptfile: {e}"))?;
    if !v.is_object() {
        return Err("Kptfile: not a mapping".to_string());
    }
    Ok(v)
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}
