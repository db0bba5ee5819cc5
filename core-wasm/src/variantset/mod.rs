//! PackageVariantSet rendering: validation, target unrolling, CEL
//! templates, PackageVariant names and the sync plan.
//!
//! [`render()`] is one reconcile of Porch's PackageVariantSet controller
//! without its I/O: given the set, the PackageRevisions, Repositories and
//! other objects of its namespace, and its existing children, it returns the
//! desired PackageVariants, the writes to get there and the conditions to
//! show — or the reason nothing may be written. Every target is rendered
//! before anything is planned, so one bad target means no writes at all.
//!
//! | step | module | failure (`Stalled` reason) |
//! |---|---|---|
//! | validate the spec | [`validate`] | `ValidationError` |
//! | find the upstream revision | [`upstream`] | `UpstreamNotFound` |
//! | unroll targets | [`unroll`], [`selector`] | `NoMatchingTargets` / `UnexpectedError` |
//! | render templates (CEL) | [`render`](mod@render), [`cel`] | `UnexpectedError` |
//! | name children, plan writes | [`naming`], [`sync`] | — |

pub mod naming;
pub mod render;
pub mod rollout;
pub mod scope;
pub mod selector;
pub mod status;
pub mod sync;
pub mod types;
pub mod unroll;
pub mod upstream;
pub mod validate;

pub use crate::krm::cel;
pub use crate::krm::cel::{CelError, Limits, ObjectInput};
pub use render::{Evaluator, TemplateError};
pub use selector::{LabelSelector, LabelSelectorRequirement};
pub use sync::SyncPlan;
pub use types::{
    ClusterObject, PackageVariantSet, PackageVariantSetSpec, PackageVariantTemplate, Repository,
    Target,
};
pub use unroll::{ObjectKind, TargetObjects, UnrollError};
pub use upstream::UpstreamNotFound;

use crate::api::{Condition, PackageRevision, PackageVariant};

/// The result of a successful render.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderOutcome {
    /// The desired children, one per identity key, in target order.
    pub package_variants: Vec<PackageVariant>,
    /// The writes: apply `delete`, then `update` and `create`.
    pub plan: SyncPlan,
    /// `Stalled=False/Valid`, `Ready=True/Reconciled`: the conditions to show
    /// once the plan is applied (on a write failure use
    /// [`status::write_failed`] instead).
    pub conditions: Vec<Condition>,
    /// Counters of the render.
    pub stats: RenderStats,
    /// Where a staged rollout stands (with `spec.rolloutStrategy`; its
    /// `Rollout` condition is among `conditions`).
    pub rollout: Option<rollout::RolloutView>,
}

/// Counters of one render.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderStats {
    /// Unrolled targets.
    pub targets: usize,
    /// Distinct expressions compiled.
    pub compiled_expressions: usize,
    /// Expression evaluations.
    pub evaluations: usize,
    /// Total estimated cost of the evaluations.
    pub cost: u64,
}

/// Why a render produced no plan; nothing may be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The spec is invalid (messages in upstream's order).
    #[error("{}", validate::combine(.0))]
    Validation(Vec<String>),
    /// The upstream PackageRevision does not exist.
    #[error(transparent)]
    UpstreamNotFound(#[from] UpstreamNotFound),
    /// Targets could not be unrolled.
    #[error(transparent)]
    Unroll(#[from] UnrollError),
    /// A target's template could not be rendered.
    #[error("{error}")]
    Template {
        /// Index of the `spec.targets` entry.
        target_index: usize,
        /// The unrolled target's default repository.
        repo_default: String,
        /// The unrolled target's default package.
        package_default: String,
        /// What failed.
        error: TemplateError,
    },
}

impl RenderError {
    /// The `Stalled` reason upstream gives this failure.
    pub fn reason(&self) -> &'static str {
        match self {
            RenderError::Validation(_) => status::REASON_VALIDATION_ERROR,
            RenderError::UpstreamNotFound(_) => status::REASON_UPSTREAM_NOT_FOUND,
            RenderError::Unroll(UnrollError::NoMatchingKind { .. }) => {
                status::REASON_NO_MATCHING_TARGETS
            }
            RenderError::Unroll(_) | RenderError::Template { .. } => {
                status::REASON_UNEXPECTED_ERROR
            }
        }
    }

    /// `Stalled=True` and `Ready=False` with this reason and message.
    pub fn conditions(&self) -> Vec<Condition> {
        status::stalled(self.reason(), &self.to_string())
    }
}

