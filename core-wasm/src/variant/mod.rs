//! PackageVariant logic as pure functions: validation, upstream resolution,
//! downstream discovery, the reconcile plan, and the three package
//! mutations. Nothing here performs I/O; callers pass in what they listed and
//! carry out the returned plan.

pub mod downstream;
pub mod mutate;
pub mod naming;
pub mod plan;
pub mod upstream;
pub mod validate;
