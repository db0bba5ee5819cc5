//! What a Repository reconcile does (`REPO/sync.go` determineSyncDecision
//! and its predicates): nothing, a health check (a connectivity probe), or
//! a full sync (refresh, list packages, discovery), and when to come back.

use serde_json::{json, Value};

use crate::api::repository::Repository;

use super::config::SyncSettings;
use super::intervals::{
    last_full_sync_time, last_status_update_time, observed_run_once_at, requeue_interval,
    retry_interval, run_once_at, schedule, stale_timeout,
};
use super::status::has_spec_changed;
use super::time::{Duration, Time};
use super::{error_condition, ready_condition, REASON_RECONCILING};

/// The kind of operation a reconcile performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A lightweight connectivity check.
    HealthCheck,
    /// A complete synchronisation of the repository's packages.
    FullSync,
}

/// Why the decision was taken (for logs; upstream logs some of these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A full sync is running (a fresh `Reconciling` condition).
    SyncInProgress,
    /// The Repository was not synced since the controller started (its
    /// Git cache is cold).
    ColdStart,
    /// `spec.sync.runOnceAt` has come and was not acted on yet.
    RunOnceAt,
    /// `metadata.generation` differs from `status.observedGeneration`.
    SpecChanged,
    /// The spec changed but `runOnceAt` differs from the observed one:
    /// the change is acknowledged and the sync waits for `runOnceAt`.
    WaitForRunOnceAt,
    /// The Repository is in Error and its retry interval has passed.
    ErrorRetry,
    /// The full-sync period or cron schedule says so.
    FullSyncDue,
    /// The health-check period has passed.
    HealthCheckDue,
    /// Nothing is due.
    NothingDue,
}

/// `SyncDecision`: what to do now and when to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncDecision {
    /// The operation (meaningful when `sync_necessary`).
    pub operation: Operation,
    /// Whether to perform `operation` now.
    pub sync_necessary: bool,
    /// Requeue with the controller's exponential backoff instead of
    /// `delay_before_next_sync` (while a sync is in progress).
    pub use_exponential_backoff: bool,
    /// The requeue interval when nothing is done now.
    pub delay_before_next_sync: Duration,
    /// When set, write this `status.observedGeneration` with the next
    /// status apply (upstream mutates the in-memory object, and the
    /// following status write persists it).
    pub observed_generation: Option<i64>,
    /// Why.
    pub reason: Reason,
}

impl SyncDecision {
    fn perform(operation: Operation, reason: Reason) -> SyncDecision {
        SyncDecision {
            operation,
            sync_necessary: true,
            use_exponential_backoff: false,
            delay_before_next_sync: Duration::ZERO,
            observed_generation: None,
            reason,
        }
    }

    fn wait(delay: Duration, reason: Reason) -> SyncDecision {
        SyncDecision {
            operation: Operation::HealthCheck,
            sync_necessary: false,
            use_exponential_backoff: false,
            delay_before_next_sync: delay,
            observed_generation: None,
            reason,
        }
    }
}

