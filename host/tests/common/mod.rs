//! Generated inputs shared by the host's tests and benchmarks, as the
//! component's records: the 1,000-resource package of
//! `core-wasm/benches/mutations.rs` and the 10,000-target
//! PackageVariantSet of `core-wasm/benches/pvs.rs`.

#![allow(dead_code, missing_docs)]

use porch_variants::component::native;
use porch_variants::component::types::{File, MutationInput, RenderInput};
use pv_core::api::PackageRevision;
use pv_core::variantset::{PackageVariantSet, Repository};
use serde_json::{json, Value};

#[path = "../../../core-wasm/benches/support/mod.rs"]
mod support;
pub use support::*;

/// JSON text of an API object.
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("serializes")
}

/// The mutation pass of the 1,000-resource package.
pub fn mutation_input() -> MutationInput {
    MutationInput {
        package_variant: to_json(&packagevariant()),
        namespace: "default".into(),
        name: "fleet-east-draft".into(),
        files: package()
            .into_iter()
            .map(|(path, content)| File { path, content })
            .collect(),
        candidates: candidates().iter().map(to_json).collect(),
    }
}

/// A render of `pvs` with no existing children.
pub fn render_input_of(
    pvs: &PackageVariantSet,
    revisions: &[PackageRevision],
    repositories: &[Repository],
) -> RenderInput {
    RenderInput {
        package_variant_set: to_json(pvs),
        upstream_revisions: revisions.iter().map(to_json).collect(),
        repositories: repositories.iter().map(to_json).collect(),
        target_kinds: Vec::new(),
        target_objects: Vec::new(),
        existing: Vec::new(),
        downstream_revisions: Vec::new(),
        limits: None,
    }
}

/// The 10,000-target render in its steady state: against the children a
/// first render created (read back with a resourceVersion), so nothing is
/// to be written.
pub fn render_input() -> RenderInput {
    let (pvs, revisions, repositories) = pvs_inputs(TARGETS);
    let mut input = render_input_of(&pvs, &revisions, &repositories);
    let first = native::render_package_variant_set(&input).expect("renders");
    input.existing = first
        .plan
        .create
        .iter()
        .map(|text| {
            let mut pv: Value = serde_json::from_str(text).expect("json");
            pv["metadata"]["resourceVersion"] = json!("1");
            pv.to_string()
        })
        .collect();
    input
}
