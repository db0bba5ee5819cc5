//! Nephio's approval controller over the revisions of PackageVariants that
//! ask for it: a variant whose `spec.annotations` carry
//! `approval.nephio.org/policy` gives the annotation to its drafts, and
//! each pass proposes or approves those [`pv_core::approval::decide`]
//! allows. Only those variants' downstream packages are read, so a fleet
//! that asks for nothing pays nothing; and, where the store can find them
//! by their annotation (v1alpha2 objects), the packages of revisions
//! annotated by hand.

use std::collections::BTreeMap;

use pv_core::api::package_revision::Lifecycle;
use pv_core::api::{PackageRevision, PackageVariant};
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
    approve_with(ctx, variants, Reach::Variants, events, errors)
}

/// Which packages an approval pass looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The downstream packages of variants that ask for the policy.
    Variants,
    /// Those, and the packages whose revisions carry the policy
    /// annotation themselves.
    AlsoAnnotated,
}

/// [`approve`], and then, with [`Reach::AlsoAnnotated`], the packages whose revisions
/// carry the policy annotation themselves (given by hand, as
/// `kubectl annotate` or a declared PackageRevision gives it, rather than
/// by a variant's `spec.annotations`), as the store finds them
/// ([`crate::store::PackageRevisionStore::annotated_packages`]). `variants`
/// are then every variant, so that a revision's owner is found.
pub fn approve_with(
    ctx: &Ctx<'_>,
    variants: &[PackageVariant],
    reach: Reach,
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
    let owner = |ns: &str, name: &str| by_name.get(&(ns, name)).map(|pv| (*pv).clone());
    let mut seen = std::collections::BTreeSet::new();
    for pv in variants {
        if !pv.spec.annotations.contains_key(POLICY) {
            continue;
        }
        let Some(d) = &pv.spec.downstream else {
            continue;
        };
        let ns = pv.metadata.namespace.clone();
        if !seen.insert((ns.clone(), d.repo.clone(), d.package.clone())) {
            continue;
        }
        let package = Package {
            namespace: &ns,
            repository: &d.repo,
            name: &d.package,
        };
        waiting |= approve_package(ctx, package, &owner, &|_| true, events, errors)?;
    }
    if reach == Reach::AlsoAnnotated {
        for (ns, repo, name) in ctx.revisions.annotated_packages(POLICY)? {
            if seen.contains(&(ns.clone(), repo.clone(), name.clone())) {
                continue;
            }
            let package = Package {
                namespace: &ns,
                repository: &repo,
                name: &name,
            };
            waiting |= approve_package(ctx, package, &owner, &|_| true, events, errors)?;
        }
    }
    Ok(waiting)
}

/// One package of one namespace.
#[derive(Debug, Clone, Copy)]
pub struct Package<'a> {
    /// Its namespace.
    pub namespace: &'a str,
    /// Its repository.
    pub repository: &'a str,
    /// Its path in the repository.
    pub name: &'a str,
}

/// Proposes and approves what the policy allows among the revisions of
/// `package` for which `handles` holds; `owner` finds a revision's owning
/// PackageVariant by namespace and name. Returns whether one waits.
pub fn approve_package(
    ctx: &Ctx<'_>,
    package: Package<'_>,
    owner: &dyn Fn(&str, &str) -> Option<PackageVariant>,
    handles: &dyn Fn(&PackageRevision) -> bool,
    events: &mut Vec<Event>,
    errors: &mut Vec<Event>,
) -> Result<bool, ReconcileError> {
    let ns = package.namespace;
    let mut waiting = false;
    let revisions = ctx
        .revisions
        .list(ns, &PrFilter::package(package.repository, package.name))?;
    for pr in revisions.iter().filter(|pr| handles(pr)) {
        let owner = owner_variant(pr).and_then(|n| owner(ns, n));
        let subject = format!("PackageRevision {ns}/{}", pr.metadata.name);
        let (to, verb) = match decide(pr, &revisions, owner.as_ref(), &ctx.now) {
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
    Ok(waiting)
}
