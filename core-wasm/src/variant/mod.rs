//! PackageVariant logic as pure functions: validation, upstream resolution,
//! downstream discovery, the reconcile plan, and the three package
//! mutations. Nothing here performs I/O; callers pass in what they listed and
//! carry out the returned plan.
//!
//! * [`validate`] — `validatePackageVariant` messages and policy defaults;
//! * [`upstream`] — which upstream revision a variant follows;
//! * [`downstream`] — discovery, adoption, delete-or-orphan;
//! * [`naming`] — workspace names and pipeline function names;
//! * [`drafts`] — clone, upgrade and edit drafts as values;
//! * [`plan`] — the reconcile as a list of steps and an outcome;
//! * [`status`] — `Stalled`/`Ready` conditions and `downstreamTargets`;
//! * [`mutate`] — the three package mutations;
//! * [`v1alpha2`] — the same variants over v1alpha2 PackageRevisions.

pub mod downstream;
pub mod drafts;
pub mod mutate;
pub mod naming;
pub mod plan;
pub mod status;
pub mod upstream;
pub mod v1alpha2;
pub mod validate;
