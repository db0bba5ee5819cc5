//! The seam between the reconcilers and the core: every decision (the
//! PackageVariant plan, the PackageVariantSet render) and every package
//! edit (mutations, clone, upgrade merge) goes through [`Core`].
//!
//! [`Core`] is written once over [`Exports`], the component's exports at the
//! level of its records, which two cores provide:
//! * [`ComponentCore`] — the embedded WebAssembly component (the default
//!   of the CLI);
//! * [`NativeCore`] — the same core compiled into this binary
//!   (`--native-core`), through the component's own glue
//!   ([`crate::component::native`]), so both return the same records.

use pv_core::api::{Condition, PackageRevision, PackageVariant};
use pv_core::merge::{MergeConflict, MergeOutcome, UpstreamSource};
use pv_core::prc::reconcile as prc_step;
use pv_core::render::{FunctionRef, FunctionRuntime, RenderFailure, RenderOptions, RuntimeError};
use pv_core::variant::downstream::UpdateReason;
use pv_core::variant::drafts::DraftKind;
use pv_core::variantset::types::RolloutStatus;
use pv_core::variantset::{ClusterObject, PackageVariantSet, Repository};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::component::{native, types as wit, ComponentError, CoreComponent};
use crate::store::Files;

/// A call into the core produced no answer.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The component was stopped or could not run.
    #[error(transparent)]
    Component(#[from] ComponentError),
    /// An argument could not be passed or an answer read.
    #[error("core {operation}: {message}")]
    Decode {
        /// The operation.
        operation: &'static str,
        /// What was wrong.
        message: String,
    },
}

/// Result of a core call.
pub type CoreResult<T> = Result<T, CoreError>;

/// Which revision a mutations step works on.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A listed revision (as it is after the earlier updates of the plan).
    Existing(Box<PackageRevision>),
    /// The draft created by the step at this index.
    Created(usize),
}

/// One write of a PackageVariant reconcile, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Add the variant's finalizer.
    AddFinalizer,
    /// Remove the variant's finalizer.
    RemoveFinalizer,
    /// Write a listed revision as `object`.
    UpdateRevision {
        /// Why.
        reason: UpdateReason,
        /// The revision as it must be.
        object: Box<PackageRevision>,
    },
    /// Delete a listed revision.
    DeleteRevision(Box<PackageRevision>),
    /// Create a draft.
    CreateDraft {
        /// Clone, upgrade or edit.
        kind: DraftKind,
        /// The draft (its name is generated).
        draft: Box<PackageRevision>,
    },
    /// Run the mutations on a revision (see `pv_core::variant::plan`).
    EnsureMutations {
        /// The revision.
        target: Target,
        /// The edit draft to create when a published target would change.
        edit_draft_if_changed: Option<Box<PackageRevision>>,
    },
}

/// How a PackageVariant reconcile ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanOutcome {
    /// Being deleted.
    Deleting,
    /// Validation failed (messages joined).
    Invalid(String),
    /// The upstream was not found.
    UpstreamNotFound(String),
    /// Ensuring failed after the listed steps.
    Failed(String),
    /// Execute the steps, then set Ready.
    Ensure,
}

/// The decided reconcile of a PackageVariant.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Writes, in order.
    pub steps: Vec<Step>,
    /// How it ends.
    pub outcome: PlanOutcome,
    /// Retry even when every step succeeds.
    pub requeue: bool,
    /// The variant's conditions as the plan sets them before its steps.
    pub conditions: Vec<Condition>,
}

/// The mutations' result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutated {
    /// Every file afterwards.
    pub files: Files,
    /// Whether the package must be written back.
    pub changed: bool,
    /// Files that changed.
    pub changed_files: Vec<String>,
}

