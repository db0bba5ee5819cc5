//! The exports of `wit/porch-variants.wit` as plain functions over the
//! core: read the records (Kubernetes objects from JSON), call
//! `pv_core`, write the records back. No logic of its own.
//!
//! This one file is compiled twice: into the guest (over the types
//! wit-bindgen generates) and into the host's native backend
//! (`porch_variants::component::native`, over the types wasmtime's
//! `bindgen!` generates). Both generators give the WIT records the same
//! Rust names, fields and variants, so the code is the same; the includer
//! provides them as `super::wit`. That is what makes the parity test a
//! comparison of the core with the component, not of two conversions.

use std::collections::BTreeMap;

use pv_core::api::{Condition, PackageRevision, PackageVariant};
use pv_core::merge::{self, UpstreamSource};
use pv_core::variant::downstream::{PrAction, UpdateReason};
use pv_core::variant::drafts::DraftKind;
use pv_core::variant::mutate::{self, InjectionPoint, MutationOutcome, PrrRef};
use pv_core::variant::plan::{self, MutationTarget, Outcome, PlanStep};
use pv_core::variant::validate;
use pv_core::variantset::{
    self, ClusterObject, Limits, ObjectKind, PackageVariantSet, RenderError, RenderOutcome,
    Repository, TargetObjects,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::wit;

/// `porch-variants-core <version>`.
pub fn version() -> String {
    format!("porch-variants-core {}", env!("CARGO_PKG_VERSION"))
}

/// `validate-package-variant`.
pub fn validate_package_variant(package_variant: &str) -> Result<Vec<String>, String> {
    let pv: PackageVariant = from_json("package-variant", package_variant)?;
    Ok(validate::validate_package_variant(&pv))
}

/// `plan-reconcile`.
pub fn plan_reconcile(input: &wit::PlanInput) -> Result<wit::ReconcilePlan, String> {
    let pv: PackageVariant = from_json("package-variant", &input.package_variant)?;
    let prs: Vec<PackageRevision> = from_json_list("package-revisions", &input.package_revisions)?;
    let plan = plan::plan_reconcile(&pv, &prs);
    let mut status = pv.status.clone();
    plan.apply_conditions(&mut status, &input.now);
    Ok(wit::ReconcilePlan {
        steps: plan.steps.iter().map(plan_step).collect(),
        outcome: match &plan.outcome {
            Outcome::Deleting => wit::PlanOutcome::Deleting,
            Outcome::Invalid(e) => wit::PlanOutcome::Invalid(e.errors.clone()),
            Outcome::UpstreamNotFound(e) => wit::PlanOutcome::UpstreamNotFound(e.to_string()),
            Outcome::Failed(e) => wit::PlanOutcome::Failed(e.to_string()),
            Outcome::Ensure => wit::PlanOutcome::Ensure,
        },
        requeue: plan.requeue(),
        conditions: status.conditions.iter().map(condition).collect(),
    })
}

/// `apply-mutations`.
pub fn apply_mutations(
    input: &wit::MutationInput,
) -> Result<wit::MutationOutcome, wit::MutationError> {
    let invalid = wit::MutationError::InvalidInput;
    let pv: PackageVariant =
        from_json("package-variant", &input.package_variant).map_err(invalid)?;
    let candidates: Vec<serde_json::Value> =
        from_json_list("candidates", &input.candidates).map_err(invalid)?;
    let files = files_in(&input.files);
    let prr = PrrRef {
        namespace: &input.namespace,
        name: &input.name,
    };
    mutate::apply_mutations(&pv, prr, &files, &candidates)
        .map(mutation_outcome)
        .map_err(|e| wit::MutationError::Failed(e.to_string()))
}

/// `validate-package-variant-set`.
pub fn validate_package_variant_set(package_variant_set: &str) -> Result<Vec<String>, String> {
    let pvs: PackageVariantSet = from_json("package-variant-set", package_variant_set)?;
    Ok(variantset::validate::validate(&pvs))
}

/// `render-package-variant-set`.
pub fn render_package_variant_set(
    input: &wit::RenderInput,
) -> Result<wit::RenderOutcome, wit::RenderError> {
    let invalid = wit::RenderError::InvalidInput;
    let pvs: PackageVariantSet =
        from_json("package-variant-set", &input.package_variant_set).map_err(invalid)?;
    let upstream_revisions: Vec<PackageRevision> =
        from_json_list("upstream-revisions", &input.upstream_revisions).map_err(invalid)?;
    let repositories: Vec<Repository> =
        from_json_list("repositories", &input.repositories).map_err(invalid)?;
    let objects: Vec<ClusterObject> =
        from_json_list("target-objects", &input.target_objects).map_err(invalid)?;
    let existing: Vec<PackageVariant> =
        from_json_list("existing", &input.existing).map_err(invalid)?;
    let downstream: Vec<PackageRevision> =
        from_json_list("downstream-revisions", &input.downstream_revisions).map_err(invalid)?;
    let target_objects = TargetObjects {
        kinds: input
            .target_kinds
            .iter()
            .map(|k| ObjectKind::new(k.api_version.clone(), k.kind.clone()))
            .collect(),
        objects,
    };
    let limits = input.limits.as_ref().map_or_else(Limits::default, limits);
    variantset::render_with(
        &pvs,
        &upstream_revisions,
        &repositories,
        &target_objects,
        &existing,
        &downstream,
        limits,
    )
    .map(render_outcome)
    .map_err(|e| wit::RenderError::Stalled(render_failure(&e)))
}

/// `format-files`.
pub fn format_files(files: &[wit::File]) -> Vec<wit::FormattedFile> {
    files
        .iter()
        .map(|f| wit::FormattedFile {
            path: f.path.clone(),
            formatted: pv_core::yaml::reformat(&f.content).map_err(|e| e.to_string()),
        })
        .collect()
}

/// `clone-package`.
pub fn clone_package(input: &wit::CloneInput) -> Result<Vec<wit::File>, String> {
    let upstream = files_in(&input.upstream);
    merge::prepare_clone(&upstream, &input.package, &upstream_source(&input.source))
        .map(|files| files_out(&files))
        .map_err(|e| e.to_string())
}

/// `upgrade-package`.
pub fn upgrade_package(input: &wit::UpgradeInput) -> Result<wit::UpgradeOutcome, String> {
    merge::prepare_upgrade(
        &files_in(&input.old_upstream),
        &files_in(&input.new_upstream),
        &files_in(&input.local),
        &upstream_source(&input.source),
    )
    .map(|out| wit::UpgradeOutcome {
        files: files_out(&out.files),
        conflicts: out
            .conflicts
            .into_iter()
            .map(|c| wit::MergeConflict {
                file: c.file,
                resource: c.resource,
                path: c.path,
            })
            .collect(),
        changed_files: out.changed_files,
    })
    .map_err(|e| e.to_string())
}

fn files_in(files: &[wit::File]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|f| (f.path.clone(), f.content.clone()))
        .collect()
}