/// `determineSyncDecision`, in priority order:
///
/// 1. a sync in progress ([`is_sync_in_progress`]) -> nothing, back off;
/// 2. not synced since the controller started (`synced_since_start` is
///    false: the caller's in-memory set, keyed by
///    [`super::cold_start_key`]) -> full sync;
/// 3. a due `runOnceAt` ([`is_one_time_sync_due`]) -> full sync;
/// 4. a changed spec -> full sync; but when `runOnceAt` differs from
///    `status.observedRunOnceAt`, only acknowledge the generation and wait
///    for `runOnceAt`;
/// 5. a due error retry -> health check (a full sync follows once it
///    succeeds);
/// 6. a due full sync -> full sync;
/// 7. a due health check -> health check;
/// 8. else nothing, back after [`requeue_interval`].
pub fn determine_sync_decision(
    repo: &Repository,
    settings: &SyncSettings,
    synced_since_start: bool,
    now: Time,
) -> SyncDecision {
    if is_sync_in_progress(repo, settings, now) {
        return SyncDecision {
            use_exponential_backoff: true,
            ..SyncDecision::wait(Duration::ZERO, Reason::SyncInProgress)
        };
    }
    if !synced_since_start {
        return SyncDecision::perform(Operation::FullSync, Reason::ColdStart);
    }
    if is_one_time_sync_due(repo, now) {
        return SyncDecision::perform(Operation::FullSync, Reason::RunOnceAt);
    }
    if has_spec_changed(repo) {
        if run_once_at(repo) != observed_run_once_at(repo) {
            return SyncDecision {
                observed_generation: Some(repo.metadata.generation.unwrap_or(0)),
                ..SyncDecision::wait(
                    requeue_interval(repo, settings, now),
                    Reason::WaitForRunOnceAt,
                )
            };
        }
        return SyncDecision::perform(Operation::FullSync, Reason::SpecChanged);
    }
    if is_error_retry_due(repo, now) {
        return SyncDecision::perform(Operation::HealthCheck, Reason::ErrorRetry);
    }
    if is_full_sync_due(repo, settings, now) {
        return SyncDecision::perform(Operation::FullSync, Reason::FullSyncDue);
    }
    if is_health_check_due(repo, settings, now) {
        return SyncDecision::perform(Operation::HealthCheck, Reason::HealthCheckDue);
    }
    SyncDecision::wait(requeue_interval(repo, settings, now), Reason::NothingDue)
}

/// `isSyncInProgress`: a `Ready=False/Reconciling` condition no older than
/// the stale timeout ([`stale_timeout`]); an older one is a sync that died
/// (the controller restarted mid-sync) and is ignored.
pub fn is_sync_in_progress(repo: &Repository, settings: &SyncSettings, now: Time) -> bool {
    match ready_condition(repo, "False", REASON_RECONCILING) {
        Some(c) => {
            let since = now.since(Time::from_k8s(Some(&c.last_transition_time)));
            since <= stale_timeout(settings.sync_stale_timeout)
        }
        None => false,
    }
}

/// `isOneTimeSyncDue`: `spec.sync.runOnceAt` is set, strictly in the past,
/// and not the `status.observedRunOnceAt` already acted on.
pub fn is_one_time_sync_due(repo: &Repository, now: Time) -> bool {
    match run_once_at(repo) {
        Some(at) => now.after(at) && Some(at) != observed_run_once_at(repo),
        None => false,
    }
}

/// `isErrorRetryDue`: in `Ready=False/Error` with a non-empty message, and
/// the retry interval of that message ([`retry_interval`]) has passed
/// since the condition was written.
pub fn is_error_retry_due(repo: &Repository, now: Time) -> bool {
    match error_condition(repo) {
        Some(c) if !c.message.is_empty() => {
            now.since(Time::from_k8s(Some(&c.last_transition_time))) >= retry_interval(&c.message)
        }
        _ => false,
    }
}

/// `isFullSyncDue`: never while `runOnceAt` is in the future or while in
/// Error; always when never synced; with a valid cron schedule when now is
/// after its next run following the last full sync (a schedule with no
/// next run counts as due: Go's zero time is in the past); otherwise when
/// the full-sync period has passed since the last full sync.
pub fn is_full_sync_due(repo: &Repository, settings: &SyncSettings, now: Time) -> bool {
    if run_once_at(repo).is_some_and(|at| now.before(at)) {
        return false;
    }
    if error_condition(repo).is_some() {
        return false;
    }
    let last = last_full_sync_time(repo);
    if last.is_zero() {
        return true;
    }
    if let Some(s) = schedule(repo) {
        return match s.next(last) {
            Some(next) => now.after(next),
            None => true,
        };
    }
    now.since(last) >= settings.full_sync_frequency
}

/// `isHealthCheckDue`: never while in Error (error retries handle that);
/// always without a `Ready` condition; otherwise when the health-check
/// period has passed since the last status write.
pub fn is_health_check_due(repo: &Repository, settings: &SyncSettings, now: Time) -> bool {
    if error_condition(repo).is_some() {
        return false;
    }
    let last = last_status_update_time(repo);
    if last.is_zero() {
        return true;
    }
    now.since(last) >= settings.health_check_frequency
}

