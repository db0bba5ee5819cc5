//! The PackageVariant and PackageVariantSet reconcilers, written once
//! against the store traits ([`crate::store`]) and the core
//! ([`crate::engine_api::Core`]): they read from the stores, ask the core
//! what to do and what the package should contain, and write the answer
//! back. Data flows one way: store → reconciler → core → store.
//!
//! * [`package_variant`] — one PackageVariant;
//! * [`package_variant_set`] — one PackageVariantSet;
//! * [`source`] — the content of a new draft (clone, upgrade, edit);
//! * [`quiet`] — variants skipped where nothing they read changed since a
//!   reconcile of theirs wrote nothing;
//! * [`run_to_fixed_point`] — every set, then every variant, pass after pass
//!   until a pass writes nothing.

pub mod package_variant;
pub mod package_variant_set;
pub mod quiet;
pub mod source;

pub use quiet::QuietDigests;

use pv_core::variantset::types::KIND as PVS_KIND;
use serde::Serialize;

use crate::engine_api::{Core, CoreError};
use crate::store::{ObjectStore, PackageRevisionStore, StoreError};

/// What the reconcilers work with.
pub struct Ctx<'a> {
    /// PackageRevisions.
    pub revisions: &'a dyn PackageRevisionStore,
    /// Other objects.
    pub objects: &'a dyn ObjectStore,
    /// Decisions and package edits.
    pub core: &'a dyn Core,
    /// RFC 3339 time stamped on changed conditions.
    pub now: String,
    /// Renders drafts after their content is written, where this process
    /// plays porch-server's part (local mode); `None` where Porch renders
    /// (Kubernetes mode).
    pub renderer: Option<&'a DraftRenderer>,
}

/// How drafts are rendered: kpt's options and the runtime for functions
/// that are not builtins.
pub struct DraftRenderer {
    /// Render options.
    pub options: pv_core::render::RenderOptions,
    /// Runs exec and wasm functions.
    pub runtime: std::sync::Mutex<Box<dyn pv_core::render::FunctionRuntime + Send>>,
}

impl std::fmt::Debug for DraftRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DraftRenderer")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// A reconcile could not complete.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// A store call failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The core could not be called.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The core refused (its message).
    #[error("{0}")]
    Refused(String),
    /// Another controller has not finished what this reconcile needs (a
    /// v1alpha2 draft's source): nothing was written past it; tried again
    /// later.
    #[error("{0}")]
    Waiting(String),
}

impl ReconcileError {
    /// Whether the process should stop (a simulated crash).
    pub fn is_fatal(&self) -> bool {
        matches!(self, ReconcileError::Store(StoreError::Injected(_)))
    }
}

/// One thing a reconcile did (every write is one event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// `PackageVariant default/x`, `PackageRevision r.p.ws`, ...
    pub object: String,
    /// What happened (`created clone draft`, `mutated`, ...).
    pub action: String,
    /// Details (the revision created, the error, ...).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

