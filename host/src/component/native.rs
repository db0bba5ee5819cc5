//! The same operations as [`super::CoreComponent`], computed by the core
//! compiled into this binary, with the same records in and out.
//!
//! Used by the parity tests and the benchmarks (the component against the
//! native core on the same inputs), and available where running the core
//! natively is preferable (no sandbox, no fuel). The conversions are the
//! guest's own: `core-wasm/component/src/glue.rs` is compiled here too.

pub use glue::{
    answer_package_revision_call, apply_mutations, begin_package_revision_reconcile, clone_package,
    format_files, plan_reconcile, reconcile_package_revision, render_held, render_package,
    render_package_variant_set, render_staged, stage_files, take_held, upgrade_package,
    validate_package_variant, validate_package_variant_set, version,
};

/// The WIT records, under the name the glue expects.
mod wit {
    pub use crate::component::bindings::types::*;
}

#[path = "../../../core-wasm/component/src/glue.rs"]
mod glue;