/// Inputs of a PackageVariantSet render.
#[derive(Debug, Clone, Copy)]
pub struct SetInput<'a> {
    /// The set.
    pub set: &'a PackageVariantSet,
    /// Revisions of its upstream package.
    pub upstream_revisions: &'a [PackageRevision],
    /// Repositories of its namespace.
    pub repositories: &'a [Repository],
    /// Objects `objectSelector` targets choose from.
    pub objects: &'a [ClusterObject],
    /// Its existing children.
    pub existing: &'a [PackageVariant],
    /// With a rollout strategy: the revisions of its children's downstream
    /// packages.
    pub downstream_revisions: &'a [PackageRevision],
}

/// The writes bringing a set's children to the desired state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetRender {
    /// To create.
    pub create: Vec<PackageVariant>,
    /// To update (spec replaced).
    pub update: Vec<PackageVariant>,
    /// To delete.
    pub delete: Vec<PackageVariant>,
    /// Conditions once applied.
    pub conditions: Vec<Condition>,
    /// With a rollout strategy: where it stands.
    pub rollout: Option<RolloutStatus>,
}

/// The set is stalled.
#[derive(Debug, Clone, PartialEq)]
pub struct SetFailure {
    /// `Stalled` reason.
    pub reason: String,
    /// Message.
    pub message: String,
    /// `Stalled=True`, `Ready=False`.
    pub conditions: Vec<Condition>,
}

