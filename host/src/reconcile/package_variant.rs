//! One PackageVariant reconcile: list the revisions it may concern, ask the
//! core for the plan, execute the plan's writes in order, and write the
//! status when it changed.
//!
//! A clone or upgrade draft and its mutations are one write here: the
//! draft's content is prepared, mutated, and only then created. So no
//! unmutated draft is ever visible (kpt#3979), and a process killed at any
//! point leaves either no draft or a complete one. (Against the Porch API
//! the create is two calls, Porch's create with the task and the content;
//! when the second fails the store deletes the draft, and a draft left by
//! a process killed in between is the variant's own, which its next
//! reconcile finds and writes.)

use std::collections::BTreeMap;

use pv_core::api::package_variant::{DeletionPolicy, FINALIZER};
use pv_core::api::{PackageRevision, PackageVariant};
use pv_core::variant::drafts::DraftKind;
use pv_core::variant::status::{set_ready_error, set_target_status_conditions};
use serde_json::Value;

use super::source::draft_content;
use super::{Ctx, Event, ReconcileError};
use crate::engine_api::{PlanOutcome, Step, Target};
use crate::store::rules::copy_metadata;
use crate::store::{revision_name, NewRevision, PrFilter, SourceState};

/// `PackageVariant <namespace>/<name>`, the subject of its events.
pub(super) fn subject(pv: &PackageVariant) -> String {
    format!(
        "PackageVariant {}/{}",
        pv.metadata.namespace, pv.metadata.name
    )
}

/// The lists of revisions a reconcile of `pv` reads: those owned by the
/// variant, and, unless it is being deleted, the upstream package's and the
/// downstream package's (also what its digest covers, see
/// [`super::quiet`]).
pub(super) fn revision_filters(pv: &PackageVariant) -> Vec<PrFilter> {
    let mut filters = Vec::new();
    if !pv.metadata.uid.is_empty() {
        filters.push(PrFilter::owned_by(&pv.metadata.uid));
    }
    if pv.metadata.deletion_timestamp.is_none() {
        if let Some(up) = &pv.spec.upstream {
            filters.push(PrFilter::package(&up.repo, &up.package));
        }
        if let Some(down) = &pv.spec.downstream {
            filters.push(PrFilter::package(&down.repo, &down.package));
        }
    }
    filters
}

/// The revisions a plan may look at ([`revision_filters`]), by name.
fn relevant_revisions(
    ctx: &Ctx<'_>,
    pv: &PackageVariant,
) -> Result<Vec<PackageRevision>, ReconcileError> {
    let ns = pv.metadata.namespace.as_str();
    let mut by_name: BTreeMap<String, PackageRevision> = BTreeMap::new();
    for filter in revision_filters(pv) {
        for pr in ctx.revisions.list(ns, &filter)? {
            by_name.insert(pr.metadata.name.clone(), pr);
        }
    }
    Ok(by_name.into_values().collect())
}

/// The in-namespace objects config injection may use. The core picks, per
/// injection point, the first object of the point's kind named as an
/// injector; so only objects named by an injector matter, plus one object
/// per kind (which keeps the core's "no in-cluster resources of type"
/// message exact).
fn injection_candidates(ctx: &Ctx<'_>, pv: &PackageVariant) -> Result<Vec<Value>, ReconcileError> {
    if pv.spec.injectors.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<&str> = pv.spec.injectors.iter().map(|i| i.name.as_str()).collect();
    let mut kinds_seen: Vec<(String, String)> = Vec::new();
    let mut out = Vec::new();
    for obj in ctx.objects.list_objects(&pv.metadata.namespace)? {
        let kind = (
            obj["apiVersion"].as_str().unwrap_or_default().to_string(),
            obj["kind"].as_str().unwrap_or_default().to_string(),
        );
        let named = names.contains(&obj["metadata"]["name"].as_str().unwrap_or_default());
        let first = !kinds_seen.contains(&kind);
        if first {
            kinds_seen.push(kind);
        }
        if named || first {
            out.push(obj);
        }
    }
    Ok(out)
}

struct Exec<'c, 'e> {
    ctx: &'c Ctx<'c>,
    pv: PackageVariant,
    events: &'e mut Vec<Event>,
    candidates: Option<Vec<Value>>,
}

impl Exec<'_, '_> {
    fn event(&mut self, action: &str, detail: impl Into<String>) {
        self.events
            .push(Event::new(subject(&self.pv), action, detail));
    }

    fn candidates(&mut self) -> Result<Vec<Value>, ReconcileError> {
        if self.candidates.is_none() {
            self.candidates = Some(injection_candidates(self.ctx, &self.pv)?);
        }
        Ok(self.candidates.clone().unwrap_or_default())
    }

