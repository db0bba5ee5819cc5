//! Nephio's approval controller as a decision: whether a draft or proposed
//! PackageRevision annotated with an approval policy is proposed or
//! approved now, waits, or is refused.
//!
//! A revision is considered only when it is not published and carries
//! `approval.nephio.org/policy`. Then, in Nephio's order:
//!
//! 1. a revision owned by a PackageVariant waits until that variant is
//!    `Ready=True` (its absence is an error);
//! 2. it waits until its readiness gates are all `True`, and (ours) while
//!    its last render failed (`Rendered=False`);
//! 3. the policy: `initial` approves only while the package has no
//!    published revision, `always` approves every revision; another value
//!    is refused;
//! 4. `approval.nephio.org/delay` (a Go duration, 0 or more) makes it wait
//!    until that long after its creation. Nephio's first versions waited
//!    the whole delay again on every check; here, as in Nephio's later
//!    versions, only what is left of it.
//!
//! Then a draft is proposed and a proposed revision approved: a draft
//! takes two decisions to be published, as in Nephio.

use crate::api::package_revision::Lifecycle;
use crate::api::{PackageRevision, PackageVariant};
use crate::time::{Duration, Time};

/// The policy annotation.
pub const POLICY: &str = "approval.nephio.org/policy";
/// The delay annotation.
pub const DELAY: &str = "approval.nephio.org/delay";
/// Approve only the first published revision of a package.
pub const INITIAL: &str = "initial";
/// Approve every revision.
pub const ALWAYS: &str = "always";

/// What to do with a revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Not the approval controller's: published, or no policy.
    Ignore,
    /// Not yet, and why.
    Wait(String),
    /// Never as it is, and why (a bad annotation, a missing owner).
    Refuse(String),
    /// Draft → Proposed.
    Propose,
    /// Proposed → Published.
    Approve,
}

/// The owning PackageVariant's name, when `pr` has one.
pub fn owner_variant(pr: &PackageRevision) -> Option<&str> {
    pr.metadata
        .owner_references
        .iter()
        .find(|o| o.kind == "PackageVariant")
        .map(|o| o.name.as_str())
}

/// Decides for `pr`. `package` are the revisions of its package,
/// `owner` its owning PackageVariant as found (`None` when it has none or
/// it was not found), `now` RFC 3339.
pub fn decide(
    pr: &PackageRevision,
    package: &[PackageRevision],
    owner: Option<&PackageVariant>,
    now: &str,
) -> Decision {
    if pr.spec.lifecycle.is_published() {
        return Decision::Ignore;
    }
    let Some(policy) = pr.metadata.annotations.get(POLICY) else {
        return Decision::Ignore;
    };
    if let Some(name) = owner_variant(pr) {
        let Some(pv) = owner else {
            return Decision::Refuse(format!("could not get owning PackageVariant {name}"));
        };
        let ready = pv
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if !ready {
            return Decision::Wait(format!("owning PackageVariant {name} not Ready"));
        }
    }
    if !pr.gates_met() {
        return Decision::Wait("readiness gates not met".to_string());
    }
    if let Some(c) = pr
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Rendered" && c.status == "False")
    {
        return Decision::Wait(format!("its render failed: {}", c.message));
    }
    match policy.as_str() {
        INITIAL => {
            let published = package.iter().find(|p| {
                p.spec.lifecycle.is_published()
                    && p.spec.repository == pr.spec.repository
                    && p.spec.package_name == pr.spec.package_name
            });
            if let Some(p) = published {
                return Decision::Wait(format!(
                    "approval policy \"initial\" not met: {} is published",
                    p.metadata.name
                ));
            }
        }
        ALWAYS => {}
        other => {
            return Decision::Refuse(format!("invalid {POLICY:?} annotation value: {other:?}"));
        }
    }
    match remaining_delay(pr, now) {
        Err(why) => return Decision::Refuse(format!("error processing {DELAY:?}: {why}")),
        Ok(left) if left > Duration::ZERO => {
            return Decision::Wait(format!("delay time not met: {left} left"));
        }
        Ok(_) => {}
    }
    match pr.spec.lifecycle {
        Lifecycle::Proposed => Decision::Approve,
        _ => Decision::Propose,
    }
}