/// Every decision and package edit the reconcilers need.
pub trait Core: Send + Sync {
    /// Plans one PackageVariant reconcile over the revisions it may
    /// concern.
    fn plan(&self, pv: &PackageVariant, prs: &[PackageRevision], now: &str) -> CoreResult<Plan>;
    /// The three mutations of `pv` on a package (`Err`: the mutations'
    /// own failure message).
    fn apply_mutations(
        &self,
        pv: &PackageVariant,
        namespace: &str,
        name: &str,
        files: &Files,
        candidates: &[Value],
    ) -> CoreResult<Result<Mutated, String>>;
    /// Renders a PackageVariantSet.
    fn render_set(&self, input: SetInput<'_>) -> CoreResult<Result<SetRender, SetFailure>>;
    /// The content of a clone of `upstream` as package `package`.
    fn clone_package(
        &self,
        upstream: &Files,
        package: &str,
        source: &UpstreamSource,
    ) -> CoreResult<Result<Files, String>>;
    /// The content of an upgrade: the three-way resource merge, with the
    /// Kptfile pointed at the new upstream.
    fn upgrade_package(
        &self,
        old_upstream: &Files,
        new_upstream: &Files,
        local: &Files,
        source: &UpstreamSource,
    ) -> CoreResult<Result<MergeOutcome, String>>;
    /// Renders a package (kpt's `fn render`): builtins run in the core,
    /// other functions through `runtime`.
    fn render_package(
        &self,
        files: Files,
        options: &RenderOptions,
        runtime: &mut dyn FunctionRuntime,
    ) -> CoreResult<RenderedPackage>;
    /// A whole v1alpha2 PackageRevision reconcile, its calls made by
    /// `host` as they come; `Ok(None)` when `host` refused a call
    /// (answered `None`), which ends the reconcile there.
    fn reconcile_package_revision(
        &self,
        input: &prc_step::StepInput,
        host: &mut dyn FnMut(&prc_step::Call) -> Option<prc_step::Answer>,
    ) -> CoreResult<Option<prc_step::Outcome>>;
    /// A short name for messages (`component` or `native`).
    fn name(&self) -> &'static str;
    /// Fuel (about one unit per WebAssembly instruction) used by all calls
    /// so far: the component's; `None` for a core that is not metered.
    fn fuel_used(&self) -> Option<u64> {
        None
    }
}

fn to_json<T: Serialize>(op: &'static str, v: &T) -> CoreResult<String> {
    serde_json::to_string(v).map_err(|e| CoreError::Decode {
        operation: op,
        message: e.to_string(),
    })
}

fn from_json<T: DeserializeOwned>(op: &'static str, s: &str) -> CoreResult<T> {
    serde_json::from_str(s).map_err(|e| CoreError::Decode {
        operation: op,
        message: e.to_string(),
    })
}

fn condition(c: wit::Condition) -> Condition {
    Condition {
        type_: c.type_,
        status: c.status,
        observed_generation: c.observed_generation,
        last_transition_time: c.last_transition_time,
        reason: c.reason,
        message: c.message,
    }
}

fn plan_input(
    pv: &PackageVariant,
    prs: &[PackageRevision],
    now: &str,
) -> CoreResult<wit::PlanInput> {
    Ok(wit::PlanInput {
        package_variant: to_json("plan-reconcile", pv)?,
        package_revisions: prs
            .iter()
            .map(|p| to_json("plan-reconcile", p))
            .collect::<CoreResult<_>>()?,
        now: now.to_string(),
    })
}

fn decode_plan(p: wit::ReconcilePlan) -> CoreResult<Plan> {
    const OP: &str = "plan-reconcile";
    let pr = |s: &str| from_json::<PackageRevision>(OP, s).map(Box::new);
    let mut steps = Vec::with_capacity(p.steps.len());
    for s in p.steps {
        steps.push(match s {
            wit::PlanStep::AddFinalizer => Step::AddFinalizer,
            wit::PlanStep::RemoveFinalizer => Step::RemoveFinalizer,
            wit::PlanStep::UpdateRevision(u) => Step::UpdateRevision {
                reason: match u.reason {
                    wit::UpdateReason::Adopt => UpdateReason::Adopt,
                    wit::UpdateReason::ProposeDeletion => UpdateReason::ProposeDeletion,
                    wit::UpdateReason::Orphan => UpdateReason::Orphan,
                    wit::UpdateReason::ProposeDeletionAndOrphan => {
                        UpdateReason::ProposeDeletionAndOrphan
                    }
                    wit::UpdateReason::Unpropose => UpdateReason::Unpropose,
                },
                object: pr(&u.object)?,
            },
            wit::PlanStep::DeleteRevision(o) => Step::DeleteRevision(pr(&o)?),
            wit::PlanStep::CreateDraft(d) => Step::CreateDraft {
                kind: match d.kind {
                    wit::DraftKind::Clone => DraftKind::Clone,
                    wit::DraftKind::Upgrade => DraftKind::Upgrade,
                    wit::DraftKind::Edit => DraftKind::Edit,
                },
                draft: pr(&d.object)?,
            },
            wit::PlanStep::EnsureMutations(m) => Step::EnsureMutations {
                target: match m.target {
                    wit::MutationTarget::Existing(o) => Target::Existing(pr(&o)?),
                    wit::MutationTarget::Created(i) => Target::Created(i as usize),
                },
                edit_draft_if_changed: m.edit_draft_if_changed.as_deref().map(pr).transpose()?,
            },
        });
    }
    Ok(Plan {
        steps,
        outcome: match p.outcome {
            wit::PlanOutcome::Deleting => PlanOutcome::Deleting,
            wit::PlanOutcome::Invalid(errs) => PlanOutcome::Invalid(errs.join("; ")),
            wit::PlanOutcome::UpstreamNotFound(m) => PlanOutcome::UpstreamNotFound(m),
            wit::PlanOutcome::Failed(m) => PlanOutcome::Failed(m),
            wit::PlanOutcome::Ensure => PlanOutcome::Ensure,
        },
        requeue: p.requeue,
        conditions: p.conditions.into_iter().map(condition).collect(),
    })
}

fn mutation_input(
    pv: &PackageVariant,
    namespace: &str,
    name: &str,
    files: &Files,
    candidates: &[Value],
) -> CoreResult<wit::MutationInput> {
    Ok(wit::MutationInput {
        package_variant: to_json("apply-mutations", pv)?,
        namespace: namespace.to_string(),
        name: name.to_string(),
        files: files
            .iter()
            .map(|(p, c)| wit::File {
                path: p.clone(),
                content: c.clone(),
            })
            .collect(),
        candidates: candidates
            .iter()
            .map(|c| to_json("apply-mutations", c))
            .collect::<CoreResult<_>>()?,
    })
}

fn decode_mutations(
    r: Result<wit::MutationOutcome, wit::MutationError>,
) -> CoreResult<Result<Mutated, String>> {
    Ok(match r {
        Ok(o) => Ok(Mutated {
            files: o.files.into_iter().map(|f| (f.path, f.content)).collect(),
            changed: o.changed,
            changed_files: o.changed_files,
        }),
        Err(wit::MutationError::Failed(m)) => Err(m),
        Err(wit::MutationError::InvalidInput(m)) => {
            return Err(CoreError::Decode {
                operation: "apply-mutations",
                message: m,
            })
        }
    })
}

fn list<T: Serialize>(v: &[T]) -> CoreResult<Vec<String>> {
    v.iter()
        .map(|x| to_json("render-package-variant-set", x))
        .collect()
}

fn render_input(input: SetInput<'_>) -> CoreResult<wit::RenderInput> {
    const OP: &str = "render-package-variant-set";
    let mut kinds: Vec<wit::ObjectKind> = Vec::new();
    for o in input.objects {
        if !kinds
            .iter()
            .any(|k| k.api_version == o.api_version && k.kind == o.kind)
        {
            kinds.push(wit::ObjectKind {
                api_version: o.api_version.clone(),
                kind: o.kind.clone(),
            });
        }
    }
    Ok(wit::RenderInput {
        package_variant_set: to_json(OP, input.set)?,
        upstream_revisions: list(input.upstream_revisions)?,
        repositories: list(input.repositories)?,
        target_kinds: kinds,
        target_objects: list(input.objects)?,
        existing: list(input.existing)?,
        downstream_revisions: list(input.downstream_revisions)?,
        limits: None,
    })
}

fn decode_render(
    r: Result<wit::RenderOutcome, wit::RenderError>,
) -> CoreResult<Result<SetRender, SetFailure>> {
    const OP: &str = "render-package-variant-set";
    let pvs = |v: Vec<String>| -> CoreResult<Vec<PackageVariant>> {
        v.iter().map(|s| from_json(OP, s)).collect()
    };
    Ok(match r {
        Ok(o) => Ok(SetRender {
            create: pvs(o.plan.create)?,
            update: pvs(o.plan.update)?,
            delete: pvs(o.plan.delete)?,
            conditions: o.conditions.into_iter().map(condition).collect(),
            rollout: o.rollout.map(|r| from_json(OP, &r)).transpose()?,
        }),
        Err(wit::RenderError::Stalled(f)) => Err(SetFailure {
            reason: f.reason,
            message: f.message,
            conditions: f.conditions.into_iter().map(condition).collect(),
        }),
        Err(wit::RenderError::InvalidInput(m)) => {
            return Err(CoreError::Decode {
                operation: OP,
                message: m,
            })
        }
    })
}

fn wit_files(files: &Files) -> Vec<wit::File> {
    files
        .iter()
        .map(|(p, c)| wit::File {
            path: p.clone(),
            content: c.clone(),
        })
        .collect()
}

fn wit_source(source: &UpstreamSource) -> wit::UpstreamSource {
    wit::UpstreamSource {
        repo: source.repo.clone(),
        directory: source.directory.clone(),
        ref_: source.r#ref.clone(),
        commit: source.commit.clone(),
    }
}

fn clone_input(upstream: &Files, package: &str, source: &UpstreamSource) -> wit::CloneInput {
    wit::CloneInput {
        upstream: wit_files(upstream),
        package: package.to_string(),
        source: wit_source(source),
    }
}

fn upgrade_input(
    old_upstream: &Files,
    new_upstream: &Files,
    local: &Files,
    source: &UpstreamSource,
) -> wit::UpgradeInput {
    wit::UpgradeInput {
        old_upstream: wit_files(old_upstream),
        new_upstream: wit_files(new_upstream),
        local: wit_files(local),
        source: wit_source(source),
    }
}

fn decode_clone(r: Result<Vec<wit::File>, String>) -> Result<Files, String> {
    r.map(|files| files.into_iter().map(|f| (f.path, f.content)).collect())
}

fn decode_upgrade(r: Result<wit::UpgradeOutcome, String>) -> Result<MergeOutcome, String> {
    r.map(|o| MergeOutcome {
        files: o.files.into_iter().map(|f| (f.path, f.content)).collect(),
        conflicts: o
            .conflicts
            .into_iter()
            .map(|c| MergeConflict {
                file: c.file,
                resource: c.resource,
                path: c.path,
            })
            .collect(),
        changed_files: o.changed_files,
    })
}

/// The component's exports at the level of its records: what
/// [`NativeCore`] and [`ComponentCore`] each provide. [`Core`] is
/// implemented once over it, so both cores convert arguments and answers
/// with the same code.
pub trait Exports {
    /// `plan-reconcile`.
    fn plan_records(
        &self,
        input: &wit::PlanInput,
    ) -> CoreResult<Result<wit::ReconcilePlan, String>>;
    /// `apply-mutations`.
    fn mutation_records(
        &self,
        input: &wit::MutationInput,
    ) -> CoreResult<Result<wit::MutationOutcome, wit::MutationError>>;
    /// `render-package-variant-set`.
    fn render_records(
        &self,
        input: &wit::RenderInput,
    ) -> CoreResult<Result<wit::RenderOutcome, wit::RenderError>>;
    /// `clone-package`.
    fn clone_records(&self, input: &wit::CloneInput) -> CoreResult<Result<Vec<wit::File>, String>>;
    /// `upgrade-package`.
    fn upgrade_records(
        &self,
        input: &wit::UpgradeInput,
    ) -> CoreResult<Result<wit::UpgradeOutcome, String>>;
    /// `render-package`.
    fn render_package_records(
        &self,
        input: &wit::PackageRenderInput,
    ) -> CoreResult<wit::PackageRenderStep>;
    /// A whole package render, taking the files (see
    /// [`Core::render_package`]).
    fn render_files(
        &self,
        files: Files,
        options: &RenderOptions,
        runtime: &mut dyn FunctionRuntime,
    ) -> CoreResult<RenderedPackage>;
    /// A whole PackageRevision reconcile (see
    /// [`Core::reconcile_package_revision`]).
    fn reconcile_pr(
        &self,
        input: &prc_step::StepInput,
        host: &mut dyn FnMut(&prc_step::Call) -> Option<prc_step::Answer>,
    ) -> CoreResult<Option<prc_step::Outcome>>;
    /// A short name for messages (`component` or `native`).
    fn core_name(&self) -> &'static str;
    /// See [`Core::fuel_used`].
    fn fuel_used_so_far(&self) -> Option<u64> {
        None
    }
}

impl<T: Exports + Send + Sync> Core for T {
    fn reconcile_package_revision(
        &self,
        input: &prc_step::StepInput,
        host: &mut dyn FnMut(&prc_step::Call) -> Option<prc_step::Answer>,
    ) -> CoreResult<Option<prc_step::Outcome>> {
        self.reconcile_pr(input, host)
    }