    /// Mutates `files` for the revision named `name`.
    fn mutate(
        &mut self,
        name: &str,
        files: &crate::store::Files,
    ) -> Result<crate::engine_api::Mutated, ReconcileError> {
        let candidates = self.candidates()?;
        let mut mutated = self
            .ctx
            .core
            .apply_mutations(
                &self.pv,
                &self.pv.metadata.namespace,
                name,
                files,
                &candidates,
            )?
            .map_err(ReconcileError::Refused)?;
        if let (Some(renderer), true) = (self.ctx.renderer, mutated.changed) {
            mutated.files = render_draft(
                self.ctx.core,
                renderer,
                name,
                std::mem::take(&mut mutated.files),
            )?;
            mutated.changed_files = changed_paths(files, &mutated.files);
            // Mutations of a rendered package undo what render did (the
            // Kptfile's formatting and status): what counts is the result.
            mutated.changed = !mutated.changed_files.is_empty();
        }
        Ok(mutated)
    }

    /// Creates `draft` with its task's content, mutated.
    fn create_draft(
        &mut self,
        kind: DraftKind,
        draft: &PackageRevision,
    ) -> Result<PackageRevision, ReconcileError> {
        let what = match kind {
            DraftKind::Clone => "clone",
            DraftKind::Upgrade => "upgrade",
            DraftKind::Edit => "edit",
        };
        if self.ctx.revisions.declares_sources() {
            // v1alpha2: the draft is declared; the PackageRevision
            // controller makes its content, and the mutations follow once
            // it has (the plan's next step, or a later reconcile).
            let created = self.ctx.revisions.create(NewRevision {
                revision: draft.clone(),
                files: Default::default(),
                upstream_lock: None,
            })?;
            self.event(
                &format!("requested {what} draft"),
                created.metadata.name.clone(),
            );
            return Ok(created);
        }
        let content = draft_content(self.ctx, draft)?;
        let name = revision_name(
            &draft.spec.repository,
            &draft.spec.package_name,
            &draft.spec.workspace_name,
        );
        let mutated = self.mutate(&name, &content.files)?;
        let created = self.ctx.revisions.create(NewRevision {
            revision: draft.clone(),
            files: mutated.files,
            upstream_lock: content.upstream_lock,
        })?;
        let mut detail = created.metadata.name.clone();
        if !content.conflicts.is_empty() {
            detail.push_str(&format!(
                " (kept local values: {})",
                content.conflicts.join(", ")
            ));
        }
        self.event(&format!("created {what} draft"), detail);
        Ok(created)
    }

    fn update_revision(
        &mut self,
        object: &PackageRevision,
        action: &str,
    ) -> Result<(), ReconcileError> {
        let ns = object.metadata.namespace.as_str();
        let name = object.metadata.name.as_str();
        let current = self.ctx.revisions.get(ns, name)?;
        // Lifecycle first: orphaning before proposing deletion would lose
        // the revision if the process stopped in between.
        if current.spec.lifecycle != object.spec.lifecycle {
            self.ctx
                .revisions
                .update_lifecycle(ns, name, object.spec.lifecycle)?;
            self.events.push(Event::new(
                format!("PackageRevision {name}"),
                format!("lifecycle {:?}", object.spec.lifecycle),
                format!("{action} by {}", subject(&self.pv)),
            ));
        }
        let mut want = current.metadata.clone();
        copy_metadata(&mut want, &object.metadata);
        let mut have = current.metadata.clone();
        copy_metadata(&mut have, &current.metadata);
        if want != have {
            self.ctx
                .revisions
                .update_metadata(ns, name, &object.metadata)?;
            self.events.push(Event::new(
                format!("PackageRevision {name}"),
                action.to_string(),
                format!("by {}", subject(&self.pv)),
            ));
        }
        Ok(())
    }

    /// Where the revision's content is made by another controller
    /// (v1alpha2): goes on only once it is there.
    fn await_source(&self, ns: &str, name: &str) -> Result<(), ReconcileError> {
        if !self.ctx.revisions.declares_sources() {
            return Ok(());
        }
        match self.ctx.revisions.source_state(ns, name)? {
            SourceState::Done => Ok(()),
            SourceState::Pending(said) => Err(ReconcileError::Waiting(format!(
                "waiting for the PackageRevision controller to make {name}{}",
                if said.is_empty() {
                    String::new()
                } else {
                    format!(" ({said})")
                }
            ))),
            SourceState::Failed(message) => Err(ReconcileError::Refused(format!(
                "the PackageRevision controller could not make {name}: {message}"
            ))),
        }
    }

