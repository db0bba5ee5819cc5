//! Typed API objects: Porch's PackageVariant, PackageRevision (v1alpha1
//! and v1alpha2), PackageRevisionResources and Repository, the Kptfile, and
//! KRM function ResourceLists.
//!
//! Field names, optionality and JSON shapes follow the upstream Go types, so
//! that objects read from a cluster or a file round-trip unchanged. Maps are
//! `BTreeMap` so that output is deterministic, as Go's JSON encoder is.

pub mod function_config;
pub mod kptfile;
pub mod label_selector;
pub mod meta;
pub mod package_revision;
pub mod package_variant;
pub mod repository;
pub mod resource_list;
pub mod upstream_lock;

pub use kptfile::{Function, Kptfile, Pipeline, ResourceReference, Selector};
pub use meta::{Condition, ObjectMeta, OwnerReference};
pub use package_revision::{
    Lifecycle, PackageRevision, PackageRevisionResources, PackageRevisionSpec, Task,
};
pub use package_variant::{
    AdoptionPolicy, DeletionPolicy, Downstream, DownstreamTarget, InjectionSelector,
    PackageContext, PackageVariant, PackageVariantSpec, PackageVariantStatus, Upstream,
};
pub use resource_list::{ResourceList, ResultItem, Severity};