    fn plan(&self, pv: &PackageVariant, prs: &[PackageRevision], now: &str) -> CoreResult<Plan> {
        let input = plan_input(pv, prs, now)?;
        let plan = self.plan_records(&input)?.map_err(|m| CoreError::Decode {
            operation: "plan-reconcile",
            message: m,
        })?;
        decode_plan(plan)
    }

    fn apply_mutations(
        &self,
        pv: &PackageVariant,
        namespace: &str,
        name: &str,
        files: &Files,
        candidates: &[Value],
    ) -> CoreResult<Result<Mutated, String>> {
        let input = mutation_input(pv, namespace, name, files, candidates)?;
        decode_mutations(self.mutation_records(&input)?)
    }

    fn render_set(&self, input: SetInput<'_>) -> CoreResult<Result<SetRender, SetFailure>> {
        let input = render_input(input)?;
        decode_render(self.render_records(&input)?)
    }

    fn clone_package(
        &self,
        upstream: &Files,
        package: &str,
        source: &UpstreamSource,
    ) -> CoreResult<Result<Files, String>> {
        let input = clone_input(upstream, package, source);
        Ok(decode_clone(self.clone_records(&input)?))
    }

    fn upgrade_package(
        &self,
        old_upstream: &Files,
        new_upstream: &Files,
        local: &Files,
        source: &UpstreamSource,
    ) -> CoreResult<Result<MergeOutcome, String>> {
        let input = upgrade_input(old_upstream, new_upstream, local, source);
        Ok(decode_upgrade(self.upgrade_records(&input)?))
    }

