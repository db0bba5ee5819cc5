//! One PackageVariantSet reconcile: gather the upstream's revisions, the
//! namespace's Repositories and objects and the set's children, let the
//! core render the children and the sync plan, apply it (deletions, then
//! updates, then creations), and write the status when it changed.

use pv_core::api::{PackageRevision, PackageVariant};
use pv_core::variantset::naming::OWNER_LABEL;
use pv_core::variantset::{rollout, status, ClusterObject, PackageVariantSet};

use super::{Ctx, Event, ReconcileError};
use crate::engine_api::SetInput;
use crate::store::PrFilter;

fn subject(pvs: &PackageVariantSet) -> String {
    format!(
        "PackageVariantSet {}/{}",
        pvs.metadata.namespace, pvs.metadata.name
    )
}

/// Reconciles one PackageVariantSet; every write is appended to `events`.
pub fn reconcile(
    ctx: &Ctx<'_>,
    pvs: &PackageVariantSet,
    events: &mut Vec<Event>,
) -> Result<(), ReconcileError> {
    let ns = pvs.metadata.namespace.as_str();
    let upstream_revisions = match &pvs.spec.upstream {
        Some(up) => ctx
            .revisions
            .list(ns, &PrFilter::package(&up.repo, &up.package))?,
        None => Vec::new(),
    };
    let repositories = ctx.objects.list_repositories(ns)?;
    let objects: Vec<ClusterObject> = ctx
        .objects
        .list_objects(ns)?
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect();
    let existing: Vec<_> = ctx
        .objects
        .list_package_variants(Some(ns))?
        .into_iter()
        .filter(|pv| pv.metadata.labels.get(OWNER_LABEL) == Some(&pvs.metadata.uid))
        .collect();
    let downstream_revisions = match pvs.spec.rollout_strategy {
        Some(_) => downstream_revisions(ctx, ns, &existing)?,
        None => Vec::new(),
    };
    let rendered = ctx.core.render_set(SetInput {
        set: pvs,
        upstream_revisions: &upstream_revisions,
        repositories: &repositories,
        objects: &objects,
        existing: &existing,
        downstream_revisions: &downstream_revisions,
    })?;
    // A failed write is reported in the status, then returned, so that the
    // set is tried again (with backoff) rather than left until something
    // else changes.
    let mut write_error = None;
    let mut rollout = pvs.status.rollout.clone();
    let conditions = match rendered {
        Err(failure) => failure.conditions,
        Ok(plan) => {
            rollout = plan.rollout.clone();
            let mut write = || -> Result<(), ReconcileError> {
                for pv in &plan.delete {
                    if pv.metadata.deletion_timestamp.is_some() {
                        continue;
                    }
                    ctx.objects
                        .delete_package_variant(&pv.metadata.namespace, &pv.metadata.name)?;
                    events.push(Event::new(
                        subject(pvs),
                        "deleted PackageVariant",
                        format!("{} (target removed)", pv.metadata.name),
                    ));
                }
                for pv in &plan.update {
                    ctx.objects.update_package_variant(pv)?;
                    events.push(Event::new(
                        subject(pvs),
                        "updated PackageVariant",
                        pv.metadata.name.clone(),
                    ));
                }
                for pv in &plan.create {
                    ctx.objects.create_package_variant(pv)?;
                    events.push(Event::new(
                        subject(pvs),
                        "created PackageVariant",
                        pv.metadata.name.clone(),
                    ));
                }
                Ok(())
            };
            match write() {
                Ok(()) => plan.conditions,
                Err(e) if e.is_fatal() => return Err(e),
                Err(e) => {
                    let conditions = status::write_failed(&e.to_string());
                    write_error = Some(e);
                    conditions
                }
            }
        }
    };
    let mut new_status = pvs.status.clone();
    status::apply(&mut new_status, &conditions, &ctx.now);
    new_status.rollout = rollout;
    if new_status.rollout.is_none() {
        new_status
            .conditions
            .retain(|c| c.type_ != rollout::ROLLOUT);
    }
    if new_status != pvs.status {
        let mut updated = pvs.clone();
        updated.status = new_status;
        ctx.objects.update_package_variant_set_status(&updated)?;
        let ready = updated
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == status::READY)
            .map(|c| format!("Ready={} {}: {}", c.status, c.reason, c.message))
            .unwrap_or_default();
        events.push(Event::new(subject(pvs), "status updated", ready));
    }
    match write_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The revisions of the children's downstream packages, one list per
/// package (a staged rollout reads how far each child's change has got).
fn downstream_revisions(
    ctx: &Ctx<'_>,
    ns: &str,
    children: &[PackageVariant],
) -> Result<Vec<PackageRevision>, ReconcileError> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for pv in children {
        if let Some(d) = &pv.spec.downstream {
            if seen.insert((d.repo.as_str(), d.package.as_str())) {
                out.extend(
                    ctx.revisions
                        .list(ns, &PrFilter::package(&d.repo, &d.package))?,
                );
            }
        }
    }
    Ok(out)
}