/// What is left of `pr`'s delay at `now` (zero without the annotation).
pub fn remaining_delay(pr: &PackageRevision, now: &str) -> Result<Duration, String> {
    let Some(text) = pr.metadata.annotations.get(DELAY) else {
        return Ok(Duration::ZERO);
    };
    let d = Duration::parse(text).map_err(|e| e.to_string())?;
    if d.is_negative() {
        return Err(format!("invalid delay {text:?}; delay must be 0 or more"));
    }
    if d == Duration::ZERO {
        return Ok(d);
    }
    let created = pr
        .metadata
        .creation_timestamp
        .as_deref()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| "the revision has no creation timestamp to measure it from".to_string())?;
    let created = Time::parse_rfc3339(created).map_err(|e| e.to_string())?;
    let now = Time::parse_rfc3339(now).map_err(|e| e.to_string())?;
    let left = created.plus(d).since(now);
    Ok(if left.is_negative() {
        Duration::ZERO
    } else {
        left
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::package_revision::{PackageCondition, ReadinessGate};
    use crate::api::{Condition, OwnerReference};

    const NOW: &str = "2026-11-29T12:00:00Z";

    fn draft(annotations: &[(&str, &str)]) -> PackageRevision {
        let mut pr = PackageRevision::default();
        pr.metadata.name = "edge.web.ws".into();
        pr.metadata.creation_timestamp = Some("2026-11-29T11:50:00Z".into());
        pr.spec.repository = "edge".into();
        pr.spec.package_name = "web".into();
        pr.spec.lifecycle = Lifecycle::Draft;
        for (k, v) in annotations {
            pr.metadata.annotations.insert(k.to_string(), v.to_string());
        }
        pr
    }

    fn published() -> PackageRevision {
        let mut p = draft(&[]);
        p.metadata.name = "edge.web.v1".into();
        p.spec.lifecycle = Lifecycle::Published;
        p
    }

    #[test]
    fn only_annotated_unpublished_revisions_are_considered() {
        assert_eq!(decide(&draft(&[]), &[], None, NOW), Decision::Ignore);
        assert_eq!(
            decide(&draft(&[(DELAY, "20s")]), &[], None, NOW),
            Decision::Ignore
        );
        let mut p = draft(&[(POLICY, ALWAYS)]);
        p.spec.lifecycle = Lifecycle::Published;
        assert_eq!(decide(&p, &[], None, NOW), Decision::Ignore);
    }

    #[test]
    fn initial_approves_only_the_first_revision_and_always_every_one() {
        let d = draft(&[(POLICY, INITIAL)]);
        assert_eq!(decide(&d, &[], None, NOW), Decision::Propose);
        assert!(matches!(
            decide(&d, &[published()], None, NOW),
            Decision::Wait(w) if w.contains("edge.web.v1 is published")
        ));
        let mut a = draft(&[(POLICY, ALWAYS)]);
        assert_eq!(decide(&a, &[published()], None, NOW), Decision::Propose);
        a.spec.lifecycle = Lifecycle::Proposed;
        assert_eq!(decide(&a, &[published()], None, NOW), Decision::Approve);
        assert!(matches!(
            decide(&draft(&[(POLICY, "sometimes")]), &[], None, NOW),
            Decision::Refuse(w) if w.contains("\"sometimes\"")
        ));
    }

    #[test]
    fn the_delay_counts_from_creation_and_bad_ones_are_refused() {
        // Created ten minutes ago.
        let wait = decide(&draft(&[(POLICY, ALWAYS), (DELAY, "15m")]), &[], None, NOW);
        assert_eq!(wait, Decision::Wait("delay time not met: 5m0s left".into()));
        let done = decide(&draft(&[(POLICY, ALWAYS), (DELAY, "10m")]), &[], None, NOW);
        assert_eq!(done, Decision::Propose);
        assert_eq!(
            decide(&draft(&[(POLICY, ALWAYS), (DELAY, "0s")]), &[], None, NOW),
            Decision::Propose
        );
        for bad in ["-5s", "soon"] {
            assert!(
                matches!(
                    decide(&draft(&[(POLICY, ALWAYS), (DELAY, bad)]), &[], None, NOW),
                    Decision::Refuse(_)
                ),
                "{bad}"
            );
        }
        let mut no_time = draft(&[(POLICY, ALWAYS), (DELAY, "1h")]);
        no_time.metadata.creation_timestamp = None;
        assert!(matches!(
            decide(&no_time, &[], None, NOW),
            Decision::Refuse(_)
        ));
    }

    #[test]
    fn gates_a_failed_render_and_the_owning_variant_hold_it() {
        let mut d = draft(&[(POLICY, ALWAYS)]);
        d.spec.readiness_gates = vec![ReadinessGate {
            condition_type: "Specialized".into(),
        }];
        assert_eq!(
            decide(&d, &[], None, NOW),
            Decision::Wait("readiness gates not met".into())
        );
        d.status.conditions = vec![
            PackageCondition {
                type_: "Specialized".into(),
                status: "True".into(),
                ..Default::default()
            },
            PackageCondition {
                type_: "Rendered".into(),
                status: "False".into(),
                message: "set-labels failed".into(),
                ..Default::default()
            },
        ];
        assert_eq!(
            decide(&d, &[], None, NOW),
            Decision::Wait("its render failed: set-labels failed".into())
        );
        d.status.conditions.pop();
        d.metadata.owner_references = vec![OwnerReference {
            kind: "PackageVariant".into(),
            name: "pv".into(),
            uid: "uid-pv".into(),
            ..Default::default()
        }];
        assert!(matches!(decide(&d, &[], None, NOW), Decision::Refuse(_)));
        let mut pv = PackageVariant::default();
        assert_eq!(
            decide(&d, &[], Some(&pv), NOW),
            Decision::Wait("owning PackageVariant pv not Ready".into())
        );
        pv.status.conditions.push(Condition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Condition::default()
        });
        assert_eq!(decide(&d, &[], Some(&pv), NOW), Decision::Propose);
    }
}