/// `clearOneTimeSyncFlag`: after a successful sync triggered while
/// `spec.sync.runOnceAt` was set, the JSON merge patch that removes it
/// (`{"spec":{"sync":{"runOnceAt":null}}}`); `None` when it is not set
/// (no patch is sent).
pub fn clear_one_time_sync_flag(repo: &Repository) -> Option<Value> {
    repo.spec.sync.as_ref()?.run_once_at.as_ref()?;
    Some(json!({"spec": {"sync": {"runOnceAt": null}}}))
}

/// Whether a full sync's repository was recorded with a `runOnceAt` that
/// the completed sync should clear (the caller then sends
/// [`clear_one_time_sync_flag`] after a successful status write).
pub fn should_clear_one_time_sync_flag(repo: &Repository, sync_succeeded: bool) -> bool {
    sync_succeeded && clear_one_time_sync_flag(repo).is_some()
}

/// Exponential-backoff requeue while a sync is in progress, or the delay
/// (at least 1s) when nothing is done: the `ctrl.Result` of a reconcile
/// whose decision was not to act.
pub fn idle_requeue_after(decision: &SyncDecision) -> Option<Duration> {
    if decision.use_exponential_backoff {
        None
    } else {
        Some(decision.delay_before_next_sync.max(Duration::from_secs(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::meta::Condition;
    use crate::api::repository::{RepositorySpec, RepositoryStatus, RepositorySync};

    fn at(s: &str) -> Time {
        Time::parse_rfc3339(s).unwrap()
    }

    #[test]
    fn cold_start_forces_a_full_sync_after_the_in_progress_guard() {
        let now = at("2026-04-29T12:00:00Z");
        let repo = Repository::default();
        let d = determine_sync_decision(&repo, &SyncSettings::default(), false, now);
        assert_eq!((d.operation, d.sync_necessary), (Operation::FullSync, true));
        assert_eq!(d.reason, Reason::ColdStart);
    }

    #[test]
    fn a_spec_change_with_a_pending_run_once_at_acknowledges_the_generation() {
        let now = at("2026-04-29T12:00:00Z");
        let mut repo = Repository {
            spec: RepositorySpec {
                sync: Some(RepositorySync {
                    run_once_at: Some("2026-04-29T12:10:00Z".into()),
                    ..RepositorySync::default()
                }),
                ..RepositorySpec::default()
            },
            status: Some(RepositoryStatus {
                observed_generation: Some(1),
                conditions: vec![Condition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    reason: "Ready".into(),
                    last_transition_time: "2026-04-29T11:59:00Z".into(),
                    ..Condition::default()
                }],
                ..RepositoryStatus::default()
            }),
            ..Repository::default()
        };
        repo.metadata.generation = Some(2);
        let d = determine_sync_decision(&repo, &SyncSettings::default(), true, now);
        assert!(!d.sync_necessary);
        assert_eq!(d.observed_generation, Some(2));
        assert_eq!(d.delay_before_next_sync, Duration::from_mins(10));
        assert_eq!(idle_requeue_after(&d), Some(Duration::from_mins(10)));
    }

    #[test]
    fn clearing_run_once_at_is_a_merge_patch_only_when_set() {
        let mut repo = Repository::default();
        assert_eq!(clear_one_time_sync_flag(&repo), None);
        repo.spec.sync = Some(RepositorySync {
            run_once_at: Some("2026-04-29T12:10:00Z".into()),
            schedule: "0 * * * *".into(),
        });
        assert_eq!(
            clear_one_time_sync_flag(&repo),
            Some(json!({"spec": {"sync": {"runOnceAt": null}}}))
        );
        assert!(should_clear_one_time_sync_flag(&repo, true));
        assert!(!should_clear_one_time_sync_flag(&repo, false));
    }
}