    fn render_package(
        &self,
        files: Files,
        options: &RenderOptions,
        runtime: &mut dyn FunctionRuntime,
    ) -> CoreResult<RenderedPackage> {
        self.render_files(files, options, runtime)
    }

    fn name(&self) -> &'static str {
        self.core_name()
    }

    fn fuel_used(&self) -> Option<u64> {
        self.fuel_used_so_far()
    }
}

/// The component's render options.
fn render_options(options: &RenderOptions) -> wit::PackageRenderOptions {
    wit::PackageRenderOptions {
        allow_exec: options.allow_exec,
        image_prefix: options.image_prefix.clone(),
        root_path: options.root_path.clone(),
        eval: options
            .eval
            .as_ref()
            .map(|spec| serde_json::to_string(spec).unwrap_or_default()),
        function_configs: (!options.function_configs.is_empty())
            .then(|| serde_json::to_string(&options.function_configs).unwrap_or_default()),
    }
}

/// The answer to the `asked`-th function a render asks for; past
/// [`MAX_RENDER_FUNCTIONS`], the message that stops the render.
fn answer_request(
    runtime: &mut dyn FunctionRuntime,
    req: wit::FunctionRequest,
    asked: usize,
) -> Result<wit::FunctionAnswer, String> {
    if asked >= MAX_RENDER_FUNCTIONS {
        return Err(format!(
            "a render asked for more than {MAX_RENDER_FUNCTIONS} functions"
        ));
    }
    Ok(run_requested(runtime, req))
}

