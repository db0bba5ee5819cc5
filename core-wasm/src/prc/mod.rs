//! The PackageRevision controller's decisions (Porch v1alpha2, seed 004):
//! pure functions of the objects, no I/O. The host's reconciler reads the
//! objects and the package content, asks these what to do, and writes.
//!
//! * [`readiness`] — `LifecycleIsPublished`, `PackageRevisionIsReady`,
//!   `IsPackageCreation`, and what a Kptfile contributes to the object
//!   (package conditions, readiness gates, package metadata, locators);
//! * [`render`] — when a draft is rendered, and the conditions and
//!   versions the render writes;
//! * [`fieldindex`] — the cache's field indexes (what a List with field
//!   selectors matches);
//! * [`labels`] — the `porch.kpt.dev/latest-revision` label of every
//!   revision of a package;
//! * [`mergekey`] — the `kpt-merge` comments and upstream identifiers an
//!   upgrade's three-way merge matches resources by;
//! * [`source`] — which source runs, and the files `init` makes;
//! * [`upstream`] — kpt's `UpdateKptfileUpstream`, what `clone` and
//!   `upgrade` write into the Kptfile.
//!
//! Behaviour and upstream's surprises:
//! `shared/reference/porch-packagerevision-controller.md`; the cases under
//! `tests/conformance/porch-upstream-prc/` pin it.

pub mod fieldindex;
pub mod labels;
pub mod mergekey;
pub use crate::krm::readiness;
pub mod reconcile;
pub mod render;
pub mod source;
pub mod upstream;

/// The finalizer the controller puts on every PackageRevision.
pub const FINALIZER: &str = "porch.kpt.dev/packagerevisions";
pub use crate::api::package_revision::v1alpha2::{
    object_name, LATEST_REVISION_LABEL, RENDER_REQUEST_ANNOTATION,
};
/// With value `"true"`, a failed render pipeline's partial output is
/// written anyway.
pub const PUSH_ON_RENDER_FAILURE_ANNOTATION: &str = "porch.kpt.dev/push-on-render-failure";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_flatten_nested_packages_and_need_every_part() {
        assert_eq!(object_name("r", "a/b/c", "ws"), "r.a.b.c.ws");
        assert_eq!(object_name("r", "pkg", "v1"), "r.pkg.v1");
        assert_eq!(object_name("", "pkg", "v1"), "");
        assert_eq!(object_name("r", "pkg", ""), "");
    }
}