fn files_out(files: &BTreeMap<String, String>) -> Vec<wit::File> {
    files
        .iter()
        .map(|(path, content)| wit::File {
            path: path.clone(),
            content: content.clone(),
        })
        .collect()
}

fn upstream_source(s: &wit::UpstreamSource) -> UpstreamSource {
    UpstreamSource {
        repo: s.repo.clone(),
        directory: s.directory.clone(),
        r#ref: s.ref_.clone(),
        commit: s.commit.clone(),
    }
}

fn from_json<T: DeserializeOwned>(what: &str, text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("{what}: {e}"))
}

fn from_json_list<T: DeserializeOwned>(what: &str, texts: &[String]) -> Result<Vec<T>, String> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::from_str(t).map_err(|e| format!("{what}[{i}]: {e}")))
        .collect()
}

/// The JSON of an API object. Serializing these types cannot fail: every
/// map has string keys and every value is plain data.
fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("API objects serialize")
}

fn condition(c: &Condition) -> wit::Condition {
    wit::Condition {
        type_: c.type_.clone(),
        status: c.status.clone(),
        observed_generation: c.observed_generation,
        last_transition_time: c.last_transition_time.clone(),
        reason: c.reason.clone(),
        message: c.message.clone(),
    }
}

fn plan_step(step: &PlanStep) -> wit::PlanStep {
    match step {
        PlanStep::AddFinalizer => wit::PlanStep::AddFinalizer,
        PlanStep::RemoveFinalizer => wit::PlanStep::RemoveFinalizer,
        PlanStep::PackageRevision(PrAction::Update { reason, object }) => {
            wit::PlanStep::UpdateRevision(wit::RevisionUpdate {
                reason: match reason {
                    UpdateReason::Adopt => wit::UpdateReason::Adopt,
                    UpdateReason::ProposeDeletion => wit::UpdateReason::ProposeDeletion,
                    UpdateReason::Orphan => wit::UpdateReason::Orphan,
                    UpdateReason::ProposeDeletionAndOrphan => {
                        wit::UpdateReason::ProposeDeletionAndOrphan
                    }
                    UpdateReason::Unpropose => wit::UpdateReason::Unpropose,
                },
                object: to_json(object),
            })
        }
        PlanStep::PackageRevision(PrAction::Delete { object }) => {
            wit::PlanStep::DeleteRevision(to_json(object))
        }
        PlanStep::CreateDraft { kind, draft } => wit::PlanStep::CreateDraft(wit::Draft {
            kind: match kind {
                DraftKind::Clone => wit::DraftKind::Clone,
                DraftKind::Upgrade => wit::DraftKind::Upgrade,
                DraftKind::Edit => wit::DraftKind::Edit,
            },
            object: to_json(draft),
        }),
        PlanStep::EnsureMutations {
            target,
            edit_draft_if_changed,
        } => wit::PlanStep::EnsureMutations(wit::EnsureMutations {
            target: match target {
                MutationTarget::Existing(pr) => wit::MutationTarget::Existing(to_json(pr)),
                MutationTarget::Created(i) => wit::MutationTarget::Created(count(*i)),
            },
            edit_draft_if_changed: edit_draft_if_changed.as_ref().map(to_json),
        }),
    }
}