/// Runs the function a render asked for: its answer.
fn run_requested(
    runtime: &mut dyn FunctionRuntime,
    req: wit::FunctionRequest,
) -> wit::FunctionAnswer {
    let function = FunctionRef {
        image: req.image,
        exec: req.exec,
    };
    match runtime.run(&function, &req.resource_list) {
        Ok(o) => wit::FunctionAnswer::Ran(wit::FunctionOutput {
            stdout: o.stdout,
            stderr: o.stderr,
            exit_code: o.exit_code,
        }),
        Err(RuntimeError::NotFound) => wit::FunctionAnswer::NotFound,
        Err(RuntimeError::Failed(m)) => wit::FunctionAnswer::Failed(m),
        Err(RuntimeError::Pending) => {
            wit::FunctionAnswer::Failed("the runtime gave no answer".into())
        }
    }
}

/// A finished render's record as a [`RenderedPackage`].
fn rendered(done: wit::PackageRendered) -> RenderedPackage {
    RenderedPackage {
        files: done
            .files
            .into_iter()
            .map(|f| (f.path, f.content))
            .collect(),
        failure: done.failure.map(|f| RenderFailure {
            message: f.message,
            cause: f.cause,
            handled: f.handled,
            detail: f.detail,
        }),
        results_yaml: done.results_yaml,
        summary: done.summary,
        log: done.log,
    }
}

/// Most functions one render may ask the host to run (each asks once;
/// this stops a runaway exchange).
pub const MAX_RENDER_FUNCTIONS: usize = 10_000;

