//! The field indexes the controller registers on its cache
//! (`PRC/fieldindex.go`, §11.3 of the reference): one per non-metadata
//! selectable field, so the latest-revision recompute can list a package's
//! revisions with field selectors.

use std::collections::BTreeMap;

use crate::api::package_revision::v1alpha2::{PackageRevision, SELECTABLE_FIELDS};

/// The indexed fields, in registration order.
pub const INDEXED_FIELDS: [&str; 5] = [
    "spec.lifecycle",
    "spec.repository",
    "spec.packageName",
    "spec.workspaceName",
    "status.revision",
];

/// The index value of `field` for `pr` (the extractor: the field as a
/// string; `status.revision` in decimal, `"0"` when unset), or `None` for a
/// field that has no index.
pub fn index_value(pr: &PackageRevision, field: &str) -> Option<String> {
    Some(match field {
        "spec.lifecycle" => serde_json::to_value(pr.spec.lifecycle)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        "spec.repository" => pr.spec.repository.clone(),
        "spec.packageName" => pr.spec.package_name.clone(),
        "spec.workspaceName" => pr.spec.workspace_name.clone(),
        "status.revision" => pr.status.revision.to_string(),
        _ => return None,
    })
}

/// Every index value of `pr`, keyed by field.
pub fn index_values(pr: &PackageRevision) -> BTreeMap<&'static str, String> {
    INDEXED_FIELDS
        .iter()
        .filter_map(|f| index_value(pr, f).map(|v| (*f, v)))
        .collect()
}

/// The selectable fields without an index (the controller indexes every
/// non-metadata selector, so this is empty).
pub fn unindexed_selectors() -> Vec<&'static str> {
    SELECTABLE_FIELDS
        .iter()
        .filter(|f| !f.starts_with("metadata.") && !INDEXED_FIELDS.contains(f))
        .copied()
        .collect()
}

/// A cached List's `MatchingFields`: whether every field's index value is
/// the one asked for (a field without an index never matches).
pub fn matches_fields(pr: &PackageRevision, fields: &BTreeMap<String, String>) -> bool {
    fields
        .iter()
        .all(|(f, want)| index_value(pr, f).is_some_and(|v| &v == want))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_selector_is_indexed_and_an_empty_revision_is_zero() {
        assert!(unindexed_selectors().is_empty());
        let pr = PackageRevision::default();
        assert_eq!(index_value(&pr, "status.revision").as_deref(), Some("0"));
        assert_eq!(index_value(&pr, "spec.lifecycle").as_deref(), Some(""));
        assert_eq!(index_value(&pr, "metadata.name"), None);
    }
}
