//! Nephio's approval controller over the revisions of PackageVariants that
//! ask for it: a variant whose `spec.annotations` carry
//! `approval.nephio.org/policy` gives the annotation to its drafts, and
//! each pass proposes or approves those [`pv_core::approval::decide`]
//! allows. Only those variants' downstream packages are read, so a fleet
//! that asks for nothing pays nothing.

use std::collections::BTreeMap;

use pv_core::api::package_revision::Lifecycle;
use pv_core::api::PackageVariant;
use pv_core::approval::{decide, owner_variant, Decision, POLICY};

use super::{Ctx, Event, ReconcileError};
use crate::store::PrFilter;

/// Proposes and approves what the policy allows among the downstream
/// revisions of `variants`; each lifecycle change is an event, each refusal
/// (a bad annotation, a missing owner) an error. Returns whether a revision
/// waits (for its variant, its gates, its render or its delay): a
/// controller that is not woken by time looks again later.
pub fn approve(
    ctx: &Ctx<'_>,
    variants: &[PackageVariant],
    events: &mut Vec<Event>,
    errors: &mut Vec<Event>,
) -> Result<bool, ReconcileError> {
    let mut waiting = false;
    let by_name: BTreeMap<(&str, &str), &PackageVariant> = variants
        .iter()
        .map(|pv| {
            (
                (pv.metadata.namespace.as_str(), pv.metadata.name.as_str()),
                pv,
            )
        })
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for pv in variants {
        if !pv.spec.annotations.contains_key(POLICY) {
            continue;
        }
        let Some(d) = &pv.spec.downstream else {
            continue;
        };
        let ns = pv.metadata.namespace.as_str();
        if !seen.insert((ns, d.repo.as_str(), d.package.as_str())) {
            continue;
        }
        let package = ctx
            .revisions
            .list(ns, &PrFilter::package(&d.repo, &d.package))?;
        for pr in &package {
            let owner = owner_variant(pr).and_then(|n| by_name.get(&(ns, n)).copied());
            let subject = format!("PackageRevision {ns}/{}", pr.metadata.name);
            let (to, verb) = match decide(pr, &package, owner, &ctx.now) {
                Decision::Ignore => continue,
                Decision::Wait(why) => {
                    tracing::debug!(revision = %pr.metadata.name, %why, "not approved yet");
                    waiting = true;
                    continue;
                }
                Decision::Refuse(why) => {
                    errors.push(Event::new(subject, "error", format!("approval: {why}")));
                    continue;
                }
                Decision::Propose => (Lifecycle::Proposed, "proposed"),
                Decision::Approve => (Lifecycle::Published, "approved"),
            };
            let policy = pr.metadata.annotations[POLICY].clone();
            match ctx.revisions.update_lifecycle(ns, &pr.metadata.name, to) {
                Ok(done) => {
                    let detail = if done.spec.revision > 0 && to == Lifecycle::Published {
                        format!("revision {} (approval policy {policy})", done.spec.revision)
                    } else {
                        format!("approval policy {policy}")
                    };
                    events.push(Event::new(subject, verb, detail));
                }
                Err(e) => {
                    let e = ReconcileError::from(e);
                    if e.is_fatal() {
                        return Err(e);
                    }
                    errors.push(Event::new(subject, "error", format!("approval: {e}")));
                }
            }
        }
    }
    Ok(waiting)
}