/// A finished package render.
#[derive(Debug, Clone, Default)]
pub struct RenderedPackage {
    /// Every file afterwards.
    pub files: Files,
    /// Why the render failed, if it did.
    pub failure: Option<RenderFailure>,
    /// kpt's `FunctionResultList` (`results.yaml`).
    pub results_yaml: String,
    /// The summary line.
    pub summary: String,
    /// Progress lines.
    pub log: Vec<String>,
}

/// The core compiled into this binary.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeCore;

impl Exports for NativeCore {
    fn plan_records(
        &self,
        input: &wit::PlanInput,
    ) -> CoreResult<Result<wit::ReconcilePlan, String>> {
        Ok(native::plan_reconcile(input))
    }

    fn mutation_records(
        &self,
        input: &wit::MutationInput,
    ) -> CoreResult<Result<wit::MutationOutcome, wit::MutationError>> {
        Ok(native::apply_mutations(input))
    }

    fn render_records(
        &self,
        input: &wit::RenderInput,
    ) -> CoreResult<Result<wit::RenderOutcome, wit::RenderError>> {
        Ok(native::render_package_variant_set(input))
    }

    fn clone_records(&self, input: &wit::CloneInput) -> CoreResult<Result<Vec<wit::File>, String>> {
        Ok(native::clone_package(input))
    }

    fn upgrade_records(
        &self,
        input: &wit::UpgradeInput,
    ) -> CoreResult<Result<wit::UpgradeOutcome, String>> {
        Ok(native::upgrade_package(input))
    }

    fn render_package_records(
        &self,
        input: &wit::PackageRenderInput,
    ) -> CoreResult<wit::PackageRenderStep> {
        Ok(native::render_package(input))
    }

    fn render_files(
        &self,
        files: Files,
        options: &RenderOptions,
        runtime: &mut dyn FunctionRuntime,
    ) -> CoreResult<RenderedPackage> {
        let out = pv_core::render::render_owned(files, options, runtime);
        if out.pending {
            return Err(CoreError::Decode {
                operation: "render-package",
                message: "the function runtime gave no answer".into(),
            });
        }
        Ok(RenderedPackage {
            results_yaml: out.results_yaml(),
            files: out.files,
            failure: out.failure,
            summary: out.summary,
            log: out.log,
        })
    }

    fn reconcile_pr(
        &self,
        input: &prc_step::StepInput,
        host: &mut dyn FnMut(&prc_step::Call) -> Option<prc_step::Answer>,
    ) -> CoreResult<Option<prc_step::Outcome>> {
        // Natively the core calls the host back: no replay.
        Ok(prc_step::run(input, host))
    }

    fn core_name(&self) -> &'static str {
        "native"
    }
}

/// The embedded WebAssembly component.
#[derive(Debug)]
pub struct ComponentCore(pub CoreComponent);

impl ComponentCore {
    /// Loads the embedded component with its default limits.
    pub fn load() -> CoreResult<Self> {
        Ok(ComponentCore(CoreComponent::new()?))
    }

    /// Renders `files` with the rendered files left in the instance:
    /// `finish` gets each file's path, size and hash and a function that
    /// takes files by path, so the caller need never hold the whole
    /// rendered package. The render's report (without files) and what
    /// `finish` returned.
    pub fn render_held<T>(
        &self,
        files: Files,
        options: &RenderOptions,
        runtime: &mut dyn FunctionRuntime,
        finish: &mut dyn FnMut(
            Vec<crate::package_dir::HeldFile>,
            crate::package_dir::Fetch<'_>,
        ) -> T,
    ) -> CoreResult<(RenderedPackage, T)> {
        let options = render_options(options);
        let mut answer =
            |req: wit::FunctionRequest, asked: usize| answer_request(runtime, req, asked);
        let mut report = RenderedPackage::default();
        let mut on_done = |held: wit::HeldRender, take: crate::component::TakeHeld<'_>| {
            let files = held
                .files
                .into_iter()
                .map(|f| crate::package_dir::HeldFile {
                    path: f.path,
                    size: f.size,
                    hash: f.hash,
                })
                .collect();
            report = RenderedPackage {
                files: Files::new(),
                failure: held.failure.map(|f| RenderFailure {
                    message: f.message,
                    cause: f.cause,
                    handled: f.handled,
                    detail: f.detail,
                }),
                results_yaml: held.results_yaml,
                summary: held.summary,
                log: held.log,
            };
            let mut fetch = |paths: Vec<String>| {
                take(paths)
                    .map(|files| files.into_iter().map(|f| (f.path, f.content)).collect())
                    .map_err(|e| e.to_string())
            };
            finish(files, &mut fetch)
        };
        let out = self
            .0
            .render_files_held(files, &options, &mut answer, &mut on_done)?
            .map_err(|message| CoreError::Decode {
                operation: "render-package",
                message,
            })?;
        Ok((report, out))
    }
}