impl Event {
    /// An event.
    pub fn new(
        object: impl Into<String>,
        action: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Event {
            object: object.into(),
            action: action.into(),
            detail: detail.into(),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunReport {
    /// Passes made (the last one wrote nothing, unless `converged` is false).
    pub passes: usize,
    /// Whether the last pass wrote nothing.
    pub converged: bool,
    /// Every write, in order.
    pub events: Vec<Event>,
    /// Errors (objects whose reconcile failed in the last pass).
    pub errors: Vec<Event>,
    /// PackageVariants reconciled in the last pass.
    pub package_variants: usize,
    /// Of those, the ones skipped because nothing they read changed since
    /// their last reconcile that wrote nothing ([`quiet`]).
    pub skipped: usize,
    /// PackageVariantSets reconciled in the last pass.
    pub package_variant_sets: usize,
}

/// Progress callbacks of a run.
pub trait Progress {
    /// A pass starts over `total` objects.
    fn start_pass(&self, pass: usize, total: usize);
    /// One object done.
    fn tick(&self);
    /// The run is over.
    fn finish(&self);
}

/// No progress output.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start_pass(&self, _: usize, _: usize) {}
    fn tick(&self) {}
    fn finish(&self) {}
}

/// Deletes PackageVariants whose controlling PackageVariantSet is gone
/// (Kubernetes' garbage collection of owned objects).
fn collect_orphans(ctx: &Ctx<'_>, events: &mut Vec<Event>) -> Result<(), ReconcileError> {
    let sets = ctx.objects.list_package_variant_sets(None)?;
    for pv in ctx.objects.list_package_variants(None)? {
        if pv.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let owner = pv
            .metadata
            .owner_references
            .iter()
            .find(|o| o.kind == PVS_KIND && o.controller == Some(true));
        if let Some(owner) = owner {
            if !sets.iter().any(|s| s.metadata.uid == owner.uid) {
                ctx.objects
                    .delete_package_variant(&pv.metadata.namespace, &pv.metadata.name)?;
                events.push(Event::new(
                    format!(
                        "PackageVariant {}/{}",
                        pv.metadata.namespace, pv.metadata.name
                    ),
                    "deleted",
                    format!("its PackageVariantSet {} is gone", owner.name),
                ));
            }
        }
    }
    Ok(())
}

/// Reconciles every PackageVariantSet, then every PackageVariant, pass
/// after pass, until a pass writes nothing (at most `max_passes`). A failed
/// object is reported and the run goes on; a fatal store error (a
/// simulated crash) ends the run with that error.
pub fn run_to_fixed_point(
    ctx: &Ctx<'_>,
    max_passes: usize,
    progress: &dyn Progress,
) -> Result<RunReport, ReconcileError> {
    run_to_fixed_point_quiet(ctx, max_passes, progress, None)
}

/// [`run_to_fixed_point`], skipping each PackageVariant whose digest of
/// what it reads is the one `quiet` recorded, and recording the digests of
/// the last pass when it wrote nothing (see [`quiet`]).
pub fn run_to_fixed_point_quiet(
    ctx: &Ctx<'_>,
    max_passes: usize,
    progress: &dyn Progress,
    mut quiet: Option<&mut QuietDigests>,
) -> Result<RunReport, ReconcileError> {
    let mut report = RunReport::default();
    for pass in 1..=max_passes.max(1) {
        report.passes = pass;
        let mut events = Vec::new();
        let mut errors = Vec::new();
        let mut memo = quiet::PassMemo::default();
        let mut succeeded = Vec::new();
        let mut skipped = 0;
        collect_orphans(ctx, &mut events)?;
        let sets = ctx.objects.list_package_variant_sets(None)?;
        let pvs_before = ctx.objects.list_package_variants(None)?.len();
        progress.start_pass(pass, sets.len() + pvs_before);
        for set in &sets {
            let subject = format!(
                "PackageVariantSet {}/{}",
                set.metadata.namespace, set.metadata.name
            );
            match package_variant_set::reconcile(ctx, set, &mut events) {
                Ok(()) => {}
                Err(e) if e.is_fatal() => return Err(e),
                Err(e) => errors.push(Event::new(subject, "error", e.to_string())),
            }
            progress.tick();
        }
        let pvs = ctx.objects.list_package_variants(None)?;
        for pv in &pvs {
            let subject = format!(
                "PackageVariant {}/{}",
                pv.metadata.namespace, pv.metadata.name
            );
            // Only a variant with a recorded digest can be skipped: the
            // others' digests are made once the pass proves quiet.
            let digest = match quiet.as_deref() {
                Some(q) if q.has(pv) => quiet::digest_of(ctx, pv, &mut memo)?,
                _ => None,
            };
            if let (Some(q), Some(d)) = (quiet.as_deref(), &digest) {
                if q.is_quiet(pv, d) {
                    tracing::debug!(variant = %subject, "nothing it reads changed: skipped");
                    succeeded.push((pv, digest));
                    skipped += 1;
                    progress.tick();
                    continue;
                }
            }
            match package_variant::reconcile(ctx, pv, &mut events) {
                Ok(()) => succeeded.push((pv, digest)),
                Err(e) if e.is_fatal() => return Err(e),
                Err(e) => errors.push(Event::new(subject, "error", e.to_string())),
            }
            progress.tick();
        }
        report.package_variants = pvs.len();
        report.package_variant_sets = sets.len();
        report.skipped = skipped;
        report.errors = errors;
        let wrote_nothing = events.is_empty();
        report.events.extend(events);
        if wrote_nothing {
            if let Some(q) = quiet.as_deref_mut() {
                // Nothing was written: what each variant read is what the
                // stores hold now.
                let mut digests = std::collections::BTreeMap::new();
                for (pv, digest) in succeeded {
                    let digest = match digest {
                        Some(d) => Some(d),
                        None => quiet::digest_of(ctx, pv, &mut memo)?,
                    };
                    if let Some(d) = digest {
                        digests.insert(quiet::key(pv), d);
                    }
                }
                q.record(digests);
            }
            report.converged = true;
            break;
        }
    }
    progress.finish();
    Ok(report)
}