/// One reconcile with the default [`Limits`]; see [`render_with`].
pub fn render(
    pvs: &PackageVariantSet,
    upstream_revisions: &[PackageRevision],
    repositories: &[Repository],
    target_objects: &TargetObjects,
    existing: &[PackageVariant],
) -> Result<RenderOutcome, RenderError> {
    render_with(
        pvs,
        upstream_revisions,
        repositories,
        target_objects,
        existing,
        &[],
        Limits::default(),
    )
}

/// One reconcile: validate, find the upstream, unroll the targets, render
/// every template, then plan the writes against `existing` (the set's
/// children: PackageVariants listed with its owner label) and, with a
/// rollout strategy, hold the updates it does not allow yet ([`rollout`];
/// `downstream` are the PackageRevisions of the children's downstream
/// packages). Inputs of other namespaces than the set's are ignored.
pub fn render_with(
    pvs: &PackageVariantSet,
    upstream_revisions: &[PackageRevision],
    repositories: &[Repository],
    target_objects: &TargetObjects,
    existing: &[PackageVariant],
    downstream: &[PackageRevision],
    limits: Limits,
) -> Result<RenderOutcome, RenderError> {
    let errs = validate::validate(pvs);
    if !errs.is_empty() {
        return Err(RenderError::Validation(errs));
    }
    let namespace = pvs.metadata.namespace.as_str();
    let spec_upstream = pvs.spec.upstream.as_ref();
    let upstream_pr = match spec_upstream {
        Some(up) => upstream::find_upstream(up, namespace, upstream_revisions)?,
        None => return Err(RenderError::Validation(vec![])),
    };
    let targets = unroll::unroll(pvs, repositories, target_objects)?;

    let upstream_input = cel::CelObject::from_meta(&upstream_pr.metadata);
    let mut repo_index = render::RepositoryIndex::new(repositories, namespace);
    let mut evaluator = Evaluator::new(limits);
    let mut specs = Vec::with_capacity(targets.len());
    // With a rollout strategy: each child's target object labels, by key
    // (the last target of a key wins, as its spec does).
    let mut object_labels: std::collections::HashMap<String, Option<&_>> = Default::default();
    for target in &targets {
        let spec = render::render_spec(
            spec_upstream,
            &upstream_input,
            target,
            &mut repo_index,
            &mut evaluator,
        )
        .map_err(|error| RenderError::Template {
            target_index: target.target_index,
            repo_default: target.repo_default.clone(),
            package_default: target.package_default.clone(),
            error,
        })?;
        if pvs.spec.rollout_strategy.is_some() {
            let key = sync::spec_key(&pvs.metadata.name, &spec);
            object_labels.insert(key, target.object.as_ref().map(|o| &o.labels));
        }
        specs.push(spec);
    }

    let desired = sync::desired_children(pvs, specs);
    let mut plan = sync::plan(pvs, &desired, existing);
    let mut conditions = status::reconciled();
    let rollout = pvs.spec.rollout_strategy.as_ref().map(|strategy| {
        let labels: Vec<_> = desired
            .iter()
            .map(|(key, pv)| {
                rollout::child_labels(
                    &pv.spec.labels,
                    pv.spec.downstream.as_ref().map_or("", |d| d.repo.as_str()),
                    object_labels.get(key).copied().flatten(),
                    repositories,
                    namespace,
                )
            })
            .collect();
        let gated = rollout::gate(
            pvs,
            strategy,
            &desired,
            &labels,
            existing,
            downstream,
            upstream_pr,
            &mut plan,
        );
        conditions.push(gated.condition);
        rollout::RolloutView {
            status: gated.status,
            members: gated.members,
            held: gated.held,
        }
    });
    Ok(RenderOutcome {
        package_variants: desired.into_iter().map(|(_, pv)| pv).collect(),
        plan,
        conditions,
        rollout,
        stats: RenderStats {
            targets: targets.len(),
            compiled_expressions: evaluator.compiled(),
            evaluations: evaluator.evaluations(),
            cost: evaluator.cost_spent(),
        },
    })
}