fn mutation_outcome(out: MutationOutcome) -> wit::MutationOutcome {
    wit::MutationOutcome {
        files: out
            .files
            .into_iter()
            .map(|(path, content)| wit::File { path, content })
            .collect(),
        changed: out.changed,
        changed_files: out.changed_files,
        conditions: out
            .conditions
            .into_iter()
            .map(|c| wit::PackageCondition {
                type_: c.type_,
                status: c.status,
                reason: c.reason,
                message: c.message,
            })
            .collect(),
        readiness_gates: out
            .readiness_gates
            .into_iter()
            .map(|g| wit::ReadinessGate {
                condition_type: g.condition_type,
            })
            .collect(),
        results: out.results.into_iter().map(injection_result).collect(),
    }
}

fn injection_result(p: InjectionPoint) -> wit::InjectionResult {
    wit::InjectionResult {
        file: p.file,
        index: count(p.index),
        api_version: p.api_version,
        kind: p.kind,
        name: p.name,
        condition_type: p.condition_type,
        required: p.required,
        errors: p.errors,
        injected: p.injected,
        injected_name: p.injected_name,
    }
}

fn limits(l: &wit::CelLimits) -> Limits {
    Limits {
        max_source_len: size(l.max_source_len),
        max_tokens: size(l.max_tokens),
        max_nesting: size(l.max_nesting),
        max_ast_nodes: size(l.max_ast_nodes),
        max_ast_depth: size(l.max_ast_depth),
        max_cost: l.max_cost,
        max_result_len: size(l.max_result_len),
        max_render_cost: l.max_render_cost,
    }
}

fn render_outcome(out: RenderOutcome) -> wit::RenderOutcome {
    let list = |pvs: &[PackageVariant]| pvs.iter().map(to_json).collect();
    wit::RenderOutcome {
        package_variants: list(&out.package_variants),
        plan: wit::SyncPlan {
            create: list(&out.plan.create),
            update: list(&out.plan.update),
            delete: list(&out.plan.delete),
            unchanged: out.plan.unchanged,
            foreign: out.plan.foreign,
            duplicates: out.plan.duplicates,
        },
        conditions: out.conditions.iter().map(condition).collect(),
        stats: wit::RenderStats {
            targets: count(out.stats.targets),
            compiled_expressions: count(out.stats.compiled_expressions),
            evaluations: count(out.stats.evaluations),
            cost: out.stats.cost,
        },
        rollout: out.rollout.as_ref().map(to_json),
    }
}

fn render_failure(e: &RenderError) -> wit::RenderFailure {
    wit::RenderFailure {
        reason: e.reason().to_string(),
        message: e.to_string(),
        conditions: e.conditions().iter().map(condition).collect(),
        target_index: match e {
            RenderError::Template { target_index, .. } => Some(count(*target_index)),
            _ => None,
        },
    }
}

