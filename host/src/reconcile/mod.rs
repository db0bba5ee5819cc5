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
//! * [`schedule`] — which variants of a pass may be reconciled at once;
//! * [`approval`] — drafts of variants that ask for an approval policy,
//!   proposed and approved as Nephio's approval controller does;
//! * [`run_to_fixed_point`] — every set, then every variant, then the
//!   approvals, pass after pass until a pass writes nothing.

pub mod approval;
pub mod package_variant;
pub mod package_variant_set;
pub mod quiet;
pub mod schedule;
pub mod source;

pub use quiet::QuietDigests;

use std::collections::BTreeMap;

use pv_core::api::PackageVariant;
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
    /// How many PackageVariants a pass reconciles at once, at most (see
    /// [`schedule`]); 0 and 1 both mean one at a time.
    pub jobs: usize,
}

/// How drafts are rendered: kpt's options and the runtime for functions
/// that are not builtins.
pub struct DraftRenderer {
    /// Render options; Porch's FunctionConfigs among them may change while
    /// the controller runs (a watch brings them).
    options: std::sync::RwLock<pv_core::render::RenderOptions>,
    /// Runs exec and wasm functions.
    pub runtime: std::sync::Mutex<Box<dyn pv_core::render::FunctionRuntime + Send>>,
}

impl DraftRenderer {
    /// Renders with `options`, and `runtime` for what is not a builtin.
    pub fn new(
        options: pv_core::render::RenderOptions,
        runtime: Box<dyn pv_core::render::FunctionRuntime + Send>,
    ) -> Self {
        DraftRenderer {
            options: std::sync::RwLock::new(options),
            runtime: std::sync::Mutex::new(runtime),
        }
    }

    /// The options of a render now.
    pub fn options(&self) -> pv_core::render::RenderOptions {
        self.options
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Porch's FunctionConfigs, from now on.
    pub fn set_function_configs(
        &self,
        configs: Vec<pv_core::api::function_config::FunctionConfig>,
    ) {
        self.options
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .function_configs = configs;
    }

    /// Drafts rendered as porch-server renders them: builtins and the
    /// embedded starlark function run here, any other image in Porch's
    /// function runner when one is given (exec functions are not allowed,
    /// as Porch never allows them, and no container runs). Exec paths
    /// resolve from `dir`.
    pub fn porch_server(
        dir: &std::path::Path,
        runner: Option<crate::function_runner::FunctionRunner>,
    ) -> Self {
        DraftRenderer::new(
            pv_core::render::RenderOptions::default(),
            Box::new(crate::fn_render::HostRuntime {
                allow_exec: false,
                dir: dir.to_path_buf(),
                exec_timeout: std::time::Duration::from_secs(300),
                wasm: None,
                image_prefix: pv_core::render::image::DEFAULT_PREFIX.to_string(),
                starlark: crate::fn_render::starlark::EmbeddedStarlark::default(),
                runner,
                // porch-server runs no containers.
                container: None,
            }),
        )
    }
}

impl std::fmt::Debug for DraftRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DraftRenderer")
            .field("options", &self.options())
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
    /// Whether the run should stop (the store stopped taking writes).
    pub fn is_fatal(&self) -> bool {
        matches!(self, ReconcileError::Store(StoreError::Stopped(_)))
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

/// Progress callbacks of a run (called from the workers of a pass too).
pub trait Progress: Sync {
    /// A pass starts over `total` objects.
    fn start_pass(&self, pass: usize, total: usize);
    /// The pass has `more` objects than it started with (the variants its
    /// sets generated).
    fn grow(&self, _more: usize) {}
    /// One object done.
    fn tick(&self);
    /// A write, as soon as every write the report lists before it was
    /// given (so in the report's order, whatever the number of workers).
    fn event(&self, _event: &Event) {}
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

/// What one variant's turn in a pass did.
struct VariantOutcome {
    /// Its writes, in order.
    events: Vec<Event>,
    /// Its digest, where one was made before the reconcile.
    digest: Option<String>,
    /// Whether it was reconciled (`false`: skipped), or why it failed.
    result: Result<bool, ReconcileError>,
}

/// One variant's turn: skipped when nothing it reads changed since a quiet
/// reconcile, reconciled otherwise.
fn variant_turn(
    ctx: &Ctx<'_>,
    pv: &PackageVariant,
    quiet: Option<&QuietDigests>,
    memo: &mut quiet::PassMemo,
) -> VariantOutcome {
    let mut events = Vec::new();
    // Only a variant with a recorded digest can be skipped: the others'
    // digests are made once the pass proves quiet.
    let digest = match quiet {
        Some(q) if q.has(pv) => match quiet::digest_of(ctx, pv, memo) {
            Ok(d) => d,
            Err(e) => {
                return VariantOutcome {
                    events,
                    digest: None,
                    result: Err(e),
                }
            }
        },
        _ => None,
    };
    if let (Some(q), Some(d)) = (quiet, &digest) {
        if q.is_quiet(pv, d) {
            tracing::debug!(variant = %package_variant::subject(pv), "nothing it reads changed: skipped");
            return VariantOutcome {
                events,
                digest,
                result: Ok(false),
            };
        }
    }
    let result = package_variant::reconcile(ctx, pv, &mut events).map(|()| true);
    VariantOutcome {
        events,
        digest,
        result,
    }
}

/// Every variant's turn of a pass, in `pvs`' order: the independent groups
/// ([`schedule::independent_groups`]) on up to `ctx.jobs` threads, each
/// group's variants one after the other. A fatal error ends the pass with
/// the first one in `pvs`' order (the others stop taking work).
fn reconcile_variants(
    ctx: &Ctx<'_>,
    pvs: &[PackageVariant],
    quiet: Option<&QuietDigests>,
    progress: &dyn Progress,
) -> Result<Vec<VariantOutcome>, ReconcileError> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let groups = if ctx.jobs > 1 {
        schedule::independent_groups(pvs)
    } else {
        vec![(0..pvs.len()).collect()]
    };
    let workers = ctx.jobs.clamp(1, groups.len().max(1));
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // Each variant's events go to `progress` once every variant before it
    // in `pvs` is done: (the next variant to release, those done early).
    let released = std::sync::Mutex::new((0usize, BTreeMap::<usize, Vec<Event>>::new()));
    let release = |i: usize, events: &[Event]| {
        let mut r = released
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        r.1.insert(i, events.to_vec());
        loop {
            let next = r.0;
            let Some(events) = r.1.remove(&next) else {
                break;
            };
            for e in &events {
                progress.event(e);
            }
            r.0 += 1;
        }
    };
    let work = || {
        let mut memo = quiet::PassMemo::default();
        let mut done = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let Some(group) = groups.get(next.fetch_add(1, Ordering::Relaxed)) else {
                break;
            };
            for &i in group {
                if stop.load(Ordering::Relaxed) {
                    return done;
                }
                let outcome = variant_turn(ctx, &pvs[i], quiet, &mut memo);
                release(i, &outcome.events);
                let fatal = outcome.result.as_ref().is_err_and(|e| e.is_fatal());
                done.push((i, outcome));
                progress.tick();
                if fatal {
                    stop.store(true, Ordering::Relaxed);
                    return done;
                }
            }
        }
        done
    };
    let done: Vec<(usize, VariantOutcome)> = if workers == 1 {
        work()
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers).map(|_| scope.spawn(work)).collect();
            handles
                .into_iter()
                .flat_map(|h| match h.join() {
                    Ok(done) => done,
                    Err(panic) => std::panic::resume_unwind(panic),
                })
                .collect()
        })
    };
    let mut slots: Vec<Option<VariantOutcome>> = (0..pvs.len()).map(|_| None).collect();
    for (i, outcome) in done {
        slots[i] = Some(outcome);
    }
    // The first fatal error in the pass's order, as one worker would have
    // met it.
    for slot in &mut slots {
        if slot
            .as_ref()
            .is_some_and(|o| o.result.as_ref().is_err_and(|e| e.is_fatal()))
        {
            if let Some(VariantOutcome { result: Err(e), .. }) = slot.take() {
                return Err(e);
            }
        }
    }
    // Without a fatal error no worker stopped early: every slot is full.
    debug_assert!(slots.iter().all(Option::is_some));
    Ok(slots.into_iter().flatten().collect())
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
                    package_variant::subject(&pv),
                    "deleted",
                    format!("its PackageVariantSet {} is gone", owner.name),
                ));
            }
        }
    }
    Ok(())
}