    /// The mutations step; returns the name of the revision it ended on.
    fn ensure_mutations(
        &mut self,
        target: &PackageRevision,
        edit_draft: Option<&PackageRevision>,
    ) -> Result<String, ReconcileError> {
        let ns = target.metadata.namespace.clone();
        let name = target.metadata.name.clone();
        self.await_source(&ns, &name)?;
        let read = self.ctx.revisions.resources(&ns, &name)?;
        let files = read.spec.resources.unwrap_or_default();
        let mutated = self.mutate(&name, &files)?;
        if !mutated.changed {
            return Ok(name);
        }
        match edit_draft {
            Some(draft) if self.ctx.revisions.declares_sources() => {
                // A copy of the published revision is declared; once the
                // controller has made it, the mutated files are pushed to
                // it (now, or by a later reconcile that finds the draft).
                let created = self.create_draft(DraftKind::Edit, draft)?;
                let created_name = created.metadata.name;
                self.await_source(&ns, &created_name)?;
                let copy = self.ctx.revisions.resources(&ns, &created_name)?;
                self.ctx.revisions.update_resources(
                    &ns,
                    &created_name,
                    &mutated.files,
                    &copy.metadata.resource_version,
                )?;
                self.event(
                    "mutated draft",
                    format!(
                        "{created_name} (changed: {})",
                        mutated.changed_files.join(", ")
                    ),
                );
                Ok(created_name)
            }
            Some(draft) => {
                let created = self.ctx.revisions.create(NewRevision {
                    revision: draft.clone(),
                    files: mutated.files,
                    upstream_lock: target.status.upstream_lock.clone(),
                })?;
                self.event(
                    "created edit draft",
                    format!(
                        "{} (changed: {})",
                        created.metadata.name,
                        mutated.changed_files.join(", ")
                    ),
                );
                Ok(created.metadata.name)
            }
            None => {
                self.ctx.revisions.update_resources(
                    &ns,
                    &name,
                    &mutated.files,
                    &read.metadata.resource_version,
                )?;
                self.event(
                    "mutated draft",
                    format!("{name} (changed: {})", mutated.changed_files.join(", ")),
                );
                Ok(name)
            }
        }
    }

