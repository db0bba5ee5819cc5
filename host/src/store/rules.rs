//! What every backend enforces and fills in alike: Porch's lifecycle
//! transitions, the writable metadata of a PackageRevision, its resources
//! object, and the default namespace.

use pv_core::api::package_revision::Lifecycle;
use pv_core::api::{ObjectMeta, PackageRevision, PackageRevisionResources};

use super::Files;

/// Checks a lifecycle transition as Porch allows it, returning an error
/// message when it is not allowed.
pub fn check_transition(from: Lifecycle, to: Lifecycle) -> Result<(), String> {
    use Lifecycle::*;
    let ok = matches!(
        (from, to),
        (Draft | Unset, Proposed)
            | (Proposed, Draft)
            | (Proposed, Published)
            | (Published, DeletionProposed)
            | (DeletionProposed, Published)
    ) || from == to;
    if ok {
        Ok(())
    } else {
        Err(format!("cannot change lifecycle from {from:?} to {to:?}"))
    }
}

/// The writable metadata of a PackageRevision: labels (but not the computed
/// latest-revision label), annotations, owner references.
pub fn copy_metadata(dst: &mut ObjectMeta, src: &ObjectMeta) {
    dst.labels = src.labels.clone();
    dst.labels
        .remove(pv_core::api::package_revision::LATEST_REVISION_LABEL);
    dst.annotations = src.annotations.clone();
    dst.owner_references = src.owner_references.clone();
}

/// The PackageRevisionResources of `pr` holding `files`.
pub fn resources_of(pr: &PackageRevision, files: Files) -> PackageRevisionResources {
    let mut prr = PackageRevisionResources {
        api_version: pv_core::api::package_revision::API_VERSION.to_string(),
        kind: "PackageRevisionResources".to_string(),
        ..Default::default()
    };
    prr.metadata.name = pr.metadata.name.clone();
    prr.metadata.namespace = pr.metadata.namespace.clone();
    prr.spec.package_name = pr.spec.package_name.clone();
    prr.spec.workspace_name = pr.spec.workspace_name.clone();
    prr.spec.repository = pr.spec.repository.clone();
    prr.spec.revision = pr.spec.revision;
    prr.spec.resources = Some(files);
    prr
}

/// The namespace of an object, `default` when empty.
pub fn ns_or_default(ns: &str) -> String {
    if ns.is_empty() {
        "default".to_string()
    } else {
        ns.to_string()
    }
}