/// Reconciles every PackageVariantSet, then every PackageVariant, pass
/// after pass, until a pass writes nothing (at most `max_passes` after the
/// last pass in which the approval policy proposed or approved). A failed
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
    // The budget counts the passes since the last one in which the
    // approval policy moved a revision on: a rollout that approval drives
    // runs to its end in one run, however many rounds it takes, while a
    // run that goes round without approving stops after `max_passes`.
    let mut counted_from = 0;
    let mut pass = 0;
    loop {
        pass += 1;
        if pass - counted_from > max_passes.max(1) {
            break;
        }
        report.passes = pass;
        let mut events = Vec::new();
        let mut errors = Vec::new();
        let mut memo = quiet::PassMemo::default();
        let mut succeeded = Vec::new();
        let mut skipped = 0;
        collect_orphans(ctx, &mut events)?;
        events.iter().for_each(|e| progress.event(e));
        let sets = ctx.objects.list_package_variant_sets(None)?;
        progress.start_pass(pass, sets.len());
        for set in &sets {
            let subject = format!(
                "PackageVariantSet {}/{}",
                set.metadata.namespace, set.metadata.name
            );
            let before = events.len();
            let result = package_variant_set::reconcile(ctx, set, &mut events);
            events[before..].iter().for_each(|e| progress.event(e));
            match result {
                Ok(()) => {}
                Err(e) if e.is_fatal() => return Err(e),
                Err(e) => errors.push(Event::new(subject, "error", e.to_string())),
            }
            progress.tick();
        }
        let pvs = ctx.objects.list_package_variants(None)?;
        progress.grow(pvs.len());
        let outcomes = reconcile_variants(ctx, &pvs, quiet.as_deref(), progress)?;
        for (pv, outcome) in pvs.iter().zip(outcomes) {
            events.extend(outcome.events);
            match outcome.result {
                Ok(reconciled) => {
                    if !reconciled {
                        skipped += 1;
                    }
                    succeeded.push((pv, outcome.digest));
                }
                Err(e) => errors.push(Event::new(
                    package_variant::subject(pv),
                    "error",
                    e.to_string(),
                )),
            }
        }
        let before = events.len();
        // Waiting revisions are looked at again by the next run.
        let _waiting = approval::approve_with(
            ctx,
            &pvs,
            approval::Reach::AlsoAnnotated,
            &mut events,
            &mut errors,
        )?;
        events[before..].iter().for_each(|e| progress.event(e));
        if events.len() > before {
            counted_from = pass;
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
