//! The PackageVariant's status: its `Stalled` and `Ready` conditions and its
//! `downstreamTargets`, with upstream's types, reasons and messages.
//!
//! | situation | Stalled | Ready |
//! |---|---|---|
//! | validation failed / upstream not found | True, `ValidationError`, the error | False, `Error`, `invalid packagevariant object` |
//! | valid, upstream found | False, `Valid`, `all validation checks passed` | (below) |
//! | ensuring failed | (unchanged) | False, `Error`, the error |
//! | success | (unchanged) | True, `NoErrors`, `successfully ensured downstream package variant` |
//!
//! Conditions follow `meta.SetStatusCondition` (the transition time only
//! moves when the status flips); `now` is an RFC 3339 time from the caller.

use crate::api::meta::{set_status_condition, Condition};
use crate::api::package_revision::RenderStatus;
use crate::api::package_variant::{DownstreamTarget, PackageVariantStatus};

/// Condition type: whether the variant cannot make progress.
pub const CONDITION_STALLED: &str = "Stalled";
/// Condition type: whether the last reconcile succeeded.
pub const CONDITION_READY: &str = "Ready";

/// Ready message of a stalled variant.
pub const INVALID_MESSAGE: &str = "invalid packagevariant object";
/// Stalled message of a valid variant.
pub const VALID_MESSAGE: &str = "all validation checks passed";
/// Ready message of a successful reconcile.
pub const SUCCESS_MESSAGE: &str = "successfully ensured downstream package variant";

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition::new(type_, status, reason, message)
}

/// `setStalledConditionsToTrue`: Stalled=True/`ValidationError`/`message`
/// and Ready=False/`Error`/`invalid packagevariant object`.
pub fn set_stalled(status: &mut PackageVariantStatus, message: &str, now: &str) {
    set_status_condition(
        &mut status.conditions,
        condition(CONDITION_STALLED, "True", "ValidationError", message),
        now,
    );
    set_status_condition(
        &mut status.conditions,
        condition(CONDITION_READY, "False", "Error", INVALID_MESSAGE),
        now,
    );
}

/// Stalled=False/`Valid`/`all validation checks passed`.
pub fn set_valid(status: &mut PackageVariantStatus, now: &str) {
    set_status_condition(
        &mut status.conditions,
        condition(CONDITION_STALLED, "False", "Valid", VALID_MESSAGE),
        now,
    );
}

/// Ready=False/`Error`/`message` (ensuring the downstream failed).
pub fn set_ready_error(status: &mut PackageVariantStatus, message: &str, now: &str) {
    set_status_condition(
        &mut status.conditions,
        condition(CONDITION_READY, "False", "Error", message),
        now,
    );
}

/// `setTargetStatusConditions`: `downstreamTargets` rebuilt in the order of
/// `targets` (names of the downstream revisions), keeping an existing entry
/// (and its render status) by name, then Ready=True/`NoErrors`.
pub fn set_target_status_conditions<S: AsRef<str>>(
    status: &mut PackageVariantStatus,
    targets: &[S],
    now: &str,
) {
    let rebuilt = targets
        .iter()
        .map(|t| {
            let name = t.as_ref();
            status
                .downstream_targets
                .iter()
                .find(|d| d.name == name)
                .cloned()
                .unwrap_or_else(|| DownstreamTarget {
                    name: name.to_string(),
                    render_status: None,
                })
        })
        .collect();
    status.downstream_targets = rebuilt;
    set_status_condition(
        &mut status.conditions,
        condition(CONDITION_READY, "True", "NoErrors", SUCCESS_MESSAGE),
        now,
    );
}

/// `updatePackageResources`' bookkeeping: after a downstream's resources
/// were written, its render status goes to the target of that name (appended
/// when absent).
pub fn record_render_status(
    status: &mut PackageVariantStatus,
    name: &str,
    render_status: RenderStatus,
) {
    match status
        .downstream_targets
        .iter_mut()
        .find(|d| d.name == name)
    {
        Some(target) => target.render_status = Some(render_status),
        None => status.downstream_targets.push(DownstreamTarget {
            name: name.to_string(),
            render_status: Some(render_status),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(s: &'a PackageVariantStatus, t: &str) -> &'a Condition {
        s.conditions.iter().find(|c| c.type_ == t).unwrap()
    }

    #[test]
    fn stalled_then_valid_then_ready() {
        let mut s = PackageVariantStatus::default();
        set_stalled(&mut s, "missing required field spec.upstream", "t1");
        let c = find(&s, "Stalled");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (
                "True",
                "ValidationError",
                "missing required field spec.upstream"
            )
        );
        assert_eq!(c.last_transition_time, "t1");
        let r = find(&s, "Ready");
        assert_eq!(
            (r.status.as_str(), r.reason.as_str(), r.message.as_str()),
            ("False", "Error", "invalid packagevariant object")
        );

        set_valid(&mut s, "t2");
        let c = find(&s, "Stalled");
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "Valid"));
        assert_eq!(c.message, "all validation checks passed");
        assert_eq!(c.last_transition_time, "t2");

        set_ready_error(&mut s, "boom", "t3");
        let r = find(&s, "Ready");
        assert_eq!(
            (r.message.as_str(), r.last_transition_time.as_str()),
            ("boom", "t1")
        );

        set_target_status_conditions(&mut s, &["a"], "t4");
        let r = find(&s, "Ready");
        assert_eq!(
            (
                r.status.as_str(),
                r.reason.as_str(),
                r.message.as_str(),
                r.last_transition_time.as_str()
            ),
            (
                "True",
                "NoErrors",
                "successfully ensured downstream package variant",
                "t4"
            )
        );
        assert_eq!(r.observed_generation, None);
    }

    #[test]
    fn targets_keep_render_status_by_name() {
        let mut s = PackageVariantStatus::default();
        let rs = RenderStatus {
            error: "render failed".into(),
            ..Default::default()
        };
        record_render_status(&mut s, "b", rs.clone());
        record_render_status(&mut s, "b", rs.clone());
        assert_eq!(s.downstream_targets.len(), 1);
        set_target_status_conditions(&mut s, &["a".to_string(), "b".to_string()], "t");
        assert_eq!(s.downstream_targets.len(), 2);
        assert_eq!(s.downstream_targets[0].name, "a");
        assert_eq!(s.downstream_targets[0].render_status, None);
        assert_eq!(s.downstream_targets[1].render_status, Some(rs));
        set_target_status_conditions::<&str>(&mut s, &[], "t");
        assert!(s.downstream_targets.is_empty());
    }
}