/// A count or index as WIT's `u32` (saturating; nothing the core counts
/// comes near it).
fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A WIT `u32` limit as `usize` (saturating on 16-bit targets).
fn size(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// `render-package` on a copy of `input` (see [`render_package_owned`]);
/// the host's native mirror calls it with records it keeps.
#[allow(dead_code)]
pub fn render_package(input: &wit::PackageRenderInput) -> wit::PackageRenderStep {
    render_package_owned(input.clone())
}

/// `render-package`: renders with the answers given so far; the first
/// function without one is returned for the host to run.
pub fn render_package_owned(input: wit::PackageRenderInput) -> wit::PackageRenderStep {
    let files = input
        .files
        .into_iter()
        .map(|f| (f.path, f.content))
        .collect();
    render_step(files, &input.options, &input.answers).0
}

std::thread_local! {
    /// The package `stage-files` gave this instance.
    static STAGED: std::cell::RefCell<BTreeMap<String, String>> =
        const { std::cell::RefCell::new(BTreeMap::new()) };
}

/// `stage-files`: adds files to the staged package.
pub fn stage_files(files: Vec<wit::File>, fresh: bool) {
    STAGED.with(|staged| {
        let mut staged = staged.borrow_mut();
        if fresh {
            staged.clear();
        }
        for f in files {
            staged.insert(f.path, f.content);
        }
    });
}

/// `render-staged`: `render-package` of the staged files, which stay
/// staged only while a function's output is still to come.
pub fn render_staged(
    options: &wit::PackageRenderOptions,
    answers: &[wit::FunctionAnswer],
) -> wit::PackageRenderStep {
    let files = STAGED.with(|staged| std::mem::take(&mut *staged.borrow_mut()));
    let (step, pending_files) = render_step(files, options, answers);
    if let Some(files) = pending_files {
        STAGED.with(|staged| *staged.borrow_mut() = files);
    }
    step
}

/// `render-held`: `render-staged` whose rendered files stay in the
/// instance for `take-held`.
pub fn render_held(
    options: &wit::PackageRenderOptions,
    answers: &[wit::FunctionAnswer],
) -> wit::HeldRenderStep {
    let files = STAGED.with(|staged| std::mem::take(&mut *staged.borrow_mut()));
    let (step, pending_files) = render_step(files, options, answers);
    if let Some(files) = pending_files {
        STAGED.with(|staged| *staged.borrow_mut() = files);
    }
    match step {
        wit::PackageRenderStep::RunFunction(request) => wit::HeldRenderStep::RunFunction(request),
        wit::PackageRenderStep::Done(done) => {
            let mut held = Vec::with_capacity(done.files.len());
            let mut kept = BTreeMap::new();
            for f in done.files {
                held.push(wit::HeldFile {
                    size: f.content.len() as u64,
                    hash: pv_core::render::package::content_hash(f.content.as_bytes()),
                    path: f.path.clone(),
                });
                kept.insert(f.path, f.content);
            }
            STAGED.with(|staged| *staged.borrow_mut() = kept);
            wit::HeldRenderStep::Done(wit::HeldRender {
                files: held,
                failure: done.failure,
                results_yaml: done.results_yaml,
                summary: done.summary,
                log: done.log,
            })
        }
    }
}

/// `take-held`: the held files at `paths`, removed from the instance.
pub fn take_held(paths: Vec<String>) -> Vec<wit::File> {
    STAGED.with(|staged| {
        let mut staged = staged.borrow_mut();
        paths
            .into_iter()
            .filter_map(|path| {
                let content = staged.remove(&path)?;
                Some(wit::File { path, content })
            })
            .collect()
    })
}

/// One render with `answers`: the step, and the files back when a
/// function's output is still to come.
fn render_step(
    files: BTreeMap<String, String>,
    options: &wit::PackageRenderOptions,
    answers: &[wit::FunctionAnswer],
) -> (wit::PackageRenderStep, Option<BTreeMap<String, String>>) {
    use pv_core::render::{self, RecordedRuntime, RenderOptions, RunOutput};
    let answers = answers
        .iter()
        .map(|a| match a {
            wit::FunctionAnswer::Ran(o) => Ok(RunOutput {
                stdout: o.stdout.clone(),
                stderr: o.stderr.clone(),
                exit_code: o.exit_code,
            }),
            wit::FunctionAnswer::NotFound => Err(None),
            wit::FunctionAnswer::Failed(m) => Err(Some(m.clone())),
        })
        .collect();
    let mut runtime = RecordedRuntime::with_answers(answers);
    let parsed = options
        .eval
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| format!("invalid eval request: {e}"))
        .and_then(|eval| {
            let configs = options
                .function_configs
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .map_err(|e| format!("invalid FunctionConfigs: {e}"))?;
            Ok((eval, configs.unwrap_or_default()))
        });
    let (eval, function_configs) = match parsed {
        Ok(parsed) => parsed,
        Err(cause) => {
            let step = wit::PackageRenderStep::Done(wit::PackageRendered {
                files: files
                    .into_iter()
                    .map(|(path, content)| wit::File { path, content })
                    .collect(),
                failure: Some(wit::PackageRenderFailure {
                    message: cause.clone(),
                    cause: cause.clone(),
                    handled: false,
                    detail: cause,
                }),
                results_yaml: String::new(),
                summary: String::new(),
                log: Vec::new(),
            });
            return (step, None);
        }
    };
    let opts = RenderOptions {
        allow_exec: options.allow_exec,
        image_prefix: options.image_prefix.clone(),
        root_path: options.root_path.clone(),
        eval,
        function_configs,
    };
    let out = render::render_owned(files, &opts, &mut runtime);
    if let Some((f, resource_list)) = runtime.pending.take() {
        let step = wit::PackageRenderStep::RunFunction(wit::FunctionRequest {
            image: f.image,
            exec: f.exec,
            resource_list,
        });
        return (step, Some(out.files));
    }
    let results_yaml = out.results_yaml();
    let step = wit::PackageRenderStep::Done(wit::PackageRendered {
        files: out
            .files
            .into_iter()
            .map(|(path, content)| wit::File { path, content })
            .collect(),
        failure: out.failure.map(|f| wit::PackageRenderFailure {
            message: f.message,
            cause: f.cause,
            handled: f.handled,
            detail: f.detail,
        }),
        results_yaml,
        summary: out.summary,
        log: out.log,
    });
    (step, None)
}

