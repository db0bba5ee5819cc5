//! The `porch.kpt.dev/latest-revision` label (`PRC/labels.go`).

use crate::api::package_revision::v1alpha2::PackageRevision;

use super::LATEST_REVISION_LABEL;

/// `ensureLatestRevisionLabel`: after the source ran, a revision without
/// the label gets `"false"`; `None` when the label is already there (any
/// value).
pub fn ensure_label(pr: &PackageRevision) -> Option<serde_json::Value> {
    if pr.metadata.labels.contains_key(LATEST_REVISION_LABEL) {
        return None;
    }
    Some(serde_json::json!({"metadata": {"labels": {LATEST_REVISION_LABEL: "false"}}}))
}

/// What `updateLatestRevisionLabels` does to the revisions of one package.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatestRevision {
    /// The latest published revision, if any.
    pub latest: Option<String>,
    /// Revisions whose label must change, with the new value, in list
    /// order.
    pub patches: Vec<(String, &'static str)>,
}

/// `updateLatestRevisionLabels` over the revisions of one package (one
/// repository): revisions being deleted are ignored; the published (or
/// deletion-proposed) revision with the strictly greatest revision number
/// above 0 is the latest (the first one on ties); every other revision,
/// drafts included, is `"false"`. Only labels that differ are patched.
pub fn latest_revision(items: &[PackageRevision]) -> LatestRevision {
    let live: Vec<&PackageRevision> = items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let mut latest: Option<&PackageRevision> = None;
    for p in &live {
        if !p.spec.lifecycle.is_published() || p.status.revision <= 0 {
            continue;
        }
        if latest.is_none_or(|l| p.status.revision > l.status.revision) {
            latest = Some(p);
        }
    }
    let latest_name = latest.map(|p| p.metadata.name.clone());
    let patches = live
        .iter()
        .filter_map(|p| {
            let want = if Some(&p.metadata.name) == latest_name.as_ref() {
                "true"
            } else {
                "false"
            };
            let have = p
                .metadata
                .labels
                .get(LATEST_REVISION_LABEL)
                .map(String::as_str);
            (have != Some(want)).then(|| (p.metadata.name.clone(), want))
        })
        .collect();
    LatestRevision {
        latest: latest_name,
        patches,
    }
}