impl Exports for ComponentCore {
    fn plan_records(
        &self,
        input: &wit::PlanInput,
    ) -> CoreResult<Result<wit::ReconcilePlan, String>> {
        Ok(self.0.plan_reconcile(input)?)
    }

    fn mutation_records(
        &self,
        input: &wit::MutationInput,
    ) -> CoreResult<Result<wit::MutationOutcome, wit::MutationError>> {
        Ok(self.0.apply_mutations(input)?)
    }

    fn render_records(
        &self,
        input: &wit::RenderInput,
    ) -> CoreResult<Result<wit::RenderOutcome, wit::RenderError>> {
        Ok(self.0.render_package_variant_set(input)?)
    }

    fn clone_records(&self, input: &wit::CloneInput) -> CoreResult<Result<Vec<wit::File>, String>> {
        Ok(self.0.clone_package(input)?)
    }

    fn upgrade_records(
        &self,
        input: &wit::UpgradeInput,
    ) -> CoreResult<Result<wit::UpgradeOutcome, String>> {
        Ok(self.0.upgrade_package(input)?)
    }

    fn render_package_records(
        &self,
        input: &wit::PackageRenderInput,
    ) -> CoreResult<wit::PackageRenderStep> {
        Ok(self.0.render_package(input)?)
    }

    fn render_files(
        &self,
        files: Files,
        options: &RenderOptions,
        runtime: &mut dyn FunctionRuntime,
    ) -> CoreResult<RenderedPackage> {
        let options = render_options(options);
        let mut answer =
            |req: wit::FunctionRequest, asked: usize| answer_request(runtime, req, asked);
        let done = self
            .0
            .render_files(files, &options, &mut answer)?
            .map_err(|message| CoreError::Decode {
                operation: "render-package",
                message,
            })?;
        Ok(rendered(done))
    }

    fn reconcile_pr(
        &self,
        input: &prc_step::StepInput,
        host: &mut dyn FnMut(&prc_step::Call) -> Option<prc_step::Answer>,
    ) -> CoreResult<Option<prc_step::Outcome>> {
        // The component cannot call the host: it replays the reconcile
        // over the answers it keeps, and is sent only each newest one.
        const OP: &str = "reconcile-package-revision";
        let mut ended: CoreResult<Option<prc_step::Outcome>> = Ok(None);
        let mut next = |step: String| -> Option<String> {
            let step: prc_step::Step = match from_json(OP, &step) {
                Ok(step) => step,
                Err(e) => {
                    ended = Err(e);
                    return None;
                }
            };
            match step {
                prc_step::Step::Done { outcome } => {
                    ended = Ok(Some(outcome));
                    None
                }
                prc_step::Step::Call { call } => {
                    let answer = host(&call)?;
                    match to_json(OP, &answer) {
                        Ok(json) => Some(json),
                        Err(e) => {
                            ended = Err(e);
                            None
                        }
                    }
                }
            }
        };
        self.0
            .reconcile_package_revision_held(&to_json(OP, input)?, &mut next)?;
        ended
    }

    fn core_name(&self) -> &'static str {
        "component"
    }

    fn fuel_used_so_far(&self) -> Option<u64> {
        self.0.fuel_used()
    }
}