/// A reconcile held between its steps: its input with the answers given
/// so far, and what its steps computed from them.
type HeldReconcile = (
    pv_core::prc::reconcile::StepInput,
    pv_core::prc::reconcile::Kept,
);

thread_local! {
    /// The reconcile [`begin_package_revision_reconcile`] began, kept
    /// between steps so that each step is sent only its newest answer and
    /// does not compute again what the steps before it did.
    static RECONCILE: std::cell::RefCell<Option<HeldReconcile>> =
        const { std::cell::RefCell::new(None) };
}

/// A step of the reconcile held in [`RECONCILE`]; the reconcile is dropped
/// once it is done.
fn step_held((input, mut kept): HeldReconcile) -> String {
    use pv_core::prc::reconcile::{step_keeping, Step};
    let step = step_keeping(&input, &mut kept);
    if matches!(step, Step::Call { .. }) {
        RECONCILE.with(|held| *held.borrow_mut() = Some((input, kept)));
    }
    step_json(&step)
}

fn step_json(step: &pv_core::prc::reconcile::Step) -> String {
    serde_json::to_string(step).unwrap_or_else(|e| {
        format!(
            r#"{{"step":"done","outcome":{{"error":{:?}}}}}"#,
            e.to_string()
        )
    })
}

fn step_error(message: String) -> String {
    use pv_core::prc::reconcile::{Outcome, Step};
    step_json(&Step::Done {
        outcome: Outcome {
            error: Some(message),
            ..Outcome::default()
        },
    })
}

/// `begin-package-revision-reconcile`: the first step of a reconcile whose
/// input (with any answers already given) the instance keeps for
/// [`answer_package_revision_call`]; any reconcile held before is dropped.
pub fn begin_package_revision_reconcile(input: &str) -> String {
    RECONCILE.with(|held| held.borrow_mut().take());
    match serde_json::from_str::<pv_core::prc::reconcile::StepInput>(input) {
        Ok(input) => step_held((input, Default::default())),
        Err(e) => step_error(format!("begin-package-revision-reconcile input: {e}")),
    }
}

/// `answer-package-revision-call`: the next step of the held reconcile,
/// given the answer to its last call.
pub fn answer_package_revision_call(answer: &str) -> String {
    let Some((mut input, kept)) = RECONCILE.with(|held| held.borrow_mut().take()) else {
        return step_error("answer-package-revision-call: no reconcile was begun".into());
    };
    match serde_json::from_str(answer) {
        Ok(answer) => {
            input.answers.push(answer);
            step_held((input, kept))
        }
        Err(e) => step_error(format!("answer-package-revision-call answer: {e}")),
    }
}

/// `reconcile-package-revision`: one step of a PackageRevision reconcile,
/// JSON in and out; input that does not decode ends the reconcile with an
/// error naming it.
pub fn reconcile_package_revision(input: &str) -> String {
    use pv_core::prc::reconcile::{step, StepInput};
    let step = match serde_json::from_str::<StepInput>(input) {
        Ok(input) => step(&input),
        Err(e) => return step_error(format!("reconcile-package-revision input: {e}")),
    };
    step_json(&step)
}