    fn run(&mut self, steps: &[Step]) -> Result<Vec<String>, ReconcileError> {
        let mut created: BTreeMap<usize, PackageRevision> = BTreeMap::new();
        let mut targets = Vec::new();
        let mut i = 0;
        while i < steps.len() {
            match &steps[i] {
                Step::AddFinalizer => {
                    let mut pv = self.pv.clone();
                    pv.metadata.finalizers.push(FINALIZER.to_string());
                    let updated = self.ctx.objects.update_package_variant(&pv)?;
                    self.pv.metadata = updated.metadata;
                    self.event("added finalizer", "");
                }
                Step::RemoveFinalizer => {
                    // The plan was made from a list that may lag behind
                    // (a cache): a revision created since would be left
                    // owned by a variant that is gone (kpt#3878). List
                    // again; anything still owned keeps the finalizer
                    // until a later reconcile has cleaned it up.
                    let ns = self.pv.metadata.namespace.clone();
                    let left = self
                        .ctx
                        .revisions
                        .list(&ns, &PrFilter::owned_by(&self.pv.metadata.uid))?;
                    if !left.is_empty() {
                        let names: Vec<&str> =
                            left.iter().map(|p| p.metadata.name.as_str()).collect();
                        // With a policy that is neither, nothing was deleted
                        // or orphaned: say what to fix.
                        let deletion = &self.pv.spec.deletion_policy;
                        let policy = if DeletionPolicy::from_spec(deletion).is_none() {
                            format!(
                                "; spec.deletionPolicy is {deletion:?} and can only be \"orphan\" or \"delete\""
                            )
                        } else {
                            String::new()
                        };
                        return Err(ReconcileError::Refused(format!(
                            "deletion not complete: still owns {}{policy}",
                            names.join(", ")
                        )));
                    }
                    let mut pv = self.pv.clone();
                    pv.metadata.finalizers.retain(|f| f != FINALIZER);
                    self.ctx.objects.update_package_variant(&pv)?;
                    self.pv.metadata.finalizers = pv.metadata.finalizers;
                    self.event("removed finalizer", "deletion complete");
                }
                Step::UpdateRevision { reason, object } => {
                    self.update_revision(object, &format!("{reason:?}").to_lowercase())?;
                }
                Step::DeleteRevision(object) => {
                    let (ns, name) = (&object.metadata.namespace, &object.metadata.name);
                    match self.ctx.revisions.delete(ns, name) {
                        Ok(()) => self.events.push(Event::new(
                            format!("PackageRevision {name}"),
                            "deleted",
                            format!("by {}", subject(&self.pv)),
                        )),
                        Err(e) if e.is_not_found() => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Step::CreateDraft { kind, draft } => {
                    let pr = self.create_draft(*kind, draft)?;
                    // The mutations of this draft ran before it was created.
                    if let Some(Step::EnsureMutations {
                        target: Target::Created(j),
                        ..
                    }) = steps.get(i + 1)
                    {
                        if *j == i && !self.ctx.revisions.declares_sources() {
                            targets.push(pr.metadata.name.clone());
                            created.insert(i, pr);
                            i += 2;
                            continue;
                        }
                    }
                    created.insert(i, pr);
                }
                Step::EnsureMutations {
                    target,
                    edit_draft_if_changed,
                } => {
                    let target = match target {
                        Target::Existing(pr) => (**pr).clone(),
                        Target::Created(j) => created.get(j).cloned().ok_or_else(|| {
                            ReconcileError::Refused(format!(
                                "plan step {i} refers to no created draft"
                            ))
                        })?,
                    };
                    let name = self.ensure_mutations(&target, edit_draft_if_changed.as_deref())?;
                    targets.push(name);
                }
            }
            i += 1;
        }
        Ok(targets)
    }
}

/// Reconciles one PackageVariant; every write is appended to `events`.
pub fn reconcile(
    ctx: &Ctx<'_>,
    pv: &PackageVariant,
    events: &mut Vec<Event>,
) -> Result<(), ReconcileError> {
    let prs = relevant_revisions(ctx, pv)?;
    let plan = ctx.core.plan(pv, &prs, &ctx.now)?;
    let mut exec = Exec {
        ctx,
        pv: pv.clone(),
        events,
        candidates: None,
    };
    let result = exec.run(&plan.steps);
    if plan.outcome == PlanOutcome::Deleting {
        return result.map(|_| ());
    }
    let mut status = pv.status.clone();
    status.conditions = plan.conditions.clone();
    let outcome = match (&result, &plan.outcome) {
        (Err(e), _) if e.is_fatal() => return result.map(|_| ()),
        (Err(e), _) => {
            set_ready_error(&mut status, &e.to_string(), &ctx.now);
            Err(())
        }
        (Ok(targets), PlanOutcome::Ensure) => {
            set_target_status_conditions(&mut status, targets, &ctx.now);
            // The render results of the resources just written (kpt#3891).
            for target in &mut status.downstream_targets {
                if let Some(rendered) = ctx
                    .revisions
                    .render_status(&pv.metadata.namespace, &target.name)
                {
                    target.render_status = Some(rendered);
                }
            }
            Ok(())
        }
        _ => Ok(()),
    };
    if status != pv.status {
        let mut updated = exec.pv.clone();
        updated.status = status;
        ctx.objects.update_package_variant_status(&updated)?;
        exec.events.push(Event::new(
            subject(pv),
            "status updated",
            ready_summary(&updated),
        ));
    }
    match (outcome, result) {
        (Err(()), Err(e)) => Err(e),
        _ => Ok(()),
    }
}

/// The line a person reads of a variant's status: its Ready condition,
/// and when it is stalled, why (upstream's Ready message for an invalid
/// variant names no reason; its Stalled condition does).
fn ready_summary(pv: &PackageVariant) -> String {
    let condition = |t: &str| pv.status.conditions.iter().find(|c| c.type_ == t);
    let mut line = condition("Ready")
        .map(|c| format!("Ready={} {}: {}", c.status, c.reason, c.message))
        .unwrap_or_default();
    if let Some(stalled) = condition("Stalled").filter(|c| c.status == "True") {
        line.push_str(&format!("; Stalled: {}", stalled.message));
    }
    line
}

/// Renders a draft's files as porch-server does whenever a draft's
/// resources change; a failed render refuses the write, naming the
/// function and its error.
fn render_draft(
    core: &dyn crate::engine_api::Core,
    renderer: &crate::reconcile::DraftRenderer,
    name: &str,
    files: crate::store::Files,
) -> Result<crate::store::Files, ReconcileError> {
    let mut runtime = renderer
        .runtime
        .lock()
        .map_err(|_| ReconcileError::Refused("the function runtime is unusable".into()))?;
    let rendered = core.render_package(files, &renderer.options(), &mut **runtime)?;
    match rendered.failure {
        None => Ok(rendered.files),
        Some(f) => Err(ReconcileError::Refused(format!(
            "rendering {name} failed: {}",
            f.detail.replace('\n', "; ")
        ))),
    }
}

/// The paths whose content differs between two versions of a package.
fn changed_paths(before: &crate::store::Files, after: &crate::store::Files) -> Vec<String> {
    let mut paths: Vec<String> = after
        .iter()
        .filter(|(p, c)| before.get(*p) != Some(*c))
        .map(|(p, _)| p.clone())
        .chain(before.keys().filter(|p| !after.contains_key(*p)).cloned())
        .collect();
    paths.sort();
    paths
}
