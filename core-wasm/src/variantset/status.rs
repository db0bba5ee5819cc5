//! The `Stalled` and `Ready` conditions of a PackageVariantSet, with
//! upstream's reasons and messages.

use super::types::PackageVariantSetStatus;
use crate::api::meta::set_status_condition;
use crate::api::Condition;

/// Condition type: no progress is possible until the set changes.
pub const STALLED: &str = "Stalled";
/// Condition type: the children were written.
pub const READY: &str = "Ready";
/// Reason: validation failed.
pub const REASON_VALIDATION_ERROR: &str = "ValidationError";
/// Reason: the upstream PackageRevision does not exist.
pub const REASON_UPSTREAM_NOT_FOUND: &str = "UpstreamNotFound";
/// Reason: an `objectSelector` names an unknown kind.
pub const REASON_NO_MATCHING_TARGETS: &str = "NoMatchingTargets";
/// Reason: anything else (template errors, write failures).
pub const REASON_UNEXPECTED_ERROR: &str = "UnexpectedError";
/// Reason: validation, upstream and targets are fine.
pub const REASON_VALID: &str = "Valid";
/// Reason: the children were written.
pub const REASON_RECONCILED: &str = "Reconciled";
/// Message of `Stalled=False`.
pub const MESSAGE_VALID: &str = "all validation checks passed";
/// Message of `Ready=True`.
pub const MESSAGE_RECONCILED: &str = "package variants successfully reconciled";

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition::new(type_, status, reason, message)
}

/// Upstream's `stalled(reason, message)`: `Stalled=True` and `Ready=False`,
/// both with `reason` and `message`.
pub fn stalled(reason: &str, message: &str) -> Vec<Condition> {
    vec![
        condition(STALLED, "True", reason, message),
        condition(READY, "False", reason, message),
    ]
}

/// `Stalled=False/Valid` and `Ready=True/Reconciled`: what a set shows once
/// its plan has been applied.
pub fn reconciled() -> Vec<Condition> {
    vec![
        condition(STALLED, "False", REASON_VALID, MESSAGE_VALID),
        condition(READY, "True", REASON_RECONCILED, MESSAGE_RECONCILED),
    ]
}

/// What a set shows when applying its plan failed with `message`.
pub fn write_failed(message: &str) -> Vec<Condition> {
    stalled(REASON_UNEXPECTED_ERROR, message)
}

/// Merges `conditions` into `status` as `meta.SetStatusCondition` does
/// (the transition time changes only when a status flips; `now` is RFC
/// 3339).
pub fn apply(status: &mut PackageVariantSetStatus, conditions: &[Condition], now: &str) {
    for c in conditions {
        set_status_condition(&mut status.conditions, c.clone(), now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_changes_only_on_flips() {
        let mut status = PackageVariantSetStatus::default();
        apply(&mut status, &stalled(REASON_VALIDATION_ERROR, "bad"), "t1");
        apply(
            &mut status,
            &stalled(REASON_UPSTREAM_NOT_FOUND, "gone"),
            "t2",
        );
        assert_eq!(status.conditions[0].last_transition_time, "t1");
        assert_eq!(status.conditions[0].reason, REASON_UPSTREAM_NOT_FOUND);
        apply(&mut status, &reconciled(), "t3");
        assert_eq!(status.conditions.len(), 2);
        assert_eq!(status.conditions[0].status, "False");
        assert_eq!(status.conditions[0].last_transition_time, "t3");
        assert_eq!(status.conditions[1].message, MESSAGE_RECONCILED);
    }
}
