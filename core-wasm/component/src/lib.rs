//! The porch-variants core as a WebAssembly component.
//!
//! Built for `wasm32-unknown-unknown` and wrapped into a component with no
//! imports by `host/build.rs`; the host embeds it. Each export of
//! `wit/porch-variants.wit` is one call into [`glue`], which converts the
//! records and calls `pv_core`.
//!
//! The crate also builds natively (an `rlib`) so that the workspace can
//! check and lint it; the exports then exist but nothing calls them.

mod glue;

/// The bindings wit-bindgen generates for the world (the canonical ABI
/// needs `unsafe`; it is allowed here and nowhere else).
#[allow(unsafe_code, missing_docs, clippy::all)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "porch-variants",
    });

    use super::Component;
    export!(Component);
}

/// The WIT records, under the name [`glue`] expects.
mod wit {
    pub use crate::bindings::*;
}

/// Implements the world's exports.
struct Component;

impl bindings::Guest for Component {
    fn version() -> String {
        glue::version()
    }

    fn validate_package_variant(package_variant: wit::Json) -> Result<Vec<String>, String> {
        glue::validate_package_variant(&package_variant)
    }

    fn plan_reconcile(input: wit::PlanInput) -> Result<wit::ReconcilePlan, String> {
        glue::plan_reconcile(&input)
    }

    fn apply_mutations(
        input: wit::MutationInput,
    ) -> Result<wit::MutationOutcome, wit::MutationError> {
        glue::apply_mutations(&input)
    }

    fn validate_package_variant_set(package_variant_set: wit::Json) -> Result<Vec<String>, String> {
        glue::validate_package_variant_set(&package_variant_set)
    }

    fn render_package_variant_set(
        input: wit::RenderInput,
    ) -> Result<wit::RenderOutcome, wit::RenderError> {
        glue::render_package_variant_set(&input)
    }

    fn clone_package(input: wit::CloneInput) -> Result<Vec<wit::File>, String> {
        glue::clone_package(&input)
    }

    fn upgrade_package(input: wit::UpgradeInput) -> Result<wit::UpgradeOutcome, String> {
        glue::upgrade_package(&input)
    }

    fn format_files(files: Vec<wit::File>) -> Vec<wit::FormattedFile> {
        glue::format_files(&files)
    }

    fn render_package(input: wit::PackageRenderInput) -> wit::PackageRenderStep {
        glue::render_package_owned(input)
    }

    fn stage_files(files: Vec<wit::File>, fresh: bool) {
        glue::stage_files(files, fresh);
    }

    fn render_staged(
        options: wit::PackageRenderOptions,
        answers: Vec<wit::FunctionAnswer>,
    ) -> wit::PackageRenderStep {
        glue::render_staged(&options, &answers)
    }

    fn render_held(
        options: wit::PackageRenderOptions,
        answers: Vec<wit::FunctionAnswer>,
    ) -> wit::HeldRenderStep {
        glue::render_held(&options, &answers)
    }

    fn take_held(paths: Vec<String>) -> Vec<wit::File> {
        glue::take_held(paths)
    }

    fn reconcile_package_revision(input: wit::Json) -> wit::Json {
        glue::reconcile_package_revision(&input)
    }

    fn begin_package_revision_reconcile(input: wit::Json) -> wit::Json {
        glue::begin_package_revision_reconcile(&input)
    }

    fn answer_package_revision_call(answer: wit::Json) -> wit::Json {
        glue::answer_package_revision_call(&answer)
    }
}
